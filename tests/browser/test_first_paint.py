"""First paint of pages of models as users bring them, in real Chromium at the sizes of a
lecture hall's projector: a flat 200-layer MLP comes folded with names a back row can read;
a chain's primary path is one straight line. Screenshots in test-artifacts/."""

from __future__ import annotations

import pathlib

import pytest
import torch
from live import open_offline
from torch import nn

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

#: per drawn node: [stage id, kind, centre x, centre y, name px on screen, inside the canvas]
NODES = """() => { const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  return [...document.querySelectorAll(".nfw-node")].map((g) => {
    const r = g.getBoundingClientRect(); const t = g.querySelector(".nfw-t1");
    return [g.dataset.stageId, g.dataset.kind, (r.left + r.right) / 2, (r.top + r.bottom) / 2,
      t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize),
      r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom];
  }); }"""


def first_paint(browser, model, x, name, width=1280, height=720, tmp=None):
    out = tmp / f"{name}.html"
    nfw.NeuralFlowWidget(model, x).to_html(out)
    context, page, errors = open_offline(browser, out, width, height)
    nodes = page.evaluate(NODES)
    bar = page.evaluate(
        """() => [...document.querySelector(".nfw-toolbar").children]
        .filter((c) => c.offsetParent)
        .map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; })"""
    )
    assert max(bar) - min(bar) < 8, "the toolbar wrapped"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}_{width}x{height}.png"))
    context.close()
    assert errors == []
    return nodes


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_a_flat_200_layer_mlp_first_paints_folded_with_legible_names(
    browser, tmp_path, width, height
):
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(200):
        layers += [nn.Linear(16, 16), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(16, 2))
    nodes = first_paint(browser, model, torch.randn(4, 16), "mlp200", width, height, tmp_path)
    folds = [n for n in nodes if n[1] == "fold"]
    assert len(folds) == 1 and len(nodes) <= 6, nodes  # input, the fold, the head, output
    for sid, _kind, _x, _y, px, inside in nodes:
        assert inside, sid
        assert px >= 12, (sid, px)


def test_a_chain_s_primary_path_is_one_straight_line(browser, tmp_path):
    torch.manual_seed(0)
    short = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
    )  # fmt: skip
    nodes = first_paint(browser, short, torch.randn(1, 3, 16, 16), "chain", tmp=tmp_path)
    stages = [n for n in nodes if n[1] == "stage"]
    assert len(stages) == 6
    xs = [n[2] for n in stages]
    assert max(xs) - min(xs) < 3, xs  # one x for the whole trunk (TB)
    ys = [n[3] for n in stages]
    assert ys == sorted(ys)  # in execution order, top to bottom


def test_a_long_chain_wraps_into_straight_columns_to_fit(browser, tmp_path):
    torch.manual_seed(0)
    long = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.GELU(), nn.Dropout(0.1), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 10), nn.Softmax(dim=-1),
    )  # fmt: skip
    nodes = first_paint(browser, long, torch.randn(1, 3, 16, 16), "chain_long", tmp=tmp_path)
    stages = [n for n in nodes if n[1] == "stage"]
    assert len(stages) == 13 and all(n[5] for n in nodes)  # all in view
    # runs of consecutive stages on one x: columns, left to right, each top to bottom
    columns = [[stages[0]]]
    for n in stages[1:]:
        if abs(n[2] - columns[-1][-1][2]) < 3:
            columns[-1].append(n)
        else:
            columns.append([n])
    assert 1 < len(columns) <= 3, [[n[0] for n in c] for c in columns]
    assert [c[0][2] for c in columns] == sorted(c[0][2] for c in columns)
    for column in columns:
        assert len(column) >= 3 and [n[3] for n in column] == sorted(n[3] for n in column)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_mobilevit_opens_its_encoder_to_its_stages_its_conv_layers_folded(
    browser, tmp_path, width, height
):
    """MobileViTModel.forward: conv_stem -> encoder (layer.0 ... layer.4: two MobileNet
    stages, three with a transformer) -> conv_1x1_exp. Its stem and 1x1 expansion are
    conv -> norm -> activation (MobileViTConvLayer); opening them with the encoder makes the
    view too tall for the canvas at names 12 px high, so the first view opens the encoder
    alone (model/view_state.ts levelStates), not nothing: five boxes and 80 % of the canvas
    empty before."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.MobileViTForImageClassification(
        transformers.MobileViTConfig(image_size=64)
    )
    nodes = first_paint(
        browser, model.eval(), torch.randn(1, 3, 64, 64), "mobilevit", width, height, tmp_path
    )
    ids = [n[0] for n in nodes]
    for i in range(5):
        assert f"mobilevit.encoder.layer.{i}" in ids, ids
    assert "mobilevit.conv_stem" in ids and "mobilevit.conv_1x1_exp" in ids, ids  # folded
    for sid, _kind, _x, _y, px, inside in nodes:
        assert inside, sid
        assert px >= 12, (sid, px)
