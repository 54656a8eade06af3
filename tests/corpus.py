"""What the corpus tests (``tests/tracing/test_corpus_*.py``) share: the edges of a flow as
sorted triples after the flow's own checks, a seeded model in eval mode."""

from __future__ import annotations

import torch

import neural_flow_widget as nfw


def edge_list(flow: nfw.Flow) -> list[tuple[str, str, str]]:
    """The flow's edges as sorted (src, dst, kind) triples, after the flow's own checks."""
    flow.lint()
    got = [tuple(e) for e in flow.edges]
    assert len(got) == len(set(got)), "duplicate edges"
    return sorted(got)


def seeded(make):
    """``make()`` with torch's generator seeded, in eval mode."""
    torch.manual_seed(0)
    return make().eval()
