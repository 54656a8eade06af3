"""Pages of runs that went wrong, made by ``NeuralFlowWidget(model, x).to_html``, in headless
Chromium at 1280x720 and 1024x768: the NaN badge and banner (clicking it goes to the first NaN),
the partial graph of a forward that raised (the failing stage marked, its message in the
inspector), the meta device's note, a NaN made between stages (the banner names the forward and
the line that made it). Saves test-artifacts/{nonfinite,failure}_<size>.png,
test-artifacts/notes_1024x768.png and test-artifacts/nonfinite_origin{,_inspector}_1280x720.png."""

from __future__ import annotations

import inspect
import os
import pathlib
import sys
import warnings

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import problem_models
from live import open_offline, settle, shoot

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SIZES = [(1280, 720), (1024, 768)]

#: the share of a canvas painted in a colour (the NaN colour of colormaps.json: magenta)
SHARE = """([c, rgb]) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 0; i < d.length; i += 4)
    if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2]) n++;
  return n / (d.length / 4); }"""

#: [top, bottom] of the banners, and the tops of the drawn nodes
BOXES = """() => { const b = document.querySelector('.nfw-banners').getBoundingClientRect();
  return [b.top, b.bottom, [...document.querySelectorAll('.nfw-node')].map(
    (n) => n.getBoundingClientRect().top)]; }"""


def _page(tmp_path, name, make, **options):
    import neural_flow_widget as nfw

    model, x = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        widget = nfw.NeuralFlowWidget(model, x, **options)
    path = widget.to_html(tmp_path / f"{name}.html")
    return widget, path, [str(w.message) for w in caught]


def _clear_of_banners(page):
    top, bottom, nodes = page.evaluate(BOXES)
    assert bottom > top  # shown
    assert all(t >= bottom - 12 for t in nodes), (bottom, nodes)  # (a badge may straddle)


def _within(box: dict, area: dict) -> bool:
    """Whether a box lies inside an area (a pixel's slack)."""
    return all(
        area[p] - 1 <= box[p] and box[p] + box[s] <= area[p] + area[s] + 1
        for p, s in (("x", "width"), ("y", "height"))
    )


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_nan_page_badges_the_stage_and_its_banner_goes_there(tmp_path, browser, width, height):
    from neural_flow_widget.capture.image import NONFINITE

    widget, path, _ = _page(tmp_path, "nan", problem_models.nan_net, stages=1)
    first = widget.flow.nonfinite[0]
    assert first == "block.log"
    context, page, errors = open_offline(browser, path, width, height)
    # block is drawn collapsed: it carries the badge of the log inside it, and of its own output.
    block = page.locator('.nfw-node[data-stage-id="block"]')
    assert block.get_attribute("data-nonfinite") == "3"  # block.log, block.norm, block
    assert block.get_attribute("data-nonfinite-first") == ""
    assert page.locator('.nfw-node[data-stage-id="head"][data-nonfinite]').count() == 1
    assert page.locator('[data-stage-id="stem"][data-nonfinite]').count() == 0
    banner = page.locator('[data-banner="nonfinite"]')
    assert "First NaN/Inf at block.log" in banner.text_content()
    _clear_of_banners(page)
    # The order edge of the bias that receives no data.
    assert page.locator('.nfw-edge[data-edge-kind="order"][data-dst="pos"]').count() == 1
    assert "runs after (no data)" in page.locator(".nfw-legend").text_content()

    page.get_by_role("button", name="First NaN/Inf at block.log", exact=False).click()
    page.wait_for_selector('.nfw-node.nfw-selected[data-stage-id="block.log"]', timeout=10_000)
    assert page.locator('[data-cluster-id="block"]').count() == 1  # expanded to show it
    assert page.locator(".nfw-ins-title b").text_content() == "block.log"
    canvas = page.locator('canvas[data-view-kind="grid"]')
    canvas.wait_for(timeout=10_000)
    assert page.evaluate(SHARE, [canvas.element_handle(), NONFINITE[1].tolist()]) > 0.05
    assert page.locator(".nfw-colorbar [data-swatch]").all_text_contents() == ["NaN"]
    summary = widget.flow.summary("block.log")[0]  # the log of the negatives: NaN
    assert summary.nan > 0 and summary.posinf == summary.neginf == 0
    note = page.locator("[data-nonfinite-note]").text_content()
    assert f"{summary.nan:,} NaN of {summary.numel:,} values" in note, note
    settle(page)  # the view moves to the stage: centred, or the whole graph (it too) in view
    area = page.locator(".nfw-canvas").bounding_box()
    boxes = [n.bounding_box() for n in page.locator(".nfw-node").all()]
    node = page.locator('[data-stage-id="block.log"]').bounding_box()
    assert _within(node, area)
    axes = (("x", "width"), ("y", "height"))
    off = [abs(node[p] + node[s] / 2 - area[p] - area[s] / 2) for p, s in axes]
    assert max(off) < 40 or all(_within(b, area) for b in boxes), (off, node, area)
    shoot(page, f"nonfinite_{width}x{height}", pointer_away=True)
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_failure_page_shows_the_partial_graph_and_the_stage_that_raised(
    tmp_path, browser, width, height
):
    import neural_flow_widget as nfw

    widget, path, warned = _page(tmp_path, "failure", problem_models.shape_bug)
    assert isinstance(widget.error, nfw.TraceError)
    assert len(warned) == 1 and "classifier.0" in warned[0]
    context, page, errors = open_offline(browser, path, width, height)
    failed = page.locator(".nfw-node[data-failed]")
    assert failed.count() == 1
    assert failed.get_attribute("data-stage-id") == "classifier.0"
    assert page.locator('[data-stage-id="classifier.2"]').count() == 0  # it never ran
    banner = page.locator('[data-banner="failure"]').text_content()
    assert "The forward raised at classifier.0" in banner
    assert "mat1 and mat2 shapes cannot be multiplied" in banner
    _clear_of_banners(page)

    page.get_by_role("button", name="Show the failing stage classifier.0").click()
    page.wait_for_selector('.nfw-node.nfw-selected[data-stage-id="classifier.0"]')
    trace = page.locator(".nfw-trace")
    trace.wait_for(timeout=10_000)
    assert trace.text_content() == widget.flow.failure.message
    assert trace.evaluate("(e) => getComputedStyle(e).userSelect") == "text"
    shoot(page, f"failure_{width}x{height}", pointer_away=True)
    context.close()
    assert errors == []


def test_meta_page_says_there_is_no_data(tmp_path, browser):
    widget, path, _ = _page(tmp_path, "meta", problem_models.meta_net)
    assert widget.error is None
    context, page, errors = open_offline(browser, path, 1024, 768)
    page.locator(".nfw-notes-toggle").click()  # the notes, folded into the title's toggle
    notes = page.locator('[data-banner="notes"]')
    notes.wait_for(state="visible")
    assert "meta device" in notes.text_content() and "no values" in notes.text_content()
    assert page.locator('[data-banner="nonfinite"], [data-banner="failure"]').count() == 0
    assert page.locator(".nfw-node[data-nonfinite], .nfw-node[data-failed]").count() == 0
    _clear_of_banners(page)
    page.locator('[data-stage-id="stem"]').click()  # its inspector: shapes, no values
    page.wait_for_selector("text=No values: the meta device holds shapes only.", timeout=10_000)
    assert page.locator(".nfw-stat-k").all_text_contents() == ["shape", "elements"]
    shoot(page, "notes_1024x768", pointer_away=True)
    context.close()
    assert errors == []


def test_a_nan_made_in_a_parents_forward_is_named_by_its_forward_and_line(tmp_path, browser):
    widget, path, warned = _page(tmp_path, "origin", problem_models.conv_net, stages=1)
    assert warned == []  # (no numpy warning from the NaN views either)
    flow = widget.flow
    assert flow.nonfinite[0] == "block4.0"
    lines, first = inspect.getsourcelines(problem_models.ConvNet.forward)
    line = first + next(i for i, text in enumerate(lines) if "x / (x - x)" in text)
    said = f"produced between block3 and block4, in ConvNet.forward (line {line}: x / (x - x))"
    assert flow.nonfinite_origin.describe() == said
    context, page, errors = open_offline(browser, path, 1280, 720)
    banner = page.locator('[data-banner="nonfinite"]')
    text = banner.text_content()
    # the pill, then the words of flow.nonfinite_origin.describe()
    assert text.startswith(f"NaN/Inf{said[0].upper()}{said[1:]} · block4.0 received it first · ")
    label = banner.get_attribute("aria-label")
    assert label.startswith(f"NaN/Inf {said}; block4.0 received it first"), label
    assert "First NaN/Inf at" not in text  # (block4.0 did not make it)
    box = banner.bounding_box()
    assert box["height"] < 48, box  # one line at 1280 px, two at most
    _clear_of_banners(page)
    # block4 is drawn collapsed: its badge says the first NaN/Inf is inside
    assert page.locator('.nfw-node[data-stage-id="block4"][data-nonfinite-first]').count() == 1
    assert page.locator('.nfw-node[data-stage-id="block3"][data-nonfinite]').count() == 0
    shoot(page, "nonfinite_origin_1280x720", pointer_away=True)
    banner.click()
    page.wait_for_selector('.nfw-node.nfw-selected[data-stage-id="block4.0"]', timeout=10_000)
    facts = page.locator(".nfw-meta").text_content()
    assert f"already in its input: {said}" in facts, facts
    shoot(page, "nonfinite_origin_inspector_1280x720", pointer_away=True)
    context.close()
    assert errors == []
