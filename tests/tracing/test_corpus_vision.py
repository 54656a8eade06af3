"""The corpus, vision: a diffusers UNet from a tiny config and blocks written here (DenseNet,
Inception, FPN), each with its stage edges derived by hand from the code and the rules of
``neural_flow_widget/graph/edges.py`` (see ``test_corpus_transformers.py`` for a summary),
never copied from the tracer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from corpus import edge_list, seeded
from torch import nn

import neural_flow_widget as nfw


def unchanged(model, x, before):
    with torch.no_grad():
        after = model(x)
    if isinstance(before, dict):
        assert before.keys() == after.keys()
        assert all(torch.equal(before[k], after[k]) for k in before)
    else:
        assert torch.equal(after, before)


# -- DenseNet: every earlier feature map feeds each later layer directly ----------------------


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.norm, self.conv = nn.BatchNorm2d(cin), nn.Conv2d(cin, growth, 3, padding=1)

    def forward(self, x):
        return self.conv(F.relu(self.norm(x)))


class DenseBlock(nn.Module):
    def __init__(self, c0: int = 4, growth: int = 4, n: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c0, 3, padding=1)
        self.layers = nn.ModuleList(DenseLayer(c0 + i * growth, growth) for i in range(n))
        self.transition = nn.Conv2d(c0 + n * growth, 8, 1)

    def forward(self, x):
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return self.transition(torch.cat(features, 1))


def test_densenet_block_every_earlier_layer_feeds_each_later_one():
    """Layer i reads ``cat(stem, layer 0..i-1)``: the newest is the deepest -> flow, every
    older one is its ancestor -> skip, and all of them are read directly through the
    concatenation (no relay), so none is dropped."""
    model = seeded(DenseBlock)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x, stages=1)
    nodes = ["stem", "layers.0", "layers.1", "layers.2", "layers.3", "transition"]
    assert [s.id for s in flow.stages] == nodes
    expected = [("input:0", "stem", "flow"), ("transition", "output:0", "flow")]
    for i in range(1, len(nodes)):
        expected.append((nodes[i - 1], nodes[i], "flow"))
        expected += [(older, nodes[i], "skip") for older in nodes[: i - 1]]
    assert edge_list(flow) == sorted(expected)
    assert len(expected) == 2 + 5 + (0 + 1 + 2 + 3 + 4)
    unchanged(model, x, before)


def test_densenet_layers_inside_keep_their_norm_conv_chain():
    """At the leaves: each layer's norm reads the concatenation (its sources: every earlier
    conv and the stem), its conv reads relu(norm)."""
    model = seeded(lambda: DenseBlock(n=2))
    flow = nfw.trace(model, torch.randn(1, 3, 8, 8), capture=False)
    assert edge_list(flow) == sorted(
        [
            ("input:0", "stem", "flow"),
            ("stem", "layers.0.norm", "flow"),
            ("layers.0.norm", "layers.0.conv", "flow"),
            ("layers.0.conv", "layers.1.norm", "flow"),
            ("stem", "layers.1.norm", "skip"),
            ("layers.1.norm", "layers.1.conv", "flow"),
            ("layers.1.conv", "transition", "flow"),
            ("layers.0.conv", "transition", "skip"),
            ("stem", "transition", "skip"),
            ("transition", "output:0", "flow"),
        ]
    )


# -- Inception: four parallel branches concatenated -------------------------------------------


class Inception(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.Conv2d(8, 4, 1)
        self.b3 = nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
        self.b5 = nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 4, 5, padding=2))
        self.pool = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(8, 4, 1))
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        h = F.relu(self.stem(x))
        return self.head(torch.cat([self.b1(h), self.b3(h), self.b5(h), self.pool(h)], 1))


def test_inception_branches_at_depth_1_tie_and_go_to_the_earliest():
    """The four branches each have 2 ancestors (the input, the stem): a tie, all from the one
    tensor ``head`` receives -> the earliest branch, ``b1``, is the flow; the others merge."""
    model = seeded(Inception)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x, stages=1)
    branches = ["b1", "b3", "b5", "pool"]
    assert edge_list(flow) == sorted(
        [
            ("input:0", "stem", "flow"),
            *[("stem", b, "flow") for b in branches],  # relu(stem) is the model's own op
            ("b1", "head", "flow"),
            ("b3", "head", "merge"),
            ("b5", "head", "merge"),
            ("pool", "head", "merge"),
            ("head", "output:0", "flow"),
        ]
    )
    unchanged(model, x, before)


def test_inception_branches_at_depth_2_the_deepest_branch_leads():
    """At depth 2 the 3x3 and 5x5 branches are three stages deep (4 ancestors each), the pool
    branch two, ``b1`` one: a tie of b3.2 and b5.2, from the same tensor -> the earlier, b3."""
    model = seeded(Inception)
    flow = nfw.trace(model, torch.randn(1, 3, 8, 8), stages=2, capture=False)
    assert edge_list(flow) == sorted(
        [
            ("input:0", "stem", "flow"),
            ("stem", "b1", "flow"),
            ("stem", "b3.0", "flow"),
            ("b3.0", "b3.1", "flow"),
            ("b3.1", "b3.2", "flow"),
            ("stem", "b5.0", "flow"),
            ("b5.0", "b5.1", "flow"),
            ("b5.1", "b5.2", "flow"),
            ("stem", "pool.0", "flow"),
            ("pool.0", "pool.1", "flow"),
            ("b3.2", "head", "flow"),
            ("b1", "head", "merge"),
            ("b5.2", "head", "merge"),
            ("pool.1", "head", "merge"),
            ("head", "output:0", "flow"),
        ]
    )


# -- FPN: a top-down path with lateral connections and upsampling adds ------------------------


class FPN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)  # 16 -> 8
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)  # 8 -> 4
        self.c3 = nn.Conv2d(16, 32, 3, stride=2, padding=1)  # 4 -> 2
        self.lat3, self.lat2, self.lat1 = (
            nn.Conv2d(32, 8, 1),
            nn.Conv2d(16, 8, 1),
            nn.Conv2d(8, 8, 1),
        )
        self.smooth2, self.smooth1 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        f1 = self.c1(x)
        f2 = self.c2(f1)
        f3 = self.c3(f2)
        p3 = self.lat3(f3)
        p2 = self.lat2(f2) + F.interpolate(p3, scale_factor=2.0, mode="nearest")
        p1 = self.lat1(f1) + F.interpolate(p2, scale_factor=2.0, mode="nearest")
        return {"p1": self.smooth1(p1), "p2": self.smooth2(p2), "p3": p3}


def test_fpn_top_down_path_is_the_flow_and_laterals_merge():
    """Ancestors: lat3 4 (x, c1, c2, c3), lat2 3, lat1 2. ``smooth2(p2)``, ``p2 = lat2 +
    up(lat3)``: one tensor, so its deepest source, lat3 -> flow, lat2 (no ancestor of lat3) ->
    merge: the top-down path. ``smooth1(p1)``, ``p1 = lat1 + up(p2)``: one tensor again (p2 is
    also read by smooth2, a relay, which the trunk walks through): the deepest, lat3 -> flow;
    lat2 and lat1 are no ancestors of lat3 -> merges, and lat2 (beyond the relay) is no
    ancestor of lat1, the other non-primary source, so the relay drops neither."""
    model = seeded(FPN)
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x)
    assert [s.id for s in flow.stages] == [
        "c1",
        "c2",
        "c3",
        "lat3",
        "lat2",
        "lat1",
        "smooth1",
        "smooth2",
    ]
    assert flow.outputs == ("output:p1", "output:p2", "output:p3")
    assert edge_list(flow) == sorted(
        [
            ("input:0", "c1", "flow"),
            ("c1", "c2", "flow"),
            ("c2", "c3", "flow"),
            ("c3", "lat3", "flow"),
            ("c2", "lat2", "flow"),
            ("c1", "lat1", "flow"),
            ("lat3", "smooth1", "flow"),  # the top-down path, through the relay p2
            ("lat1", "smooth1", "merge"),
            ("lat2", "smooth1", "merge"),
            ("lat3", "smooth2", "flow"),
            ("lat2", "smooth2", "merge"),
            ("smooth1", "output:p1", "flow"),
            ("smooth2", "output:p2", "flow"),
            ("lat3", "output:p3", "flow"),
        ]
    )
    assert flow.stage("smooth1").shapes == ((2, 8, 8, 8),)
    unchanged(model, x, before)


# -- diffusers UNet2DConditionModel from a tiny config -----------------------------------------


diffusers = pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def unet():
    return seeded(
        lambda: diffusers.UNet2DConditionModel(
            sample_size=16,
            in_channels=4,
            out_channels=4,
            block_out_channels=(32, 64),
            layers_per_block=1,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32,
            attention_head_dim=8,
        )
    )


@pytest.fixture(scope="module")
def unet_inputs():
    torch.manual_seed(5)
    return {"sample": torch.randn(2, 4, 16, 16), "encoder_hidden_states": torch.randn(2, 5, 32)}


def unet_blocks() -> list[tuple[str, str, str]]:
    """The blocks' edges from UNet2DConditionModel.forward, for any timestep:

    - every block is called with ``hidden_states=sample`` (or ``sample`` positionally) first:
      the image path is its flow; then ``temb=emb`` (``time_embedding``'s output, read
      directly) and the cross-attention blocks ``encoder_hidden_states`` (an input);
    - ``down_blocks.0``: ``conv_in`` -> flow; ``time_embedding`` and the encoder states are no
      ancestors of ``conv_in`` -> merges;
    - ``down_block_res_samples`` = (conv_in, down_blocks.0's attention output, down_blocks.0's
      downsampler output, down_blocks.1's resnet output); ``up_blocks.0`` (2 resnets) takes
      the last two, ``up_blocks.1`` the first two: they lie on the trunk's chain of flow
      edges (mid_block <- down_blocks.1 <- down_blocks.0 <- conv_in) -> skips from the down
      path;
    - the timestep embedding and the text (``encoder_hidden_states``) never lie on that
      chain, though every block after down_blocks.0 has them as ancestors: conditioning,
      merges into every block that reads them.
    """
    return [
        ("conv_in", "down_blocks.0", "flow"),
        ("time_embedding", "down_blocks.0", "merge"),
        ("input:encoder_hidden_states", "down_blocks.0", "merge"),
        ("down_blocks.0", "down_blocks.1", "flow"),
        ("time_embedding", "down_blocks.1", "merge"),
        ("down_blocks.1", "mid_block", "flow"),
        ("time_embedding", "mid_block", "merge"),
        ("input:encoder_hidden_states", "mid_block", "merge"),
        ("mid_block", "up_blocks.0", "flow"),
        ("time_embedding", "up_blocks.0", "merge"),
        ("down_blocks.0", "up_blocks.0", "skip"),
        ("down_blocks.1", "up_blocks.0", "skip"),
        ("up_blocks.0", "up_blocks.1", "flow"),
        ("time_embedding", "up_blocks.1", "merge"),
        ("conv_in", "up_blocks.1", "skip"),
        ("down_blocks.0", "up_blocks.1", "skip"),
        ("input:encoder_hidden_states", "up_blocks.1", "merge"),
        ("up_blocks.1", "conv_norm_out", "flow"),
        ("conv_norm_out", "conv_act", "flow"),
        ("conv_act", "conv_out", "flow"),
        ("conv_out", "output:sample", "flow"),
    ]


@pytest.mark.slow
def test_unet_image_path_is_the_trunk_and_the_timestep_merges(unet, unet_inputs):
    """A Python int timestep: ``get_time_embed`` makes ``torch.tensor([t])`` in the model's body,
    so ``time_proj`` has no data source (an ``order`` edge from the first input, no ancestry)
    and ``time_embedding`` has one ancestor. Into ``down_blocks.0`` ``hidden_states=sample``
    (``conv_in``) is the call's first tensor -> the image path is the flow, the timestep
    embedding merges (into every later block too: it is never on the image path)."""
    inputs = {"timestep": 10, **unet_inputs}
    with torch.no_grad():
        before = unet(**inputs).sample
    flow = nfw.trace(unet, inputs, stages=1)
    assert flow.inputs == ("input:sample", "input:encoder_hidden_states")
    assert [s.id for s in flow.stages] == [
        "time_proj",
        "time_embedding",
        "conv_in",
        "down_blocks.0",
        "down_blocks.1",
        "mid_block",
        "up_blocks.0",
        "up_blocks.1",
        "conv_norm_out",
        "conv_act",
        "conv_out",
    ]
    assert edge_list(flow) == sorted(
        [
            ("input:sample", "time_proj", "order"),
            ("time_proj", "time_embedding", "flow"),
            ("input:sample", "conv_in", "flow"),
            *unet_blocks(),
        ]
    )
    assert flow.stage("down_blocks.0").shapes == ((2, 32, 8, 8), (2, 32, 16, 16), (2, 32, 8, 8))
    with torch.no_grad():
        assert torch.equal(unet(**inputs).sample, before)


def test_unet_with_a_tensor_timestep(unet, unet_inputs):
    """A tensor timestep (what the pipelines pass: ``scheduler.timesteps[i]``, 0-d) is a model
    input: ``time_proj`` reads it, so the time path has two stages (``time_proj``,
    ``time_embedding``) against the image path's one (``conv_in``), but depth only decides
    among the sources of the first tensor's path: ``down_blocks.0``'s first tensor is
    ``hidden_states=sample`` (``conv_in``) -> flow, and the timestep embedding merges, as
    with an int timestep. The blocks' edges are the same; only ``time_proj`` now has a source."""
    inputs = {
        "sample": unet_inputs["sample"],
        "timestep": torch.tensor(10),
        "encoder_hidden_states": unet_inputs["encoder_hidden_states"],
    }
    flow = nfw.trace(unet, inputs, stages=1, capture=False)
    assert flow.inputs == ("input:sample", "input:timestep", "input:encoder_hidden_states")
    assert edge_list(flow) == sorted(
        [
            ("input:timestep", "time_proj", "flow"),
            ("time_proj", "time_embedding", "flow"),
            ("input:sample", "conv_in", "flow"),
            *unet_blocks(),
        ]
    )


@pytest.mark.slow
def test_unet_attention_maps_are_the_models_own(unet, unet_inputs):
    """diffusers' UNet has no ``output_attentions``: the reference is softmax(q kᵀ · scale) of
    the model's own ``to_q``/``to_k`` outputs, for every attention module, recorded by forward
    hooks in a run without the tracer."""
    from diffusers.models.attention_processor import Attention

    inputs = {"timestep": 10, **unet_inputs}
    recorded: dict[str, dict[str, torch.Tensor]] = {}
    hooks = []
    attentions = {n: m for n, m in unet.named_modules() if isinstance(m, Attention)}
    for name, module in attentions.items():
        for part in ("to_q", "to_k"):
            hooks.append(
                getattr(module, part).register_forward_hook(
                    lambda _m, _a, out, name=name, part=part: recorded.setdefault(
                        name, {}
                    ).__setitem__(part, out)
                )
            )
    try:
        with torch.no_grad():
            unet(**inputs)
    finally:
        for hook in hooks:
            hook.remove()
    want = {}
    for name, module in attentions.items():
        q, k = recorded[name]["to_q"][0], recorded[name]["to_k"][0]  # batch sample 0
        h = module.heads
        q = q.reshape(q.shape[0], h, -1).transpose(0, 1)
        k = k.reshape(k.shape[0], h, -1).transpose(0, 1)
        want[name] = torch.softmax(q @ k.transpose(1, 2) * module.scale, -1).numpy()
    flow = nfw.trace(unet, inputs, stages=1)
    for block in ("down_blocks.0", "mid_block", "up_blocks.1"):
        names = [n for n in attentions if n.startswith(block + ".")]
        maps = flow.attention(block)
        assert len(maps) == len(names) >= 2
        for got, name in zip(maps, names):  # attn1 (self), attn2 (cross), in execution order
            assert got.weights.shape == want[name].shape
            np.testing.assert_allclose(got.weights, want[name], atol=1e-5)
    assert flow.attention("down_blocks.1") == []  # a DownBlock2D has no attention
