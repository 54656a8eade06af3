"""Condensing the op graph changes no stage edge: the edges of the condensed graph equal those
of the full graph (one node per recorded op) for every selection, on the zoo, the demos and
random architectures that mix module and functional activations, views and in-place ops
between stages. And the pre-activation residual stack (HiFi-GAN's) keeps every edge its
code makes, derived by hand."""

from __future__ import annotations

import dataclasses
import random

import pytest
import random_models
import torch
import torch.nn.functional as F
import zoo
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import neural_flow_widget as nfw
from neural_flow_widget.graph import condense, stage_edges


def full_and_condensed(model, x, **options):
    """A run with its full op graph (one node per recorded op, ``flow.graph``), and the same
    run with the graph it walks, condensed (``flow.condensed``)."""
    flow = nfw.trace(model, x, capture=False, **options)
    return flow, dataclasses.replace(flow, graph=flow.condensed)


def selections(flow, rng: random.Random, count: int = 12):
    """The default selection, every depth, and random sets of calls (as the front end's
    expansion states give)."""
    yield flow.selected
    for depth in range(1, 5):
        yield flow.select(depth).selected
    indices = [c.index for c in flow.calls]
    for _ in range(count):
        yield tuple(sorted(rng.sample(indices, rng.randint(1, len(indices)))))


def assert_same_edges(full, condensed, seed=0):
    assert len(condensed.graph.owners) <= len(full.graph.owners)
    rng = random.Random(seed)
    for chosen in selections(full, rng):
        a = stage_edges(full.graph, chosen, full.inputs, full.outputs, full.calls)
        b = stage_edges(condensed.graph, chosen, condensed.inputs, condensed.outputs,
                        condensed.calls)  # fmt: skip
        assert a == b, chosen


ZOO = [
    (zoo.UNet, lambda: torch.randn(1, 1, 16, 16)),
    (zoo.ResNet, lambda: torch.randn(1, 3, 8, 8)),
    (zoo.Multimodal, lambda: (torch.randn(2, 1, 8, 8), torch.randn(2, 6))),
    (zoo.Reused, lambda: torch.randn(2, 4)),
    (zoo.Attention, lambda: torch.randn(2, 5, 6)),
    (zoo.ThreeHeads, lambda: torch.randn(2, 4)),
    (zoo.PreNorm, lambda: torch.randn(2, 4)),
    (zoo.Dense, lambda: torch.randn(2, 4)),
    (zoo.InPlace, lambda: torch.randn(2, 4)),
]


@pytest.mark.parametrize("make, x", ZOO, ids=lambda v: getattr(v, "__name__", ""))
def test_condensing_keeps_every_edge_of_the_zoo(make, x):
    full, condensed = full_and_condensed(zoo.seeded(make), x())
    assert_same_edges(full, condensed)


def test_condensing_keeps_every_edge_of_gpt2():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=3, n_embd=32, n_head=4, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    full, condensed = full_and_condensed(model, torch.randint(0, 64, (2, 9)))
    assert_same_edges(full, condensed)
    assert len(condensed.graph.owners) < len(full.graph.owners)  # (it does condense)


class PreActivationStack(nn.Module):
    """HiFi-GAN's residual stack: functional activations between the convolutions."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Conv1d(1, 4, 3, padding=1)
        self.res1 = nn.Conv1d(4, 4, 3, padding=1)
        self.res2 = nn.Conv1d(4, 4, 3, padding=1)
        self.post = nn.Conv1d(4, 1, 3, padding=1)

    def forward(self, x):
        pre = self.pre(x)
        h1 = pre + self.res1(F.leaky_relu(pre, 0.1))
        h2 = h1 + self.res2(F.leaky_relu(h1, 0.1))
        return self.post(F.leaky_relu(h2, 0.1))


def test_a_pre_activation_residual_stack_keeps_its_skips():
    # by hand: res2 reads h1 = pre + res1(..): res1 (deepest) and pre, an ancestor of res1;
    # post reads h2 = h1 + res2(..): res2, and res1 and pre through h1 (both ancestors of res2)
    want = {("input:0", "pre", "flow"), ("pre", "res1", "flow"), ("res1", "res2", "flow"),
            ("pre", "res2", "skip"), ("res2", "post", "flow"), ("res1", "post", "skip"),
            ("pre", "post", "skip"), ("post", "output:0", "flow")}  # fmt: skip
    flow = nfw.trace(zoo.seeded(PreActivationStack), torch.randn(1, 1, 16), capture=False)
    assert {tuple(e) for e in flow.edges} == want
    full, condensed = full_and_condensed(zoo.seeded(PreActivationStack), torch.randn(1, 1, 16))
    assert_same_edges(full, condensed)


# -- random architectures with glue between the stages (tests/random_models.py) --------------


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(random_models.architectures(), st.integers(0, 10_000))
def test_condensing_keeps_every_edge_of_random_glued_architectures(arch, seed):
    model, args, kwargs = random_models.model_and_inputs(arch, seed)
    full, condensed = full_and_condensed(model, args, kwargs=kwargs)
    condensed.lint()
    assert_same_edges(full, condensed, seed)


def test_the_check_can_fail():
    """Merging a call's input into its parent (what the tracer used to do) changes edges."""
    full, _ = full_and_condensed(zoo.seeded(PreActivationStack), torch.randn(1, 1, 16))
    g = full.graph
    res2 = next(c.index for c in full.calls if c.id == "res2")
    (start,) = g.call_inputs[res2]  # the leaky_relu of h1
    (h1,) = g.parents[start]
    merged = dataclasses.replace(g, call_inputs=tuple(
        (h1,) if i == res2 else ops for i, ops in enumerate(g.call_inputs)))  # fmt: skip
    before = stage_edges(g, full.selected, full.inputs, full.outputs, full.calls)
    after = stage_edges(merged, full.selected, full.inputs, full.outputs, full.calls)
    assert ("pre", "post", "skip") in {tuple(e) for e in before}
    assert ("pre", "post", "skip") not in {tuple(e) for e in after}
    assert stage_edges(condense(g), full.selected, full.inputs, full.outputs,
                       full.calls) == before  # fmt: skip
