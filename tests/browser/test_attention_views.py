"""Attention views beyond one heatmap, live in real Chromium for GPT-2 and BERT built from
configs (no download) with a word-level tokenizer trained here: the head view (a line per
weight, one colour per head, heads toggled, a token hovered keeps its lines), the model view
(every attention stage × every head; a click opens that layer and head), the colour scale
stated, and a weight read under the pointer with its decoded tokens."""

from __future__ import annotations

import os
import pathlib
import re
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_live
from word_models import SENTENCES, gpt2_inputs, small_gpt2, word_tokenizer

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def tokenizer():
    return word_tokenizer()


def gpt2_widget(tokenizer):
    model = small_gpt2(len(tokenizer))
    return nfw.NeuralFlowWidget(model, gpt2_inputs(tokenizer, 16), tokenizer=tokenizer), 2, 12


def bert_widget(tokenizer):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64,
    )  # fmt: skip
    model = BertModel(config).eval()
    encoded = tokenizer(SENTENCES[0], return_tensors="pt")
    return nfw.NeuralFlowWidget(model, dict(encoded), tokenizer=tokenizer), 3, 4


def open_attention(browser, widget, stage: str, size=(1280, 800)):
    context, page, errors = open_live(browser, widget, width=size[0], height=size[1])
    page.wait_for_selector("[data-stage-id]")
    page.evaluate(f"() => window.__t.model.set('selected', {stage!r})")
    page.wait_for_selector(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click(".nfw-tab[data-view=attention]")
    page.wait_for_selector('canvas[data-view-kind="attention"]', timeout=30_000)
    return context, page, errors


def attention_stages(widget) -> list[str]:
    return [widget.flow.calls[i].id for i in widget.graph["attention"]]


@pytest.mark.parametrize("make", [gpt2_widget, bert_widget], ids=["gpt2", "bert"])
def test_head_view_draws_a_line_per_weight_one_colour_per_head(browser, tokenizer, make):
    widget, _layers, heads = make(tokenizer)
    stage = attention_stages(widget)[0]
    context, page, errors = open_attention(browser, widget, stage)
    page.click('[data-attention-mode="heads"]')
    canvas = page.locator('canvas[data-view-kind="attention-head-view"]')
    canvas.wait_for()
    assert page.locator(".nfw-chip-btn").count() == heads  # a toggle per head
    lines = int(canvas.get_attribute("data-lines"))
    assert int(canvas.get_attribute("data-heads")) == heads and lines > 0
    q = widget.flow.attention(stage)[0].q_len
    assert lines <= heads * q * q
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"attention_head_view_{make.__name__}.png"))
    # a query token hovered keeps its own lines: at most one per key and head
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 6 + 16 * 2.5)
    focus = "() => document.querySelector('[data-view-kind=attention-head-view]').dataset.focus"
    page.wait_for_function(f"() => ({focus})() === 'q:2'")
    focused = int(canvas.get_attribute("data-lines"))
    assert 0 < focused <= heads * q and focused < lines
    page.mouse.move(5, 5)
    # shift-click: one head alone; "none": no line
    page.locator('.nfw-chip-btn[data-head="1"]').click(modifiers=["Shift"])
    assert canvas.get_attribute("data-heads") == "1"
    assert 0 < int(canvas.get_attribute("data-lines")) < lines
    page.get_by_role("button", name="none", exact=True).click()
    assert canvas.get_attribute("data-lines") == "0"
    context.close()
    assert errors == []


@pytest.mark.parametrize("make", [gpt2_widget, bert_widget], ids=["gpt2", "bert"])
def test_model_view_shows_every_layer_and_head_and_opens_one(browser, tokenizer, make):
    widget, layers, heads = make(tokenizer)
    stages = attention_stages(widget)
    assert len(stages) == layers
    context, page, errors = open_attention(browser, widget, stages[0])
    page.click('[data-attention-mode="model"]')
    page.wait_for_selector(".nfw-mv-cell", timeout=30_000)
    cells = page.eval_on_selector_all(".nfw-mv-cell", "els => els.map(e => e.dataset.cell)")
    assert sorted(cells) == sorted(f"{s}|{h}" for s in stages for h in range(heads))
    page.screenshot(path=str(ARTIFACTS / f"attention_model_view_{make.__name__}.png"))
    last = stages[-1]
    page.click(f'[data-cell="{last}|{heads - 1}"]')
    page.wait_for_function(
        f"() => document.querySelector('.nfw-ins-title b')?.textContent === {last!r}"
    )
    page.wait_for_selector('canvas[data-view-kind="attention"]')
    assert page.locator('select[aria-label="attention head"]').input_value() == str(heads - 1)
    assert page.evaluate("() => window.__t.model.get('selected')") == last
    context.close()
    assert errors == []


def test_the_scale_is_stated_and_a_weight_reads_with_its_decoded_tokens(browser, tokenizer):
    widget, _layers, _heads = gpt2_widget(tokenizer)
    stage = attention_stages(widget)[0]
    context, page, errors = open_attention(browser, widget, stage)
    # probabilities as they are by default (near-uniform attention looks uniform), or one
    # map's own range, said beside the colour bar
    page.wait_for_selector('.nfw-colorbar-what[data-scale="absolute"]')
    assert "0–1" in page.text_content('.nfw-colorbar-what[data-scale="absolute"]')
    scale = page.locator('select[aria-label="attention colour scale"]')
    scale.select_option("per map")
    page.wait_for_selector('.nfw-colorbar-what[data-scale="per map"]')
    assert "this map" in page.text_content('.nfw-colorbar-what[data-scale="per map"]')
    canvas = page.locator('canvas[data-view-kind="attention"]')
    x0, y0, cw, ch = (float(v) for v in canvas.get_attribute("data-cells").split(","))
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + x0 + 0.5 * cw, box["y"] + y0 + 1.5 * ch)  # query 1, key 0
    readout = page.locator(".nfw-readout")
    tokens = widget.tokens
    page.wait_for_function("() => document.querySelector('.nfw-readout').textContent.includes('→')")
    text = readout.text_content()
    weight = widget.flow.attention(stage)[0].weights.mean(0)[1, 0]
    assert f"query 1 “{tokens[1]}” → key 0 “{tokens[0]}”: {weight:.3f}" in text, text
    context.close()
    assert errors == []


def test_a_long_sequence_s_map_zooms_in_where_clicked_and_back(browser):
    """1,024 positions: the overview is block means (4x4 on the wire); a click zooms in ×4
    around the point, and the kernel answers that window at full resolution (the run kept
    2x2 block means: it runs the model again), every weight the model's own; "whole map"
    goes back."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=100, n_positions=1024, n_embd=64, n_layer=1, n_head=4)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 100, (1, 1024)).tolist()
    widget = nfw.NeuralFlowWidget(model, torch.tensor(ids))
    stage = attention_stages(widget)[0]
    log: list = []
    context, page, errors = open_live(browser, widget, width=1280, height=800, log=log)
    page.wait_for_selector("[data-stage-id]")
    page.evaluate(f"() => window.__t.model.set('selected', {stage!r})")
    page.wait_for_selector(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click(".nfw-tab[data-view=attention]")
    canvas = page.locator('canvas[data-view-kind="attention"]')
    canvas.wait_for()
    assert "block means of 4×4 positions" in page.text_content(".nfw-ins-body")
    x0, y0, cw, ch = (float(v) for v in canvas.get_attribute("data-cells").split(","))
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + x0 + 200.5 * cw, box["y"] + y0 + 200.5 * ch)  # row 200, col 200
    page.wait_for_selector(".nfw-zoom", timeout=30_000)
    q0, q1, k0, k1 = log[-1][0]["window"]  # 256 positions around position ~802 (200.5 × 4)
    assert q1 - q0 == k1 - k0 == 256
    assert abs((q0 + q1) / 2 - 802) <= 8 and abs((k0 + k1) / 2 - 802) <= 8
    zoom = page.text_content(".nfw-zoom")
    assert f"queries {q0}–{q1 - 1} × keys {k0}–{k1 - 1}" in zoom, zoom  # (even: whole blocks)
    body = page.text_content(".nfw-ins-body")
    assert "every position exact" in body and "block means" not in body
    # a weight under the pointer, against the model's own (eager attention, same weights)
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        own = model(torch.tensor(ids), output_attentions=True).attentions[0][0].mean(0)
    model.config._attn_implementation = "sdpa"
    x0, y0, cw, ch = (float(v) for v in canvas.get_attribute("data-cells").split(","))
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + x0 + 100.5 * cw, box["y"] + y0 + 200.5 * ch)  # row 200, col 100
    page.wait_for_function("() => document.querySelector('.nfw-readout').textContent.includes('→')")
    text = page.text_content(".nfw-readout")
    q, k, read = re.match(r"query (\d+) “[^”]*” → key (\d+) “[^”]*”: ([0-9.e-]+)", text).groups()
    q, k = int(q), int(k)
    assert abs(q - (q0 + 200)) <= 1 and abs(k - (k0 + 100)) <= 1, text  # (the cell pointed at)
    assert float(read) == pytest.approx(float(own[q, k]), rel=6e-3), (text, float(own[q, k]))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "attention_zoom.png"))
    page.get_by_role("button", name="whole map").click()
    page.wait_for_function("() => !document.querySelector('.nfw-zoom')")
    assert "block means of 4×4 positions" in page.text_content(".nfw-ins-body")  # (cached)
    context.close()
    assert errors == []


def test_offline_a_model_view_cell_opens_that_head_from_the_page(browser, tokenizer, tmp_path):
    """An exported page keeps each attention stage's mean map and every head's small map (its
    grid): a click on a model-view cell opens that layer at that head, drawn from the grid
    (16 tokens: exact), not an error; the head chooser offers every head too."""
    from live import open_offline, search_and_open, shoot

    widget, _, heads = gpt2_widget(tokenizer)
    stages = attention_stages(widget)
    path = tmp_path / "gpt2.html"
    widget.to_html(path)
    context, page, errors = open_offline(browser, path, 1280, 800)
    search_and_open(page, stages[0])
    page.wait_for_selector(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click(".nfw-tab[data-view=attention]")
    page.click('[data-attention-mode="model"]')
    page.wait_for_selector(".nfw-mv-cell", timeout=30_000)
    last = stages[-1]
    page.click(f'[data-cell="{last}|{heads - 1}"]')
    page.wait_for_function(
        f"() => document.querySelector('.nfw-ins-title b')?.textContent === {last!r}"
    )
    page.wait_for_selector('canvas[data-view-kind="attention"]', timeout=30_000)
    assert page.locator('select[aria-label="attention head"]').input_value() == str(heads - 1)
    note = page.locator(".nfw-inspector").inner_text()
    assert f"head {heads - 1}" in note and "not in this page" not in note, note
    shoot(page, "attention_model_view_offline_head")
    context.close()
    assert errors == []
