"""The logit lens and activation patching on the graph (issue 22), live in headless Chromium
(tests/browser/live.py: a real ``NeuralFlowWidget`` answers the page) on GPT-2 from a config
with a word-level tokenizer (tests/browser/word_models.py; one of its tokens is markup): each
block's chip says the token Python's own ``flow.readout`` puts first, at the last position and
at one picked in the legend; playback makes the chips appear block by block; the inspector's
readout tab is a row per position, its tokens text; ``widget.patch`` colours the patched stages
by the share of the gap Python's ``Patching`` says each closes, and the heat map's cells are
those shares. Screenshots in test-artifacts/: lens_gpt2_*.png, lens_playback_1280x720.png,
lens_readout_tab_1280x720.png, patching_*.png."""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import grad_models
from live import open_live, open_offline, push, settle, shoot, state

ROOT = pathlib.Path(__file__).resolve().parents[2]
VIRIDIS = json.loads((ROOT / "neural_flow_widget/capture/colormaps.json").read_text())["viridis"]
TOKENS = 12

#: each chip on the graph: the stage it reads (from its tooltip), its token id, whether fresh
CHIPS = """() => [...document.querySelectorAll('.nfw-chip-lens')].map((g) => [
  g.querySelector('title').textContent, Number(g.dataset.token),
  g.classList.contains('nfw-chip-fresh')])"""
FILLS = """() => Object.fromEntries([...document.querySelectorAll('.nfw-node[data-stage-id]')]
  .map((g) => [g.dataset.stageId, g.querySelector('.nfw-card').style.fill]))"""
#: the colour of the heat map's cell (row, column) at its centre, from the canvas itself
CELL = """([r, c, cols]) => {
  const cv = document.querySelector('canvas[data-view-kind="patching"]');
  const k = cv.width / cv.clientWidth, cell = (cv.clientWidth - 96) / cols;
  const d = cv.getContext('2d').getImageData(Math.round((96 + (c + 0.5) * cell) * k),
    Math.round((r + 0.5) * 22 * k), 1, 1).data;
  return [d[0], d[1], d[2]]; }"""


def _widget():
    pytest.importorskip("transformers")
    import word_models

    import neural_flow_widget as nfw

    tok = word_models.word_tokenizer()
    model, _, _ = grad_models.gpt2(vocab=len(tok), tokens=TOKENS)
    inputs = word_models.gpt2_inputs(tok, TOKENS)
    return nfw.NeuralFlowWidget(model, inputs, tokenizer=tok), model, inputs, tok


def _stage(title: str) -> str:
    found = re.match(r"Logit lens(?: so far)?: (\S+?)(?:'s output|,)", title)
    assert found, title
    return found.group(1)


def _chips(page) -> dict[str, tuple[int, bool]]:
    return {_stage(t): (token, fresh) for t, token, fresh in page.evaluate(CHIPS)}


def _near(got, share: float, tol: int = 4) -> bool:
    want = VIRIDIS[round(min(1.0, max(0.0, share)) * 255)]
    return max(abs(a - b) for a, b in zip(got, want)) <= tol


def _rgb(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.removeprefix("rgb(").removesuffix(")").split(","))


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_the_logit_lens_chips_say_pythons_readout(browser, width, height):
    widget, _, _, tok = _widget()
    flow = widget.flow
    context, page, errors = open_live(browser, widget, width=width, height=height)
    chips = _chips(page)
    assert chips, "no chip drawn"
    for stage, (token, _) in chips.items():
        assert stage.startswith("transformer.h."), stage  # the blocks of the residual stream only
        assert token == flow.readout(stage, k=1).top(-1)[0][0], stage  # the oracle: Python's lens
    legend = page.locator('[data-legend="lens"]').text_content()
    assert "next token" in legend and "after" in legend
    # the blocks' stack unfolded: a chip on each block, each Python's
    page.locator('.nfw-stacked [data-key^="u:"]').click()
    page.wait_for_function("() => document.querySelectorAll('.nfw-chip-lens').length === 4")
    settle(page)
    chips = _chips(page)
    assert sorted(chips) == [f"transformer.h.{k}" for k in range(4)], chips
    for stage, (token, _) in chips.items():
        assert token == flow.readout(stage, k=1).top(-1)[0][0], stage
    shoot(page, f"lens_gpt2_{width}x{height}", pointer_away=True)
    # a position picked in the legend: every chip says that position's readout
    page.wait_for_function("() => document.querySelectorAll('.nfw-lens-pick option').length > 2")
    page.select_option(".nfw-lens-pick", "4")
    page.wait_for_function(
        """() => [...document.querySelectorAll('.nfw-chip-lens title')]
          .every((t) => t.textContent.includes('after position 4'))"""
    )
    for stage, (token, _) in _chips(page).items():
        assert token == flow.readout(stage, k=1).top(4)[0][0], stage
    label = page.eval_on_selector(".nfw-lens-pick", "s => s.selectedOptions[0].textContent")
    assert label == f"4 · ‘{tok.convert_ids_to_tokens(int(widget._inputs['input_ids'][0, 4]))}’"
    if width == 1280:
        shoot(page, "lens_gpt2_position4_1280x720", pointer_away=True)
    context.close()
    assert errors == []


def test_playback_forms_the_prediction_block_by_block_and_the_readout_tab(browser):
    widget, _, _, _ = _widget()
    flow = widget.flow
    context, page, errors = open_live(browser, widget, width=1280, height=720)
    push(page, "playback", {"at": 0, "playing": False, "speed": 1.0, "backward": False})
    first = state(page, "playback")
    stages, chips = [], []
    for at in range(first["steps"]):
        if at:
            push(page, "playback", {"at": at, "playing": False, "speed": 1.0, "backward": False})
        stages.append(state(page, "playback")["stage"])
        chips.append(_chips(page))
        if stages[-1] == "transformer.h.2.attn":
            shoot(page, "lens_playback_1280x720", pointer_away=True)
    # the oracle: block k has returned (its prediction formed) once its last sublayer, the
    # MLP, has run: from that step its chip is on the graph, the newest, until the next block's
    blocks = [f"transformer.h.{k}" for k in range(4)]
    formed = [stages.index(f"{b}.mlp") for b in blocks]
    assert not any(chips[: formed[0]]), chips[: formed[0]]  # before: nothing predicted yet
    for k, b in enumerate(blocks):
        upto = formed[k + 1] if k + 1 < len(blocks) else stages.index("transformer.ln_f")
        for at in range(formed[k], upto):
            assert chips[at] == {b: (flow.readout(b, k=1).top(-1)[0][0], True)}, (
                stages[at],
                chips[at],
            )
    push(page, "playback", {"at": -1, "playing": False, "speed": 1.0, "backward": False})
    # the inspector's readout tab: a row per position, the tokens as text
    push(page, "selected", "transformer.h.3")
    page.locator('.nfw-tab[data-view="readout"]').click()
    page.wait_for_selector(".nfw-readout-row")
    settle(page)
    rows = page.locator(".nfw-readout-row")
    assert rows.count() == TOKENS
    readout = flow.readout("transformer.h.3", k=5)
    firsts = page.eval_on_selector_all(
        ".nfw-readout-row",
        "rs => rs.map((r) => Number(r.querySelector('[data-token]').dataset.token))",
    )
    assert firsts == [readout.top(i)[0][0] for i in range(TOKENS)]
    import word_models

    assert page.locator(".nfw-readout-pos b").nth(5).text_content() == word_models.HOSTILE
    assert page.locator(".nfw-readout img").count() == 0  # markup stays text
    shoot(page, "lens_readout_tab_1280x720", pointer_away=True)
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_patching_colours_the_graph_and_its_heat_map_by_pythons_shares(
    browser, width, height, tmp_path
):
    import torch

    widget, model, inputs, _ = _widget()
    clean = inputs["input_ids"]
    corrupted = clean.clone()
    corrupted[0, 3] = (corrupted[0, 3] + 7) % model.config.vocab_size
    with torch.no_grad():
        answer = int(model(clean).logits[0, -1].argmax())

    def metric(out):
        return torch.log_softmax(out.logits[0, -1], -1)[answer]

    stages = ["transformer.wte", "transformer.h.0.attn", "transformer.h.0.mlp", "transformer.h.0",
              "transformer.h.1", "transformer.h.2", "transformer.h.3"]  # fmt: skip
    context, page, errors = open_live(browser, widget, width=width, height=height)
    found = widget.patch({"input_ids": corrupted}, metric, stages)
    push(page, "patching", widget.patching)
    assert page.locator(".nfw-toolbar select").input_value() == "patching"  # it came: chosen
    whole = (found.scores - found.corrupted) / (found.clean - found.corrupted)
    fills = page.evaluate(FILLS)
    drawn = [s for s in stages if fills.get(s)]
    assert len(drawn) >= 3, fills
    for s in drawn:  # the oracle: Python's share of the gap, on the legend's 0..1 ramp
        share = float(whole[stages.index(s)])
        assert _near(_rgb(fills[s]), share), (s, fills[s], share)
    assert fills["transformer.h.0.ln_1"] == ""  # not patched: no fill of the ramp
    legend = page.locator(".nfw-legend").text_content()
    assert "share of the gap restored" in legend
    push(page, "selected", "transformer.h.0.attn")
    page.wait_for_selector('canvas[data-view-kind="patching"]')
    settle(page)
    texts = "es => es.map((e) => e.textContent)"
    facts = dict(zip(page.eval_on_selector_all(".nfw-patching .nfw-stat-k", texts),
                     page.eval_on_selector_all(".nfw-patching .nfw-stat-v", texts)))  # fmt: skip
    assert facts["restored, whole output"] == f"{round(float(whole[1]) * 100)}%", facts
    restored = found.restored()
    assert restored.shape == (len(stages), TOKENS)
    for r in range(len(stages)):
        for c in range(TOKENS):
            got = page.evaluate(CELL, [r, c, TOKENS])
            assert _near(got, float(restored[r, c])), (stages[r], c, got, float(restored[r, c]))
    shoot(page, f"patching_{width}x{height}", pointer_away=True)
    context.close()
    assert errors == []
    if width != 1280:
        return
    # an exported page carries the patching: the same colours, the same heat map, offline
    context, page, errors = open_offline(browser, widget.to_html(tmp_path / "p.html"), 1280, 720)
    assert page.locator(".nfw-toolbar select").input_value() == "patching"
    assert page.evaluate(FILLS) == fills
    page.locator(".nfw-node[data-stage-id='transformer.h.0.attn']").click()
    page.wait_for_selector('canvas[data-view-kind="patching"]')
    settle(page)
    for r, c in ((0, 3), (len(stages) - 1, TOKENS - 1)):
        assert _near(page.evaluate(CELL, [r, c, TOKENS]), float(restored[r, c]))
    context.close()
    assert errors == []
