"""Random architectures with a known structure, for property tests and golden fixtures.

An :class:`Architecture` is a list of :class:`Step` s. Step i makes value i + 1 (value 0 is the
model input ``x``) from earlier values, the model's ``mask`` input or the running residual
``stream``: it combines them (add, cat, mul), passes the result through glue (functional and
module activations, views, in-place ops) and calls a stage on it. Stages are plain linears,
blocks with glue inside, two-argument calls (positional or keyword, keywords in varying order,
the mask passed or not), nested containers (a block of blocks with a residual, an
``nn.Sequential``, a stack of three equal residual blocks, which the front end folds), a second
call of an earlier block, and blocks that read no value at all (``torch.arange`` /
``torch.zeros``). A step's value may be kept as ``tanh`` of its stage's output (one op of the
model's body that later readers share: one source's data, never a relayed stream). After a
step its value may be added to the stream, which later steps read (a residual stream read by
several stages: relays, see ``neural_flow_widget/graph/edges.py``).

One generator serves both ways of drawing: :func:`architecture` takes a :class:`Draw`, which
:func:`architectures` (a hypothesis strategy) and :func:`sample` (a seeded ``random.Random``)
provide. ``tests/graph/test_condense.py`` and ``scripts/make_fixtures.py`` (the edges golden
file the JS twin is held to) both use it.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from torch import nn

D = 4
GLUE = ("none", "relu", "leaky", "tanh", "view", "transpose", "relu_", "add_", "module_act")
KINDS = ("block", "flat", "pair", "nest", "seq", "stack", "reuse", "sourceless", "fork")
#: How a two-argument stage is called (``a``, ``b``: its inputs; ``m``: the model's mask).
PAIR_CALLS = ("a, b", "a, b=b", "a=a, b=b", "b=b, a=a", "a, b, m", "m=m, b=b, a=a", "a, m=m, b=b")

T = TypeVar("T")
Ref = int | str  # a value index, "mask" or "stream"


class Draw(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...
    def choice(self, options: Sequence[T]) -> T: ...
    def coin(self) -> bool: ...


@dataclasses.dataclass(frozen=True)
class Step:
    kind: str  # one of KINDS
    sources: tuple[Ref, ...]  # what the stage reads (a pair: its a and b)
    combine: str  # "one", "add", "cat", "mul" (a source-less step: "arange" or "zeros")
    before: str  # glue between the combination and the stage (GLUE)
    after: str  # glue inside a block, after its linear
    call: str = ""  # a pair: one of PAIR_CALLS
    module: int = -1  # a reuse: the step whose block it calls again
    stream: bool = False  # the value is added to the stream after the step
    squash: bool = False  # the value kept is tanh of the stage's output, made in the model's
    #   body once and read by every later step that uses it (one source's data, many readers)


@dataclasses.dataclass(frozen=True)
class Architecture:
    steps: tuple[Step, ...]
    mask_keyword: bool = False  # the mask given as model(x, mask=...)
    two_outputs: bool = False  # also return the stream


def architecture(draw: Draw, most: int = 8) -> Architecture:
    """Draw an architecture of 2 to ``most`` steps."""
    steps: list[Step] = []
    for i in range(draw.integer(2, most)):
        refs: list[Ref] = [*range(i + 1), "mask", "stream"]
        kind = draw.choice(KINDS)
        before, after, call, module, combine = draw.choice(GLUE), draw.choice(GLUE), "", -1, "one"
        if kind == "sourceless":
            sources: tuple[Ref, ...] = ()
            combine = draw.choice(("arange", "zeros"))
        elif kind == "pair":
            sources = (draw.choice(refs), draw.choice(refs))
            call = draw.choice(PAIR_CALLS)
        else:
            first, second = draw.choice(refs), draw.choice(refs)
            sources = (first,) if draw.coin() or first == second else (first, second)
            if len(sources) == 2:
                combine = draw.choice(("add", "cat", "mul"))
            if kind == "reuse":
                # call an earlier block again: one that takes the width this step makes
                width = 2 if combine == "cat" else 1
                earlier = [
                    j for j, s in enumerate(steps) if s.kind == "block" and _width(s) == width
                ]
                if earlier:
                    module = draw.choice(earlier)
                else:
                    kind = "block"
        stream, squash = draw.coin(), draw.coin()
        steps.append(Step(kind, sources, combine, before, after, call, module, stream, squash))
    return Architecture(tuple(steps), draw.coin(), draw.coin())


def _width(step: Step) -> int:
    return 2 if step.combine == "cat" else 1


class _Hypothesis:
    def __init__(self, draw: Any) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def coin(self) -> bool:
        return self.draw(st.booleans())


class _Random:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def coin(self) -> bool:
        return self.rng.random() < 0.5


@st.composite
def architectures(draw, most: int = 8) -> Architecture:
    """A hypothesis strategy of architectures."""
    return architecture(_Hypothesis(draw), most)


def sample(rng: random.Random, most: int = 8) -> Architecture:
    """An architecture drawn with a seeded ``random.Random`` (deterministic)."""
    return architecture(_Random(rng), most)


# -- the model ----------------------------------------------------------------------------------


def glue(kind: str, h: torch.Tensor, act: nn.Module) -> torch.Tensor:
    if kind == "relu":
        return F.relu(h)
    if kind == "leaky":
        return F.leaky_relu(h, 0.1)
    if kind == "tanh":
        return torch.tanh(h)
    if kind == "view":
        return h.reshape(h.shape[0], 2, -1).reshape(h.shape)
    if kind == "transpose":
        return h.t().contiguous().t()
    if kind == "relu_":
        return h.clone().relu_()
    if kind == "add_":
        return h.add_(1.0)  # in place, on a value a later step may read too
    if kind == "module_act":
        return act(h)
    return h


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear, self.act = nn.Linear(width, D), nn.GELU()

    def forward(self, h, after="none"):
        return glue(after, self.linear(h), self.act)


class Pair(nn.Module):
    """A stage of two tensors and an optional mask (a UNet block's ``(hidden, temb)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.la, self.lb = nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, a, b, m=None):
        h = self.la(a) + torch.tanh(self.lb(b))
        return h if m is None else h * m


class Nest(nn.Module):
    """Blocks inside a block, with a residual of its own."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inner = nn.ModuleList([Block(width), Block(D)])

    def forward(self, h):
        y = self.inner[0](h, "relu")
        return self.inner[1](y) + y


class Stack(nn.Module):
    """A projection, then three equal pre-activation residual blocks (a foldable run)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, D)
        self.layers = nn.ModuleList(Block(D) for _ in range(3))

    def forward(self, h):
        h = self.proj(h)
        for layer in self.layers:
            h = h + layer(F.relu(h))
        return h


class Fork(nn.Module):
    """Two stages reading the same tensor, gated together."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.left, self.right = Block(width), Block(width)

    def forward(self, h):
        return self.left(h) * torch.sigmoid(self.right(h, "tanh"))


def _module(step: Step) -> nn.Module:
    width = D * _width(step)
    if step.kind == "pair":
        return Pair()
    if step.kind == "nest":
        return Nest(width)
    if step.kind == "seq":
        return nn.Sequential(nn.Linear(width, D), nn.Tanh(), nn.Linear(D, D))
    if step.kind == "stack":
        return Stack(width)
    if step.kind == "fork":
        return Fork(width)
    if step.kind == "reuse":
        return nn.Identity()  # never called: the step calls an earlier block
    return Block(width)  # block, flat, sourceless


class RandomModel(nn.Module):
    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        self.arch = arch
        self.blocks = nn.ModuleList(_module(s) for s in arch.steps)
        self.acts = nn.ModuleList(nn.ReLU() for _ in arch.steps)

    def forward(self, x, mask=None):
        values = [x]
        stream = x
        for i, step in enumerate(self.arch.steps):

            def get(ref: Ref) -> torch.Tensor:
                if ref == "mask":
                    return mask
                if ref == "stream":
                    return stream
                return values[ref]

            block = self.blocks[step.module if step.kind == "reuse" else i]
            if step.kind == "sourceless":
                n = x.shape[0]
                h = torch.arange(n * D, dtype=x.dtype).reshape(n, D) * 0.1
                if step.combine == "zeros":
                    h = torch.zeros(n, D, dtype=x.dtype)
                value = block(glue(step.before, h, self.acts[i]), step.after)
            elif step.kind == "pair":
                a = glue(step.before, get(step.sources[0]), self.acts[i])
                value = _call_pair(block, step.call, a, get(step.sources[1]), mask)
            else:
                h = get(step.sources[0])
                if step.combine == "add":
                    h = h + get(step.sources[1])
                elif step.combine == "cat":
                    h = torch.cat([h, get(step.sources[1])], dim=-1)
                elif step.combine == "mul":
                    h = h * get(step.sources[1])
                h = glue(step.before, h, self.acts[i])
                if step.kind == "flat":
                    value = block.linear(h)
                elif step.kind in ("block", "reuse"):
                    value = block(h, step.after)
                else:
                    value = block(h)
            if step.squash:
                value = torch.tanh(value)
            values.append(value)
            if step.stream:
                stream = stream + value
        out = values[-1] + values[len(values) // 2]
        return (out, stream) if self.arch.two_outputs else out


def _call_pair(pair: nn.Module, how: str, a, b, m):
    if how == "a, b":
        return pair(a, b)
    if how == "a, b=b":
        return pair(a, b=b)
    if how == "a=a, b=b":
        return pair(a=a, b=b)
    if how == "b=b, a=a":
        return pair(b=b, a=a)
    if how == "a, b, m":
        return pair(a, b, m)
    if how == "m=m, b=b, a=a":
        return pair(m=m, b=b, a=a)
    return pair(a, m=m, b=b)


def model_and_inputs(arch: Architecture, seed: int = 0) -> tuple[nn.Module, tuple, dict]:
    """The seeded model and what to call it with: ``(args, kwargs)`` (pass the kwargs to
    ``nfw.trace(..., kwargs=)``)."""
    torch.manual_seed(seed)
    model = RandomModel(arch).eval()
    x = torch.randn(2, D)
    mask = (torch.rand(2, D) > 0.3).to(x.dtype)
    if arch.mask_keyword:
        return model, (x,), {"mask": mask}
    return model, (x, mask), {}
