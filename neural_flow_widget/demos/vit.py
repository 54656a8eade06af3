"""A small vision transformer that tells where in a scene a shape lies.

>>> from neural_flow_widget.demos import vit
>>> model = vit.build().eval()
>>> tuple(model(vit.sample_inputs()).shape)
(1, 16)

As in ViT (Dosovitskiy et al. 2021): ``patches`` cuts the 32x32 image into 8x8 patches of
4x4 pixels (a strided convolution), a learned ``cls`` token goes in front, positions are added,
three pre-norm ``blocks`` of multi-head self-attention (``F.scaled_dot_product_attention``)
and MLP follow, and ``head`` reads the CLS token. To answer, the model must find the shape
(``data.shape_place_batch``): after training, the attention rollout from the CLS token
peaks on it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import data
from .transformer import MLP

__all__ = [
    "DESCRIPTION",
    "TASK",
    "Attention",
    "Block",
    "VisionTransformer",
    "build",
    "evaluate",
    "sample_inputs",
]

TASK = "image classification (vision transformer)"
DESCRIPTION = (
    "A 3-block, 4-head vision transformer that tells in which cell of a 4x4 grid over a "
    "32x32 scene a shape lies, reading 8x8 patches and a CLS token."
)


class Attention(nn.Module):
    """Multi-head self-attention over all tokens: ``qkv`` in one projection, then ``proj``.

    >>> tuple(Attention(32, 4)(torch.zeros(2, 5, 32)).shape)
    (2, 5, 32)
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"Attention: dim={dim} is not divisible by heads={heads}")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(batch, length, dim))


class Block(nn.Module):
    """Pre-norm block: ``x = x + attn(norm1(x))`` then ``x = x + mlp(norm2(x))``.

    >>> tuple(Block(32, 4)(torch.zeros(1, 5, 32)).shape)
    (1, 5, 32)
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """``patches`` -> ``cls`` + ``pos`` -> ``blocks`` -> ``norm`` -> ``head`` on the CLS token.

    >>> tuple(VisionTransformer()(torch.zeros(2, 1, 32, 32)).shape)
    (2, 16)

    Input: images ``(N, 1, size, size)``; output: class logits ``(N, 16)`` (``data.PLACES``).
    """

    def __init__(
        self, size: int = 32, patch: int = 4, dim: int = 64, heads: int = 4, depth: int = 3
    ) -> None:
        super().__init__()
        self.patches = nn.Conv2d(1, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, 1 + (size // patch) ** 2, dim))
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, len(data.PLACES))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def build() -> VisionTransformer:
    """A randomly initialised demo vision transformer (8x8 patches, dim 64, 4 heads, 3 blocks).

    >>> len(build().blocks)
    3
    """
    return VisionTransformer()


def sample_inputs() -> torch.Tensor:
    """The fixed sample scene: a ``(1, 1, 32, 32)`` float tensor holding one shape.

    >>> tuple(sample_inputs().shape)
    (1, 1, 32, 32)
    """
    images, _ = data.shape_place_batch(1, seed=data.SAMPLE_SEED)
    return images


@torch.no_grad()
def evaluate(model: nn.Module, n: int = 1000, seed: int = data.EVAL_SEED) -> dict[str, float]:
    """Accuracy on ``n`` held-out scenes.

    >>> sorted(evaluate(build().eval(), n=4))
    ['accuracy']
    """
    images, labels = data.shape_place_batch(n, seed=seed)
    return {"accuracy": (model(images).argmax(dim=-1) == labels).float().mean().item()}
