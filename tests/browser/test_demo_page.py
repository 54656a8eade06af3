"""The README's first command ends with an HTML page: headless Chromium opens it offline and
shows the U-Net with its skip edges and a stage's channels; on first paint the whole U-Net is
in view, drawn as a U, with names a lecture hall can read. Saves test-artifacts/demo_unet*.png."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from live import open_offline, settle, shoot
from test_view_whole import COVERED, check_view

import neural_flow_widget as nfw
from neural_flow_widget import demos

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
LIT = """(c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let lit = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) lit++;
  return lit > 0.3 * c.width * c.height; }"""


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory) -> pathlib.Path:
    """The page the README's first command writes (``neural-flow demo unet``), made once."""
    out = tmp_path_factory.mktemp("demo") / "unet.html"
    done = subprocess.run(
        [sys.executable, "-m", "neural_flow_widget.cli", "demo", "unet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def unet_page(tmp_path_factory) -> pathlib.Path:
    """The page of ``NeuralFlowWidget(model, inputs)`` of the demo U-Net, made once."""
    demo = demos.load("unet")
    out = tmp_path_factory.mktemp("unet") / "unet.html"
    return nfw.NeuralFlowWidget(demo.model, demo.inputs).to_html(out)


def test_demo_page_opens_offline_with_skips_and_channels(browser, demo_page):
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    outside: list[str] = []

    def block(route):
        outside.append(route.request.url)
        route.abort()

    context.route("http*://**", block)  # offline: any network request is a failure
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(demo_page.as_uri())
    page.wait_for_selector('[data-stage-id="enc1"]', timeout=30_000)
    assert page.locator('[data-edge-kind="skip"]').count() >= 3  # enc1/2/3 -> dec3/2/1
    page.locator('[data-stage-id="enc1"]').first.click()
    canvas = page.locator('canvas[data-view-kind="grid"]').first
    canvas.wait_for(timeout=30_000)
    page.wait_for_function(LIT, arg=canvas.element_handle(), timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "demo_unet.png"))
    context.close()
    assert outside == [] and errors == []


#: per stage node: [id, left, top, right, bottom] on screen; the name's size on screen (font
#: size times the zoom); the canvas' box; each skip's path points
FIRST_PAINT = """() => {
  const canvas = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const nodes = [...document.querySelectorAll('.nfw-node[data-kind="stage"]')].map((g) => {
    const r = g.getBoundingClientRect();
    const t = g.querySelector(".nfw-t1");
    const px = t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize);
    return [g.dataset.stageId, r.left, r.top, r.right, r.bottom, px];
  });
  const skips = [...document.querySelectorAll('.nfw-edge[data-edge-kind="skip"]')].map((p) =>
    p.getAttribute("d").match(/-?[\\d.]+/g).map(Number));
  const bar = [...document.querySelector(".nfw-toolbar").children].filter((c) => c.offsetParent)
    .map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; });
  return { canvas: [canvas.left, canvas.top, canvas.right, canvas.bottom], nodes, skips, bar };
}"""


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_first_paint_shows_the_whole_unet_as_a_u_legible_from_the_back_row(
    browser, demo_page, width, height
):
    context, page, errors = open_offline(browser, demo_page, width, height)
    got = page.evaluate(FIRST_PAINT)
    shoot(page, f"demo_unet_first_paint_{width}x{height}")
    context.close()
    assert errors == []
    cx0, cy0, cx1, cy1 = got["canvas"]
    ids = {n[0] for n in got["nodes"]}
    assert {"enc1", "enc2", "enc3", "bottleneck", "dec1", "dec2", "dec3", "head"} <= ids
    for sid, left, top, right, bottom, px in got["nodes"]:
        assert cx0 <= left and right <= cx1 and cy0 <= top and bottom <= cy1, (sid, got["canvas"])
        assert px >= 12, f"{sid}: its name is {px:.1f} px high"
    centre = {n[0]: (n[1] + n[3]) / 2 for n in got["nodes"]}
    # a U: the encoder down one side, the decoder up the other, the bottleneck between them
    enc = [centre[f"enc{i}"] for i in (1, 2, 3)]
    dec = [centre[f"dec{i}"] for i in (1, 2, 3)]
    assert max(enc) < centre["bottleneck"] < min(dec) or max(dec) < centre["bottleneck"] < min(enc)
    assert len(got["skips"]) == 3
    for d in got["skips"]:  # each skip straight across
        ys = d[1::2]
        assert max(ys) - min(ys) < 1, d
    assert max(got["bar"]) - min(got["bar"]) < 8, "the toolbar wrapped"


def _expected_walk(flow) -> list[str]:
    """The playback walk of the first view (the model's own stages), derived from the run:
    the inputs, then each stage of depth 1 in execution order, or its children where it has
    any (the walk opens it), then the outputs."""
    ids = []
    for c in flow.calls:
        if c.depth != 1:
            continue
        kids = [k.id for k in flow.calls if k.parent == c.id]
        ids.extend(kids or [c.id])
    return [*flow.inputs, *ids, *flow.outputs]


def test_playback_walks_the_forward_pass_in_order_through_each_block(browser, tmp_path):
    """The walk visits each block's layers in execution order with the whole U in view beside
    the inspector: a block being executed is open where that fits, else (the demo's U at
    1280x720: a block open left 4 to 10 of its 19 nodes out of view) it is the node marked
    current, folded, its part line naming the layer ("▸ relu1"); the inspector on the layer."""
    demo = demos.load("unet")
    flow = nfw.trace(demo.model, demo.inputs)
    expected = _expected_walk(flow)
    parent = {c.id: c.parent for c in flow.calls if c.parent is not None}
    out = tmp_path / "unet.html"
    nfw.NeuralFlowWidget.from_flow(flow).to_html(out)
    ARTIFACTS.mkdir(exist_ok=True)
    context, page, errors = open_offline(browser, out, 1280, 720)
    # the first view shows the model's own stages, closed
    shown = page.eval_on_selector_all(
        ".nfw-node[data-stage-id]", "els => els.map(e => e.dataset.stageId)"
    )
    assert {c.id for c in flow.calls if c.depth == 1} <= set(shown)
    play = page.get_by_role("button", name="Play", exact=True)
    play.click()
    page.get_by_role("button", name="Pause", exact=True).click()  # paused on the first step
    current = """() => [...document.querySelectorAll('[data-current]')].map(e => [e.dataset.stageId,
      e.querySelector('.nfw-part')?.textContent ?? null])"""
    where = "() => document.querySelector('.nfw-where').textContent.split(' · ')[1]"
    page.wait_for_function(f"() => ({current})().length === 1")
    seen, folded = [], 0
    for i in range(len(expected)):
        settle(page)
        step = page.evaluate(where)
        seen.append(step)
        [(sid, part)] = page.evaluate(current)
        group = parent.get(step)
        clusters = page.eval_on_selector_all(
            "[data-cluster-id]", "els => els.map(e => e.dataset.clusterId)"
        )
        if group is None:
            assert (sid, part, clusters) == (step, None, []), (step, sid, part, clusters)
        elif sid == step:  # its block open, and only that one
            assert clusters == [group], (step, clusters)
        else:  # its block folded, marked current, naming the layer
            assert (sid, part, clusters) == (group, f"▸ {step[len(group) + 1 :]}", []), step
            folded += 1
        assert page.locator(".nfw-ins-title b").text_content() == step
        got = page.evaluate(COVERED)
        check_view(got, f"step {step}", whole=True)
        if step == "dec1.conv1":  # the data coming in flows: the skip and up1 into the cat
            assert page.locator(".nfw-edge.nfw-live").count() >= 2
            page.screenshot(path=str(ARTIFACTS / "demo_unet_playback_dec1.png"))
        if i + 1 < len(expected):
            page.locator(".nfw-canvas").press("ArrowRight")
            page.wait_for_function(f"(b) => ({where})() !== b", arg=step)
    assert seen == expected
    assert folded > 0
    # Space plays and pauses; Esc ends playback and closes what it opened
    page.locator(".nfw-canvas").press("ArrowLeft")
    page.wait_for_function(f"() => ({where})() === {expected[-2]!r}")
    page.locator(".nfw-canvas").press(" ")
    assert page.get_by_role("button", name="Pause", exact=True).count() == 1
    page.locator(".nfw-canvas").press(" ")
    assert page.get_by_role("button", name="Play", exact=True).count() == 1
    page.locator(".nfw-canvas").press("Escape")
    page.wait_for_function("() => !document.querySelector('[data-current]')")
    assert page.locator(".nfw-transport").is_hidden()
    assert page.locator("[data-cluster-id]").count() == 0
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_presentation_mode_fills_the_window_with_larger_type_and_shows_the_keys(
    browser, unet_page, width, height
):
    name_px = """() => [...document.querySelectorAll('.nfw-node[data-kind="stage"] .nfw-t1')]
      .filter((t) => { const r = t.getBoundingClientRect();
        return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight; })
      .map((t) => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize))"""
    context, page, errors = open_offline(browser, unet_page, width, height)
    before = min(page.evaluate(name_px))
    page.get_by_role("button", name="Present", exact=True).click()
    settle(page)
    root = page.locator(".nfw-root")
    assert "nfw-present" in root.get_attribute("class")
    box = root.bounding_box()
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, width, height)
    during = page.evaluate(name_px)
    # the whole U in the window (a U cannot wrap into columns), as large as it fits there
    # (1.5x the least size where the window allows it; here the larger toolbar takes a
    # little height): names at least the least size, about as large as before
    assert len(during) == page.locator('.nfw-node[data-kind="stage"]').count(), during
    assert min(during) >= 12 and min(during) >= 0.95 * before, (during, before)
    bar = page.evaluate(
        """() => [...document.querySelector(".nfw-toolbar").children]
        .filter((c) => c.offsetParent)
        .map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; })"""
    )
    assert max(bar) - min(bar) < 8, "the toolbar wrapped"
    page.locator(".nfw-canvas").press("?")
    help_panel = page.get_by_role("dialog", name="Keyboard help")
    assert help_panel.is_visible() and "Space" in help_panel.text_content()
    shoot(page, f"demo_unet_present_{width}x{height}")
    page.locator(".nfw-canvas").press("Escape")  # the help first
    assert help_panel.is_hidden() and "nfw-present" in root.get_attribute("class")
    page.locator(".nfw-canvas").press("Escape")  # then the presentation
    settle(page)
    assert "nfw-present" not in root.get_attribute("class")
    assert page.get_by_role("button", name="Present", exact=True).count() == 1
    context.close()
    assert errors == []


def test_data_on_the_graph_puts_each_stage_view_on_its_node(browser, unet_page):
    """The Data toggle: every drawn stage and port carries its default view as a picture (the
    input image, feature maps, the predicted mask), from the page's baked replies."""
    nodes = """() => [...document.querySelectorAll('.nfw-node')].map((g) => [g.dataset.stageId,
      g.querySelector('.nfw-card').getBBox().height,
      g.querySelector("image.nfw-thumb")?.getAttribute("href")?.slice(0, 21) ?? null])"""
    pictured = ("input:0", "enc1", "pool1", "enc2", "output:0")
    context, page, errors = open_offline(browser, unet_page, 1280, 720)
    plain = page.evaluate(nodes)
    assert all(thumb is None for _, _, thumb in plain)
    toggle = page.get_by_role("button", name="Data on the graph")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    page.wait_for_function(
        "() => document.querySelectorAll('.nfw-node image.nfw-thumb').length >= 12",
        timeout=30_000,
    )
    # the pictures arrive one by one (the page's baked replies): these five have come
    page.wait_for_function(
        "(ids) => ids.every((id) => document.querySelector("
        "`.nfw-node[data-stage-id='${id}'] image.nfw-thumb`))",
        arg=list(pictured),
        timeout=30_000,
    )
    settle(page)
    got = page.evaluate(nodes)
    drawn = {sid: thumb for sid, _, thumb in got}
    for sid in pictured:
        assert sid in drawn and drawn[sid] == "data:image/png;base64", (sid, drawn.get(sid))
    shoot(page, "demo_unet_data_on_graph")
    # room for it: the card taller by the picture, or (the U too tall with them under its
    # words at 720 lines) as tall with the picture on its right
    taller = {sid: h for sid, h, _ in got}
    before = {s: h for s, h, _ in plain}
    boxes = page.evaluate(
        """(ids) => ids.map((id) => {
      const g = document.querySelector(`.nfw-node[data-stage-id='${id}']`);
      const card = g.querySelector('.nfw-card').getBoundingClientRect();
      const pic = g.querySelector('image.nfw-thumb').getBoundingClientRect();
      const words = g.querySelector('.nfw-t1').getBoundingClientRect();
      return [pic.top >= words.bottom - 1 || pic.left >= words.right - 1,
              pic.right <= card.right + 1 && pic.bottom <= card.bottom + 1];
    })""",
        list(pictured),
    )
    assert all(clear and inside for clear, inside in boxes), boxes
    assert taller["enc1"] > before["enc1"] + 50 or page.evaluate(COVERED)["out"] == []
    toggle.click()
    page.wait_for_function("() => !document.querySelector('image.nfw-thumb')", timeout=10_000)
    context.close()
    assert errors == []
