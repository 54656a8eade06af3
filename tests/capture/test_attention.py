"""Tests for neural_flow_widget.capture.attention.recorder: every map is checked against an oracle.

Oracles: a float64 re-implementation of SDPA's documented math, SDPA's own output (weights @ v),
nn.MultiheadAttention's own need_weights=True weights, and transformers' output_attentions.
"""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from neural_flow_widget.capture.attention import handlers, probabilities
from neural_flow_widget.capture.attention.probabilities import PendingMap
from neural_flow_widget.capture.attention.recorder import (
    INTERESTING,
    AttentionMap,
    AttentionRecorder,
    AttentionTracer,
    attention_probs,
)

# ------------------------------------------------------------------------------- oracles


def manual_probs(q, k, mask=None, causal=False, scale=None, gqa=False):
    """softmax(q kᵀ · scale + bias) in float64, all batch samples, as SDPA's docs define it."""
    q, k = q.double(), k.double()
    if gqa:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
    length, keys = q.shape[-2], k.shape[-2]
    bias = torch.zeros(length, keys, dtype=torch.float64)
    if causal:
        bias.masked_fill_(~torch.ones(length, keys, dtype=torch.bool).tril(), -math.inf)
    if mask is not None:
        bias = (
            bias.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else bias + mask.double()
        )
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.softmax(q @ k.transpose(-2, -1) * scale + bias, dim=-1)


def block_mean(exact: np.ndarray, pq: int, pk: int) -> np.ndarray:
    """Mean of each pq x pk block of (heads, L, S); short last blocks average their own members."""
    heads, length, keys = exact.shape
    nq, nk = -(-length // pq), -(-keys // pk)
    padded = np.full((heads, nq * pq, nk * pk), np.nan)
    padded[:, :length, :keys] = exact
    return np.nanmean(padded.reshape(heads, nq, pq, nk, pk), axis=(2, 4))


def traced(fn, **options):
    """(fn(), tracer) with fn run under an AttentionTracer."""
    with AttentionTracer(**options) as tracer:
        out = fn()
    return out, tracer


def only_maps(tracer) -> list[AttentionMap]:
    assert not tracer.errors, tracer.errors
    return tracer.maps.get(0, [])


# ---------------------------------------------------------------------- attention_probs


@pytest.mark.parametrize(
    "case",
    [
        "plain",
        "bool_mask",
        "float_mask",
        "causal_square",
        "causal_wide",
        "scale",
        "gqa",
        "gqa_mask",
    ],
)
@pytest.mark.parametrize("sample", [0, 1])
def test_attention_probs_matches_sdpa_math_and_output(case, sample):
    g = torch.Generator().manual_seed(sum(map(ord, case)))  # stable across runs
    kv_heads = 2 if case.startswith("gqa") else 4
    length, keys = (5, 9) if case == "causal_wide" else (7, 7)
    q = torch.randn(2, 4, length, 8, generator=g)
    k, v = (
        torch.randn(2, kv_heads, keys, 8, generator=g),
        torch.randn(2, kv_heads, keys, 8, generator=g),
    )
    kw: dict = {}
    if case in ("bool_mask", "gqa_mask"):
        kw["attn_mask"] = torch.rand(2, 1, length, keys, generator=g) > 0.3
        kw["attn_mask"][..., 0] = True  # keep every row alive so SDPA and the oracle agree
    if case == "float_mask":
        kw["attn_mask"] = torch.randn(length, keys, generator=g)
    kw["is_causal"] = case.startswith("causal")
    kw["scale"] = 0.37 if case == "scale" else None
    kw["enable_gqa"] = case.startswith("gqa")

    got = attention_probs(q, k, sample=sample, **kw)
    oracle = manual_probs(
        q, k, kw.get("attn_mask"), kw["is_causal"], kw["scale"], kw["enable_gqa"]
    )[sample]
    assert got.weights.dtype == np.float32 and got.weights.shape == (4, length, keys)
    described = (got.q_len, got.k_len, got.pool, got.source, got.causal)
    assert described == (length, keys, (1, 1), "sdpa", kw["is_causal"])
    np.testing.assert_allclose(got.weights, oracle.numpy(), atol=1e-6)

    out = F.scaled_dot_product_attention(q, k, v, **kw)[sample]
    v_full = v[sample].repeat_interleave(4 // kv_heads, dim=0)
    np.testing.assert_allclose(got.weights @ v_full.numpy(), out.numpy(), atol=1e-5)


def test_attention_probs_broadcasts_masks_and_batch():
    q, k = torch.randn(3, 2, 4, 8), torch.randn(1, 2, 6, 8)  # keys broadcast over the batch
    mask = torch.randn(3, 2, 1, 6)  # one row broadcast over queries, per sample and head
    got = attention_probs(q, k, attn_mask=mask, sample=2)
    oracle = manual_probs(q, k.expand(3, -1, -1, -1), mask)[2]
    np.testing.assert_allclose(got.weights, oracle.numpy(), atol=1e-6)
    unbatched = attention_probs(q[0, 0], k[0, 0])  # (L, E) inputs: one head
    np.testing.assert_allclose(
        unbatched.weights[0], manual_probs(q[0, 0], k[0, 0]).numpy(), atol=1e-6
    )


def test_fully_masked_rows_are_zero_like_sdpa():
    q = torch.randn(1, 2, 3, 4)
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., 1, :] = False
    got = attention_probs(q, q, attn_mask=mask)
    assert np.all(got.weights[:, 1] == 0) and np.allclose(got.weights[:, [0, 2]].sum(-1), 1)
    assert torch.all(F.scaled_dot_product_attention(q, q, q, attn_mask=mask)[0, :, 1] == 0)


def test_attention_probs_errors_name_the_fix():
    q = torch.randn(2, 4, 3, 8)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        attention_probs(q, torch.randn(2, 2, 3, 8))
    with pytest.raises(IndexError, match="pass sample="):
        attention_probs(q, q, sample=2)
    with pytest.raises(ValueError, match="not both"):
        attention_probs(q, q, attn_mask=torch.ones(3, 3, dtype=torch.bool), is_causal=True)


@pytest.mark.slow
def test_pooling_equals_block_mean_of_exact_map():
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 1024, 8), torch.randn(1, 2, 1024, 8)
    exact = attention_probs(q, k, is_causal=True, max_exact=2048).weights
    pooled = attention_probs(q, k, is_causal=True)
    assert pooled.pool == (2, 2) and pooled.weights.shape == (2, 512, 512) and pooled.q_len == 1024
    np.testing.assert_allclose(pooled.weights, block_mean(exact, 2, 2), atol=1e-6)
    np.testing.assert_allclose(pooled.mass().sum(-1), 1, atol=1e-5)

    q, k = torch.randn(1, 2, 1030, 8), k[:, :, :700]
    ragged = attention_probs(q, k, block=7)  # pool (3, 2), short last blocks, 6-row steps
    assert ragged.pool == (3, 2) and ragged.weights.shape == (2, 344, 350)
    exact = attention_probs(q, k, max_exact=2048).weights
    np.testing.assert_allclose(ragged.weights, block_mean(exact, 3, 2), atol=1e-6)
    np.testing.assert_allclose(ragged.mass().sum(-1), 1, atol=1e-5)


class LargestProduct(TorchFunctionMode):
    """Test-only probe: the largest tensor any product (matmul, baddbmm) inside the block
    produced."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.matmul, torch.baddbmm):
            self.largest = max(self.largest, out.numel())
        return out


@pytest.mark.slow
def test_long_sequence_4096_is_pooled_in_bounded_blocks():
    heads, length = 4, 4096
    q, k = torch.randn(1, heads, length, 8), torch.randn(1, heads, length, 8)
    with LargestProduct() as probe:
        got = attention_probs(q, k, is_causal=True)
    assert got.weights.shape == (4, 512, 512) and got.pool == (8, 8)
    np.testing.assert_allclose(got.mass().sum(-1), 1, atol=1e-4)
    rows = probabilities._block_rows(None, heads, length, 8)
    assert 0 < probe.largest <= heads * rows * length <= probabilities._BLOCK_ELEMENTS
    assert probe.largest * 16 <= heads * length * length  # never the full L x L of all heads


# ------------------------------------------------------------------ direct SDPA via tracer


def test_tracer_records_sdpa_and_leaves_output_bitwise_unchanged():
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)
    mask = torch.randn(2, 1, 6, 6)

    def call():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True)

    out, tracer = traced(call, sample=1)
    assert torch.equal(out, call())
    (m,) = only_maps(tracer)
    np.testing.assert_allclose(
        m.weights, manual_probs(q, k, mask, scale=0.3, gqa=True)[1].numpy(), atol=1e-6
    )


# -------------------------------------------------------------------- nn.MultiheadAttention


def mha_case(batch_first, **module_kw):
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(16, 4, batch_first=batch_first, **module_kw).eval()
    shape = (2, 5, 16) if batch_first else (5, 2, 16)
    x = torch.randn(shape)
    kv = torch.randn(2, 7, module_kw.get("kdim", 16)) if "kdim" in module_kw else x
    if "kdim" in module_kw and not batch_first:
        kv = kv.transpose(0, 1)
    return mha, x, kv


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("variant", ["masks", "bias_kv_zero_attn", "separate_proj", "float_mask"])
def test_mha_maps_equal_module_weights(batch_first, variant):
    module_kw = {
        "bias_kv_zero_attn": {"add_bias_kv": True, "add_zero_attn": True},
        "separate_proj": {"kdim": 12, "vdim": 12},
    }.get(variant, {})
    mha, x, kv = mha_case(batch_first, **module_kw)
    keys = 7 if variant == "separate_proj" else 5
    padding = torch.zeros(2, keys, dtype=torch.bool)
    padding[1, -2:] = True  # sample 1 ignores its last two keys
    attn_mask = torch.triu(torch.ones(5, keys, dtype=torch.bool), diagonal=1)  # True = blocked
    if variant == "float_mask":  # float masks of both kinds (MHA warns when the kinds differ)
        attn_mask, padding = (
            torch.randn(5, keys),
            torch.zeros(2, keys).masked_fill(padding, -math.inf),
        )
    kw = dict(key_padding_mask=padding, attn_mask=attn_mask)
    _, own = mha(x, kv, kv, need_weights=True, average_attn_weights=False, **kw)
    for sample in (0, 1):
        (out, _), tracer = traced(lambda: mha(x, kv, kv, need_weights=False, **kw), sample=sample)
        (m,) = only_maps(tracer)
        assert m.source == "mha"
        np.testing.assert_allclose(m.weights, own[sample].detach().numpy(), atol=1e-5)
    assert torch.equal(out, mha(x, kv, kv, need_weights=False, **kw)[0])


def test_mha_causal_hint_and_unbatched_input():
    mha, x, _ = mha_case(True)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    _, own = mha(x, x, x, attn_mask=causal, need_weights=True, average_attn_weights=False)
    _, tracer = traced(
        lambda: mha(x, x, x, attn_mask=causal, is_causal=True, need_weights=False), sample=1
    )
    (m,) = only_maps(tracer)
    assert m.causal
    np.testing.assert_allclose(m.weights, own[1].detach().numpy(), atol=1e-5)
    _, tracer = traced(lambda: mha(x[0], x[0], x[0], need_weights=False))
    _, own0 = mha(x[0], x[0], x[0], need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(only_maps(tracer)[0].weights, own0.detach().numpy(), atol=1e-5)


def test_transformer_encoder_layer_goes_through_mha():
    torch.manual_seed(7)
    layer = nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, batch_first=True, norm_first=True
    ).eval()
    x = torch.randn(2, 6, 16)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    with torch.no_grad():  # inference: the fused fast path would run if nothing were tracing
        _, tracer = traced(lambda: layer(x, src_key_padding_mask=padding), sample=1)
        n = layer.norm1(x)
        _, own = layer.self_attn(n, n, n, key_padding_mask=padding, average_attn_weights=False)
    (m,) = only_maps(tracer)
    np.testing.assert_allclose(m.weights, own[1].numpy(), atol=1e-5)


# ----------------------------------------------------------------- hand-written attention


class TimmAttention(nn.Module):
    """timm-style attention: q @ kᵀ * scale, Tensor.softmax, attn @ v."""

    def __init__(self, dim=16, heads=4, style="timm"):
        super().__init__()
        self.heads, self.style = heads, style
        self.qkv, self.proj = nn.Linear(dim, dim * 3), nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if self.style == "timm":
            attn = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
            attn = attn.masked_fill(~mask, float("-inf")) if mask is not None else attn
            attn = attn.softmax(dim=-1)
            x = attn @ v
        elif self.style == "einsum":
            attn = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(c // self.heads)
            attn = torch.nn.functional.softmax(attn, dim=3)
            x = torch.einsum("bhqk,bhkd->bhqd", F.dropout(attn, 0.5, training=False), v)
        else:  # bmm over (batch*heads, L, S), torch.softmax, a cast in between
            q, k, v = (t.reshape(b * self.heads, n, -1) for t in (q, k, v))
            attn = torch.softmax(
                torch.bmm(q, k.transpose(1, 2)).div(math.sqrt(c // self.heads)), -1
            )
            x = torch.bmm(attn.to(torch.float32).contiguous(), v).reshape(b, self.heads, n, -1)
        return self.proj(x.transpose(1, 2).reshape(b, n, c)), attn


@pytest.mark.parametrize("style", ["timm", "einsum", "bmm"])
def test_hand_written_softmax_attention_is_recorded(style):
    torch.manual_seed(2)
    block = TimmAttention(style=style).eval()
    x = torch.randn(2, 6, 16)
    mask = torch.ones(2, 1, 6, 6, dtype=torch.bool).tril() if style == "timm" else None
    (out, attn), tracer = traced(lambda: block(x, mask), sample=1)
    assert torch.equal(out, block(x, mask)[0])
    (m,) = only_maps(tracer)
    expected = attn[1:2] if style == "bmm" else attn[1]  # bmm: (batch*heads) is the batch axis
    assert m.source == "softmax" and m.weights.shape == tuple(expected.shape)
    np.testing.assert_array_equal(m.weights, expected.detach().numpy())


def test_softmax_that_is_not_attention_is_ignored():
    torch.manual_seed(3)
    a, b = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 5, 4)

    def run():
        scores = a @ b
        scores.softmax(-1).sum()  # never multiplied: a candidate, not confirmed
        torch.softmax(scores, dim=-2) @ b.transpose(-2, -1)  # not over the key axis
        torch.softmax(a, -1) @ b  # softmax of something that is not a product
        (a[0, 0] @ b[0, 0]).softmax(-1) @ a[0, 0]  # 2-D: not a batch of heads
        return scores

    _, tracer = traced(run)
    assert only_maps(tracer) == []


# -------------------------------------------------------------------------- transformers


def tiny_gpt2(impl):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(4)
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=impl,
    )
    return GPT2LMHeadModel(config).eval()


def tiny_bert(impl):
    from transformers import BertConfig, BertModel

    torch.manual_seed(5)
    config = BertConfig(
        vocab_size=100,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
        attn_implementation=impl,
    )
    return BertModel(config).eval()


def tiny_llama(impl):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(8)
    config = LlamaConfig(
        vocab_size=100,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
        attn_implementation=impl,
    )
    return LlamaForCausalLM(config).eval()


PADDED = torch.tensor([[1] * 16, [1] * 11 + [0] * 5])


@pytest.mark.parametrize(
    "build, padded, sample",
    [
        (tiny_gpt2, False, 0),
        (tiny_gpt2, True, 1),
        (tiny_bert, False, 0),
        (tiny_bert, True, 1),
        (tiny_llama, False, 1),
    ],
    ids=["gpt2", "gpt2-padded", "bert", "bert-padded", "llama-gqa"],
)
def test_transformers_maps_equal_output_attentions(build, padded, sample):
    ids = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(6))
    kw = {"attention_mask": PADDED} if padded else {}
    eager = build("eager")
    with torch.no_grad():
        oracle = [a[sample].numpy() for a in eager(ids, output_attentions=True, **kw).attentions]
    assert len(oracle) == 2
    for impl, source in (("eager", "softmax"), ("sdpa", "sdpa")):
        model = build(impl)
        model.load_state_dict(eager.state_dict())
        with torch.no_grad():
            plain = model(ids, **kw)
            out, tracer = traced(lambda: model(ids, **kw), sample=sample)
        assert torch.equal(out[0], plain[0]), impl
        maps = only_maps(tracer)
        assert [m.source for m in maps] == [source, source], impl
        for got, want in zip(maps, oracle):
            np.testing.assert_allclose(got.weights, want, atol=1e-5, err_msg=impl)


# ---------------------------------------------------------------- recorder: calls, registry


def test_maps_are_keyed_by_the_current_call_and_errors_do_not_abort():
    q = torch.randn(1, 2, 4, 8)
    current = {"call": 3}
    rec = AttentionRecorder(lambda: current["call"])
    for call in (3, 5, 5):
        current["call"] = call
        rec.observe(F.scaled_dot_product_attention, (q, q, q), {}, None)
    assert {c: len(ms) for c, ms in rec.maps.items()} == {3: 1, 5: 2}

    out, tracer = traced(lambda: F.scaled_dot_product_attention(q, q, q), sample=4)
    assert torch.equal(out, F.scaled_dot_product_attention(q, q, q))
    assert tracer.maps == {} and "pass sample=" in tracer.errors[0][0]


def test_interesting_is_the_registry_and_double_registration_fails():
    needed = {
        F.scaled_dot_product_attention,
        F.multi_head_attention_forward,
        torch.matmul,
        F.softmax,
    }
    assert needed <= INTERESTING
    assert AttentionRecorder.INTERESTING is INTERESTING and torch.relu not in INTERESTING
    rec = AttentionRecorder(lambda: 0)
    rec.observe(torch.relu, (torch.ones(1),), {}, torch.ones(1))
    assert rec.maps == {} and rec.errors == {}
    with pytest.raises(ValueError, match="register each op once"):
        handlers.register(torch.matmul)(lambda *a: None)


def test_provenance_table_empties_when_tensors_die():
    block = TimmAttention().eval()
    rec = AttentionRecorder(lambda: 0)

    class Probe(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in INTERESTING:
                rec.observe(func, args, kwargs, out)
            return out

    x = torch.randn(1, 4, 16)
    with Probe():
        out, attn = block(x)
        assert rec.tags  # the attention tensor is still alive
        del out, attn
        gc.collect()
        assert not rec.tags
    assert len(rec.maps[0]) == 1


# ------------------------------------------------------------------- lazy maps (capture)


def test_lazy_map_keeps_copies_and_resolves_to_the_eager_map():
    torch.manual_seed(11)
    q, k = torch.randn(2, 4, 40, 4), torch.randn(2, 4, 40, 4)
    mask = (torch.rand(2, 1, 40, 40) > 0.3).expand(2, 4, 40, 40)  # broadcast over heads
    want = attention_probs(q, k, attn_mask=mask, sample=1).weights
    rec = AttentionRecorder(lambda: 3, sample=1, lazy=True)
    rec.observe(F.scaled_dot_product_attention, (q, k, k), {"attn_mask": mask}, None)
    (pending,) = rec.maps[3]
    assert isinstance(pending, PendingMap)
    assert pending._inputs.mask.numel() == 1600  # one copy of the mask, not one per head
    q.mul_(-3.0)  # the model's tensors change after the call: the copies do not
    k.zero_()
    got = pending.resolve()
    assert got is pending.resolve()  # made once
    np.testing.assert_array_equal(got.weights, want)


def test_lazy_maps_only_where_the_copies_are_no_bigger_than_the_map():
    rec = AttentionRecorder(lambda: 0, lazy=True)
    short = torch.randn(1, 2, 16, 64)  # copies 2 x 2 x 16 x 64 > map 2 x 16 x 16
    rec.observe(F.scaled_dot_product_attention, (short, short, short), {}, None)
    long = torch.randn(1, 2, 300, 8)  # copies 2 x 2 x 300 x 8 < map 2 x 300 x 300
    rec.observe(F.scaled_dot_product_attention, (long, long, long), {"is_causal": True}, None)
    eager, lazy = rec.maps[0]
    assert isinstance(eager, AttentionMap) and isinstance(lazy, PendingMap)
    np.testing.assert_array_equal(
        lazy.resolve().weights, attention_probs(long, long, is_causal=True).weights
    )


def test_followers_are_watched_only_once_a_product_is_tagged():
    rec = AttentionRecorder(lambda: 0)
    assert torch.Tensor.view not in rec.watched and F.softmax in rec.watched
    q = torch.randn(1, 2, 4, 8)
    scores = q @ q.transpose(-2, -1)
    rec.observe(torch.matmul, (q, q.transpose(-2, -1)), {}, scores)
    assert rec.watched == set(INTERESTING)  # a tagged product: its followers matter now
    rec.forget()
    assert torch.Tensor.view not in rec.watched and F.softmax in rec.watched


class _WritesAfterAttention(nn.Module):
    """SDPA on views of one projection, then that projection written in place."""

    def __init__(self, later_write: bool) -> None:
        super().__init__()
        self.qk = nn.Linear(8, 32)
        self.later_write = later_write

    def forward(self, x):
        qk = self.qk(x)
        q, k = qk.view(*x.shape[:2], 2, 2, 8).transpose(1, 3).unbind(1)
        out = F.scaled_dot_product_attention(q, k, k, is_causal=True)
        if self.later_write:
            qk.mul_(0)  # the query and key the map needs, overwritten
        return out.sum() + qk.sum()


@pytest.mark.parametrize("later_write", [False, True])
def test_held_sdpa_arguments_give_the_calls_own_map_even_if_overwritten_later(later_write):
    import neural_flow_widget as nfw

    torch.manual_seed(0)
    model = _WritesAfterAttention(later_write).eval()
    x = torch.randn(1, 24, 8)  # (a map bigger than the projection: the arguments are held)
    with torch.no_grad():
        qk = model.qk(x)
        q, k = qk.view(1, 24, 2, 2, 8).transpose(1, 3).unbind(1)
        want = attention_probs(q, k, is_causal=True)
    flow = nfw.trace(nn.Sequential(model), x)  # (stage "0": the SDPA call's module)
    (got,) = flow.attention("0")
    np.testing.assert_allclose(got.weights, want.weights, atol=1e-6)
    assert got.causal and not flow.capture.failures
