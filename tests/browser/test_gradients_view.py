"""The backward pass on the graph (issue 22), live in headless Chromium (tests/browser/live.py:
a real ``NeuralFlowWidget`` with ``loss=`` answers the page): a deep sigmoid MLP's vanishing
gradient said in a banner that goes to the stage and colours the graph by gradient norm (each
node at its own norm on the log ramp, each edge in its source's colour), the inspector on the
stage's gradient with its norm; a NaN that entered the backward pass said where; GPT-2 from a
config coloured by gradient norm and walked backwards. Screenshots in test-artifacts/:
grad_vanishing_*.png, grad_nan_1280x720.png, grad_gpt2_*.png, grad_backward_1280x720.png."""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import grad_models
from live import open_live, push, settle, shoot, state

ROOT = pathlib.Path(__file__).resolve().parents[2]
VIRIDIS = json.loads((ROOT / "neural_flow_widget/capture/colormaps.json").read_text())["viridis"]

#: each drawn stage's card fill and the edges' strokes, from the page
FILLS = """() => Object.fromEntries([...document.querySelectorAll('.nfw-node[data-stage-id]')]
  .map((g) => [g.dataset.stageId, g.querySelector('.nfw-card').style.fill]))"""
STROKES = """() => [...document.querySelectorAll('.nfw-edge-stroked')]
  .map((e) => [e.dataset.src, e.style.stroke])"""


def _rgb(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.removeprefix("rgb(").removesuffix(")").split(","))


def _widget(make):
    import neural_flow_widget as nfw

    model, x, loss = make()
    return nfw.NeuralFlowWidget(model, x, loss=loss)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_a_vanishing_gradient_is_said_shown_and_coloured(browser, width, height):
    widget = _widget(grad_models.sigmoid_mlp)
    flow = widget.graph["gradient_flow"]
    at = widget.graph["calls"][flow["at"]]["id"]
    context, page, errors = open_live(browser, widget, width=width, height=height)
    options = page.eval_on_selector_all(
        ".nfw-toolbar select option:not([hidden])", "os => os.map((o) => o.value)"
    )
    assert "grad" in options and "patching" not in options and "divergence" not in options
    banner = page.locator('[data-banner="gradient-vanishing"]')
    text = banner.text_content()
    assert text.startswith("gradient vanishes") and f"by stage '{at}'" in text, text
    banner.click()
    page.wait_for_selector('.nfw-section[data-of="grad"]')
    settle(page)
    assert state(page, "selected") == at
    assert page.locator(".nfw-toolbar select").input_value() == "grad"
    # the inspector: the gradient's statistics, its exact norm the graph's
    keys = page.eval_on_selector_all(".nfw-stat-k", "els => els.map((e) => e.textContent)")
    values = page.eval_on_selector_all(".nfw-stat-v", "els => els.map((e) => e.textContent)")
    norm = float(dict(zip(keys, values))["L2 norm"])
    assert norm == pytest.approx(widget.graph["grad"][widget.flow.stage(at).index], rel=1e-3)
    assert page.locator('.nfw-of[data-of="grad"][aria-pressed="true"]').count() == 1
    shoot(page, f"grad_vanishing_{width}x{height}", pointer_away=True)
    # the blocks, drawn as one (a stack at the stage), unfolded: every block's Linear coloured
    # at its own norm, the ramp rising from the input to the loss
    page.locator('.nfw-stacked [data-key^="u:"]').click()
    page.wait_for_selector('.nfw-node[data-stage-id="blocks.0"]')
    settle(page)
    shoot(page, f"grad_vanishing_unfolded_{width}x{height}", pointer_away=True)
    fills = page.evaluate(FILLS)
    blocks = [f"blocks.{i}" for i in range(12)]
    drawn = [s for s in blocks if fills.get(s)]
    assert drawn == blocks, fills
    lum = [sum(w * c for w, c in zip((0.299, 0.587, 0.114), _rgb(fills[s]))) for s in drawn]
    assert lum == sorted(lum) and lum[-1] - lum[0] > 60, list(
        zip(drawn, lum)
    )  # viridis: dark->light
    strokes = page.evaluate(STROKES)
    assert strokes
    for src, stroke in strokes:  # each edge in its source's colour (a light one darkened)
        fill = _rgb(fills[src])
        light = 0.299 * fill[0] + 0.587 * fill[1] + 0.114 * fill[2] > 150
        assert _rgb(stroke) == tuple(round(c * (0.72 if light else 1)) for c in fill), (src, stroke)
    legend = page.locator(".nfw-legend").text_content()
    assert "gradient norm" in legend and "log scale" in legend
    context.close()
    assert errors == []


def test_where_nan_entered_the_backward_pass_is_said_and_flagged(browser):
    widget = _widget(grad_models.nan_chain)
    context, page, errors = open_live(browser, widget, width=1280, height=720)
    banner = page.locator('[data-banner="gradient-nonfinite"]')
    assert "NaN/Inf entered the backward pass at b" in banner.text_content()
    flags = page.eval_on_selector_all(
        ".nfw-flag",
        """els => els.map((f) => [f.closest('[data-stage-id]').dataset.stageId,
          f.querySelector('text').textContent])""",
    )
    assert ["b", "1st NaN/Inf grad"] in flags and ["a", "NaN/Inf grad"] in flags, flags
    banner.click()
    page.wait_for_selector('.nfw-section[data-of="grad"]')
    assert state(page, "selected") == "b"
    assert page.locator("[data-nonfinite-note]").count() >= 1  # its gradient's NaN counted
    fills = page.evaluate(FILLS)
    assert fills["b"] == fills["a"] != fills["c"]  # the NaN colour, off the ramp
    shoot(page, "grad_nan_1280x720", pointer_away=True)
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_gpt2_coloured_by_gradient_and_walked_backwards(browser, width, height):
    pytest.importorskip("transformers")
    widget = _widget(grad_models.gpt2)
    context, page, errors = open_live(browser, widget, width=width, height=height)
    page.select_option(".nfw-toolbar select", "grad")
    settle(page)
    fills = page.evaluate(FILLS)
    index = {c["id"]: i for i, c in enumerate(widget.graph["calls"])}
    # the oracle: a node's colour is viridis at its norm's place on the legend's log ramp
    ends = "r => [r.firstChild.textContent, r.lastChild.textContent]"
    lo, hi = (float(v.lstrip("≤≥")) for v in page.eval_on_selector(".nfw-legend-ramp", ends))
    for stage in ("transformer.wte", "transformer.h.0.ln_1"):
        g = widget.graph["grad"][index[stage]]
        t = min(1.0, max(0.0, (_log(g) - _log(lo)) / (_log(hi) - _log(lo))))
        want = VIRIDIS[round(t * 255)]
        got = _rgb(fills[stage])
        assert max(abs(a - b) for a, b in zip(got, want)) <= 12, (
            stage,
            got,
            want,
        )  # (ends rounded)
    tinted = page.eval_on_selector(".nfw-stacked rect.nfw-box", "r => r.style.stroke")
    assert tinted.startswith("rgb("), tinted  # the block the stack shows, at its norm
    shoot(page, f"grad_gpt2_{width}x{height}", pointer_away=True)
    if width == 1280:
        push(page, "playback", {"at": 0, "playing": False, "speed": 1.0, "backward": True})
        p = state(page, "playback")
        assert p["backward"] is True and p["stage"] == "output:logits", p  # from the loss
        push(page, "playback", {**p, "at": 2})
        page.wait_for_selector('.nfw-section[data-of="grad"]')  # a stage: its gradient
        settle(page)
        p = state(page, "playback")
        assert p["stage"].startswith(("lm_head", "transformer.ln_f")), p  # from the loss back
        current = page.locator(".nfw-node[data-current]").get_attribute("data-stage-id")
        live = page.eval_on_selector_all(
            ".nfw-edge.nfw-live", "els => els.map((e) => e.dataset.src)"
        )
        assert live and set(live) == {current}, (
            current,
            live,
        )  # its gradient comes back along them
        assert page.locator('.nfw-turn[aria-pressed="true"]').count() == 1
        shoot(page, "grad_backward_1280x720", pointer_away=True)
    context.close()
    assert errors == []


def _log(x: float) -> float:
    import math

    return math.log10(x)
