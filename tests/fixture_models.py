"""The models behind the front end's graph fixtures (``tests/fixtures/wire_unet.json``,
``wire_transformer12.json``, written by ``scripts/make_fixtures.py``).

Their module names, types and nesting are what the JS unit tests and the browser tests
expect (``js/test/*.test.ts``, ``tests/browser/*.test.mjs``); change them together.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# ------------------------------------------------------------------------------- U-Net


class ConvBlock(nn.Module):
    """conv -> relu -> conv -> relu (3x3, same size)."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.act1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.act2 = nn.ReLU()

    def forward(self, x):
        return self.act2(self.conv2(self.act1(self.conv1(x))))


class ResBlock(nn.Module):
    """conv -> relu -> conv, plus the input: the residual add is in this block's forward."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.act(self.conv1(x))) + x


class UNet(nn.Module):
    """Two levels down (max-pool in this forward), a residual bottleneck, two levels up
    (transposed convs), each decoder reading ``torch.cat([up, skip])``."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = ConvBlock(1, 16)
        self.enc2 = ConvBlock(16, 32)
        self.bottleneck = ResBlock(32)
        self.up2 = nn.ConvTranspose2d(32, 32, 2, stride=2)
        self.dec2 = ConvBlock(64, 32)
        self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec1 = ConvBlock(32, 16)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bottleneck(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


# ------------------------------------------------------------------------- transformer


class MultiheadAttention(nn.Module):
    """Self-attention with separate q / k / v / out projections around
    ``F.scaled_dot_product_attention``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape

        def split(h):
            return h.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(a.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TransformerBlock(nn.Module):
    """Pre-norm: both residual adds are in this block's forward."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = MultiheadAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """embed -> 12 transformer blocks -> norm -> lm_head; called as ``model(input_ids=...)``,
    returns ``{"logits": ...}``."""

    def __init__(self, vocab: int = 1000, dim: int = 64, layers: int = 12, heads: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(TransformerBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h)
        return {"logits": self.lm_head(self.norm(h))}


TOKENS = 16
VOCAB = 1000


def unet():
    """The seeded U-Net and its input (1 x 1 x 64 x 64)."""
    torch.manual_seed(0)
    model = UNet().eval()
    return model, torch.randn(1, 1, 64, 64)


def transformer12():
    """The seeded 12-block TinyGPT and its keyword inputs (16 tokens)."""
    torch.manual_seed(0)
    model = TinyGPT(vocab=VOCAB).eval()
    return model, {"input_ids": torch.randint(0, VOCAB, (1, TOKENS))}
