"""What a retained reduction keeps of one activation: its parts and their sizes, from the
shape and the budget alone (host arithmetic, cached: shapes repeat from call to call).

Both implementations of capture read these plans (:mod:`.reduction`): the torch path makes
the parts with torch ops (:mod:`.retained`), the compiled CPU path (:mod:`.accelerator`)
lays them out in one buffer and hands ``reduce.c`` their sizes and offsets.

>>> plan = image_plan(16, 128, 128, 256 * 1024)
>>> plan.grid, plan.mean, plan.k, plan.top
((64, 64), (128, 128), 2, (128, 128))
>>> [(name, shape) for name, _, shape in plan.parts()]  # doctest: +NORMALIZE_WHITESPACE
[('channel_mean_abs', (16,)), ('grid', (16, 64, 64)), ('mean', (128, 128)),
 ('top', (2, 128, 128)), ('top_channels', (2,))]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .pooling import even, even2, fit, fit_axes
from .sampling import prime_at_least

__all__ = [
    "RANK_SAMPLE",
    "ImagePlan",
    "Part",
    "SequencePlan",
    "image_plan",
    "rank_rows",
    "sequence_plan",
]

GRID_SIDE, MAP_SIDE, TOP_CHANNELS = 64, 256, 8
NORMS = 4096
RANK_SAMPLE = 1 << 14  # elements read to rank channels by mean |x|

#: one kept part: its name, its dtype and its shape
Part = tuple[str, type, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class ImagePlan:
    """What the image layout keeps of a ``(C, H, W)`` map (see :mod:`.retained`)."""

    channels: int
    height: int
    width: int
    grid: tuple[int, int]  # every channel pooled to this size
    mean: tuple[int, int]  # the mean over channels pooled to this size
    k: int  # the most active channels kept sharper (0: none)
    top: tuple[int, int] | None  # their size (None: none kept)
    rank_step: int  # channels are ranked on every rank_step-th row

    def parts(self) -> tuple[Part, ...]:
        """The kept parts, in the order both implementations give them."""
        c = self.channels
        parts: list[Part] = [
            ("channel_mean_abs", np.float32, (c,)),
            ("grid", np.float16, (c, *self.grid)),
            ("mean", np.float16, self.mean),
        ]
        if self.top is not None:
            parts += [
                ("top", np.float16, (self.k, *self.top)),
                ("top_channels", np.int64, (self.k,)),
            ]
        return tuple(parts)


@dataclass(frozen=True, slots=True)
class SequencePlan:
    """What the sequence layout keeps of an ``(L, D)`` token x feature map."""

    length: int
    dim: int
    norms: int  # per-token L2 norms kept (pooled to this many)
    tokens: tuple[int, int]  # the token x feature map pooled to this size

    def parts(self) -> tuple[Part, ...]:
        """The kept parts, in the order both implementations give them."""
        return (("tokens", np.float16, self.tokens), ("norms", np.float32, (self.norms,)))


@functools.lru_cache(maxsize=1024)
def rank_rows(c: int, h: int, w: int) -> int:
    """The row step for ranking channels: 1 (every row) up to ``RANK_SAMPLE`` elements,
    else a prime (so that it does not alias with periodic rows), at most ``h``."""
    if c * h * w <= RANK_SAMPLE:
        return 1
    return min(prime_at_least(-(-h // max(1, RANK_SAMPLE // (c * w)))), h)


@functools.lru_cache(maxsize=1024)
def image_plan(c: int, h: int, w: int, budget: int) -> ImagePlan | None:
    """The image layout's plan, or None when there are too many channels for the budget (the
    activation is then kept as a vector)."""
    k_max = min(TOP_CHANNELS, c)
    grid = even2(h, w, fit(h, w, (budget // 2) // (2 * c), GRID_SIDE))
    mean = even2(h, w, fit(h, w, (budget // 8) // 2, MAP_SIDE))
    fixed = 4 * c + 8 * k_max
    if grid is None or mean is None:
        return None
    rest = budget - fixed - 2 * c * grid[0] * grid[1] - 2 * mean[0] * mean[1]
    if rest < 0:
        return None
    k, top = k_max, None
    while k >= 1:
        top = even2(h, w, fit(h, w, rest // (2 * k), MAP_SIDE))
        if top is not None and top[0] * top[1] > grid[0] * grid[1]:
            break  # sharper than the grid: worth keeping
        k, top = k // 2, None
    return ImagePlan(c, h, w, grid, mean, k, top, rank_rows(c, h, w))


@functools.lru_cache(maxsize=1024)
def sequence_plan(length: int, dim: int, budget: int) -> SequencePlan:
    """The sequence layout's plan."""
    n_norms = min(length, NORMS, budget // 16)
    heat = fit_axes(length, dim, (budget - 4 * n_norms) // 2, MAP_SIDE)
    return SequencePlan(length, dim, n_norms, (even(length, heat[0]), even(dim, heat[1])))
