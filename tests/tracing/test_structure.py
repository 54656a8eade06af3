"""Structure signatures (tracing/structure.py): equal for blocks of one type, parameter shapes
and child structure, so that a run of them folds and stacks as the paper's "× N". A module
that hands its input on unchanged when evaluating (a dropout, stochastic depth's drop path, an
identity), without parameters, is one kind in a signature: the first block of a stack whose
drop-path rate starts at 0 holds an ``nn.Identity`` where the others hold a ``DropPath``
(BEiT, Swin, SegFormer), and is still a block like the others."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import neural_flow_widget as nfw


class DropPath(nn.Module):
    """Stochastic depth as timm and transformers write it: identity when evaluating."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        keep = torch.rand(x.shape[0], 1, device=x.device) >= self.p
        return x * keep / (1 - self.p)


class Block(nn.Module):
    def __init__(self, rate: float, scale: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.mlp = nn.Linear(8, 8)
        self.drop_path = DropPath(rate) if rate > 0 else nn.Identity()
        self.gamma = nn.Parameter(torch.ones(8)) if scale else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mlp(self.norm(x))
        return x + self.drop_path(y if self.gamma is None else y * self.gamma)


class Stack(nn.Module):
    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


def _sigs(model: nn.Module, *inputs, **kwargs) -> dict[str, str]:
    flow = nfw.trace(model.eval(), *inputs, capture=False, **kwargs)
    return {c.id: c.sig for c in flow.calls}


def test_a_block_with_an_identity_for_the_others_drop_path_has_their_signature():
    torch.manual_seed(0)
    sigs = _sigs(Stack([Block(rate) for rate in (0.0, 0.05, 0.1)]), torch.randn(2, 8))
    assert sigs["blocks.0"] == sigs["blocks.1"] == sigs["blocks.2"]
    assert sigs["blocks.0.drop_path"] == sigs["blocks.1.drop_path"]


def test_but_not_one_with_other_parameters_or_another_module_in_its_place():
    torch.manual_seed(0)
    scaled = _sigs(Stack([Block(0.0), Block(0.1, scale=True)]), torch.randn(2, 8))
    assert scaled["blocks.0"] != scaled["blocks.1"]  # a layer scale's gamma more
    other = Block(0.0)
    other.drop_path = nn.GELU()  # changes the data: not a pass-through
    sigs = _sigs(Stack([other, Block(0.1)]), torch.randn(2, 8))
    assert sigs["blocks.0"] != sigs["blocks.1"]


def test_beit_s_layers_one_signature_though_layer_0_holds_an_identity():
    transformers = pytest.importorskip("transformers")
    config = transformers.BeitConfig(
        image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=4,
        num_attention_heads=4, intermediate_size=128, use_relative_position_bias=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BeitForImageClassification(config)
    # (BeitLayer: drop_path = BeitDropPath(rate) if rate > 0.0 else nn.Identity(), the rates
    # rising from 0 over the layers)
    assert type(model.beit.layers[0].drop_path) is nn.Identity
    assert type(model.beit.layers[1].drop_path) is not nn.Identity
    sigs = _sigs(model, torch.randn(1, 3, 32, 32))
    assert len({sigs[f"beit.layers.{i}"] for i in range(4)}) == 1
