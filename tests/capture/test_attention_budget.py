"""A run's attention maps stay within their budget, pooled further where they must be, and
say so; a pooled entry is still the exact mean of the probabilities in its block. Oracles:
softmax(q kᵀ) computed here in full, and block means taken of it by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget.capture.attention.budget import fit_budget, held_bytes, repool
from neural_flow_widget.capture.attention.maps import AttentionMap
from neural_flow_widget.capture.attention.probabilities import attention_probs


def full_probs(q: torch.Tensor, k: torch.Tensor, causal: bool) -> np.ndarray:
    """softmax(q kᵀ / sqrt(E)) of (1, H, L, E) tensors, (H, L, S) float64."""
    q64, k64 = q[0].double(), k[0].double()
    scores = q64 @ k64.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        scores = scores + torch.triu(torch.full(scores.shape[-2:], float("-inf")), 1).double()
    return torch.softmax(scores, -1).numpy()


def block_means(p: np.ndarray, pq: int, pk: int) -> np.ndarray:
    """Means over pq x pk blocks (the last ones shorter), by hand."""
    heads, rows, keys = p.shape
    out = np.zeros((heads, -(-rows // pq), -(-keys // pk)))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = p[:, i * pq : (i + 1) * pq, j * pk : (j + 1) * pk].mean(axis=(1, 2))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("length", "max_exact"), [(1000, 512), (777, 64), (130, 16)])
@pytest.mark.parametrize("causal", [True, False])
def test_pooled_maps_are_block_means_of_the_full_probabilities(length, max_exact, causal):
    """(With is_causal the key blocks no query of a row block can see are never computed.)"""
    g = torch.Generator().manual_seed(length)
    q, k = torch.randn(1, 3, length, 16, generator=g), torch.randn(1, 3, length, 16, generator=g)
    m = attention_probs(q, k, is_causal=causal, max_exact=max_exact)
    want = block_means(full_probs(q, k, causal), *m.pool)
    np.testing.assert_allclose(m.weights, want, atol=2e-7)


@pytest.mark.parametrize("f", [2, 3, 7])
def test_repooling_a_pooled_map_gives_the_block_means_of_the_larger_blocks(f):
    g = torch.Generator().manual_seed(f)
    q, k = torch.randn(1, 2, 301, 8, generator=g), torch.randn(1, 2, 290, 8, generator=g)
    m = attention_probs(q, k, max_exact=64)  # pool (5, 5), short last blocks on both axes
    again = repool(m, f)
    assert again.pool == (m.pool[0] * f, m.pool[1] * f)
    want = block_means(full_probs(q, k, False), *again.pool)
    np.testing.assert_allclose(again.weights, want, atol=1e-6)
    np.testing.assert_allclose(again.mass().sum(-1), 1.0, atol=1e-5)  # rows still sum to 1


def test_a_one_query_map_keeps_its_query_axis():
    m = AttentionMap(np.full((4, 1, 64), 1 / 64, np.float32), 1, 64, (1, 1), "sdpa", True)
    again = repool(m, 4)
    assert again.weights.shape == (4, 1, 16) and again.pool == (1, 4)


def test_maps_within_the_budget_are_left_as_they_are():
    m = AttentionMap(np.full((2, 8, 8), 1 / 8, np.float32), 8, 8, (1, 1), "sdpa", False)
    maps = {0: [m], 3: [m]}
    kept, note = fit_budget(maps, budget=2 * held_bytes(m))
    assert kept is maps and note is None
    assert fit_budget(maps, budget=None) == (maps, None)


@pytest.mark.slow
def test_a_long_gpt2_run_keeps_its_maps_within_the_budget_and_says_so():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=3, n_embd=64, n_head=4, vocab_size=100, n_positions=1024, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, 100, (1, 1024), generator=torch.Generator().manual_seed(0))
    budget = 2 * 2**20  # three maps of 4 heads at 512 x 512 would take 12 MiB
    flow = nfw.trace(model, ids, attention_budget_bytes=budget)
    maps = [m for i in range(3) for m in flow.attention(f"h.{i}")]
    assert sum(m.weights.nbytes for m in maps) <= budget
    assert all(m.pool[0] > 2 for m in maps)  # 1024 / 512 = 2, then pooled further
    assert any("attention budget" in note for note in flow.notes)
    # the same entries as an unbounded run pooled by hand
    free = nfw.trace(model, ids, attention_budget_bytes=None)
    exact = free.attention("h.1")[0]
    assert exact.pool == (2, 2) and not any("attention budget" in n for n in free.notes)
    f = maps[1].pool[0] // exact.pool[0]
    np.testing.assert_allclose(maps[1].weights, repool(exact, f).weights, atol=1e-6)
