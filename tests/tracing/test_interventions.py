"""Interventions (``trace(replace=...)``): each spec against a forward hook or the model
computed by hand, attention heads switched off against attention written out, the model left
as it was, and clear errors for a stage or a spec that does not fit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import zoo
from torch import nn

import neural_flow_widget as nfw


def hooked_output(model, x, module, make):
    """The oracle: the model's output with ``module``'s output replaced by a forward hook."""
    handle = module.register_forward_hook(lambda _m, _a, out: make(out))
    try:
        with torch.no_grad():
            return model(x)
    finally:
        handle.remove()


def output_mean(flow):
    return flow.summary(flow.outputs[0])[0].mean


@pytest.mark.parametrize(
    "spec, make",
    [
        ("zero", torch.zeros_like),
        ("mean", lambda out: out.mean(0, keepdim=True).expand_as(out)),
        (lambda out: out * -2.0, lambda out: out * -2.0),
    ],
    ids=["zero", "mean", "callable"],
)
def test_a_replaced_output_is_what_a_forward_hook_gives(spec, make):
    model = zoo.seeded(zoo.UNet)
    x = torch.randn(3, 1, 16, 16)
    flow = nfw.trace(model, x, replace={"enc2": spec})
    expected = hooked_output(model, x, model.enc2, make)
    assert output_mean(flow) == pytest.approx(float(expected.mean()), rel=1e-5, abs=1e-7)
    with torch.no_grad():
        alone = make(model.enc2(model.pool(model.enc1(x))))
    assert flow.summary("enc2")[0].mean == pytest.approx(float(alone.mean()), rel=1e-4, abs=1e-7)
    assert ("enc2", "pool#1", "flow") in [tuple(e) for e in flow.select(1).edges]  # read still
    assert any("enc2 -> " in note for note in flow.notes)


def test_a_tensor_stands_for_an_output_and_one_that_does_not_fit_is_refused():
    model = zoo.seeded(zoo.ResNet)
    x = torch.randn(2, 3, 8, 8)
    given = torch.full((8, 8, 8), 0.5)  # broadcasts over the batch
    flow = nfw.trace(model, x, replace={"layer1": given})
    expected = hooked_output(model, x, model.layer1, lambda out: given.expand_as(out))
    assert output_mean(flow) == pytest.approx(float(expected.mean()), rel=1e-5)
    with pytest.raises(nfw.TraceError, match=r"stage 'layer1'.*\[4, 4\] cannot stand for"):
        nfw.trace(model, x, replace={"layer1": torch.zeros(4, 4)})


def test_one_call_of_a_reused_module_is_replaced_by_its_id():
    model = zoo.seeded(zoo.UNet)
    x = torch.randn(1, 1, 16, 16)
    flow = nfw.trace(model, x, replace={"pool#1": "zero"})
    assert flow.summary("pool#0")[0].max > 0 and flow.summary("pool#1")[0].max == 0.0
    every = nfw.trace(model, x, replace={"pool": "zero"})
    assert every.summary("pool#0")[0].max == 0.0 and every.summary("pool#1")[0].max == 0.0


class SdpaAttention(nn.Module):
    """Multi-head self-attention through F.scaled_dot_product_attention, then a projection."""

    def __init__(self, d: int = 16, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def split(self, t):
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, off=()):
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, -1))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if off:  # (the oracle: heads switched off by hand)
            o = o.clone()
            o[:, list(off)] = 0
        return self.proj(o.transpose(1, 2).reshape(x.shape))


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = SdpaAttention(), SdpaAttention()

    def forward(self, x):
        return self.b(x + self.a(x))


def test_heads_switched_off_in_sdpa_equal_attention_written_out_with_them_masked():
    model = zoo.seeded(Layers)
    x = torch.randn(2, 5, 16)
    flow = nfw.trace(model, x, replace={"a": nfw.heads(zero=[1, 3])})
    with torch.no_grad():
        h = x + model.a(x, off=(1, 3))
        expected = model.b(h)
    assert output_mean(flow) == pytest.approx(float(expected.mean()), rel=1e-5)
    assert flow.summary("a")[0].mean == pytest.approx(
        float(model.a(x, off=(1, 3)).mean()), rel=1e-5
    )
    untouched = nfw.trace(model, x)
    assert output_mean(untouched) == pytest.approx(float(model(x).mean()), rel=1e-5)


def test_heads_switched_off_in_multihead_attention_equal_it_written_out():
    model = zoo.seeded(zoo.Attention)
    x = torch.randn(2, 5, 6)
    weight = model.attn.out_proj.weight.detach().clone()
    flow = nfw.trace(model, x, replace={"attn": nfw.heads(zero=[0, 2])})
    mha = model.attn
    with torch.no_grad():
        h = model.embed(x)
        q, k, v = (
            h @ w.T + b for w, b in zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3))
        )
        split = lambda t: t.view(2, 5, 4, 4).transpose(1, 2)
        o = F.scaled_dot_product_attention(split(q), split(k), split(v))
        o[:, [0, 2]] = 0
        a = o.transpose(1, 2).reshape(2, 5, 16) @ mha.out_proj.weight.T + mha.out_proj.bias
        expected = model.out(model.norm(h + a))
    assert output_mean(flow) == pytest.approx(float(expected.mean()), rel=1e-4)
    assert torch.equal(model.attn.out_proj.weight, weight)  # a copy was masked, not the weight
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()


def test_stages_and_specs_that_do_not_fit_are_refused_before_running():
    model = zoo.seeded(zoo.UNet)
    x = torch.randn(1, 1, 16, 16)
    with pytest.raises(KeyError, match=r"no stage 'enc3'.*'enc1'"):
        nfw.trace(model, x, replace={"enc3": "zero"})
    with pytest.raises(ValueError, match="a spec is 'zero', 'mean'"):
        nfw.trace(model, x, replace={"enc1": "zeros"})
    with pytest.raises(ValueError, match="one or more head indices"):
        nfw.heads(zero=[])
    with pytest.raises(nfw.TraceError, match="this attention has 4 heads"):
        nfw.trace(
            zoo.seeded(zoo.Attention), torch.randn(1, 3, 6), replace={"attn": nfw.heads(zero=[4])}
        )
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()


def test_a_nan_that_a_replacement_causes_is_traced_to_where_it_was_made():
    """The second run that finds where a NaN was made replaces what the first run did."""

    class Root(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 2)
            nn.init.constant_(self.a.bias, 10.0)  # (positive as it is: its root is finite)

        def forward(self, x):
            return self.b(torch.sqrt(self.a(x)))

    model = zoo.seeded(Root)
    x = torch.rand(2, 3)
    assert not nfw.trace(model, x).nonfinite
    flow = nfw.trace(model, x, replace={"a": lambda out: -out})
    assert flow.nonfinite == ("b",)
    origin = flow.nonfinite_origin
    assert origin is not None and "sqrt" in origin.describe()


@pytest.mark.parametrize("layer", [0, 2])
def test_heads_switched_off_in_hand_written_attention_equal_the_sdpa_ones(layer):
    """GPT-2's eager attention (softmax and matmul written out) with heads switched off gives
    what its SDPA attention with the same heads off gives (that one held to attention written
    out above): the heads found in both."""
    transformers = pytest.importorskip("transformers")
    config = dict(n_layer=3, n_embd=32, n_head=4, vocab_size=64, n_positions=32)
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    spec = {f"transformer.h.{layer}.attn": nfw.heads(zero=[0, 3])}
    outs = {}
    for implementation in ("eager", "sdpa"):
        torch.manual_seed(0)
        model = transformers.GPT2LMHeadModel(
            transformers.GPT2Config(**config, attn_implementation=implementation)
        ).eval()
        flow = nfw.trace(model, ids, replace=spec)
        outs[implementation] = (output_mean(flow), flow.summary(f"transformer.h.{layer}")[0].std)
        clean = nfw.trace(model, ids)
        assert output_mean(clean) != pytest.approx(outs[implementation][0], rel=1e-6)
    assert outs["eager"] == pytest.approx(outs["sdpa"], rel=1e-5)


def test_heads_asked_of_a_stage_where_no_attention_runs_are_refused():
    model = zoo.seeded(zoo.Attention)
    x = torch.randn(2, 5, 6)
    with pytest.raises(nfw.TraceError, match=r"stage 'embed'.*no attention ran.*replace="):
        nfw.trace(model, x, replace={"embed": nfw.heads(zero=[0])})
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()
