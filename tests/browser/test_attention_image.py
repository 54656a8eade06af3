"""A vision transformer's attention over its input image, live in real Chromium: the CLS
token's attention of one layer and the attention rollout through the layers up to it, drawn
over the image's patch grid, held against the model's own ``output_attentions`` (rollout
computed here with numpy, from the model's maps, not from the widget's)."""

from __future__ import annotations

import os
import pathlib
import re
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_live, open_offline, search_and_open, shoot

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SIDE, PATCH, LAYERS = 64, 8, 4


@pytest.fixture(scope="module")
def vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=SIDE, patch_size=PATCH, hidden_size=48, num_hidden_layers=LAYERS,
        num_attention_heads=3, intermediate_size=96, initializer_range=0.3,
    )  # fmt: skip
    model = ViTModel(config, add_pooling_layer=False).eval()
    # a picture: a bright disc on a dark ground, one colour off-centre
    y, x = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
    disc = (((y - 40) ** 2 + (x - 24) ** 2) < 14**2).float()
    image = torch.stack([disc, 0.5 * disc + 0.2, 0.3 * (1 - disc)])[None] * 2 - 1
    return model, image


def own_maps(model, image) -> list[np.ndarray]:
    """The model's own attention, mean over heads, per layer (eager attention)."""
    model.config._attn_implementation = "eager"
    try:
        with torch.no_grad():
            out = model(pixel_values=image, output_attentions=True)
    finally:
        model.config._attn_implementation = "sdpa"
    return [a[0].mean(0).double().numpy() for a in out.attentions]


def numpy_rollout(maps: list[np.ndarray]) -> np.ndarray:
    n = maps[0].shape[0]
    r = np.eye(n)
    for a in maps:
        hat = 0.5 * np.eye(n) + 0.5 * a
        r = (hat / hat.sum(-1, keepdims=True)) @ r
    return r[0, 1:]


def reading(page, heat: str, at: tuple[int, int]) -> float:
    """Point at patch (row, col) of a panel and read that panel's value."""
    canvas = page.locator(f'[data-heat="{heat}"] canvas')
    box = canvas.bounding_box()
    cell = box["width"] / (SIDE // PATCH)
    page.mouse.move(box["x"] + (at[1] + 0.5) * cell, box["y"] + (at[0] + 0.5) * cell)
    want = f"patch row {at[0]}, column {at[1]} "
    readout = "document.querySelector('.nfw-attention-image .nfw-readout').textContent"
    page.wait_for_function(f"() => {readout}.startsWith({want!r})")
    text = page.text_content(".nfw-attention-image .nfw-readout")
    label = "this layer" if heat == "layer" else "rollout through"
    return float(re.search(rf"{label}[^·]*? ([0-9.e-]+)(?: ·|$)", text).group(1))


def test_cls_attention_and_rollout_over_the_image_equal_the_models_own(browser, vit):
    model, image = vit
    widget = nfw.NeuralFlowWidget(model, image)
    stages = [widget.flow.calls[i].id for i in widget.graph["attention"]]
    assert len(stages) == LAYERS
    maps = own_maps(model, image)
    layer = 2  # the third layer: the rollout goes through three
    context, page, errors = open_live(browser, widget, width=1280, height=800)
    page.wait_for_selector("[data-stage-id]")
    page.evaluate(f"() => window.__t.model.set('selected', {stages[layer]!r})")
    page.wait_for_selector(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click(".nfw-tab[data-view=attention]")
    page.click('[data-attention-mode="image"]', timeout=30_000)
    page.wait_for_selector(
        '[data-heat="rollout"] canvas[data-view-kind="attention-image"]', timeout=30_000
    )
    grid = SIDE // PATCH
    words = page.text_content(".nfw-attention-image")
    source = widget.graph["inputs"][0]
    assert f"{grid} × {grid} patches of {PATCH} × {PATCH} px of {source}" in words, words
    assert "rollout through 3 layers" in words

    cls = maps[layer][0, 1:]
    flow = numpy_rollout(maps[: layer + 1])
    for heat, want in (("layer", cls), ("rollout", flow)):
        peak = np.unravel_index(int(np.argmax(want)), (grid, grid))
        shown = tuple(
            int(v)
            for v in page.get_attribute(f'[data-heat="{heat}"] canvas', "data-peak").split(",")
        )
        assert want.reshape(grid, grid)[shown] >= want.max() - 1e-5, (heat, shown, peak)
        for at in (tuple(int(v) for v in peak), (0, grid - 1)):
            got = reading(page, heat, at)
            assert abs(got - want.reshape(grid, grid)[at]) <= 5e-4 * max(1.0, 100 * want.max()), (
                heat,
                at,
                got,
            )
    assert not np.allclose(cls, flow, atol=1e-3)  # two different things are drawn

    # the image is under the heat: with the heat's opacity at 0 the panel shows the picture
    page.locator('input[aria-label="heat opacity"]').fill("0")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "attention_image_bare.png"))
    lit = page.evaluate(
        """() => { const c = document.querySelector('[data-heat="layer"] canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const px = (x, y) => d[4 * (Math.floor(y * c.height) * c.width + Math.floor(x * c.width))];
        return [px(24 / 64, 40 / 64), px(0.9, 0.1)]; }"""
    )
    assert lit[0] > lit[1] + 100, lit  # the disc's red, the ground's
    page.locator('input[aria-label="heat opacity"]').fill("60")
    page.screenshot(path=str(ARTIFACTS / "attention_image.png"))
    context.close()
    assert errors == []


def test_text_attention_offers_no_image_view(browser):
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(
        GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    ).eval()
    widget = nfw.NeuralFlowWidget(model, torch.randint(0, 50, (1, 17)))
    stage = widget.flow.calls[widget.graph["attention"][0]].id
    context, page, errors = open_live(browser, widget)
    page.wait_for_selector("[data-stage-id]")
    page.evaluate(f"() => window.__t.model.set('selected', {stage!r})")
    page.wait_for_selector(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click(".nfw-tab[data-view=attention]")
    page.wait_for_selector('[data-attention-mode="model"]')
    assert page.locator('[data-attention-mode="image"]').count() == 0
    context.close()
    assert errors == []


def test_the_image_view_works_on_an_offline_page(browser, vit, tmp_path):
    """The exported page carries the input image and every attention stage's map: the same
    view, without a kernel."""
    model, image = vit
    widget = nfw.NeuralFlowWidget(model, image)
    stage = widget.flow.calls[widget.graph["attention"][-1]].id
    path = widget.to_html(tmp_path / "vit.html")
    context, page, errors = open_offline(browser, path, 1024, 768)
    search_and_open(page, stage)
    page.click(".nfw-tab[data-view=attention]", timeout=30_000)
    page.click('[data-attention-mode="image"]')
    page.wait_for_selector(
        '[data-heat="rollout"] canvas[data-view-kind="attention-image"]', timeout=30_000
    )
    assert f"rollout through {LAYERS} layers" in page.text_content(".nfw-attention-image")
    assert "not available" not in page.text_content(".nfw-attention-image")  # the image is there
    shoot(page, "attention_image_offline_1024")
    context.close()
    assert errors == []
