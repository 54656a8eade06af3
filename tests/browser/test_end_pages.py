"""Real runs in headless Chromium, offline pages (``to_html``) and the live widget (tests/browser/
live.py: a real ``NeuralFlowWidget`` answers the page, no Jupyter): the model's input and
output open like stages (the U-Net demo's image and mask, a classifier's class bars, GPT-2's
next token in words), every channel in pages of the grid, a comparison with a perturbed copy
(where the runs part, A | B | A - B), a re-run that keeps the view. Saves, at 1280x720 and
1024x768, test-artifacts/ends_input_<size>.png, ends_output_<size>.png, paged_grid_<size>.png,
compare_<size>.png, and classifier_bars.png, gpt2_next_token.png, compare_page.png."""

from __future__ import annotations

import copy
import os
import pathlib
import re
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_live, open_offline, push, search_and_open, shoot, state, tap

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SIZES = [(1280, 720), (1024, 768)]
#: [share of painted pixels, share of grey ones, distinct colours] of a canvas
PIXELS = """(c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let lit = 0, grey = 0; const seen = new Set();
  for (let i = 0; i < d.length; i += 4) { if (!d[i + 3]) continue; lit++;
    if (d[i] === d[i + 1] && d[i + 1] === d[i + 2]) grey++;
    seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]); }
  const n = d.length / 4; return [lit / n, grey / Math.max(1, lit), seen.size]; }"""


@pytest.fixture(scope="module")
def unet():
    from neural_flow_widget import demos

    return demos.load("unet")


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_unet_demo_input_opens_its_image_and_the_output_its_mask(
    browser, unet, tmp_path, width, height
):
    import neural_flow_widget as nfw

    path = nfw.NeuralFlowWidget(unet.model, unet.inputs).to_html(tmp_path / "unet.html")
    context, page, errors = open_offline(browser, path, width, height)
    tap(page, '[data-stage-id="input:0"]')
    image = page.locator('canvas[data-view-kind="image"]')
    image.wait_for(timeout=15_000)
    lit, grey, colours = image.evaluate(PIXELS)
    assert lit > 0.95 and grey > 0.99 and colours > 64  # the grey input, as it is
    assert page.locator(".nfw-ins-title span").text_content() == "model input · read as image"
    assert page.locator(".nfw-colorbar").count() == 0  # the colours themselves: no ramp
    assert "[data-stage-id" not in page.content().split('class="nfw-inspector"')[0][-50:]
    shoot(page, f"ends_input_{width}x{height}")
    tap(page, '[data-stage-id="output:0"]')
    mask = page.locator('canvas[data-view-kind="mask"]')
    mask.wait_for(timeout=15_000)
    lit, grey, colours = mask.evaluate(PIXELS)
    assert lit > 0.95 and grey < 0.05 and colours > 8  # probabilities on viridis
    bar = page.locator(".nfw-colorbar").first.text_content()
    assert bar.startswith("0") and bar.endswith("1")  # sigmoid: 0..1
    assert "sigmoid" in page.locator(".nfw-note").first.text_content()
    assert page.locator('[data-stage-id="output:0"].nfw-selected').count() == 1
    shoot(page, f"ends_output_{width}x{height}")
    context.close()
    assert errors == []


def test_a_classifier_output_shows_class_probability_bars(browser, tmp_path):
    import neural_flow_widget as nfw
    from neural_flow_widget import demos

    demo = demos.load("resnet")
    path = nfw.NeuralFlowWidget(demo.model, demo.inputs).to_html(tmp_path / "resnet.html")
    context, page, errors = open_offline(browser, path, 1280, 720)
    tap(page, '[data-stage-id="output:0"]')
    page.wait_for_selector(".nfw-bars")
    rows = page.eval_on_selector_all(
        ".nfw-bar-row",
        """rows => rows.map((r) => [r.querySelector('.nfw-bar-label').textContent,
             r.querySelector('.nfw-bar-value').textContent,
             r.querySelector('i').getBoundingClientRect().width])""",
    )
    with torch.no_grad():
        p = torch.softmax(demo.run()[0], 0)
    order = torch.argsort(p, descending=True).tolist()
    assert [label for label, _, _ in rows] == [f"class {c}" for c in order]
    assert [value for _, value, _ in rows] == [f"{float(p[c]):.1%}" for c in order]
    widths = [w for _, _, w in rows]
    assert widths == sorted(widths, reverse=True) and widths[0] > 100  # largest first
    shoot(page, "classifier_bars")
    context.close()
    assert errors == []


def test_gpt2_shows_the_next_token_and_the_ids_as_words_and_its_token_maps_labelled(browser):
    from word_models import HOSTILE, gpt2_inputs, small_gpt2, word_tokenizer

    import neural_flow_widget as nfw

    tokenizer = word_tokenizer()
    model = small_gpt2(len(tokenizer))
    inputs = gpt2_inputs(tokenizer)
    widget = nfw.NeuralFlowWidget(model, inputs, tokenizer=tokenizer, stages=2)
    context, page, errors = open_live(browser, widget)
    tap(page, '[data-stage-id="output:logits"]')
    page.wait_for_selector('.nfw-bars[data-view-kind="next token"]')
    labels = page.eval_on_selector_all(".nfw-bar-label", "els => els.map((e) => e.textContent)")
    with torch.no_grad():
        p = torch.softmax(model(**inputs).logits[0, -1], 0)
    top = torch.topk(p, 10).indices.tolist()
    assert labels == tokenizer.convert_ids_to_tokens(top)  # words, largest first
    shoot(page, "gpt2_next_token")
    tap(page, '[data-stage-id="input:input_ids"]')
    page.wait_for_selector(".nfw-chips")
    chips = page.eval_on_selector_all(".nfw-tok", "els => els.map((e) => e.lastChild.textContent)")
    assert chips == tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    assert HOSTILE in chips and page.locator("img").count() == 0  # tokens stay text
    # its two blocks a run, folded two levels deep ("GPT2Block x 2"): found by name
    assert page.locator('.nfw-node[data-kind="fold"][data-stage-id="transformer.h.0"]').count() == 1
    search_and_open(page, "transformer.h.0")
    tokens = page.locator('canvas[data-view-kind="tokens"]')
    tokens.wait_for(timeout=15_000)
    height = tokens.evaluate("(c) => c.getBoundingClientRect().height")
    assert height >= 32 * 12  # 32 tokens of 768 features: rows tall enough to label
    note = page.locator(".nfw-note").first.text_content()
    assert "rows: token · columns: feature" in note and not re.search(r"axes\s*,|: ,", note)
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_every_channel_in_pages_a_click_enlarges_one_and_the_panel_resizes(
    browser, unet, width, height
):
    import neural_flow_widget as nfw

    widget = nfw.NeuralFlowWidget(unet.model, unet.inputs)
    log: list = []
    context, page, errors = open_live(browser, widget, width=width, height=height, log=log)
    tap(page, '[data-stage-id="bottleneck"]')  # 64 channels: 4 pages of 16
    page.wait_for_selector('.nfw-pager[data-pages="4"]')
    for n in (1, 2, 3):
        page.locator('.nfw-pager button[aria-label="next page"]').click()
        page.wait_for_selector(f'.nfw-pager[data-page="{n}"]')
        if n == 1:
            shoot(page, f"paged_grid_{width}x{height}")
    grids = [reply["view"] for _, reply in log if reply["view"]["kind"] == "grid"]
    shown = [c for view in grids for c in view["channels"]]
    assert sorted(shown) == list(range(64))  # every channel, each once
    ranked = widget.flow.view("bottleneck", "grid", page=3).channels
    canvas = page.locator('canvas[data-view-kind="grid"]')
    box = canvas.bounding_box()
    canvas.click(position={"x": 10, "y": 10})  # the first tile of page 4
    page.wait_for_selector('canvas[data-view-kind="channel"]')
    assert log[-1][0]["channel"] == ranked[0] and log[-1][1]["view"]["channels"] == [ranked[0]]
    assert page.locator('.nfw-tab[aria-selected="true"]').text_content() == "channel"
    page.locator('.nfw-tab[data-view="grid"]').click()
    page.wait_for_selector('canvas[data-view-kind="grid"]')
    page.select_option('select[aria-label="colour scale"]', "tile")
    page.wait_for_selector("text=Each channel on its own colour range")
    grip = page.locator(".nfw-grip").bounding_box()
    before = page.locator(".nfw-inspector").bounding_box()["width"]
    page.mouse.move(grip["x"] + 4, grip["y"] + 200)
    page.mouse.down()
    page.mouse.move(grip["x"] - 120, grip["y"] + 200, steps=5)
    page.mouse.up()
    after = page.locator(".nfw-inspector").bounding_box()["width"]
    assert after == pytest.approx(before + 124, abs=3)
    wider = page.locator('canvas[data-view-kind="grid"]').bounding_box()["width"]
    assert wider > box["width"] + 60  # the tiles take the room
    context.close()
    assert errors == []


def _perturbed(model):
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.dec2.conv1.weight.mul_(1.5)  # the runs part at dec2.conv1
    return other


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_comparison_with_a_perturbed_copy_flags_where_the_runs_part_and_shows_a_b_and_a_minus_b(
    browser, unet, width, height
):
    import neural_flow_widget as nfw

    widget = nfw.NeuralFlowWidget(unet.model, unet.inputs)
    widget.compare(unet.inputs, model=_perturbed(unet.model))
    assert widget.comparison_result.first_divergent().id == "dec2.conv1"
    log: list = []
    context, page, errors = open_live(browser, widget, width=width, height=height, log=log)
    banner = page.locator('[data-banner="diverges"]')
    assert "Runs part at dec2.conv1" in banner.text_content()
    assert page.locator(".nfw-toolbar select").input_value() == "divergence"
    flagged = page.eval_on_selector_all(
        ".nfw-flag-diverges", "els => els.map((f) => f.closest('[data-stage-id]').dataset.stageId)"
    )
    assert flagged in (["dec2"], ["dec2.conv1"])  # the node that shows it
    fill = page.locator('[data-stage-id="enc1"] .nfw-card').evaluate("(r) => r.style.fill")
    assert fill == "rgb(226, 238, 232)"  # before the parting: no difference, pale "same"
    banner.click()
    page.wait_for_selector('.nfw-panel[data-run="diff"] canvas[data-view-kind="grid"]')
    assert state(page, "selected") == "dec2.conv1"
    for run in ("a", "b", "diff"):
        assert page.locator(f'.nfw-panel[data-run="{run}"] canvas').count() == 1
    runs = {req.get("run"): reply for req, reply in log if req["stage"] == "dec2.conv1"}
    assert runs["b"]["view"]["channels"] == runs[None]["view"]["channels"]  # B at A's tiles
    assert runs["diff"]["run"] == "diff" and runs["diff"]["view"]["signed"]
    assert "Differs" in page.locator("[data-versus]").text_content()
    page.locator('.nfw-panel[data-run="a"]').scroll_into_view_if_needed()
    shoot(page, f"compare_{width}x{height}")
    tap(page, '[data-stage-id="output:0"]')
    page.wait_for_selector('.nfw-panel[data-run="diff"] canvas[data-view-kind="mask"]')
    page.wait_for_selector(".nfw-panels-row" if width >= 1280 else ".nfw-panels")
    context.close()
    assert errors == []


def test_a_page_of_a_comparison_shows_the_divergence_and_a_b_offline(browser, unet, tmp_path):
    import neural_flow_widget as nfw

    widget = nfw.NeuralFlowWidget(unet.model, unet.inputs)
    widget.compare(unet.inputs, model=_perturbed(unet.model))
    path = widget.to_html(tmp_path / "compare.html")
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.locator('[data-banner="diverges"]').click()
    page.wait_for_selector('.nfw-panel[data-run="diff"] canvas')
    assert page.locator(".nfw-toolbar select").input_value() == "divergence"
    for run in ("a", "b", "diff"):
        assert page.locator(f'.nfw-panel[data-run="{run}"] canvas').count() == 1, run
    assert page.locator("[data-missing], .nfw-panel-error").count() == 0
    page.locator('.nfw-panel[data-run="a"]').scroll_into_view_if_needed()
    shoot(page, "compare_page")
    context.close()
    assert errors == []


def test_update_keeps_the_open_groups_and_the_selection(browser, unet):
    import neural_flow_widget as nfw

    widget = nfw.NeuralFlowWidget(unet.model, unet.inputs)
    log: list = []
    context, page, errors = open_live(browser, widget, log=log)
    tap(page, '[data-stage-id="enc2"] [data-action]')
    page.wait_for_selector('[data-cluster-id="enc2"]')
    tap(page, '[data-stage-id="enc2.conv2"]')
    page.wait_for_selector('canvas[data-view-kind="grid"]')
    assert state(page, "selected") == "enc2.conv2"
    widget.selected = state(page, "selected")
    before = widget.flow.summary("enc2.conv2")[0].mean
    asked = len(log)
    widget.update(unet.inputs.flip(-1))
    assert widget.flow.summary("enc2.conv2")[0].mean != before  # a new run
    push(page, "graph", widget.graph)
    page.wait_for_selector('canvas[data-view-kind="grid"]')
    assert page.locator('[data-cluster-id="enc2"]').count() == 1
    assert page.locator('[data-stage-id="enc2.conv2"].nfw-selected').count() == 1
    assert page.locator(".nfw-ins-title b").text_content() == "enc2.conv2"
    page.wait_for_function(f"() => window.__t.log.length > {asked}")
    assert log[-1][0]["stage"] == "enc2.conv2"
    assert log[-1][1]["summaries"][0]["stats"]["mean"] == pytest.approx(
        widget.flow.summary("enc2.conv2")[0].mean
    )
    context.close()
    assert errors == []
