"""A two-tower model drawn as its paper draws it: CLIP (built from its config, no download)
computes image_embeds = visual_projection(vision_model(pixel_values)) and text_embeds =
text_projection(text_model(input_ids)) apart, and meets them only in the similarity
(logits = text_embeds @ image_embeds.T x scale). The towers stand side by side from the top,
each reading its own input; no line runs from one tower into the other (the vision tower
used to be stacked above the text tower in one column, visual_projection seeming to feed
text_model, input_ids' line looping round it). The whole of it in view at
1280 x 720 and 1024 x 768, no name cut. Screenshots in test-artifacts/towers_clip_*.png."""

from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_offline, shoot
from test_unet_u import SEEN, crosses
from test_view_whole import COVERED, check_view

import neural_flow_widget as nfw


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    config = transformers.CLIPConfig(
        text_config=dict(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=16),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64),
        projection_dim=16,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.CLIPModel(config).eval()
    inputs = {"input_ids": torch.randint(0, 100, (1, 6)), "pixel_values": torch.randn(1, 3, 32, 32)}
    path = tmp_path_factory.mktemp("towers") / "clip.html"
    nfw.NeuralFlowWidget(model, inputs).to_html(path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_clip_first_paints_two_towers_side_by_side(browser, page_path, width, height):
    context, page, errors = open_offline(browser, page_path, width, height)
    seen = page.evaluate(SEEN)
    shoot(page, f"towers_clip_{width}x{height}")
    # whole, names 12 px high and none cut (its outputs' long names on two lines, each
    # tower's outputs beside it)
    check_view(page.evaluate(COVERED), "first", whole=True)
    boxes = {n[0]: (n[2], n[3], n[4], n[5]) for n in seen["nodes"] if n[0]}
    towers = {
        "vision": ("input:pixel_values", "vision_model", "visual_projection"),
        "text": ("input:input_ids", "text_model", "text_projection"),
    }
    of = {n: {k: b for k, b in boxes.items() if k.startswith(ids)} for n, ids in towers.items()}
    assert len(of["vision"]) >= 3 and len(of["text"]) >= 3, boxes.keys()
    # side by side: the towers apart across, their inputs and projections level
    right = {name: max(b[2] for b in got.values()) for name, got in of.items()}
    left = {name: min(b[0] for b in got.values()) for name, got in of.items()}
    assert right["vision"] < left["text"] or right["text"] < left["vision"], (left, right)
    level = (("input:pixel_values", "input:input_ids"), ("visual_projection", "text_projection"))
    for a, b in level:
        assert abs(boxes[a][1] - boxes[b][1]) < 2, (boxes[a], boxes[b])
    # each tower's outputs on its own side (the image embeds beside the vision tower, never
    # across the text tower's line)
    middle = (min(right.values()) + max(left.values())) / 2
    vision_left = right["vision"] < left["text"]
    outs = {
        "vision": ("output:image_embeds", "output:vision_model_output"),
        "text": ("output:text_embeds", "output:text_model_output"),
    }
    for name, ids in outs.items():
        mine = [k for k in boxes if k.startswith(ids)]
        assert mine, boxes.keys()
        for k in mine:
            centre = (boxes[k][0] + boxes[k][2]) / 2
            assert (centre < middle) == (vision_left == (name == "vision")), (k, boxes[k], middle)
    # no line from one tower passes through the other
    for _kind, src, dst, pts in seen["lines"]:
        for name, ids in towers.items():
            if not any(src.split(":", 1)[-1].startswith(k) for k in ids):
                continue
            for key, box in of["text" if name == "vision" else "vision"].items():
                assert not crosses(pts, box), f"{src} -> {dst} passes behind {key}"
    context.close()
    assert errors == []
