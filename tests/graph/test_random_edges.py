"""Stage edges of random architectures (``tests/random_models.py``) against what their spec
says each step reads. Selecting one stage per step, a step's edges come from what it reads:
every value and model input it reads directly is a source; anything else is something added
to the residual stream it reads, or behind a tensor an earlier step modified in place (older
contributors there may be left out: the relay rule); exactly one edge is the flow; and a step
that reads nothing is attached to the previous step by an ``order`` edge. The JS twin is held
to the same edges by ``tests/fixtures/edges_golden.json``."""

from __future__ import annotations

import pytest
import random_models
from hypothesis import given, settings
from random_models import Architecture

import neural_flow_widget as nfw


def step_stages(arch: Architecture) -> list[str]:
    """The stage id of each step's outermost call."""
    modules = []
    for i, step in enumerate(arch.steps):
        if step.kind == "flat":
            modules.append(f"blocks.{i}.linear")
        elif step.kind == "reuse":
            modules.append(f"blocks.{step.module}")
        else:
            modules.append(f"blocks.{i}")
    seen: dict[str, int] = {}
    ids = []
    for name in modules:
        k = seen[name] = seen.get(name, -1) + 1
        ids.append(f"{name}#{k}" if modules.count(name) > 1 else name)
    return ids


def reads(arch: Architecture, stages: list[str], mask: str) -> list[tuple[set[str], set[str]]]:
    """Per step: (what it reads directly, what else may reach it: what was added to the stream
    it reads, and what a tensor modified in place by an earlier step brings, since the
    earlier version was another stage's input, a relay)."""
    node = ["input:0", *stages]
    streamed = {"input:0"}  # what the stream holds
    stream: tuple = ("value", 0)  # the tensor it is: x until something is added to it
    changed: set[tuple] = set()  # tensors modified in place (the "add_" glue)
    out = []
    for i, step in enumerate(arch.steps):
        direct, through = set(), set()
        refs = [*step.sources, *(["mask"] if step.kind == "pair" and "m" in step.call else [])]
        for ref in refs:
            tensor = stream if ref == "stream" else ("mask",) if ref == "mask" else ("value", ref)
            brings = streamed if ref == "stream" else {mask if ref == "mask" else node[ref]}
            (through if ref == "stream" or tensor in changed else direct).update(brings)
        out.append((direct, through))
        if (
            step.before == "add_"
            and step.sources
            and (step.kind == "pair" or len(step.sources) == 1)
        ):
            ref = step.sources[0]
            changed.add(
                stream if ref == "stream" else ("mask",) if ref == "mask" else ("value", ref)
            )
        if step.stream:
            streamed = streamed | {node[i + 1]}
            stream = ("stream", i)
    return out


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(random_models.architectures(most=10))
def test_each_step_gets_edges_from_what_it_reads(arch):
    model, args, kwargs = random_models.model_and_inputs(arch)
    stages = step_stages(arch)
    flow = nfw.trace(model, args, kwargs=kwargs or None, capture=False).select(stages)
    flow.lint()
    assert [s.id for s in flow.stages] == stages
    mask = "input:mask" if arch.mask_keyword else "input:1"
    into: dict[str, list[tuple[str, str]]] = {}
    for e in flow.edges:
        into.setdefault(e.dst, []).append((e.src, e.kind))
    for i, (stage, (direct, through)) in enumerate(zip(stages, reads(arch, stages, mask))):
        got = into.get(stage, [])
        if not direct and not through:  # a source-less step
            assert got == [(stages[i - 1] if i else "input:0", "order")], stage
            continue
        sources = {src for src, _ in got}
        assert direct <= sources <= direct | through, (stage, got)
        assert [kind for _, kind in got].count("flow") == 1, (stage, got)
