"""A model that returns a tuple of tensors (Hugging Face's hidden_states with
output_hidden_states=True, diffusers ControlNet's down_block_res_samples) draws it as one port,
"output:hidden_states.0 … 6", fed by every stage that made one of its items (js/src/model/
ports.ts): GPT-2's first view stays the paper's figure, its layers stacked "× 6" with the
residual stream and its sums, all of it in view (seven ports side by side pushed the picture
off the canvas and folded the layers); ControlNet's first view fits (its four residual outputs
stood in a row beyond the right edge); BART's seven outputs with its hidden states and attentions
stand one under the other beside its trunk where a row of them does not fit (1024x768: 3 out
of view before; layout/spine.ts sinksStacked). The inspector lists the tuple's items, one tab each.
Expected from the models' code: GPT2Model appends the stream before each of its six blocks and
ln_f's output after them (seven items); ControlNetModel returns one residual per down block
resnet and downsampler plus conv_in's (four with two levels of one layer each). Screenshots in
test-artifacts/tuple_<model>_<size>.png."""

from __future__ import annotations

import pytest
import torch
from live import open_first, open_offline, settle, write_pages
from test_view_whole import COVERED, check_view
from test_zoo_in_view import ARTIFACTS

PORTS = """() => [...document.querySelectorAll(".nfw-node[data-kind='output']")].map((n) =>
  [...n.querySelectorAll(".nfw-t1")].map((t) => t.textContent).join(""))"""
TIPS = """() => [...document.querySelectorAll(".nfw-node[data-kind='output'] > title")].map((t) =>
  t.textContent)"""
STACKS = (
    """() => [...document.querySelectorAll(".nfw-stacked > .nfw-ct")].map((t) => t.textContent)"""
)

#: the ports each first view draws: the tuple as one
EXPECTED = {
    "gpt2": ["output:logits", "output:hidden_states.0 … 6"],
    "controlnet": ["output:down_block_res_samples.0 … 3", "output:mid_block_res_sample"],
    # BartForConditionalGeneration, two layers each side: its embeddings' and each layer's
    # state per stack, each layer's self-attention weights and the decoder's cross-attention's
    "bart": [
        "output:logits",
        "output:decoder_hidden_states.0 … 2",
        "output:decoder_attentions.0 … 1",
        "output:cross_attentions.0 … 1",
        "output:encoder_last_hidden_state",
        "output:encoder_hidden_states.0 … 2",
        "output:encoder_attentions.0 … 1",
    ],
}


def _gpt2():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=6, n_head=4, n_embd=64, vocab_size=100, n_positions=32)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, {"input_ids": torch.randint(0, 100, (1, 8)), "output_hidden_states": True}


def _controlnet():
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.ControlNetModel(
        in_channels=4, block_out_channels=(32, 64), cross_attention_dim=32,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), layers_per_block=1,
        attention_head_dim=8, norm_num_groups=8, conditioning_embedding_out_channels=(8, 16),
    ).eval()  # fmt: skip
    return model, {
        "sample": torch.randn(1, 4, 16, 16),
        "timestep": torch.tensor([10]),
        "encoder_hidden_states": torch.randn(1, 6, 32),
        "controlnet_cond": torch.randn(1, 3, 32, 32),
    }


def _bart():
    pytest.importorskip("transformers")
    from fixture_models import bart

    model, inputs = bart()
    model.config._attn_implementation = "eager"  # (the sdpa kernel returns no weights)
    return model, {**inputs, "output_hidden_states": True, "output_attentions": True}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    builders = {"gpt2": _gpt2, "controlnet": _controlnet, "bart": _bart}
    return write_pages(tmp_path_factory.mktemp("tuple"), builders)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("model", list(EXPECTED))
def test_a_tuple_returned_is_one_port_and_the_figure_stays_whole(
    browser, pages, model, width, height
):
    shot = ARTIFACTS / f"tuple_{model}_{width}x{height}.png"
    context, page, errors = open_first(browser, pages / f"{model}.html", width, height, shot)
    check_view(page.evaluate(COVERED), "first", whole=True)
    assert sorted(page.evaluate(PORTS)) == sorted(EXPECTED[model])
    assert sorted(page.evaluate(TIPS)) == sorted(EXPECTED[model])  # the tooltips say the same
    if model == "gpt2":
        assert page.evaluate(STACKS) == ["GPT2Block × 6"]
        assert page.locator(".nfw-junction").count() >= 2  # the block's two sums
    context.close()
    assert errors == []


def test_the_inspector_goes_through_the_items(browser, pages):
    context, page, errors = open_offline(browser, pages / "gpt2.html", 1280, 720)
    settle(page)
    page.click(".nfw-node[data-kind='output'][data-stage-id='output:hidden_states.0']")
    settle(page)
    tabs = page.locator("[data-items] [data-item]")
    assert tabs.count() == 7
    assert page.locator(".nfw-ins-title b").text_content() == "output:hidden_states.0"
    page.click("[data-items] [data-item='output:hidden_states.3']")
    settle(page)
    assert page.locator(".nfw-ins-title b").text_content() == "output:hidden_states.3"
    selected = "[data-items] [aria-selected='true']"
    assert page.locator(selected).get_attribute("data-item") == "output:hidden_states.3"
    # the port stays the selected node: the item is one of its
    marked = page.locator(".nfw-node.nfw-selected").get_attribute("data-stage-id")
    assert marked == "output:hidden_states.0"
    page.screenshot(path=str(ARTIFACTS / "tuple_gpt2_item3.png"))
    context.close()
    assert errors == []
