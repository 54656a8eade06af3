"""The corpus, written out as torchvision and the recurrent-loop idiom have them (torchvision
itself does not import beside this project's torch build): a ResNet's bottlenecks, a DenseNet
whose layers receive a *list* of earlier features, and recurrent cells unrolled over an
embedding. Each expected edge set is derived by hand from the code below and the rules of
``neural_flow_widget/graph/edges.py``:

- the trunk of a stage is the state it continues (a call of the same module returned it,
  with the shapes this call returns), else its first argument that has a source (a list or
  tuple argument is one argument, led by its deepest source);
- of the trunk's sources the deepest (most ancestors) is the ``flow`` edge;
- another source on the flow source's chain of flow edges is a ``skip``; any other a
  ``merge``.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from corpus import edge_list, seeded
from written_out import DenseNet, EmbeddedLoop, MobileNetV2, ResNet

import neural_flow_widget as nfw

# -- ResNet bottlenecks, as torchvision writes them --------------------------------------------


def bottleneck_edges(b: str, source: str, projected: bool) -> list[tuple[str, str, str]]:
    """One bottleneck's inside: conv1 -> bn1 -> relu#0 -> conv2 -> bn2 -> relu#1 -> conv3 ->
    bn3, a chain; ``relu#2`` reads ``bn3 + shortcut`` (one tensor): ``bn3`` is deepest -> flow.
    The identity shortcut is the block's input, on bn3's chain (conv1 read it) -> skip; a
    projection is a branch beside the chain -> merge (and the block's input reaches
    ``relu#2`` only through it)."""
    chain = ["conv1", "bn1", "relu#0", "conv2", "bn2", "relu#1", "conv3", "bn3", "relu#2"]
    edges = [(source, f"{b}.conv1", "flow")]
    edges += [(f"{b}.{u}", f"{b}.{v}", "flow") for u, v in itertools.pairwise(chain)]
    if projected:
        edges += [(source, f"{b}.downsample", "flow"), (f"{b}.downsample", f"{b}.relu#2", "merge")]
    else:
        edges += [(source, f"{b}.relu#2", "skip")]
    return edges


def test_resnet_bottlenecks_at_their_layers():
    """``layer1.*.*``: both bottlenecks opened; the first projects its shortcut, the second
    adds its input back (a residual)."""
    model = seeded(ResNet).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x, stages=["maxpool", "layer1.*.*", "fc"])
    expected = [
        ("input:0", "maxpool", "flow"),  # conv1, bn1, relu: walked through
        *bottleneck_edges("layer1.0", "maxpool", projected=True),
        *bottleneck_edges("layer1.1", "layer1.0.relu#2", projected=False),
        ("layer1.1.relu#2", "fc", "flow"),
        ("fc", "output:0", "flow"),
    ]
    assert edge_list(flow) == sorted(expected)
    with torch.no_grad():
        assert torch.equal(model(x), before)


def test_resnet_blocks_chain_and_the_stem_leads_in():
    model = seeded(ResNet).eval()
    flow = nfw.trace(model, torch.randn(1, 3, 32, 32), stages=2, capture=False)
    nodes = ["input:0", "conv1", "bn1", "relu", "maxpool", "layer1.0", "layer1.1", "avgpool"]
    expected = [(u, v, "flow") for u, v in itertools.pairwise(nodes)]
    expected += [("avgpool", "fc", "flow"), ("fc", "output:0", "flow")]
    assert edge_list(flow) == sorted(expected)


# -- DenseNet, as torchvision writes it: each layer receives the list of earlier features ---------


def test_mobilenet_v2_inverted_residuals_add_their_input_back_where_the_stride_is_one():
    """``features.2`` (24 channels, stride 2: ``self.conv(x)``, no residual) ->
    ``features.3`` (stride 1, 24 -> 24: ``x + self.conv(x)``): ``features.4`` reads that sum,
    whose deepest source is ``features.3.conv`` -> flow; ``features.2`` is on conv's chain (conv
    read it) -> skip. The stem and ``features.1`` are walked through, as is everything after
    ``features.4`` (its stride 2 adds nothing back)."""
    model = seeded(lambda: MobileNetV2(classes=10)).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x, stages=["features.2", "features.3.conv", "features.4"])
    assert edge_list(flow) == sorted(
        [
            ("input:0", "features.2", "flow"),
            ("features.2", "features.3.conv", "flow"),
            ("features.3.conv", "features.4", "flow"),
            ("features.2", "features.4", "skip"),
            ("features.4", "output:0", "flow"),
        ]
    )
    with torch.no_grad():
        assert torch.equal(model(x), before)


def test_densenet_layers_given_a_list_draw_as_a_chain_with_skips():
    """``denselayer k`` is called with ``features = [pool0, layer 1, ..., layer k-1]``: one
    argument, whose deepest source is the newest layer -> flow (a chain, not a star from the
    block's input); every older feature lies on that chain -> skip. ``transition1`` reads
    ``cat(features)``: the last layer -> flow, the others -> skips."""
    model = seeded(DenseNet).eval()
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        before = model(x)
    block = "features.denseblock1"
    flow = nfw.trace(model, x, stages=["features.pool0", f"{block}.*", "features.transition1"])
    nodes = ["features.pool0", *(f"{block}.denselayer{i}" for i in (1, 2, 3))]
    nodes.append("features.transition1")
    expected = [("input:0", "features.pool0", "flow")]
    for i in range(1, len(nodes)):
        expected.append((nodes[i - 1], nodes[i], "flow"))
        expected += [(older, nodes[i], "skip") for older in nodes[: i - 1]]
    expected.append(("features.transition1", "output:0", "flow"))  # the rest walked through
    assert edge_list(flow) == sorted(expected)
    with torch.no_grad():
        assert torch.equal(model(x), before)


# -- recurrent cells unrolled over an embedding ------------------------------------------------

T = 4


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_an_unrolled_cell_continues_its_state(kind):
    """``cell#0``: its state is zeros (no source), so the embedding is its trunk -> flow.
    ``cell#t``: the state (an LSTM's ``(h, c)``: one argument) came from ``cell#t-1`` with
    the shapes ``cell#t`` returns -> its trunk, the flow; the embedding is on that chain
    (``cell#0`` read it) -> skip. The cells draw as a chain, not a star off the embedding."""
    model = seeded(lambda: EmbeddedLoop(kind))
    ids = torch.randint(0, 10, (2, T))
    with torch.no_grad():
        before = model(ids)
    flow = nfw.trace(model, ids)
    cells = [f"cell#{t}" for t in range(T)]
    assert [s.id for s in flow.stages] == ["emb", *cells, "head"]
    expected = [("input:0", "emb", "flow"), ("emb", "cell#0", "flow")]
    for t in range(1, T):
        expected += [(cells[t - 1], cells[t], "flow"), ("emb", cells[t], "skip")]
    expected += [(cells[-1], "head", "flow"), ("head", "output:0", "flow")]
    assert edge_list(flow) == sorted(expected)
    with torch.no_grad():
        assert torch.equal(model(ids), before)
