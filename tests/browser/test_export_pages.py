"""Offline pages of GPT-2 small (GPT2Config() defaults, random weights, 128 tokens) in headless
Chromium at 1280x720, opened from disk with the network refused: within the default 8 MB the
model view shows every layer × every head (no "…"), and a weight read under the pointer is
the run's own (the page stores maps as 16-bit codes); a 4 MB page says what it left out and
why: in a note, on a node with Data on, and in the inspector, with the budget that keeps
everything. Saves test-artifacts/offline_gpt2_1280.png, offline_gpt2_model_view_1280.png,
offline_gpt2_model_view_per_map_1280.png and offline_gpt2_4mb_1280.png."""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_offline, search_and_open, shoot

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    widget = nfw.NeuralFlowWidget(model, torch.randint(0, 50257, (1, 128)))
    folder = tmp_path_factory.mktemp("pages")
    return (
        widget,
        widget.to_html(folder / "gpt2.html"),
        widget.to_html(folder / "gpt2_4mb.html", budget_bytes=4_000_000),
    )


def test_the_offline_gpt2_small_model_view_shows_every_layer_and_head(browser, gpt2):
    widget, path, _ = gpt2
    assert path.stat().st_size <= 8_000_000
    stages = [widget.flow.calls[i].id for i in widget.graph["attention"]]
    assert len(stages) == 12
    context, page, errors = open_offline(browser, path, 1280, 720)
    shoot(page, "offline_gpt2_1280")
    search_and_open(page, stages[-1])
    page.click(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click('[data-attention-mode="model"]')
    page.wait_for_selector("[data-cell]", timeout=30_000)
    cells = page.eval_on_selector_all("[data-cell]", "(els) => els.map((e) => e.dataset.cell)")
    assert sorted(cells) == sorted(f"{s}|{h}" for s in stages for h in range(12))
    assert page.locator(".nfw-mv-empty").count() == 0  # no layer without its maps
    shoot(page, "offline_gpt2_model_view_1280")
    page.select_option('select[aria-label="attention colour scale"]', "per map")
    page.wait_for_selector("[data-cell]")
    shoot(page, "offline_gpt2_model_view_per_map_1280")  # (random weights: near-uniform)
    # a weight under the pointer is the run's own, decoded from the page's codes
    search_and_open(page, stages[0])
    page.click(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click('[data-attention-mode="map"]')  # the mean over heads
    canvas = page.locator('canvas[data-view-kind="attention"]')
    canvas.wait_for(timeout=30_000)
    x0, y0, cw, ch = (float(v) for v in canvas.get_attribute("data-cells").split(","))
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + x0 + 0.5 * cw, box["y"] + y0 + 5.5 * ch)  # query 5, key 0
    page.wait_for_function("() => document.querySelector('.nfw-readout').textContent.includes('→')")
    text = page.text_content(".nfw-readout")
    shown = float(re.search(r"query 5 .*→ key 0 [^:]*: ([\d.]+)", text).group(1))
    own = float(widget.flow.attention(stages[0])[0].weights.mean(0)[5, 0])
    assert abs(shown - own) < 6e-4, (text, own)
    context.close()
    assert errors == []


#: the canvas' top and the toolbar's bottom (px)
CANVAS_TOP = """() => [document.querySelector(".nfw-canvas").getBoundingClientRect().top,
  document.querySelector(".nfw-toolbar").getBoundingClientRect().bottom]"""


def test_a_page_over_its_budget_says_what_it_left_out_and_why(browser, gpt2):
    widget, _, path = gpt2
    assert path.stat().st_size <= 4_000_000
    page_text = path.read_text()
    replies = json.loads(page_text.split('id="nfw-replies">', 1)[1].split("</script>", 1)[0])
    left_out = [n for n, r in replies.items() if not r["msg"]["ok"]]
    assert left_out
    for stage in (widget.flow.calls[i].id for i in widget.graph["attention"]):
        assert replies[stage]["msg"]["ok"]  # every attention map is still there
    budget = re.search(r"budget_bytes=([\d_]+)", replies[left_out[0]]["msg"]["error"]).group(1)
    context, page, errors = open_offline(browser, path, 1280, 720)
    # the page-wide note: folded into the title's toggle (the graph keeps the canvas's height),
    # said in its tip, shown as a banner when pressed
    notes = page.locator('[data-banner="notes"]')
    toggle = page.locator(".nfw-notes-toggle")
    assert notes.is_hidden() and "over its 4 MB budget" in toggle.get_attribute("title")
    canvas = page.evaluate(CANVAS_TOP)
    assert canvas[0] == canvas[1], canvas  # the canvas right under the toolbar
    toggle.click()
    notes.wait_for(state="visible")
    note = notes.text_content()
    assert "over its 4 MB budget" in note and f"budget_bytes={budget}" in note
    assert page.evaluate(CANVAS_TOP)[0] >= canvas[0] + notes.bounding_box()["height"] - 1
    toggle.click()
    notes.wait_for(state="hidden")
    assert page.evaluate(CANVAS_TOP) == canvas
    # on the node: with Data on, a drawn stage that was left out says so where its picture goes
    page.get_by_role("button", name="Data on the graph").click()
    drawn = page.eval_on_selector_all(
        ".nfw-node[data-stage-id]", "(els) => els.map((e) => e.dataset.stageId)"
    )
    shown = [n for n in drawn if n in left_out]
    stage = shown[0] if shown else left_out[0]
    if not shown:  # (the first view drew none of them: open one)
        search_and_open(page, stage)
    node = page.locator(f'.nfw-node[data-stage-id="{stage}"] .nfw-thumb-missing')
    node.wait_for(timeout=30_000)
    assert "Not in this page: over its 4 MB budget" in re.sub(r"\s+", " ", node.text_content())
    # where the slot is small, fewer words, never cut ("Not in this …")
    said = page.eval_on_selector_all(
        ".nfw-thumb-missing text", "(els) => els.map((e) => e.textContent)"
    )
    assert said and not [t for t in said if t.endswith("…")], said
    shoot(page, "offline_gpt2_4mb_1280")
    # in the inspector: what, why, and the budget that keeps it
    search_and_open(page, stage)
    page.wait_for_selector(".nfw-inspector [data-missing]")
    words = page.text_content(".nfw-inspector [data-missing]")
    assert words.startswith("Not in this page: over its 4 MB budget"), words
    assert f"budget_bytes={budget}" in words
    assert page.locator(".nfw-inspector button", has_text="Retry").count() == 0
    context.close()
    assert errors == []
