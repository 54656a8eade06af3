"""Models for the gradients, interventions, readouts and patching of issue 22, shared by
``scripts/make_fixtures.py`` (``wire_experiments.json``) and the browser tests: a deep
sigmoid MLP whose gradient vanishes (and its residual twin, whose does not), a chain whose
backward pass makes NaN in one stage, and GPT-2 from a config with a next-token loss."""

from __future__ import annotations

import torch
from torch import nn


class SigmoidMlp(nn.Module):
    """``depth`` blocks of Linear + Sigmoid (each ``x + f(x)`` when ``residual``), then a head."""

    def __init__(self, depth: int = 12, width: int = 16, residual: bool = False) -> None:
        super().__init__()
        self.residual = residual
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.Sigmoid()) for _ in range(depth)
        )
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x) if self.residual else block(x)
        return self.head(x)


def sigmoid_mlp(depth: int = 12, residual: bool = False):
    """The MLP (seeded), a batch of 8 inputs and its loss (the mean square of its output)."""
    torch.manual_seed(0)
    model = SigmoidMlp(depth, residual=residual).eval()
    return model, torch.randn(8, 16), lambda out: out.pow(2).mean()


class _NanBackward(torch.autograd.Function):
    """The identity, whose backward makes NaN."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * float("nan")


class Poisoned(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _NanBackward.apply(x)


class NanChain(nn.Module):
    """a -> b -> poison -> c: the gradient reaching poison is finite, the one it sends to b
    is NaN (it entered the backward pass at b)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 2)
        self.poison = Poisoned()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.poison(self.b(self.a(x))))


def nan_chain():
    torch.manual_seed(0)
    return NanChain().eval(), torch.randn(3, 4), lambda out: out.sum()


def gpt2(layers: int = 4, width: int = 32, vocab: int = 64, tokens: int = 8):
    """transformers' GPT-2 from a config (random weights, nothing downloaded), ``tokens`` ids,
    and the next-token loss (cross-entropy of each position's prediction of the next id)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, n_embd=width, n_head=4, vocab_size=vocab, n_positions=32,
                        bos_token_id=0, eos_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, vocab, (1, tokens))

    def loss(out):
        return nn.functional.cross_entropy(out.logits[0, :-1], ids[0, 1:])

    return model, ids, loss


def names(ids: list[int]) -> list[str]:
    """Token texts for GPT-2's ids here: "t<id>", one of them markup (text, never HTML)."""
    return ["<b>bold</b>" if i == 49 else f"t{i}" for i in ids]
