"""A network of stages opens them alike on its first view (model/stack.ts withKin): ResNet-50
as torchvision writes it draws the blocks of all four layers (layer1 and layer4, with no run
of three to stack, were one folded node each beside layer2's and layer3's blocks), and Hugging
Face's ResNet-50, whose ResNetStage wraps its `layers`, draws the blocks of all four stages,
each named with its stage where the stage has no box of its own (scene/names.ts: four
"layers.0" before). Expected from the models' code: torchvision's layerN.M and Hugging Face's
stages.N.layers.M for depths 3, 4, 6, 3, the first block of each stage apart and the others
of layer2 / stages.1 and layer3 / stages.2 in a stack, its header naming the stage where no
box does; each block marked residual, its shortcut projected in the first block of a stage
only (a shortcut through `nn.Identity()` is none). Screenshots in
test-artifacts/stages_<model>_<size>.png."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch
from live import open_first, write_pages

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import written_out
from test_view_whole import COVERED, check_view

ARTIFACTS = pathlib.Path(__file__).resolve().parents[2] / "test-artifacts"

#: the names drawn for each model: each stage's blocks apart from its stack (the first block,
#: and the stages of fewer than four blocks whole)
NAMES = {
    "torchvision": [
        "layer1.0",
        "layer1.1",
        "layer1.2",
        "layer2.0",
        "layer3.0",
        "layer4.0",
        "layer4.1",
        "layer4.2",
    ],
    "huggingface": [
        *(f"stages.0.layers.{i}" for i in range(3)),
        "stages.1.layers.0",
        "stages.2.layers.0",
        *(f"stages.3.layers.{i}" for i in range(3)),
    ],
}

TITLES = """() => [...document.querySelectorAll(
  ".nfw-node[data-kind='stage'] .nfw-t1, .nfw-node[data-kind='fold'] .nfw-t1",
)].map((t) => t.textContent)"""

#: the stacks' headers (or folds' titles): Hugging Face's name their stage (no box does),
#: torchvision's blocks say it in their names ("layer2.0" above its fold)
HEADS = {
    "torchvision": ["Bottleneck × 3", "Bottleneck × 5"],
    "huggingface": ["ResNetBottleNeckLayer × 3 · stages.1", "ResNetBottleNeckLayer × 5 · stages.2"],
}
HEADER = """() => [
  ...[...document.querySelectorAll(".nfw-stacked > .nfw-ct")].map((t) => t.textContent),
  ...[...document.querySelectorAll(".nfw-node[data-kind='fold']")].map((n) =>
    [...n.querySelectorAll(".nfw-t1")].map((t) => t.textContent).join(" ")),
]"""

#: each named block's residual mark: the first block of a stage projects its shortcut
#: (torchvision's `downsample`, Hugging Face's ResNetShortCut: channels change), the others
#: add their input as it is (no downsample; Hugging Face's `shortcut = nn.Identity()`)
MARKS = """() => Object.fromEntries([...document.querySelectorAll(".nfw-node[data-kind='stage']")]
  .map((n) => [n.querySelector(".nfw-t1").textContent,
    n.querySelector(".nfw-residual")?.dataset.residual ?? null]))"""


def _huggingface():
    transformers = pytest.importorskip("transformers")
    config = transformers.ResNetConfig(
        embedding_size=16, hidden_sizes=[32, 64, 128, 256], depths=[3, 4, 6, 3],
        layer_type="bottleneck", num_labels=10,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.ResNetForImageClassification(config).eval(), torch.randn(1, 3, 64, 64)


def _torchvision():
    torch.manual_seed(0)
    return written_out.resnet50(classes=10).eval(), torch.randn(1, 3, 64, 64)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    builders = {"torchvision": _torchvision, "huggingface": _huggingface}
    return write_pages(tmp_path_factory.mktemp("stages"), builders)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("model", list(NAMES))
def test_every_stage_opens_alike_and_names_its_blocks(browser, pages, model, width, height):
    shot = ARTIFACTS / f"stages_{model}_{width}x{height}.png"
    context, page, errors = open_first(browser, pages / f"{model}.html", width, height, shot)
    check_view(page.evaluate(COVERED), "first", whole=True)
    titles = page.evaluate(TITLES)
    marks = page.evaluate(MARKS)
    heads = page.evaluate(HEADER)
    stacks = page.locator(".nfw-stacked, .nfw-node[data-kind='fold']").count()
    context.close()
    assert errors == []
    for name in NAMES[model]:
        assert titles.count(name) == 1, f"{name} drawn {titles.count(name)} times: {titles}"
    # the other blocks of the stages of four and six: one stack (or fold) each
    assert stacks == 2, titles
    assert sorted(heads) == HEADS[model]
    for name in NAMES[model]:
        first = name.endswith(".0")
        assert marks[name] == ("projected" if first else "identity"), (name, marks)
