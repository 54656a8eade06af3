"""A run of identical blocks drawn as the paper's "N×" figure, in real Chromium: GPT-2 built
from its config (no download) first paints as ONE block opened one level (its norms,
attention, MLP and the residual stream's ⊕ junctions), headed "GPT2Block × 4", the other
blocks stacked behind it; its stepper shows layer 2's data in the same drawing, the
inspector following. Screenshots in test-artifacts/."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from live import open_live, open_offline, push, shoot, state, tap

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
#: what a lecturer sees: each node [id, kind, name px, inside the canvas], the stacks' header
#: texts with their px, the junction glyphs inside the canvas, the inspector's title
SEEN = """() => {
  const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const inside = (r) => r.left >= c.left - 1 && r.right <= c.right + 1
    && r.top >= c.top - 1 && r.bottom <= c.bottom + 1;
  const px = (t) => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize);
  const nodes = [...document.querySelectorAll(".nfw-node")].map((g) => {
    const t = g.querySelector(".nfw-t1");
    return [g.dataset.stageId, g.dataset.kind, px(t), inside(g.getBoundingClientRect())];
  });
  const stacks = [...document.querySelectorAll(".nfw-stacked")].map((g) => ({
    key: g.dataset.key, id: g.dataset.clusterId,
    inside: inside(g.querySelector(".nfw-box").getBoundingClientRect()),
    texts: [...g.querySelectorAll(":scope > text")].map((t) => [t.textContent, px(t)]),
  }));
  const joins = [...document.querySelectorAll(".nfw-junction")]
    .filter((j) => inside(j.getBoundingClientRect())).map((j) => j.dataset.glyph);
  const title = document.querySelector(".nfw-ins-title b");
  return { nodes, stacks, joins, inspector: title ? title.textContent : null };
}"""


@pytest.fixture(scope="module")
def gpt2_page(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    import neural_flow_widget as nfw

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=100)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 100, (1, 8))
    path = tmp_path_factory.mktemp("stack") / "gpt2.html"
    nfw.NeuralFlowWidget(model, ids).to_html(path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_gpt2_first_paints_one_block_times_4_with_attention_and_the_residual_stream(
    browser, gpt2_page, width, height
):
    context, page, errors = open_offline(browser, gpt2_page, width, height)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    seen = page.evaluate(SEEN)
    shoot(page, f"gpt2_stack_{width}x{height}")
    [stack] = seen["stacks"]
    assert stack["key"] == "k:transformer.h.0" and stack["inside"], stack
    texts = dict(stack["texts"])
    assert "GPT2Block × 4" in texts and texts["GPT2Block × 4"] >= 12, texts
    assert texts.get("layer 1 of 4", texts.get("1 / 4", 0)) >= 11, texts  # the stepper
    ids = [n[0] for n in seen["nodes"]]
    # one block, opened one level: its norms, attention and MLP; no box for h.1 .. h.3
    for part in ("ln_1", "attn", "ln_2", "mlp"):
        assert f"transformer.h.0.{part}" in ids, ids
    assert not any(
        i.startswith(("transformer.h.1", "transformer.h.2", "transformer.h.3")) for i in ids
    )
    assert seen["joins"].count("+") >= 2, seen["joins"]  # the residual stream's two ⊕
    for sid, kind, px, inside in seen["nodes"]:
        assert inside, sid
        assert px >= (12 if kind == "stage" else 11), (sid, px)  # ports: 13 px names at 1:1
    context.close()
    assert errors == []


def test_the_stepper_shows_layer_2_and_the_inspector_follows(browser, gpt2_page):
    context, page, errors = open_offline(browser, gpt2_page, 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    tap(page, '[data-stage-id="transformer.h.0.attn"]')
    page.wait_for_selector(".nfw-ins-title b")
    assert page.evaluate(SEEN)["inspector"] == "transformer.h.0.attn"
    tap(page, '.nfw-stacked [data-action][data-key="n:transformer.h.0"]')
    page.wait_for_selector('[data-stage-id="transformer.h.1.attn"]', timeout=10_000)
    page.wait_for_function(
        "() => document.querySelector('.nfw-ins-title b')?.textContent === 'transformer.h.1.attn'",
        timeout=10_000,
    )
    seen = page.evaluate(SEEN)
    texts = [t for t, _ in seen["stacks"][0]["texts"]]
    assert "layer 2 of 4" in texts or "2 / 4" in texts, texts
    assert seen["stacks"][0]["id"] == "transformer.h.1"
    # the same drawing, layer 2's stages: keys stay, ids move to h.1
    ids = [n[0] for n in seen["nodes"]]
    assert "transformer.h.1.mlp" in ids and "transformer.h.0.mlp" not in ids, ids
    selected = page.locator(".nfw-node.nfw-selected")
    selected.wait_for(timeout=5_000)
    assert selected.get_attribute("data-stage-id") == "transformer.h.1.attn"
    shoot(page, "gpt2_stack_layer2_1280x720")
    tap(page, '.nfw-stacked [data-action][data-key="p:transformer.h.0"]')
    page.wait_for_selector('[data-stage-id="transformer.h.0.attn"]', timeout=10_000)
    context.close()
    assert errors == []


def test_playback_walks_the_block_once_per_layer_in_the_same_drawing(browser, gpt2_page):
    context, page, errors = open_offline(browser, gpt2_page, 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    page.get_by_role("button", name="Play", exact=True).click()
    page.get_by_role("button", name="Pause", exact=True).click()  # paused on the first step
    current = (
        "() => { const g = document.querySelector('[data-current]');"
        " return g && [g.dataset.key, g.dataset.stageId]; }"
    )
    page.wait_for_function(f"() => ({current})() !== null")
    seen = []
    for _ in range(40):
        at = page.evaluate(current)
        seen.append(at[1])
        if at[1] == "transformer.h.1.ln_1":
            break
        page.get_by_role("button", name="Step forward").click()
        page.wait_for_function(
            f"(b) => {{ const a = ({current})(); return a && a[1] !== b; }}", arg=at[1]
        )
    # one layer after another, each drawn in the one block: its stages keep member 0's keys
    block = [s for s in seen if s.startswith("transformer.h.")]
    assert block == [f"transformer.h.0.{p}" for p in ("ln_1", "attn", "ln_2", "mlp")] + [
        "transformer.h.1.ln_1"
    ], seen
    assert page.evaluate(current) == ["s:transformer.h.0.ln_1", "transformer.h.1.ln_1"]
    assert page.locator(".nfw-stacked").count() == 1
    header = page.eval_on_selector_all(
        ".nfw-stacked > text", "els => els.map((e) => e.textContent)"
    )
    assert "layer 2 of 4" in header or "2 / 4" in header, header
    assert page.locator(".nfw-ins-title b").text_content() == "transformer.h.1.ln_1"
    shoot(page, "gpt2_stack_playback_1280x720")
    context.close()
    assert errors == []


def _config_models():
    transformers = pytest.importorskip("transformers")
    T = transformers
    small = dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=128)
    ids = torch.randint(0, 100, (1, 8))
    return {
        # BERT with a padding mask: the mask enters the one block's attention
        "bert": (
            T.BertModel(T.BertConfig(vocab_size=100, **small)),
            {"input_ids": ids, "attention_mask": torch.tensor([[1] * 6 + [0] * 2])},
            "BertLayer × 4",
            "attention",
            0,
        ),
        "llama": (
            T.LlamaForCausalLM(T.LlamaConfig(vocab_size=100, num_key_value_heads=4, **small)),
            ids,
            "LlamaDecoderLayer × 4",
            "self_attn",
            2,
        ),
        "vit": (
            T.ViTForImageClassification(T.ViTConfig(image_size=32, patch_size=8, **small)),
            torch.randn(1, 3, 32, 32),
            "ViTLayer × 4",
            "attention",
            2,
        ),
        # BEiT's layer 0 holds an nn.Identity where the others hold a BeitDropPath (drop-path
        # rates rising from 0): one stack of four all the same, not layer 0 drawn apart
        "beit": (
            T.BeitForImageClassification(
                T.BeitConfig(image_size=32, patch_size=8, use_relative_position_bias=True, **small)
            ),
            torch.randn(1, 3, 32, 32),
            "BeitLayer × 4",
            "drop_path#0",  # the attention's sublayer, one node: its last stage stands for it
            2,
        ),
    }


@pytest.mark.parametrize("name", ["bert", "llama", "vit", "beit"])
def test_bert_llama_vit_and_beit_first_paint_as_one_block_times_4(browser, tmp_path, name):
    torch.manual_seed(0)
    model, x, title, attention, adds = _config_models()[name]
    import neural_flow_widget as nfw

    path = tmp_path / f"{name}.html"
    nfw.NeuralFlowWidget(model.eval(), x).to_html(path)
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    seen = page.evaluate(SEEN)
    shoot(page, f"{name}_stack_1280x720")
    [stack] = seen["stacks"]
    assert stack["inside"] and title in dict(stack["texts"]), stack
    assert any(n[0].endswith(f".0.{attention}") and n[3] for n in seen["nodes"]), [
        n[0] for n in seen["nodes"]
    ]
    assert seen["joins"].count("+") >= adds, seen["joins"]
    for sid, kind, px, inside in seen["nodes"]:
        assert inside, sid
        assert px >= (12 if kind == "stage" else 11), (sid, px)
    if name == "vit":
        # ViTEmbeddings.forward: cat((cls_token.expand(...), patches)) + position_embeddings,
        # drawn as the paper's "[class] embedding" and "Position Embedding", named, as text
        named = page.evaluate(
            """() => [...document.querySelectorAll('.nfw-junction-operand')].map((t) =>
              [t.closest('.nfw-junction').dataset.glyph, t.textContent,
               t.getBoundingClientRect().height, t.children.length])"""
        )
        assert [(g, text) for g, text, _, _ in named] == [
            ("⧺", "cls_token"),
            ("+", "position_embeddings"),
        ], named
        assert all(px >= 11 and children == 0 for _, _, px, children in named), named
    context.close()
    assert errors == []


def test_in_a_live_widget_the_stepper_moves_widget_selected_to_layer_2_and_python_reveals_layer_4(
    browser,
):
    transformers = pytest.importorskip("transformers")
    import neural_flow_widget as nfw

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=100)
    widget = nfw.NeuralFlowWidget(
        transformers.GPT2LMHeadModel(config).eval(), torch.randint(0, 100, (1, 8))
    )
    context, page, errors = open_live(browser, widget)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    tap(page, '[data-stage-id="transformer.h.0.mlp"]')
    page.wait_for_function("() => window.__t.model.get('selected') === 'transformer.h.0.mlp'")
    tap(page, '.nfw-stacked [data-action][data-key="n:transformer.h.0"]')
    page.wait_for_function(
        "() => window.__t.model.get('selected') === 'transformer.h.1.mlp'", timeout=10_000
    )
    # from Python: a stage of layer 4 is shown in the same block, the stack stepping to it
    push(page, "selected", "transformer.h.3.attn")
    page.wait_for_selector(
        '.nfw-node.nfw-selected[data-stage-id="transformer.h.3.attn"]', timeout=10_000
    )
    assert page.locator(".nfw-stacked").count() == 1
    assert page.eval_on_selector(".nfw-stacked", "(g) => g.dataset.stackShown") == "3"
    assert state(page, "selected") == "transformer.h.3.attn"
    context.close()
    assert errors == []


class _InvertedResidual(torch.nn.Module):
    """MobileNetV2's block as tutorials write it: one Sequential of its layers, expand (1x1),
    depthwise (3x3), project (1x1), each convolution followed by its norm (and a ReLU6)."""

    def __init__(self, c: int, expand: int = 4) -> None:
        super().__init__()
        nn, h = torch.nn, c * expand
        self.conv = nn.Sequential(
            nn.Conv2d(c, h, 1), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, h, 3, padding=1, groups=h), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, c, 1), nn.BatchNorm2d(c),
        )  # fmt: skip

    def forward(self, x):
        return x + self.conv(x)


class _Mobile(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), *[_InvertedResidual(16) for _ in range(4)]
        )
        self.classifier = nn.Linear(16, 10)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def _mobile_sequential() -> torch.nn.Module:
    nn = torch.nn
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1), *[_InvertedResidual(16) for _ in range(4)], head
    )


@pytest.mark.parametrize("build", [_Mobile, _mobile_sequential], ids=["features", "sequential"])
def test_a_stack_too_tall_with_its_layers_opens_with_each_layer_and_its_norm_one_node(
    browser, tmp_path, build
):
    """Four inverted residuals on a 720-line canvas: the stack, open with its eight layers, is
    too tall at 12 px; the first view opens it with each convolution, its norm and its
    activation one node (the paper's "1x1 expand, 3x3 depthwise, 1x1 project",
    model/units.ts), not the four blocks folded away to three nodes on an empty canvas. The
    same where the model is an nn.Sequential, its blocks "1" to "4" (each was drawn opened
    on its own, no "x 4")."""
    import neural_flow_widget as nfw

    torch.manual_seed(0)
    path = tmp_path / "mobile.html"
    nfw.NeuralFlowWidget(build().eval(), torch.randn(1, 3, 32, 32)).to_html(path)
    context, page, errors = open_offline(browser, path, 1280, 720)
    seen = page.evaluate(SEEN)
    shoot(page, f"stack_units_{build.__name__.strip('_')}_1280x720")
    assert len(seen["stacks"]) == 1, seen["stacks"]
    assert seen["stacks"][0]["inside"]
    titles = page.evaluate(
        "() => [...document.querySelectorAll('.nfw-node .nfw-t1')].map((t) => t.textContent)"
    )
    assert {"0 → 1 → 2", "3 → 4 → 5", "6 → 7"} <= set(titles), titles
    assert all(inside and px >= 12 - 0.05 for _, _, px, inside in seen["nodes"]), seen["nodes"]
    assert "+" in seen["joins"] or page.locator(".nfw-junction").count() > 0
    context.close()
    assert errors == []
