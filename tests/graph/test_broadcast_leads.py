"""An elementwise join that broadcasts its other operands to one operand's shape continues
that operand (``graph/edges.py`` step 4; ``OpGraph.leads``): the modulated data is the trunk,
the conditioning merges, however deep the conditioning's own chain.

The expected edges are derived by hand from each module's forward and the rules of
``graph/edges.py``; each test fails where the deepest source alone picks the trunk (the
conditioning's chain is the deeper one in every case here).
"""

import fixture_models
import pytest
import torch
from torch import nn

import neural_flow_widget as nfw


def edges(model, *args, stages=None, **kwargs):
    flow = nfw.trace(model, args, kwargs=kwargs, capture=False, stages=stages)
    flow.lint()
    return [tuple(e) for e in flow.edges]


def into(got, node):
    return sorted((src, kind) for src, dst, kind in got if dst == node)


class AdaLN(nn.Module):
    """One DiT block on patches, its norm modulated by a four-layer timestep MLP:
    ``y = norm(h) * (1 + scale) + shift``, ``h = h + gate * proj(y)``."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, width, 2, stride=2)
        self.cond = nn.Sequential(
            nn.Linear(1, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU()
        )
        self.mod = nn.Linear(width, 3 * width)
        self.norm = nn.LayerNorm(width, elementwise_affine=False)
        self.proj = nn.Linear(width, width)
        self.head = nn.Linear(width, 2)

    def forward(self, x, t):
        h = self.patch(x).flatten(2).transpose(1, 2)  # (B, N, D)
        shift, scale, gate = self.mod(self.cond(t)).chunk(3, dim=1)  # each (B, D)
        y = self.norm(h) * (1 + scale[:, None]) + shift[:, None]
        h = h + gate[:, None] * self.proj(y)
        return self.head(h)


def test_an_adaptive_norm_continues_its_data_and_the_timestep_merges():
    """``proj`` reads ``y``: the product's full-shaped operand is ``norm(h)`` (B, N, D), the
    scale and shift are (B, 1, D) -> ``norm`` flow, ``mod`` merge. ``head`` reads ``h + gate *
    proj(y)``, an add of one shape (no lead): ``proj`` (deepest) flow; ``patch`` lies on its
    path (proj <- norm <- patch) -> skip; ``mod`` does not -> merge."""
    model = AdaLN().eval()
    x, t = torch.randn(2, 3, 8, 8), torch.randn(2, 1)
    with torch.no_grad():
        before = model(x, t)
    got = edges(model, x, t)
    assert ("input:0", "patch", "flow") in got and ("patch", "norm", "flow") in got
    assert into(got, "proj") == [("mod", "merge"), ("norm", "flow")]
    assert into(got, "head") == [("mod", "merge"), ("patch", "skip"), ("proj", "flow")]
    with torch.no_grad():
        assert torch.equal(model(x, t), before)


class SqueezeExcite(nn.Module):
    """A convolution gated by its own squeeze-and-excitation: ``f * sigmoid(fc(pool(f)))``."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(width, 2, 1)
        self.act = nn.ReLU()
        self.fc2 = nn.Conv2d(2, width, 1)
        self.gate = nn.Sigmoid()
        self.head = nn.Conv2d(width, 1, 1)

    def forward(self, x):
        f = self.conv(x)
        return self.head(f * self.gate(self.fc2(self.act(self.fc1(self.pool(f))))))


def test_a_squeeze_and_excitation_gate_merges_into_the_features_it_scales():
    """``head`` reads ``f * s``: ``f`` (B, C, H, W) is full-shaped, ``s`` (B, C, 1, 1) is
    broadcast -> ``conv`` flow; ``gate`` is no ancestor of ``conv`` -> merge (by depth alone
    ``gate``, five deep behind ``conv``, would be the trunk and ``conv`` its skip)."""
    got = edges(SqueezeExcite().eval(), torch.randn(1, 3, 6, 6))
    assert into(got, "head") == [("conv", "flow"), ("gate", "merge")]
    assert ("conv", "pool", "flow") in got and ("fc2", "gate", "flow") in got


class TimedBlock(nn.Module):
    """A UNet's residual block: ``h = conv1(x) + proj(temb)[:, :, None, None]``, its time
    embedding three layers deep."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(1, width, 3, padding=1)
        self.time = nn.Sequential(nn.Linear(1, 16), nn.SiLU(), nn.Linear(16, 16))
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.proj = nn.Linear(16, width)
        self.norm2 = nn.GroupNorm(2, width)

    def forward(self, x, t):
        h = self.conv1(self.conv_in(x))
        return self.norm2(h + self.proj(self.time(t))[:, :, None, None])


@pytest.mark.parametrize("in_place", [False, True])
def test_a_timestep_added_to_a_feature_map_merges(in_place):
    """``norm2`` reads ``h + temb[:, :, None, None]`` -> ``conv1`` flow, ``proj`` merge."""
    model = TimedBlock().eval()
    if in_place:  # ``h += temb[...]`` (diffusers writes the add out of place; others do not)

        def forward(x, t):
            h = model.conv1(model.conv_in(x))
            h += model.proj(model.time(t))[:, :, None, None]
            return model.norm2(h)

        model.forward = forward
    got = edges(model, torch.randn(2, 1, 8, 8), torch.randn(2, 1))
    assert into(got, "norm2") == [("conv1", "flow"), ("proj", "merge")]


def test_diffusers_dit_first_block_continues_its_patches():
    """diffusers' DiT, built from its config. ``AdaLayerNormZero.forward``: ``emb =
    linear(silu(emb(timestep, class_labels)))``, chunked into six; ``x = norm(x) * (1 +
    scale_msa[:, None]) + shift_msa[:, None]``. So block 0's query projection continues
    ``norm1.norm`` and ``norm1.linear`` merges; ``norm3`` reads ``gate_msa * attn + x``:
    the attention (deepest) flow, the patches (on its path) skip, ``norm1.linear`` merge.
    At the end ``proj_out_2`` reads ``norm_out(x) * (1 + scale) + shift``: ``norm_out`` flow.
    The timestep's chain (six stages) is deeper than the patches' (one) in block 0."""
    model, inputs = fixture_models.dit()
    got = edges(model, **inputs)
    block = "transformer_blocks.0"
    assert into(got, f"{block}.attn1.to_q") == [
        (f"{block}.norm1.linear", "merge"),
        (f"{block}.norm1.norm", "flow"),
    ]
    assert into(got, f"{block}.norm3") == [
        ("pos_embed.proj", "skip"),
        (f"{block}.attn1.to_out.1", "flow"),
        (f"{block}.norm1.linear", "merge"),
    ]
    assert ("norm_out", "proj_out_2", "flow") in got
    assert not any(kind == "skip" and "linear" in src for src, _, kind in got)


def test_diffusers_unet_resnet_continues_its_image_and_the_timestep_merges():
    """diffusers' UNet2DConditionModel from its config. ``ResnetBlock2D.forward``: ``h =
    conv1(nonlinearity(norm1(x)))``; ``temb = time_emb_proj(nonlinearity(temb))[:, :, None,
    None]``; ``h = norm2(h + temb)``. So ``norm2`` continues ``conv1``; ``time_emb_proj``
    merges (the timestep's chain, six stages, is deeper than the image's, four). The block's
    output ``(x + conv2(...)) / scale`` reaches the next stage with ``conv_in`` on its path
    -> skip (the block's residual)."""
    model, inputs = fixture_models.unet2d()
    stages = ["conv_in", "time_proj", "time_embedding.*", "down_blocks.0.resnets.0.*"]
    got = edges(model, **inputs, stages=[*stages, "down_blocks.0.attentions.0"])
    block = "down_blocks.0.resnets.0"
    assert into(got, f"{block}.norm2") == [
        (f"{block}.conv1", "flow"),
        (f"{block}.time_emb_proj", "merge"),
    ]
    assert ("conv_in", "down_blocks.0.attentions.0", "skip") in got


class AdaNorm(nn.Module):
    """An adaptive norm as DiT's ``AdaLayerNormZero``: it returns the modulated data and the
    gate of the sublayer after it."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.mod = nn.Linear(width, 3 * width)
        self.norm = nn.LayerNorm(width, elementwise_affine=False)

    def forward(self, h, c):
        shift, scale, gate = self.mod(c).chunk(3, dim=1)
        return self.norm(h) * (1 + scale[:, None]) + shift[:, None], gate


class FoldedAdaLN(AdaLN):
    """:class:`AdaLN` with its norm and modulation one module, as a first view folds it."""

    def __init__(self, width: int = 8) -> None:
        super().__init__(width)
        self.ada = AdaNorm(width)

    def forward(self, x, t):
        h = self.patch(x).flatten(2).transpose(1, 2)
        y, gate = self.ada(h, self.cond(t))
        return self.head(h + gate[:, None] * self.proj(y))


def test_the_gate_a_folded_adaptive_norm_returns_merges_though_the_norm_is_on_the_path():
    """``head`` reads ``h + gate * proj(y)``: ``proj`` flow, ``patch`` (on its path) skip.
    ``ada`` is on the path too (proj <- ada), but ``head`` reaches it only through the gate,
    what the product broadcasts onto ``proj``'s output: conditioning -> merge, not a skip."""
    got = edges(FoldedAdaLN().eval(), torch.randn(2, 3, 8, 8), torch.randn(2, 1), stages=1)
    assert into(got, "proj") == [("ada", "flow")]
    assert into(got, "ada") == [("cond", "merge"), ("patch", "flow")]
    assert into(got, "head") == [("ada", "merge"), ("patch", "skip"), ("proj", "flow")]


def test_diffusers_dit_folded_norms_send_their_scales_and_gates_as_merges():
    """DiT with each ``AdaLayerNormZero`` one stage. ``BasicTransformerBlock.forward``:
    ``norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp = norm1(...)``; ``x =
    gate_msa * attn1(...) + x``; ``ff(norm3(x) * (1 + scale_mlp) + shift_mlp)``; ``x =
    gate_mlp * ff_output + x``. So ``norm1`` flows into ``attn1`` and merges into ``norm3``
    (its gate), into ``ff`` (scale and shift) and into the next block's ``norm1`` (gate_mlp);
    the attention's output reaches the next block as the residual, a skip."""
    model, inputs = fixture_models.dit()
    stages = ["pos_embed", "norm_out", "proj_out_1", "proj_out_2"]
    stages += [f"transformer_blocks.*.{name}" for name in ("norm1", "attn1", "norm3", "ff")]
    got = edges(model, **inputs, stages=stages)
    first, second = "transformer_blocks.0", "transformer_blocks.1"
    assert into(got, f"{first}.attn1") == [(f"{first}.norm1", "flow")]
    assert into(got, f"{first}.norm3") == [
        ("pos_embed", "skip"),
        (f"{first}.attn1", "flow"),
        (f"{first}.norm1", "merge"),
    ]
    assert into(got, f"{first}.ff") == [(f"{first}.norm1", "merge"), (f"{first}.norm3", "flow")]
    assert (f"{first}.norm1", f"{second}.norm1", "merge") in got
    assert (f"{first}.attn1", f"{second}.norm1", "skip") in got
    assert not any(kind == "skip" and src.endswith("norm1") for src, _, kind in got)
