"""A diffusers UNet2DConditionModel built from its config (no download) first paints as a U,
like the figure in its paper: the down blocks descending on one side, the up blocks rising on
the other, down_blocks.0 level with the last up block and mid_block at the bottom between
them, the level's skip straight across, every node in the canvas with names legible from the
back row; the timestep and text conditioning beside it, their buses passing behind no node,
also with down_blocks.0 or up_blocks.1 opened (names still legible: where the whole does
not fit at that scale, the view shows part of it and says how many nodes are out of view).
Screenshots in test-artifacts/."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from fixture_models import unet2d, unet2d_added
from live import open_offline, painted_after, paints, settle, shoot, walk
from test_view_whole import COVERED, check_view

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: per node [id, kind, left, top, right, bottom, name px, inside the canvas]; per bus line and
#: edge (the buses' taps are merge edges) [kind, src, dst, its points on screen]
SEEN = """() => {
  const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const nodes = [...document.querySelectorAll(".nfw-node")].map((g) => {
    const r = g.getBoundingClientRect(); const t = g.querySelector(".nfw-t1");
    return [g.dataset.stageId, g.dataset.kind, r.left, r.top, r.right, r.bottom,
      t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize),
      r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom];
  });
  const onScreen = (p) => {
    const m = p.getScreenCTM();
    const n = p.getAttribute("d").match(/-?[\\d.]+/g).map(Number);
    const out = [];
    for (let i = 0; i + 1 < n.length; i += 2) {
      out.push(m.a * n[i] + m.c * n[i + 1] + m.e, m.b * n[i] + m.d * n[i + 1] + m.f);
    }
    return out;
  };
  const lines = [...document.querySelectorAll(".nfw-bus-line, .nfw-edge[data-edge-kind]")]
    .map((p) => p.classList.contains("nfw-bus-line")
      ? ["bus", p.parentNode.dataset.bus, "", onScreen(p)]
      : [p.dataset.edgeKind, p.dataset.src || "", p.dataset.dst || "", onScreen(p)]);
  return { nodes, lines };
}"""


def crosses(pts: list[float], box: tuple[float, float, float, float], inset: float = 3) -> bool:
    """Whether the polyline passes through the inside of the box (sampled densely)."""
    x0, y0, x1, y1 = box[0] + inset, box[1] + inset, box[2] - inset, box[3] - inset
    for i in range(0, len(pts) - 2, 2):
        ax, ay, bx, by = pts[i : i + 4]
        for s in range(41):
            x, y = ax + (bx - ax) * s / 40, ay + (by - ay) * s / 40
            if x0 < x < x1 and y0 < y < y1:
                return True
    return False


def centres(got) -> dict[str, tuple[float, float]]:
    return {n[0]: ((n[2] + n[4]) / 2, (n[3] + n[5]) / 2) for n in got["nodes"]}


def assert_buses_pass_behind_no_node(got):
    for kind, src, dst, pts in got["lines"]:
        if kind not in ("bus", "merge"):
            continue
        for sid, _k, left, top, right, bottom, _px, _in in got["nodes"]:
            if sid not in (src, dst):
                box = (left, top, right, bottom)
                assert not crosses(pts, box), f"the {kind} {src} -> {dst} passes behind {sid}"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = {}
    for levels, layers in [(2, 1), (3, 2), (4, 2)]:
        model, inputs = unet2d(levels, layers)
        path = tmp_path_factory.mktemp("unet") / f"unet2d_{levels}x{layers}.html"
        nfw.NeuralFlowWidget(model, inputs).to_html(path)
        out[(levels, layers)] = path
    model, inputs = unet2d(2, 1, cross=False)
    path = tmp_path_factory.mktemp("unet") / "unet2d_mid.html"
    nfw.NeuralFlowWidget(model, inputs).to_html(path)
    out["mid"] = path
    for kind, levels in [("text_time", 2), ("text_time", 3), ("image", 2)]:
        model, inputs = unet2d_added(kind, levels)
        path = tmp_path_factory.mktemp("unet") / f"unet2d_{kind}_{levels}.html"
        nfw.NeuralFlowWidget(model, inputs).to_html(path)
        out[(kind, levels)] = path
    return out


def see(browser, path, width, height, shot, open_block=None):
    context, page, errors = open_offline(browser, path, width, height)  # painted, settled
    if open_block:
        page.locator(f'[data-stage-id="{open_block}"]').first.dispatch_event("dblclick")
        page.wait_for_selector(f'[data-stage-id^="{open_block}."]', timeout=30_000)
        settle(page)
    got = page.evaluate(SEEN)
    got["view"] = page.evaluate(COVERED)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / shot))
    context.close()
    assert errors == []
    return got


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize(("levels", "layers"), [(2, 1), (3, 2), (4, 2)])
def test_a_diffusers_unet_first_paints_as_a_u(browser, pages, levels, layers, width, height):
    shot = f"unet2d_{levels}x{layers}_{width}x{height}.png"
    got = see(browser, pages[(levels, layers)], width, height, shot)
    # names 12 px high, ports' 11 (13 px at 1:1): four levels of two layers (Stable
    # Diffusion's shape) too, the conditioning's chains side by side where the canvas is wide
    # (the U lower), one under the other where it is narrow
    for sid, kind, *_box, px, inside in got["nodes"]:
        assert inside, f"{sid} is not inside the canvas"
        assert px >= (12 if kind in ("stage", "fold") else 11) - 0.05, (
            f"{sid}: its name is {px:.1f} px high"
        )
    at = centres(got)
    last_up = f"up_blocks.{levels - 1}"
    # level, on opposite sides of mid_block, which is below both
    assert abs(at["down_blocks.0"][1] - at[last_up][1]) < 2, (at["down_blocks.0"], at[last_up])
    assert at["down_blocks.0"][0] < at["mid_block"][0] < at[last_up][0]
    assert at["mid_block"][1] > at["down_blocks.0"][1]
    for i in range(levels):  # down one side, up the other
        assert at[f"down_blocks.{i}"][0] < at["mid_block"][0] < at[f"up_blocks.{i}"][0]
    level = [p for k, s, d, p in got["lines"] if (k, s, d) == ("skip", "down_blocks.0", last_up)]
    assert level, f"no skip from down_blocks.0 into {last_up}"
    ys = level[0][1::2]
    assert max(ys) - min(ys) < 1.5, level[0]  # straight across
    assert_buses_pass_behind_no_node(got)


@pytest.mark.parametrize("block", ["down_blocks.0", "up_blocks.1"])
def test_with_a_block_open_the_u_holds_and_the_buses_pass_behind_no_node(browser, pages, block):
    shot = f"unet2d_2x1_{block.replace('.', '_')}_open_1280x720.png"
    got = see(browser, pages[(2, 1)], 1280, 720, shot, open_block=block)
    # names legible; where the whole does not fit at that scale, the note counts what is out
    check_view(got["view"], f"opening {block}", whole=False)
    at = centres(got)
    inner = [k for k in at if k.startswith(block + ".")]
    assert len(inner) >= 3
    for k in inner:  # on its side of mid_block, above it
        assert (at[k][0] < at["mid_block"][0]) == block.startswith("down")
        assert at[k][1] < at["mid_block"][1]
    for other in ("down_blocks.0", "up_blocks.1"):
        if other != block:
            assert (at[other][0] < at["mid_block"][0]) == other.startswith("down")
    assert any(s == "input:encoder_hidden_states" for _k, s, _d, _p in got["lines"])
    assert_buses_pass_behind_no_node(got)


def test_turned_on_its_side_the_u_is_refit_whole(browser, pages):
    """LR: the U laid on its side is wider than the canvas at the readable scale; the user who
    turned it sees all of it (the camera refits as after any action), not its first half."""
    context, page, errors = open_offline(browser, pages[(4, 2)], 1280, 720)  # painted, settled
    before = paints(page)
    page.get_by_role("button", name="→ LR").click()
    painted_after(page, before)
    settle(page)  # the camera's move
    got = page.evaluate(SEEN)
    shoot(page, "unet2d_4x2_LR_1280x720")
    outside = [n[0] for n in got["nodes"] if not n[7]]
    assert outside == [], outside
    context.close()
    assert errors == []


#: the node playback marks current: its stage id, and its part line where it stands for a
#: group folded to fit ("▸ resnets.1")
CURRENT = """() => { const g = document.querySelector(".nfw-node.nfw-current");
  const p = g && g.querySelector(".nfw-part");
  return g ? [g.dataset.stageId, p ? p.textContent : null] : null; }"""


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_playback_walks_into_every_block_with_the_whole_u_in_view(browser, pages, width, height):
    """Stable Diffusion's shape beside the inspector: the U folded is as tall as the canvas,
    so a block the walk passes through cannot open and fit; every step keeps the whole U in
    view at 12 px, the block that holds the step marked current, its part line naming the
    step ("▸ attentions.0"), the inspector on the step's own stage. (Opened, such a block
    left up to 18 of the U's 26 nodes out of view.)"""
    context, page, errors = open_offline(browser, pages[(4, 2)], width, height)
    stood_in = 0
    for where in walk(page):
        step = where.split(" · ", 1)[1]
        got = page.evaluate(COVERED)
        check_view(got, f"step {where}", whole=True)
        sid, part = page.evaluate(CURRENT)
        block = step.split(".")[0] + "." + step.split(".")[1] if "blocks." in step else None
        if block and step.count(".") >= 3:  # a step inside a block (down_blocks.1.resnets.0)
            assert sid == block, f"{step}: {sid} current"
            assert part == "▸ " + step[len(block) + 1 :], f"{step}: {part}"
            ins = page.locator(".nfw-ins-title b").text_content()
            assert ins == step, f"{step}: the inspector on {ins}"
            stood_in += 1
            if step == "down_blocks.1.attentions.0":
                shoot(page, f"unet2d_4x2_play_{width}x{height}")
    assert stood_in >= 30
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize(("kind", "levels"), [("text_time", 2), ("text_time", 3), ("image", 2)])
def test_a_unet_whose_conditioning_merges_first_paints_as_a_u(
    browser, pages, kind, levels, width, height
):
    """SDXL's added text-time conditioning and Kandinsky's image conditioning are no chains:
    two parts merge (a concatenation, a sum with the time embedding) and one input feeds two.
    The conditioning still stands beside (or above) the U, laid out whole, and the sum of
    embeddings that every block reads is a bus: the U is drawn, not one column of nested
    skips. SDXL's own shape (three levels) a little too large for 1280 x 720 at 12 px: the
    arrangement that shows the most of it, every node in the canvas."""
    shot = f"unet2d_{kind}_{levels}_{width}x{height}.png"
    got = see(browser, pages[(kind, levels)], width, height, shot)
    for sid, kind_, *_box, px, inside in got["nodes"]:
        assert inside, f"{sid} is not inside the canvas"
        assert px >= (12 if kind_ in ("stage", "fold") else 11) - 0.05, f"{sid}: {px:.1f} px"
    at = centres(got)
    last = f"up_blocks.{levels - 1}"
    assert abs(at["down_blocks.0"][1] - at[last][1]) < 2, (at["down_blocks.0"], at[last])
    for i in range(levels):
        assert at[f"down_blocks.{i}"][0] < at["mid_block"][0] < at[f"up_blocks.{i}"][0]
    assert at["mid_block"][1] > at[f"down_blocks.{levels - 1}"][1]
    # the conditioning above the first level, the sum of embeddings tapped by a bus
    for cond in ("time_embedding", "add_embedding"):
        assert at[cond][1] < at["down_blocks.0"][1], cond
    assert any(k == "bus" and s.startswith("j:") for k, s, _d, _p in got["lines"]), (
        "the sum is no bus"
    )
    assert_buses_pass_behind_no_node(got)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_a_unet_whose_mid_block_alone_reads_the_text_first_paints_as_a_u(
    browser, pages, width, height
):
    """DownBlock2D and UpBlock2D round UNetMidBlock2DCrossAttn: the text is one edge into the
    mid block, no bus. It was drawn as one column, down and up, the skips nested dashed
    rectangles beside it; now a U, the text's line beside the encoder into the mid block's
    top, passing behind no node."""
    got = see(browser, pages["mid"], width, height, f"unet2d_mid_{width}x{height}.png")
    for sid, kind, *_box, px, inside in got["nodes"]:
        assert inside, f"{sid} is not inside the canvas"
        assert px >= (12 if kind in ("stage", "fold") else 11) - 0.05, f"{sid}: {px:.1f} px"
    at = centres(got)
    for i in range(2):
        assert at[f"down_blocks.{i}"][0] < at["mid_block"][0] < at[f"up_blocks.{i}"][0]
        assert abs(at[f"down_blocks.{i}"][1] - at[f"up_blocks.{1 - i}"][1]) < 2
    assert at["mid_block"][1] > at["down_blocks.1"][1]
    text = [p for k, s, d, p in got["lines"] if d == "mid_block" and "encoder_hidden" in s]
    assert text, "no line from the text into the mid block"
    assert_buses_pass_behind_no_node(got)
