"""A tiny decoder-only transformer that reverses a sequence of digits.

>>> from neural_flow_widget.demos import transformer
>>> model = transformer.build().eval()
>>> tokens = transformer.sample_inputs()
>>> tuple(tokens.shape), tuple(model(tokens).shape)
((1, 16), (1, 16, 11))

A sequence reads ``d1 .. d8 SEP d8 .. d1`` (see ``data.reversal_batch``); the model predicts
each next token under a causal mask. Attention is written out by hand in :class:`SelfAttention`
(``q @ k.transpose(-2, -1) * scale``, ``softmax``, ``attn @ v``) so its per-head maps can be
captured; after training, the heads reading the reversed half attend along an anti-diagonal.
"""

from __future__ import annotations

import torch
from torch import nn

from . import data

__all__ = [
    "DESCRIPTION",
    "MLP",
    "TASK",
    "SelfAttention",
    "TinyTransformer",
    "TransformerBlock",
    "build",
    "evaluate",
    "sample_inputs",
]

TASK = "sequence reversal"
DESCRIPTION = (
    "A 2-block, 4-head decoder-only transformer that reads 8 digits and a separator, "
    "then writes the digits in reverse order, one token at a time."
)


class SelfAttention(nn.Module):
    """Causal multi-head self-attention with separate ``q_proj``, ``k_proj``, ``v_proj``.

    >>> attn = SelfAttention(d_model=64, n_heads=4, max_len=16)
    >>> out, maps = attn(torch.zeros(2, 5, 64), return_attention=True)
    >>> tuple(out.shape), tuple(maps.shape)
    ((2, 5, 64), (2, 4, 5, 5))

    ``maps[b, h, i, j]`` is how much query position i of head h reads key position j; each row
    sums to 1 and is zero for j > i.
    """

    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(
                f"SelfAttention: d_model={d_model} is not divisible by n_heads={n_heads}; "
                "choose n_heads that divides d_model"
            )
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.scale = self.head_dim**-0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        future = torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", future, persistent=False)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(
        self, x: torch.Tensor, *, return_attention: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        batch, length, d_model = x.shape
        q = self._split_heads(self.q_proj(x))
        k = self._split_heads(self.k_proj(x))
        v = self._split_heads(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) * self.scale
        mask = self.get_buffer("causal_mask")[:length, :length]
        scores = scores.masked_fill(mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = attn @ v
        out = self.out_proj(out.transpose(1, 2).reshape(batch, length, d_model))
        return (out, attn) if return_attention else out


class MLP(nn.Module):
    """Position-wise feed-forward: ``fc_in`` (4x wider), GELU, ``fc_out``.

    >>> tuple(MLP(64)(torch.zeros(1, 3, 64)).shape)
    (1, 3, 64)
    """

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.fc_in = nn.Linear(d_model, 4 * d_model)
        self.gelu = nn.GELU()
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc_out(self.gelu(self.fc_in(x)))


class TransformerBlock(nn.Module):
    """Pre-norm block: ``x = x + attn(ln1(x))`` then ``x = x + mlp(ln2(x))``.

    >>> tuple(TransformerBlock(64, 4, 16)(torch.zeros(1, 3, 64)).shape)
    (1, 3, 64)
    """

    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(
        self, x: torch.Tensor, *, return_attention: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if return_attention:
            attended, attn = self.attn(self.ln1(x), return_attention=True)
        else:
            attended, attn = self.attn(self.ln1(x)), None
        x = x + attended
        x = x + self.mlp(self.ln2(x))
        return (x, attn) if return_attention else x


class TinyTransformer(nn.Module):
    """``embed`` + ``pos`` -> ``blocks`` (ModuleList) -> ``norm`` -> ``head`` (logits per token).

    >>> model = TinyTransformer()
    >>> tokens = torch.zeros(2, 16, dtype=torch.long)
    >>> tuple(model(tokens).shape)
    (2, 16, 11)
    >>> logits, maps = model(tokens, return_attentions=True)
    >>> len(maps), tuple(maps[0].shape)
    (2, (2, 4, 16, 16))

    Input: token ids ``(N, L)``, ``L <= max_len``; output: logits ``(N, L, vocab_size)`` where
    position i predicts token i + 1. With ``return_attentions=True`` it also returns one
    ``(N, heads, L, L)`` attention map per block: the reference a capture tool can check against.
    """

    def __init__(
        self,
        vocab_size: int = data.VOCAB_SIZE,
        d_model: int = 64,
        n_heads: int = 4,
        n_blocks: int = 2,
        max_len: int = 2 * data.REVERSAL_DIGITS,
    ) -> None:
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, max_len) for _ in range(n_blocks)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(
        self, tokens: torch.Tensor, *, return_attentions: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        length = tokens.shape[1]
        if length > self.max_len:
            raise ValueError(
                f"TinyTransformer: got {length} tokens but max_len is {self.max_len}; "
                "pass a shorter sequence or build the model with a larger max_len"
            )
        positions = torch.arange(length, device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        maps = []
        for block in self.blocks:
            if return_attentions:
                x, attn = block(x, return_attention=True)
                maps.append(attn)
            else:
                x = block(x)
        logits = self.head(self.norm(x))
        return (logits, maps) if return_attentions else logits


def build() -> TinyTransformer:
    """A randomly initialised demo transformer (vocab 11, d_model 64, 4 heads, 2 blocks).

    >>> len(build().blocks)
    2
    """
    return TinyTransformer()


def sample_inputs() -> torch.Tensor:
    """The fixed sample sequence: a ``(1, 16)`` int64 tensor, ``8 digits, SEP, 7 reversed``.

    >>> int(sample_inputs()[0, 8]) == data.SEP
    True
    """
    tokens, _ = data.reversal_batch(1, seed=data.SAMPLE_SEED)
    return tokens


@torch.no_grad()
def evaluate(model: nn.Module, n: int = 1000, seed: int = data.EVAL_SEED) -> dict[str, float]:
    """Accuracy on ``n`` held-out sequences: per reversed token, and per whole sequence.

    >>> sorted(evaluate(build().eval(), n=4))
    ['sequence_accuracy', 'token_accuracy']

    Predictions are teacher-forced: each reversed digit is predicted from the true prefix.
    """
    tokens, targets = data.reversal_batch(n, seed=seed)
    predicted = model(tokens).argmax(dim=-1)
    scored = targets != -100
    correct = (predicted == targets) | ~scored
    return {
        "token_accuracy": ((predicted == targets) & scored).sum().item() / scored.sum().item(),
        "sequence_accuracy": correct.all(dim=1).float().mean().item(),
    }
