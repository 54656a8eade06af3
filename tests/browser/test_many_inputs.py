"""A model of many inputs (diffusers' FluxTransformer2DModel: latents, text, pooled text,
timestep, text ids and image ids) fits its first view at 1024x768 too: where its six inputs
side by side are too wide (3 nodes out of view before), the inputs that feed one reader stand
one above the other in its column (layout/spine.ts sourcesStacked), and the upper one's edge
passes beside the lower one, not round the whole row. Expected from FluxTransformer2DModel's
forward: `time_text_embed(timestep, pooled_projections)`, `pos_embed(cat(txt_ids, img_ids))`.
Screenshots in test-artifacts/inputs_flux_<size>.png."""

from __future__ import annotations

import pytest
import torch
from live import open_first, write_pages
from test_view_whole import COVERED, check_view
from test_zoo_in_view import ARTIFACTS

BOXES = """() => Object.fromEntries([...document.querySelectorAll(".nfw-node[data-stage-id]")]
  .map((n) => { const r = n.getBoundingClientRect();
    return [n.dataset.stageId, [r.left, r.top, r.width, r.height]]; }))"""
EDGE = """([src, dst]) => { const el = document.querySelector(
  `.nfw-edge[data-src="${src}"][data-dst="${dst}"]`); if (!el) return null;
  const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }"""


def _flux():
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=2, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16,
        axes_dims_rope=(2, 2, 4),
    ).eval()  # fmt: skip
    return model, {
        "hidden_states": torch.randn(1, 16, 16),
        "encoder_hidden_states": torch.randn(1, 6, 32),
        "pooled_projections": torch.randn(1, 16),
        "timestep": torch.tensor([0.5]),
        "img_ids": torch.zeros(16, 3),
        "txt_ids": torch.zeros(6, 3),
    }


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return write_pages(tmp_path_factory.mktemp("inputs"), {"flux": _flux})


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_many_inputs_fit_the_first_view(browser, pages, width, height):
    shot = ARTIFACTS / f"inputs_flux_{width}x{height}.png"
    context, page, errors = open_first(browser, pages / "flux.html", width, height, shot)
    check_view(page.evaluate(COVERED), "first", whole=True)
    boxes = page.evaluate(BOXES)
    if width == 1024:  # too narrow for the six side by side: the pairs stacked
        for upper, lower in (
            ("input:pooled_projections", "input:timestep"),
            ("input:txt_ids", "input:img_ids"),
        ):
            u, low = boxes[upper], boxes[lower]
            assert abs((u[0] + u[2] / 2) - (low[0] + low[2] / 2)) < 1, (upper, u, lower, low)
            assert u[1] + u[3] < low[1]
        # the upper's edge beside the lower input, not round the whole row
        edge = page.evaluate(EDGE, ["input:pooled_projections", "time_text_embed"])
        low = boxes["input:timestep"]
        assert edge is not None
        assert edge[0] > low[0] - 40 and edge[0] + edge[2] < low[0] + low[2] + 40, (edge, low)
    context.close()
    assert errors == []
