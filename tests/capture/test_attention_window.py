"""Zooming into a long sequence's attention beyond the block means a run kept: the live
widget runs the model again and answers the window at full resolution, held against the
model's own ``output_attentions`` (its eager implementation, same weights)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget.run import attention_window

transformers = pytest.importorskip("transformers")

TOKENS = 1024  # kept as 2x2 block means (exact up to 512 positions)


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=100, n_positions=TOKENS, n_embd=64, n_layer=2, n_head=4,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 100, (1, TOKENS), generator=torch.Generator().manual_seed(0))
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        own = [a[0].numpy() for a in model(ids, output_attentions=True).attentions]
    model.config._attn_implementation = "sdpa"
    return model, ids, own


def reply_map(reply, buffers, index=0):
    att = reply["attention"][index]
    data = np.frombuffer(buffers[att["map"]["buffer"]], "<f4").reshape(att["map"]["shape"])
    return att, data


@pytest.mark.slow
def test_a_zoomed_window_is_exact_where_the_run_kept_block_means(gpt2):
    model, ids, own = gpt2
    widget = nfw.NeuralFlowWidget(model, ids)
    stage = "transformer.h.1.attn"
    assert widget.flow.attention(stage)[0].pool == (2, 2)
    window = [600, 700, 451, 707]  # 100 queries x 256 keys, off the kept blocks' edges
    for head in (None, 2):
        reply, buffers = widget._stage_data({"stage": stage, "window": window, "head": head}, [])
        assert reply["ok"], reply
        att, shown = reply_map(reply, buffers)
        assert att["pool"] == [1, 1] and att["window"] == window
        assert (att["q_len"], att["k_len"]) == (TOKENS, TOKENS)
        want = own[1][:, 600:700, 451:707]
        want = want.mean(0) if head is None else want[head]
        np.testing.assert_allclose(shown, want, atol=1e-6)
    # causal: the part of the window above the diagonal is zero, and it is not all zero
    assert shown[:, 700 - 451 :].max() == 0 and shown.max() > 0


def test_wider_windows_and_the_whole_map_stay_the_kept_block_means(gpt2):
    model, ids, _ = gpt2
    widget = nfw.NeuralFlowWidget(model, ids)
    stage = "transformer.h.0.attn"
    reply, _ = widget._stage_data({"stage": stage, "window": [0, 512, 0, 512]}, [])
    assert reply["attention"][0]["pool"] == [2, 2]  # (512 positions: more than the wire's 256)
    reply, _ = widget._stage_data({"stage": stage}, [])
    assert reply["attention"][0]["pool"] == [4, 4]
    bad, _ = widget._stage_data({"stage": stage, "window": [0, 2000, 0, 10]}, [])
    assert not bad["ok"] and "window=" in bad["error"]


@pytest.mark.slow
def test_running_again_leaves_the_model_as_it_was(gpt2):
    model, ids, _ = gpt2
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    flow = nfw.trace(model, ids)
    fine = attention_window(model, ids, flow, "transformer.h.0.attn", 0, (10, 20, 0, 20))
    assert fine.weights.shape == (4, 10, 20) and fine.pool == (1, 1)
    assert all(m.training for m in model.modules())
    assert all("forward" not in vars(m) for m in model.modules())  # the call wrappers are gone
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    model.eval()


def test_maps_that_are_not_sdpa_say_why_and_keep_their_blocks():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()

    class Attend(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = mha

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

    model, x = Attend(), torch.randn(1, 600, 16)
    flow = nfw.trace(model, x)
    why = attention_window(model, x, flow, "attn", 0, (0, 50, 0, 50))
    assert isinstance(why, str) and "scaled_dot_product_attention" in why
    widget = nfw.NeuralFlowWidget(model, x)
    reply, _ = widget._stage_data({"stage": "attn", "window": [0, 50, 0, 50]}, [])
    assert reply["ok"] and reply["attention"][0]["pool"] == [2, 2]


def test_a_model_that_cannot_run_again_keeps_the_blocks(gpt2):
    """A widget made from a Flow and a model but no inputs: the zoom says why, as block means."""
    model, ids, _ = gpt2
    flow = nfw.trace(model, ids)
    assert "running the model again failed" in attention_window(
        model, (), flow, "transformer.h.0.attn", 0, (0, 10, 0, 10)
    )
    widget = nfw.NeuralFlowWidget(model, flow=flow)
    reply, _ = widget._stage_data({"stage": "transformer.h.0.attn", "window": [0, 64, 0, 64]}, [])
    assert reply["ok"] and reply["attention"][0]["pool"] == [2, 2]
