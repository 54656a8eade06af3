"""Random architectures with a known stage graph must come back exactly.

A spec is a list of steps; step i (value i+1) applies a Linear stage to a combination (add, mul
or cat) of one or two earlier values. Some steps reuse an earlier module (a second call is its
own stage), some group their stage inside a container module, so that nested selections occur,
and some keep their value as ``tanh`` of the stage's output, made once in the model's body and
read by every later step that uses it (a functional op that carries one stage's data to
several readers: never a relayed stream, see ``graph/edges.py`` step 5).
The expected edges are derived from the spec alone: the sources by construction, the primary
one the deepest (most ancestors, then the earliest), a skip where the source lies on the
primary's chain of primary edges, else a merge.
"""

from __future__ import annotations

import random

import pytest
import random_models
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import neural_flow_widget as nfw

D = 4


def spec(draw: random_models.Draw):
    steps = []
    modules = []  # per module: in-features (D or 2 D)
    for i in range(draw.integer(2, 9)):
        sources = sorted({draw.integer(0, i) for _ in range(draw.integer(1, 3))})[:2]
        combine = draw.choice(["add", "mul", "cat"]) if len(sources) == 2 else "one"
        width = 2 * D if combine == "cat" else D
        reusable = [m for m, w in enumerate(modules) if w == width]
        if reusable and draw.coin() and draw.coin():
            module = draw.choice(reusable)
        else:
            module = len(modules)
            modules.append(width)
        steps.append((tuple(sources), combine, module, draw.coin()))
    n = len(steps)
    outputs = sorted({*(draw.integer(1, n) for _ in range(draw.integer(1, 2))), n})
    grouped = [draw.coin() for _ in modules]
    return steps, modules, tuple(outputs), grouped


@st.composite
def specs(draw):
    return spec(random_models._Hypothesis(draw))


class Wrapped(nn.Module):
    """A container around one stage module, so that selections can nest."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class Random(nn.Module):
    def __init__(self, spec) -> None:
        super().__init__()
        steps, widths, self.outs, grouped = spec
        self.steps = steps
        self.mods = nn.ModuleList(
            Wrapped(nn.Linear(w, D)) if g else nn.Linear(w, D) for w, g in zip(widths, grouped)
        )

    def forward(self, x):
        values = [x]
        for sources, combine, module, squashed in self.steps:
            a = values[sources[0]]
            if combine == "add":
                h = a + values[sources[1]]
            elif combine == "mul":
                h = a * torch.tanh(values[sources[1]])
            elif combine == "cat":
                h = torch.cat([a, values[sources[1]]], dim=-1)
            else:
                h = a
            value = self.mods[module](h)
            values.append(torch.tanh(value) if squashed else value)
        outs = tuple(values[i] for i in self.outs)
        return outs[0] if len(outs) == 1 else outs


def expected_edges(spec, names):
    """Edges from the spec alone: sources by construction, kinds by the primary path."""
    steps, _, outs, _ = spec
    node = ["input:0"]
    calls: dict[int, int] = {}
    total = {m: sum(1 for *_, mm, _ in steps if mm == m) for *_, m, _ in steps}
    for _, _, module, _ in steps:
        k = calls.get(module, 0)
        calls[module] = k + 1
        node.append(names[module] + (f"#{k}" if total[module] > 1 else ""))
    sinks = [(node[i + 1], [node[s] for s in step[0]]) for i, step in enumerate(steps)]
    if len(outs) == 1:
        sinks.append(("output:0", [node[outs[0]]]))
    else:
        sinks += [(f"output:{j}", [node[v]]) for j, v in enumerate(outs)]
    order = {name: i for i, name in enumerate(["input:0"] + [d for d, _ in sinks])}
    ancestors: dict[str, set[str]] = {"input:0": set()}
    path: dict[str, set[str]] = {"input:0": {"input:0"}}  # a node and its chain of primaries
    edges = []
    for dst, srcs in sinks:
        srcs = sorted(set(srcs), key=order.__getitem__)
        ancestors[dst] = set().union(*(ancestors[s] | {s} for s in srcs))
        primary = max(srcs, key=lambda s: (len(ancestors[s]), -order[s]))
        path[dst] = path[primary] | {dst}
        for src in srcs:
            kind = "flow" if src == primary else ("skip" if src in path[primary] else "merge")
            edges.append((src, dst, kind))
    return edges


def leaf_names(model):
    return [
        f"mods.{i}.inner" if isinstance(m, Wrapped) else f"mods.{i}"
        for i, m in enumerate(model.mods)
    ]


@settings(max_examples=60, deadline=None)
@given(specs())
def test_tracer_recovers_the_spec_exactly(spec):
    torch.manual_seed(0)
    model = Random(spec)
    flow = nfw.trace(model, torch.randn(2, D), capture=False)
    flow.lint()
    assert [tuple(e) for e in flow.edges] == expected_edges(spec, leaf_names(model))


@pytest.mark.parametrize("block", range(6))
def test_hundreds_of_seeded_specs_come_back_exactly(block):
    """300 seeded specs (50 a block), each traced and held to its own plan."""
    for seed in range(block * 50, block * 50 + 50):
        s = spec(random_models._Random(random.Random(seed)))
        torch.manual_seed(seed)
        model = Random(s)
        flow = nfw.trace(model, torch.randn(2, D), capture=False)
        assert [tuple(e) for e in flow.edges] == expected_edges(s, leaf_names(model)), seed


@settings(max_examples=30, deadline=None)
@given(specs())
def test_fx_agrees_with_the_runtime_tracer(spec):
    torch.manual_seed(0)
    model = Random(spec)
    x = torch.randn(2, D)
    for stages in (None, 1):
        auto = nfw.trace(model, x, stages=stages, capture=False)
        fx = nfw.trace(model, x, stages=stages, capture=False, topology="fx")
        assert fx.topology == "fx"
        assert fx.edges == auto.edges


@settings(max_examples=40, deadline=None)
@given(specs(), st.data())
def test_select_equals_a_fresh_trace(spec, data):
    torch.manual_seed(0)
    model = Random(spec)
    x = torch.randn(2, D)
    names = [n for n, _ in model.named_modules() if n and n != "mods"]
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    full = nfw.trace(model, x, capture=False)
    fresh = nfw.trace(model, x, stages=chosen, capture=False)
    again = full.select(chosen)
    assert again.selected == fresh.selected
    assert again.edges == fresh.edges
    again.lint()
