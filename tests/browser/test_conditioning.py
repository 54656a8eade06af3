"""A diffusion transformer's conditioning, in real Chromium at a lecture hall's sizes: diffusers'
DiT built from its config (no download). Its first view opens one block of the "× N" stack:
``norm1`` (an ``AdaLayerNormZero``, folded) -> attn1 -> ⊕ -> norm3 -> ⊕ -> ff -> ⊕. The scale,
shift and gate ``norm1`` returns beside its output reach the junctions as purple conditioning,
as the paper's figure draws them; the only orange skips are the residuals. They were drawn as
skips from ``norm1`` (``graph/edges.py`` step 4: what a broadcast join modulates the data with
merges). Screenshots in test-artifacts/dit_*.png."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from fixture_models import dit
from test_unet_u import see

import neural_flow_widget as nfw

NORM = "transformer_blocks.0.norm1"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    pytest.importorskip("diffusers")
    path = tmp_path_factory.mktemp("conditioning") / "dit.html"
    model, inputs = dit(layers=3)
    nfw.NeuralFlowWidget(model, inputs).to_html(path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_dit_draws_its_adaptive_norms_scale_shift_and_gate_as_conditioning(
    browser, page, width, height
):
    got = see(browser, page, width, height, f"dit_{width}x{height}.png")
    for sid, kind, *_box, px, inside in got["nodes"]:
        assert inside, f"{sid} is not inside the canvas"
        assert px >= (12 if kind in ("stage", "fold") else 11) - 0.05, f"{sid}: {px:.1f} px"
    lines = [(kind, src, dst) for kind, src, dst, _points in got["lines"]]
    out_of_norm = {(kind, dst) for kind, src, dst in lines if src == NORM}
    # its output flows into the attention; its scale, shift and gate merge further on
    assert ("flow", "transformer_blocks.0.attn1") in out_of_norm, out_of_norm
    assert {("merge", "transformer_blocks.0.norm3"), ("merge", "transformer_blocks.0.ff")} <= (
        out_of_norm
    )
    assert not any(kind == "skip" for kind, _dst in out_of_norm), out_of_norm
    # the skips are the residuals: the patches round the attention, the attention round ff
    skips = {(src, dst) for kind, src, dst in lines if kind == "skip"}
    assert ("pos_embed", "transformer_blocks.0.norm3") in skips, skips
    assert {src for src, _dst in skips} <= {"pos_embed", "transformer_blocks.0.attn1"}, skips
