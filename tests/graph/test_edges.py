"""Stage edges of the zoo against hand-written expectations."""

import pytest
import torch
from zoo import (
    Attention,
    Branchy,
    CrossAttention,
    Dense,
    InPlace,
    Keyword,
    Multimodal,
    Nested,
    PreNorm,
    ResNet,
    Reused,
    ThreeHeads,
    UNet,
    seeded,
)

import neural_flow_widget as nfw


def edges(model, inputs, **options):
    flow = nfw.trace(model, inputs, capture=False, **options)
    flow.lint()
    return [tuple(e) for e in flow.edges]


def test_unet_cat_skips_are_skip_edges():
    got = edges(seeded(UNet), torch.randn(1, 1, 16, 16), stages=1)
    assert got == [
        ("input:0", "enc1", "flow"),
        ("enc1", "pool#0", "flow"),
        ("pool#0", "enc2", "flow"),
        ("enc2", "pool#1", "flow"),
        ("pool#1", "bottleneck", "flow"),
        ("bottleneck", "up2", "flow"),
        ("enc2", "dec2", "skip"),
        ("up2", "dec2", "flow"),
        ("dec2", "up1", "flow"),
        ("enc1", "dec1", "skip"),
        ("up1", "dec1", "flow"),
        ("dec1", "head", "flow"),
        ("head", "output:0", "flow"),
    ]


def test_residual_add_inside_blocks():
    got = edges(seeded(ResNet), torch.randn(1, 3, 8, 8))
    assert ("stem", "layer1.relu#1", "skip") in got
    assert ("layer1.conv2", "layer1.relu#1", "flow") in got
    assert ("layer1.relu#1", "layer2.relu#1", "skip") in got
    assert sum(kind == "skip" for *_, kind in got) == 2
    # Collapsed to blocks, the residual adds stay inside: a plain chain.
    assert edges(seeded(ResNet), torch.randn(1, 3, 8, 8), stages=1) == [
        ("input:0", "stem", "flow"),
        ("stem", "layer1", "flow"),
        ("layer1", "layer2", "flow"),
        ("layer2", "pool", "flow"),
        ("pool", "fc", "flow"),
        ("fc", "output:0", "flow"),
    ]


def test_multimodal_merge_and_two_heads():
    got = edges(seeded(Multimodal), (torch.randn(2, 1, 8, 8), torch.randn(2, 6)), stages=1)
    assert got == [
        ("input:0", "image_cnn", "flow"),
        ("input:1", "clinical_mlp", "flow"),
        ("image_cnn", "fusion", "flow"),
        ("clinical_mlp", "fusion", "merge"),
        ("fusion", "diagnosis", "flow"),
        ("fusion", "severity", "flow"),
        ("diagnosis", "output:0", "flow"),
        ("severity", "output:1", "flow"),
    ]


def test_trunk_with_three_heads_returning_a_dict():
    got = edges(seeded(ThreeHeads), torch.randn(2, 4))
    assert got == [
        ("input:0", "trunk", "flow"),
        ("trunk", "heads.a", "flow"),
        ("trunk", "heads.b", "flow"),
        ("trunk", "heads.c", "flow"),
        ("heads.a", "output:a", "flow"),
        ("heads.b", "output:b", "flow"),
        ("heads.c", "output:c", "flow"),
    ]


def test_reused_module_gives_one_stage_per_call():
    flow = nfw.trace(seeded(Reused), torch.randn(2, 4), capture=False)
    assert [(s.id, s.call) for s in flow.stages] == [
        ("inp", 0),
        ("block#0", 0),
        ("block#1", 1),
        ("block#2", 2),
        ("out", 0),
    ]
    assert [tuple(e)[:2] for e in flow.edges] == [
        ("input:0", "inp"),
        ("inp", "block#0"),
        ("block#0", "block#1"),
        ("block#1", "block#2"),
        ("block#2", "out"),
        ("out", "output:0"),
    ]


@pytest.mark.parametrize("sign, taken", [(1.0, "pos"), (-1.0, "neg")])
def test_data_dependent_control_flow_follows_the_run(sign, taken):
    model = seeded(Branchy)
    with torch.no_grad():
        for layer in (model.pre,):
            layer.weight.copy_(torch.eye(4))
            layer.bias.zero_()
    got = edges(model, torch.full((2, 4), sign))
    assert got == [
        ("input:0", "pre", "flow"),
        ("pre", taken, "flow"),
        (taken, "post", "flow"),
        ("post", "output:0", "flow"),
    ]


def test_multihead_attention_is_a_stage_with_a_residual_skip():
    got = edges(seeded(Attention), torch.randn(2, 5, 6))
    assert got == [
        ("input:0", "embed", "flow"),
        ("embed", "attn", "flow"),
        ("embed", "norm", "skip"),
        ("attn", "norm", "flow"),
        ("norm", "out", "flow"),
        ("out", "output:0", "flow"),
    ]


def test_in_place_ops_and_views_carry_their_sources():
    got = edges(seeded(InPlace), torch.randn(2, 4))
    assert got == [
        ("input:0", "a", "flow"),
        ("input:0", "b", "flow"),
        ("a", "relu", "flow"),
        ("b", "relu", "merge"),
        ("relu", "c", "flow"),
        ("c", "output:0", "flow"),
    ]


def test_keyword_inputs_are_input_nodes():
    flow = nfw.trace(
        seeded(Keyword),
        torch.randn(2, 4),
        capture=False,
        kwargs={"mask": torch.randn(2, 4), "scale": 2.0, "note": "hi"},
    )
    assert flow.inputs == ("input:0", "input:mask")
    assert [tuple(e) for e in flow.edges] == [
        ("input:0", "enc", "flow"),
        ("input:mask", "gate", "flow"),
        ("enc", "out", "flow"),
        ("gate", "out", "merge"),
        ("out", "output:0", "flow"),
    ]


def test_nested_inputs_and_outputs_are_named_by_path():
    batch = {"x": torch.randn(2, 3), "pair": [torch.randn(2, 3), torch.randn(2, 3)]}
    flow = nfw.trace(seeded(Nested), {"batch": batch, "k": 3}, capture=False)
    assert flow.inputs == ("input:batch.x", "input:batch.pair.0", "input:batch.pair.1")
    assert flow.outputs == ("output:0", "output:1.0", "output:1.1")
    assert [tuple(e) for e in flow.edges] == [
        ("input:batch.x", "a", "flow"),
        ("input:batch.pair.0", "b", "flow"),
        ("input:batch.pair.1", "b", "merge"),
        ("input:batch.x", "c", "flow"),
        ("a", "output:0", "flow"),
        ("b", "output:1.0", "flow"),
        ("c", "output:1.1", "flow"),
    ]


def test_nested_selection_ops_belong_to_the_nearest_selected_call():
    got = edges(
        seeded(UNet),
        torch.randn(1, 1, 16, 16),
        stages=["enc1", "enc1.conv", "dec1", "dec1.*", "head"],
    )
    assert got == [
        ("input:0", "enc1", "flow"),
        ("input:0", "enc1.conv", "flow"),
        ("enc1", "dec1", "flow"),
        ("enc1", "dec1.conv", "flow"),
        ("dec1.conv", "dec1.act", "flow"),
        ("dec1.act", "head", "flow"),
        ("head", "output:0", "flow"),
    ]


def test_stage_without_dataflow_source_is_attached_to_the_previous_stage():
    class PositionOnly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(10, 4)
            self.pos = torch.nn.Embedding(8, 4)

        def forward(self, ids):
            return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))

    got = edges(PositionOnly(), torch.tensor([[1, 2, 3]]))
    assert got == [
        ("input:0", "tok", "flow"),
        ("tok", "pos", "order"),  # no data reaches pos: it runs after tok
        ("tok", "output:0", "flow"),
        ("pos", "output:0", "merge"),
    ]


def test_sequential_topology_chains_in_execution_order():
    got = edges(seeded(UNet), torch.randn(1, 1, 16, 16), stages=1, topology="sequential")
    assert [e[:2] for e in got] == [
        ("input:0", "enc1"),
        ("enc1", "pool#0"),
        ("pool#0", "enc2"),
        ("enc2", "pool#1"),
        ("pool#1", "bottleneck"),
        ("bottleneck", "up2"),
        ("up2", "dec2"),
        ("dec2", "up1"),
        ("up1", "dec1"),
        ("dec1", "head"),
        ("head", "output:0"),
    ]
    assert {kind for *_, kind in got} == {"flow"}


def test_in_place_write_into_a_buffer_reaches_later_readers():
    class Cache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("memory", torch.zeros(2, 4))
            self.write, self.read = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x):
            self.memory.copy_(self.write(x))  # stored in a buffer, not passed on
            return self.read(self.memory * 1.0)

    model = Cache()
    got = edges(model, torch.randn(2, 4))
    assert got == [
        ("input:0", "write", "flow"),
        ("write", "read", "flow"),
        ("read", "output:0", "flow"),
    ]


def test_a_residual_stream_shows_each_sublayer_and_the_latest_residual():
    # Every norm reads the stream, which holds every earlier sublayer's output; each gets its
    # predecessor and the latest residual, not an edge from every sublayer before it.
    got = edges(seeded(PreNorm), torch.randn(2, 4))
    expected = [("input:0", "embed", "flow"), ("embed", "blocks.0.ln1", "flow")]
    last, residual = "embed", None
    for b in range(3):
        p = f"blocks.{b}."
        expected += [(residual, p + "ln1", "skip")] if residual else []
        expected += [(last, p + "ln1", "flow")] if residual else []
        expected += [
            (p + "ln1", p + "f1", "flow"),
            (last, p + "ln2", "skip"),
            (p + "f1", p + "ln2", "flow"),
            (p + "ln2", p + "f2", "flow"),
        ]
        last, residual = p + "f2", p + "f1"
    expected += [
        ("blocks.2.f1", "ln_f", "skip"),
        ("blocks.2.f2", "ln_f", "flow"),
        ("ln_f", "head", "flow"),
        ("head", "output:0", "flow"),
    ]
    assert got == expected


def test_dense_connections_read_directly_all_stay():
    got = edges(seeded(Dense), torch.randn(2, 4))
    into_last = [src for src, dst, _ in got if dst == "layers.3"]
    assert into_last == ["stem", "layers.0", "layers.1", "layers.2"]
    assert len(got) == 2 + 2 + 3 + 4 + 1


class _TimedBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.proj = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, hidden_states, temb):
        return self.lin(hidden_states) + self.proj(temb)


class _Timed(torch.nn.Module):
    """A UNet block's calling pattern: the timestep embedding is computed before the image
    path, and both are one stage away from an input (a tie on ancestry)."""

    def __init__(self, keywords: bool):
        super().__init__()
        self.keywords = keywords
        self.time, self.conv_in = torch.nn.Linear(1, 4), torch.nn.Linear(3, 4)
        self.block = _TimedBlock()

    def forward(self, x, t):
        e = self.time(t)
        h = self.conv_in(x)
        if self.keywords:  # keywords in the order given: temb first
            return self.block(temb=e, hidden_states=h)
        return self.block(h, e)


@pytest.mark.parametrize("keywords", [False, True])
def test_a_tie_on_ancestry_goes_to_the_first_tensor_the_call_receives(keywords):
    model = seeded(lambda: _Timed(keywords))
    got = edges(model, (torch.randn(2, 3), torch.randn(2, 1)), stages=1)
    first, second = ("time", "conv_in") if keywords else ("conv_in", "time")
    assert ("input:1", "time", "flow") in got and ("input:0", "conv_in", "flow") in got
    assert (first, "block", "flow") in got and (second, "block", "merge") in got


@pytest.mark.parametrize("how", ["sdpa", "written", "baddbmm"])
def test_an_attention_continues_its_queries_however_deep_its_keys(how):
    """``o`` reads the attention's output, made of the queries (``q``: two stages deep) and
    the keys and values (``k``, ``v``: five deep, behind the memory). The output's rows are
    the queries': the trunk is ``q`` -> flow; the keys and values are no ancestor of ``q``
    -> merges. By depth alone ``k`` would be the trunk, and the query's side a merge."""
    model = seeded(lambda: CrossAttention(how))
    x, m = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    with torch.no_grad():
        before = model(x, m)
    stages = ["query_in", "memory.*", "q", "k", "v", "o"] + (["bias"] if how == "baddbmm" else [])
    got = edges(model, (x, m), stages=stages)
    into_o = sorted((src, kind) for src, dst, kind in got if dst == "o")
    expected = [("k", "merge"), ("q", "flow"), ("v", "merge")]
    if how == "baddbmm":
        expected.insert(0, ("bias", "merge"))
    assert into_o == expected
    assert ("o", "output:0", "flow") in got
    with torch.no_grad():
        assert torch.equal(model(x, m), before)
