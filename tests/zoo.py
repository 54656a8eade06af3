"""Small seeded models with known stage graphs, shared by the tests."""

from __future__ import annotations

import torch
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.conv(x))


class UNet(nn.Module):
    """Encoder / decoder with ``torch.cat`` skips."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2 = ConvBlock(1, 4), ConvBlock(4, 8)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = ConvBlock(8, 8)
        self.up2, self.up1 = nn.ConvTranspose2d(8, 8, 2, 2), nn.ConvTranspose2d(4, 4, 2, 2)
        self.dec2, self.dec1 = ConvBlock(16, 4), ConvBlock(8, 4)
        self.head = nn.Conv2d(4, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottleneck(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class BasicBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv2(self.relu(self.conv1(x))) + x)


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layer1, self.layer2 = BasicBlock(8), BasicBlock(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(self.pool(x).flatten(1))


class Multimodal(nn.Module):
    """Image CNN + clinical MLP -> fusion -> two heads."""

    def __init__(self) -> None:
        super().__init__()
        self.image_cnn = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten()
        )
        self.clinical_mlp = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.fusion = nn.Linear(16 + 8, 12)
        self.diagnosis = nn.Linear(12, 3)
        self.severity = nn.Linear(12, 1)

    def forward(self, image, clinical):
        fused = self.fusion(torch.cat([self.image_cnn(image), self.clinical_mlp(clinical)], 1))
        return self.diagnosis(fused), self.severity(fused)


class ThreeHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(4, 8)
        self.heads = nn.ModuleDict(
            {"a": nn.Linear(8, 1), "b": nn.Linear(8, 2), "c": nn.Linear(8, 3)}
        )

    def forward(self, x):
        h = torch.tanh(self.trunk(x))
        return {name: head(h) for name, head in self.heads.items()}


class Reused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.block = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        x = self.inp(x)
        for _ in range(3):
            x = torch.relu(self.block(x))
        return self.out(x)


class Branchy(nn.Module):
    """Data-dependent control flow: which stage runs depends on the input's values."""

    def __init__(self) -> None:
        super().__init__()
        self.pre, self.pos, self.neg, self.post = (nn.Linear(4, 4) for _ in range(4))

    def forward(self, x):
        x = self.pre(x)
        x = self.pos(x) if x.mean() > 0 else self.neg(x)
        return self.post(x)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(6, 16)
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
        self.norm = nn.LayerNorm(16)
        self.out = nn.Linear(16, 2)

    def forward(self, x):
        h = self.embed(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        return self.out(self.norm(h + a))


class InPlace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.a(x)
        view = y[:, :2]
        y.add_(self.b(x))  # in place: y now depends on a and b
        view.mul_(2)
        return self.c(self.relu(y))


class Keyword(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.gate = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x, *, mask=None, scale: float = 1.0, note: str | None = None):
        h = self.enc(x) * scale
        if mask is not None:
            h = h * torch.sigmoid(self.gate(mask))
        return self.out(h)


class Nested(nn.Module):
    """Dict input with a nested list; tuple output with a nested tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, batch, k: int = 2):
        x, (y, z) = batch["x"], batch["pair"]
        return self.a(x), (self.b(y + z), self.c(x) * k)


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ok = nn.Linear(4, 4)
        self.bad = nn.Sequential(nn.Linear(5, 2))  # expects 5 features: fails on 4
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bad(self.norm(self.ok(x)))


class PreNormBlock(nn.Module):
    """A pre-norm residual block (GPT-2, ViT): the stream is added to in the block's body."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.ln1, self.f1 = nn.LayerNorm(d), nn.Linear(d, d)
        self.ln2, self.f2 = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, h):
        h = h + self.f1(self.ln1(h))
        return h + self.f2(self.ln2(h))


class PreNorm(nn.Module):
    """Three pre-norm blocks on one residual stream, a final norm and a head."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.embed = nn.Linear(4, d)
        self.blocks = nn.ModuleList(PreNormBlock(d) for _ in range(3))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, 2)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln_f(h))


class Dense(nn.Module):
    """DenseNet-style: every layer reads the concatenation of all earlier features."""

    def __init__(self, d: int = 4, n: int = 4) -> None:
        super().__init__()
        self.stem = nn.Linear(4, d)
        self.layers = nn.ModuleList(nn.Linear(d * (i + 1), d) for i in range(n))

    def forward(self, x):
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, -1)))
        return features[-1]


class CellLoop(nn.Module):
    """A recurrent cell called once per time step, ``cell(x[t], h)``, from a zero state."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(3, 6)
        self.head = nn.Linear(6, 2)

    def forward(self, x):  # x: (time, batch, features)
        h = torch.zeros(x.shape[1], 6)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
        return self.head(h)


class CrossAttention(nn.Module):
    """A query of one linear layer attends to a memory four layers deep (a decoder's first
    cross-attention over an encoder's output), its attention written ``how``: with
    ``F.scaled_dot_product_attention``, out as ``softmax(q @ k.T) @ v``, or with the
    scores begun by ``torch.baddbmm(bias, q, k.T)`` (a bias handed in first, as BLOOM adds
    its ALiBi)."""

    how = "sdpa"

    def __init__(self, how: str | None = None) -> None:
        super().__init__()
        self.how = how or self.how
        self.query_in = nn.Linear(8, 8)
        self.memory = nn.Sequential(*(nn.Linear(8, 8) for _ in range(4)))
        self.bias = nn.Linear(8, 6)
        self.q, self.k, self.v, self.o = (nn.Linear(8, 8) for _ in range(4))

    def forward(self, x, m):
        q = self.q(self.query_in(x))
        mem = self.memory(m)
        k, v = self.k(mem), self.v(mem)
        if self.how == "sdpa":
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        elif self.how == "written":
            out = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
        else:  # (the bias is a stage of its own: an operand with a source)
            scores = torch.baddbmm(self.bias(x), q, k.transpose(-1, -2))
            out = torch.bmm(torch.softmax(scores, dim=-1), v)
        return self.o(out)


def seeded(cls, seed: int = 0):
    torch.manual_seed(seed)
    return cls().eval()


def mode_stack():
    """The torch function modes still active (a trace must leave none)."""
    return torch.overrides._get_current_function_mode_stack()  # test-only introspection


def hooks_left(model):
    """Hooks and forward wrappers the trace left on the model's modules."""
    from neural_flow_widget.tracing import calls

    def wrapped(module):  # a forward wrapper of the call tracker in the module's __dict__
        code = getattr(vars(module).get("forward"), "__code__", None)
        return code is not None and code.co_filename == calls.__file__

    return sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + wrapped(m) for m in model.modules()
    )
