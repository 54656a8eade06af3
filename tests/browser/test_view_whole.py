"""Offline pages of real traces (the demo U-Net, a 4-layer GPT-2 built from its config) in
Chromium at a lecture hall's sizes: the keys work on a fresh page, after clicking Play and
after clicking a toolbar button, never from the search box; and every action that changes
the graph (open a block, select a stage, close the inspector, Play, Esc, Data, Present) ends
with every node inside the canvas, none under the inspector, the minimap or the legend.
Screenshots in test-artifacts/whole_*.png."""

from __future__ import annotations

import pathlib

import pytest
import torch
from live import STEPPED, open_offline, settle

import neural_flow_widget as nfw
from neural_flow_widget import demos

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: what an action left on screen: the nodes (their cards, a fold's stacked ones too) out of
#: the canvas (`out`), those inside it under what lies over it (the inspector, the minimap,
#: the legend, the note, while they are shown: `bad`; a junction, a residual's ⊕, or a logit
#: lens chip under any but the note; the minimap over the legend), the least name of a stage
#: on screen (px), the "N out of view" note (its count, null while hidden) and whether the step
#: of playback is inside the canvas
COVERED = """() => {
  const shown = (el) => { if (!el || el.hidden || !el.offsetParent) return null;
    if (Number(getComputedStyle(el).opacity) < 0.05) return null;
    const r = el.getBoundingClientRect(); return r.width && r.height ? r : null; };
  const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const over = { inspector: shown(document.querySelector(".nfw-inspector")),
    minimap: shown(document.querySelector(".nfw-minimap")),
    legend: shown(document.querySelector(".nfw-legend")),
    note: shown(document.querySelector(".nfw-offview")) };
  const inside = (r) => r.left >= c.left - 0.5 && r.right <= c.right + 0.5
    && r.top >= c.top - 0.5 && r.bottom <= c.bottom + 0.5;
  const bad = []; const out = []; let px = Infinity; let n = 0;
  const [m, l] = [over.minimap, over.legend];  // the minimap parks clear of the legend too
  if (m && l && m.left < l.right && m.right > l.left && m.top < l.bottom && m.bottom > l.top)
    bad.push("the minimap over the legend");
  for (const g of document.querySelectorAll(".nfw-node")) {
    const parts = [...g.querySelectorAll(":scope > .nfw-card, :scope > .nfw-stack")]
      .map((e) => e.getBoundingClientRect());
    const r = parts.length ? { left: Math.min(...parts.map((p) => p.left)),
      right: Math.max(...parts.map((p) => p.right)), top: Math.min(...parts.map((p) => p.top)),
      bottom: Math.max(...parts.map((p) => p.bottom)) } : g.getBoundingClientRect(); n++;
    const id = g.dataset.stageId || g.dataset.key;
    if (!inside(r)) out.push(id);
    else for (const [name, o] of Object.entries(over))
      if (o && r.left < o.right && r.right > o.left && r.top < o.bottom && r.bottom > o.top)
        bad.push(`${id} under the ${name}`);
    const t = g.dataset.kind === "stage" || g.dataset.kind === "fold"
      ? g.querySelector(".nfw-t1") : null;
    if (t) px = Math.min(px, t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize));
  }
  for (const j of document.querySelectorAll(".nfw-junction, [data-chip]")) {
    const r = j.getBoundingClientRect();
    if (!r.width || !inside(r)) continue;
    for (const [name, o] of Object.entries(over))  // (a part view fills the canvas: the note
      if (o && name !== "note" && r.left < o.right && r.right > o.left  // may lie on its edge)
        && r.top < o.bottom && r.bottom > o.top)
        bad.push(`${j.dataset.chip ? "a chip" : "a junction"} (${j.dataset.key ?? j.dataset.chip})`
          + ` under the ${name}`);
  }
  // the least secondary text (a stage's type and shape, a group's type, a junction's name)
  // and group label on screen, of what lies inside the canvas
  let small = Infinity; let group = Infinity;
  for (const t of document.querySelectorAll(
      ".nfw-node .nfw-t2, .nfw-node .nfw-num, .nfw-ct, .nfw-ct2, .nfw-junction-name")) {
    const r = t.getBoundingClientRect();
    if (!r.width || !inside(r) || !t.textContent.trim()) continue;
    const size = t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize);
    if (t.classList.contains("nfw-ct")) group = Math.min(group, size);
    else small = Math.min(small, size);
  }
  // the texts on nodes and the groups' and stacks' headers cut short ("…" at their end; a
  // fold's range has one in its middle)
  const cut = [...document.querySelectorAll(
    ".nfw-node .nfw-t1, .nfw-node .nfw-t2, .nfw-cluster .nfw-ct")]
    .map((t) => t.textContent).filter((t) => t.endsWith("…"));
  // the buses (a conditioning's, a mask's) whose line runs off the canvas
  const buses = [...document.querySelectorAll(".nfw-bus-line")]
    .filter((b) => { const r = b.getBoundingClientRect();
      return r.width + r.height > 0 && !inside(r); }).length;
  const note = shown(document.querySelector(".nfw-offview"));
  const cur = document.querySelector(".nfw-node.nfw-current");
  const count = note ? Number(document.querySelector(".nfw-offview").dataset.out) : null;
  const current = cur ? inside(cur.getBoundingClientRect()) : null;
  return { bad, out, px, small, group, n, note: count, current, cut, buses };
}"""
#: names and group labels on screen after any action (px; a rounding's worth under
#: MIN_NAME_PX), and secondary text (a stage's type and shape, a junction's name)
LEGIBLE = 11.95
SECONDARY = 10.95


def check_view(got: dict, step: str, *, whole: bool) -> None:
    """An action's view: names legible, no node inside the canvas under an overlay, the step
    of playback in view; the whole graph in view where `whole` (its buses' lines too), else
    the nodes out of view counted by the note beside the minimap (the whole does not fit at
    the readable scale)."""
    assert got["px"] >= LEGIBLE, f"after {step}: names {got['px']:.2f} px"
    assert got["group"] >= LEGIBLE, f"after {step}: group labels {got['group']:.2f} px"
    assert got["small"] >= SECONDARY, f"after {step}: type and shape {got['small']:.2f} px"
    assert got["bad"] == [], f"after {step}: {got['bad']}"
    assert got["cut"] == [], f"after {step}: text cut on a node that could grow: {got['cut']}"
    assert got["current"] in (None, True), f"after {step}: the step of playback out of view"
    if whole:
        assert got["out"] == [], f"after {step}: {got['out']} out of view"
        assert got["buses"] == 0, f"after {step}: {got['buses']} buses run off the canvas"
    else:
        assert got["note"] == (len(got["out"]) or None), (
            f"after {step}: note {got['note']}, out {got['out']}"
        )


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    demo = demos.load("unet")
    nfw.NeuralFlowWidget(demo.model, demo.inputs).to_html(out / "unet.html")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_head=4, n_embd=64, vocab_size=100, n_positions=32)
    gpt2 = transformers.GPT2LMHeadModel(config).eval()
    nfw.NeuralFlowWidget(gpt2, torch.randint(0, 100, (1, 12))).to_html(out / "gpt2.html")
    # two stages of two nested groups each: wrapped into two bands at 1280 x 720, one column
    # beside the inspector
    config = transformers.SegformerConfig(
        num_encoder_blocks=2,
        depths=[1, 1],
        hidden_sizes=[16, 32],
        num_attention_heads=[1, 2],
        sr_ratios=[2, 1],
        decoder_hidden_size=32,
    )
    segformer = transformers.SegformerModel(config).eval()
    nfw.NeuralFlowWidget(segformer, torch.randn(1, 3, 32, 32)).to_html(out / "segformer.html")
    return out


def test_playback_ended_and_the_inspector_closed_at_once_give_the_first_view_back(browser, pages):
    """Escape twice in quick succession (playback ends, its inspector closes) while the view is
    laid out for the canvas beside the inspector: laid out again for the canvas grown back (it
    stayed one column with 6 nodes out of view)."""
    context, page, errors = open_offline(browser, pages / "segformer.html", 1280, 720)
    settle(page)
    first = page.evaluate(COVERED)
    assert first["out"] == []
    page.click(".nfw-play")
    for _ in range(3):
        at = _where(page).split(" /")[0]
        page.keyboard.press("ArrowRight")
        page.wait_for_function(STEPPED, arg=at)
    settle(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    settle(page)
    check_view(page.evaluate(COVERED), "playback's end", whole=True)
    context.close()
    assert errors == []


def _playing(page) -> bool:
    return page.get_attribute(".nfw-play", "aria-pressed") == "true"


def _where(page) -> str:
    return page.locator(".nfw-where").text_content() or ""


@pytest.mark.parametrize("model", ["unet", "gpt2"])
def test_keys_work_as_soon_as_the_page_is_shown(browser, pages, model):
    context, page, errors = open_offline(browser, pages / f"{model}.html", 1280, 720)
    # a fresh page: nothing clicked
    page.keyboard.press(" ")
    page.wait_for_function(
        "() => document.querySelector('.nfw-play').getAttribute('aria-pressed') === 'true'",
        timeout=5000,
    )
    page.keyboard.press("Escape")
    assert not _playing(page) and page.locator(".nfw-transport").is_hidden()
    # Play clicked, then the arrows step
    page.click(".nfw-play")
    assert _playing(page)
    page.wait_for_function(
        "() => document.querySelector('.nfw-where').textContent.startsWith('1 /')"
    )
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "() => document.querySelector('.nfw-where').textContent.startsWith('2 /')", timeout=5000
    )
    assert not _playing(page)  # a step pauses
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "() => document.querySelector('.nfw-where').textContent.startsWith('1 /')", timeout=5000
    )
    page.keyboard.press("Escape")
    assert page.locator(".nfw-transport").is_hidden()
    # a toolbar button clicked: the keys are the graph's again
    page.click(".nfw-btn >> text=Fit")
    page.keyboard.press("?")
    assert page.locator(".nfw-help").is_visible()
    page.keyboard.press("Escape")
    assert page.locator(".nfw-help").is_hidden()
    page.click("button[aria-label='Data on the graph']")
    page.keyboard.press(" ")
    page.wait_for_function(
        "() => document.querySelector('.nfw-play').getAttribute('aria-pressed') === 'true'",
        timeout=5000,
    )
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")  # the inspector playback opened
    assert page.locator(".nfw-inspector").is_hidden()
    # typed into the search box, they are the box's
    page.click(".nfw-search")
    page.keyboard.type(" f?")
    assert page.input_value(".nfw-search") == " f?"
    assert not _playing(page) and page.locator(".nfw-help").is_hidden()
    context.close()
    assert errors == []


#: the views that show the whole graph at the readable scale (the others show the part around
#: what the action was about, and the note says how many nodes are out of view)
WHOLE = {"unet": {"first"}, "gpt2": {"first"}}


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("model", ["unet", "gpt2"])
def test_every_action_ends_with_the_whole_model_in_view(browser, pages, model, width, height):
    context, page, errors = open_offline(browser, pages / f"{model}.html", width, height)
    ARTIFACTS.mkdir(exist_ok=True)
    seen: dict[str, dict] = {}

    def check(step: str):
        settle(page)
        got = page.evaluate(COVERED)
        page.screenshot(path=str(ARTIFACTS / f"whole_{model}_{width}x{height}_{step}.png"))
        assert got["n"] >= 4, (step, got)
        print(step, "whole" if not got["out"] else f"{len(got['out'])} out", f"{got['px']:.2f} px")
        check_view(got, step, whole=step in WHOLE[model])
        seen[step] = got

    check("first")
    assert seen["first"]["px"] >= 12, seen["first"]  # the first view's names read from the back row
    page.locator(".nfw-node[data-kind='stage'] [data-action]").first.dispatch_event("click")
    check("open")
    assert seen["open"]["n"] > seen["first"]["n"]
    page.locator(".nfw-node[data-kind='stage']").nth(2).click()
    page.wait_for_selector(".nfw-inspector:not([hidden])")
    check("inspector")
    page.click(".nfw-close")
    check("inspector_closed")
    page.click(".nfw-play")
    for _ in range(6):  # each step taken before the next key
        at = _where(page).split(" /")[0]
        page.keyboard.press("ArrowRight")
        page.wait_for_function(STEPPED, arg=at)
    check("play")
    page.keyboard.press("Escape")  # playback off, the view it began from
    assert page.locator(".nfw-transport").is_hidden()
    check("play_stopped")
    page.keyboard.press("Escape")  # the inspector closes
    check("esc")
    page.click("button[aria-label='Data on the graph']")
    check("data")
    page.click("button[aria-label='Data on the graph']")
    check("data_off")
    page.click("button[aria-label='Present']")
    check("present")
    # presentation type: at least as large as the view it came from
    assert seen["present"]["px"] >= seen["data_off"]["px"] * 0.95, seen
    page.keyboard.press("Escape")
    check("present_ended")
    # Data and Present may fold what the user opened to show the whole model; they give it back
    assert seen["data_off"]["n"] == seen["esc"]["n"], (seen["esc"], seen["data_off"])
    assert seen["present_ended"]["n"] == seen["data_off"]["n"], (
        seen["data_off"],
        seen["present_ended"],
    )
    context.close()
    assert errors == []


def test_playback_controls_sit_on_the_inspector_so_the_graph_keeps_its_height(browser, pages):
    """While the inspector is open, the transport is its top row (the step's data right under
    it) and the canvas keeps the height it had before playback; with the inspector closed, the
    transport is back above the canvas. GPT-2 at 1280 x 720: the whole model stays in view
    while playing (3 nodes were below the canvas with the transport above it)."""
    context, page, errors = open_offline(browser, pages / "gpt2.html", 1280, 720)
    settle(page)
    height = page.evaluate("() => document.querySelector('.nfw-canvas').clientHeight")
    page.click(".nfw-play")
    page.wait_for_selector(".nfw-inspector:not([hidden]) > .nfw-transport")
    page.keyboard.press("ArrowRight")
    settle(page)
    bar = page.locator(".nfw-transport").bounding_box()
    inspector = page.locator(".nfw-inspector").bounding_box()
    canvas = page.locator(".nfw-canvas").bounding_box()
    assert bar and inspector and canvas
    assert bar["x"] >= inspector["x"] - 1 and bar["y"] <= inspector["y"] + 1, (bar, inspector)
    assert canvas["height"] == pytest.approx(height, abs=1), (canvas, height)
    got = page.evaluate(COVERED)
    page.screenshot(path=str(ARTIFACTS / "whole_gpt2_1280x720_play_docked.png"))
    check_view(got, "play", whole=True)
    page.click(".nfw-inspector .nfw-close")  # the inspector closed, playback on
    page.wait_for_selector(".nfw-inspector[hidden]", state="attached")
    assert page.locator(".nfw-transport").is_visible()
    assert page.evaluate(
        "() => document.querySelector('.nfw-transport').nextElementSibling"
        ".classList.contains('nfw-main')"
    ), "the transport is not above the canvas"
    page.keyboard.press("Escape")
    assert page.locator(".nfw-transport").is_hidden()
    context.close()
    assert errors == []
