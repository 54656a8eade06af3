"""Residual blocks folded still show their residual, in real Chromium: the written-out
torchvision ResNet's offline page first paints its two collapsed Bottlenecks each with a ⊕
and an arc (the first one's dashed: a projected shortcut), on screen, with the tooltip and a
"residual inside" legend entry; ResNet-50's layout (benchmarks/models.py) marks its folds of
bottlenecks too; a DenseNet shows none, and an opened Bottleneck shows its real junction, not
the mark. Screenshots in test-artifacts/."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_offline, settle, shoot, tap

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: per residual mark: the node, its kind, the mark's kind, whether the ⊕ and the node are
#: inside the canvas, the ⊕'s diameter on screen, the arc's dash; the legend's entry
MARKS = """() => {
  const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const inside = (r) => r.left >= c.left - 1 && r.right <= c.right + 1
    && r.top >= c.top - 1 && r.bottom <= c.bottom + 1;
  const marks = [...document.querySelectorAll(".nfw-node .nfw-residual")].map((m) => {
    const g = m.closest(".nfw-node");
    const disc = m.querySelector(".nfw-residual-disc").getBoundingClientRect();
    return {
      id: g.dataset.stageId, kind: g.dataset.kind, residual: m.dataset.residual,
      inside: inside(disc) && inside(g.querySelector(".nfw-card").getBoundingClientRect()),
      px: disc.width, dash: m.querySelector(".nfw-residual-arc").getAttribute("stroke-dasharray"),
      tip: m.querySelector("title").textContent,
    };
  });
  const legend = document.querySelector('.nfw-legend [data-legend="residual"]');
  const nodes = document.querySelectorAll(".nfw-node").length;
  return { marks, legend: legend ? legend.textContent : null, nodes };
}"""


def _page(tmp_path_factory, name, model, x):
    import neural_flow_widget as nfw

    path = tmp_path_factory.mktemp("residual") / f"{name}.html"
    nfw.NeuralFlowWidget(model.eval(), x).to_html(path)
    return path


@pytest.fixture(scope="module")
def resnet_page(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests"))
    from written_out import ResNet

    torch.manual_seed(0)
    return _page(tmp_path_factory, "resnet", ResNet(), torch.randn(1, 3, 32, 32))


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_the_first_view_of_a_resnet_shows_its_residuals(browser, resnet_page, width, height):
    context, page, errors = open_offline(browser, resnet_page, width, height)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    seen = page.evaluate(MARKS)
    shoot(page, f"residual_resnet_{width}x{height}")
    marks = {m["id"]: m for m in seen["marks"]}
    assert set(marks) == {"layer1.0", "layer1.1"}, seen
    assert marks["layer1.0"]["residual"] == "projected" and marks["layer1.0"]["dash"], marks
    assert marks["layer1.1"]["residual"] == "identity" and not marks["layer1.1"]["dash"], marks
    for m in marks.values():
        assert m["kind"] == "stage" and m["inside"], m
        assert m["px"] >= 10, m  # a legible ⊕, not a speck
        assert "f(x) + " in m["tip"], m
    assert seen["legend"] == "residual inside (dotted: projected shortcut)", seen
    context.close()
    assert errors == []


SIDES = """() => [...document.querySelectorAll(".nfw-node .nfw-residual")].map((m) => {
  const card = m.closest(".nfw-node").querySelector(".nfw-card").getBoundingClientRect();
  const disc = m.querySelector(".nfw-residual-disc").getBoundingClientRect();
  const x = disc.left + disc.width / 2, y = disc.top + disc.height / 2;
  return [x > card.right - 2 && y > card.top && y < card.bottom,
          y > card.bottom - 2 && x > card.left && x < card.right];
})"""


def test_the_mark_sits_where_the_output_leaves_top_down_and_left_to_right(browser, resnet_page):
    context, page, errors = open_offline(browser, resnet_page, 1280, 720)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    assert page.evaluate(SIDES) == [[False, True]] * 2  # TB: on the bottom edge
    page.get_by_role("button", name="→ LR").click()
    page.wait_for_function(
        f"() => JSON.stringify(({SIDES})()) === '[[true,false],[true,false]]'", timeout=10_000
    )
    shoot(page, "residual_resnet_LR_1280x720")
    context.close()
    assert errors == []


def test_an_opened_bottleneck_shows_its_junction_not_the_mark(browser, resnet_page):
    context, page, errors = open_offline(browser, resnet_page, 1280, 720)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    tap(page, '.nfw-node [data-action][data-key="s:layer1.1"]')  # its + badge
    page.wait_for_selector('.nfw-cluster[data-cluster-id="layer1.1"]', timeout=10_000)
    settle(page)
    seen = page.evaluate(MARKS)
    shoot(page, "residual_resnet_open_1280x720")
    assert [m["id"] for m in seen["marks"]] == ["layer1.0"], seen
    assert page.locator('.nfw-junction[data-glyph="+"]').count() >= 1
    context.close()
    assert errors == []


def test_resnet50_folds_show_residuals_and_a_densenet_none(browser, tmp_path_factory):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "tests"))
    from models import ResNet50Like
    from written_out import DenseNet

    torch.manual_seed(0)
    r50 = _page(tmp_path_factory, "resnet50", ResNet50Like(classes=10), torch.randn(1, 3, 64, 64))
    context, page, errors = open_offline(browser, r50, 1280, 720)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    seen = page.evaluate(MARKS)
    shoot(page, "residual_resnet50_1280x720")
    assert seen["marks"] and all(m["inside"] for m in seen["marks"]), seen
    assert seen["legend"].startswith("residual inside"), seen
    context.close()
    assert errors == []

    dense = _page(tmp_path_factory, "densenet", DenseNet(), torch.randn(1, 3, 32, 32))
    context, page, errors = open_offline(browser, dense, 1280, 720)  # painted, settled
    seen = page.evaluate(MARKS)
    shoot(page, "residual_densenet_1280x720")
    assert seen["marks"] == [] and seen["legend"] is None and seen["nodes"] > 0, seen
    context.close()
    assert errors == []


def test_gpt2_with_two_blocks_marks_both_collapsed_pre_norm_blocks(browser, tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100)
    path = _page(
        tmp_path_factory,
        "gpt2",
        transformers.GPT2LMHeadModel(config),
        torch.randint(0, 100, (1, 8)),
    )
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    shoot(page, "residual_gpt2_1280x720")
    # two blocks are a run, drawn as the paper's "GPT2Block x 2" open one level: each
    # h = x + attn(ln_1(x)); h + mlp(ln_2(h)) shows its two real (+) junctions
    stack = page.locator(".nfw-stacked")
    assert stack.count() == 1 and "GPT2Block × 2" in (stack.text_content() or "")
    assert page.locator(".nfw-junction[data-glyph='+']").count() >= 2
    # ... and folded (its header's fold), the run carries the mark
    page.evaluate(
        """() => [...document.querySelectorAll(".nfw-stacked [data-action]")]
        .find((b) => b.querySelector("title").textContent.startsWith("Fold the"))
        .dispatchEvent(new MouseEvent("click", { bubbles: true }))"""
    )
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    seen = page.evaluate(MARKS)
    marks = {m["id"]: m for m in seen["marks"]}
    assert marks["transformer.h.0"]["residual"] == "identity", marks
    assert marks["transformer.h.0"]["inside"], marks
    assert seen["legend"] == "residual inside", seen
    context.close()
    assert errors == []


def test_the_exported_svg_legend_says_residual_inside(browser, resnet_page):
    context, page, errors = open_offline(browser, resnet_page, 1280, 720)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    with page.expect_download() as download:
        page.get_by_role("button", name="SVG", exact=True).click()
    svg = pathlib.Path(download.value.path()).read_text()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "residual_resnet_export.svg").write_text(svg)
    # the figure's legend, under it: the mark's swatch and its words, as in the widget's
    assert 'data-legend="residual"' in svg
    assert "residual inside (dotted: projected shortcut)" in svg
    assert svg.count('class="nfw-residual"') == 2  # the two marks, drawn in the figure
    context.close()
    assert errors == []


def test_bert_post_norm_attention_carries_its_residual(browser, tmp_path_factory):
    """BERT is post-norm: BertAttention is LayerNorm(dense(self(x)) + x), its add done in
    BertSelfOutput (given both); the stacked block's collapsed attention shows the mark, the
    feed-forward's residual is the skip edge into `output` (where it joins)."""
    pytest.importorskip("transformers")
    sys.path.insert(0, str(ROOT / "tests"))
    from fixture_models import bert

    model, inputs = bert()
    path = _page(tmp_path_factory, "bert", model, inputs)
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    page.wait_for_selector(".nfw-residual", timeout=15_000)
    seen = page.evaluate(MARKS)
    shoot(page, "residual_bert_1280x720")
    assert [(m["id"], m["residual"]) for m in seen["marks"]] == [
        ("encoder.layer.0.attention", "identity")
    ], seen
    assert all(m["inside"] for m in seen["marks"]), seen
    assert seen["legend"] == "residual inside", seen
    context.close()
    assert errors == []
