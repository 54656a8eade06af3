"""What each call into ``reduce.c`` is given: its parameter structs (mirrors of the C ones,
field by field) and, per shape and budget, the plan of the call (from :mod:`..plans`, what the
torch path keeps): the function, its parameters, and where each kept part lies."""

from __future__ import annotations

import ctypes
import functools
import math
from typing import NamedTuple

import numpy as np

from ..plans import Part, image_plan, sequence_plan
from ..retained import Layout
from ..sampling import sample_plan
from ..summary import MAX_EXACT

__all__ = ["PARAMS", "ImageParams", "Plan", "SequenceParams", "plan_of"]

_I64 = ctypes.c_int64


class ImageParams(ctypes.Structure):
    """``reduce.c``'s ImageParams, field by field (see there)."""

    _fields_ = [
        (name, _I64)
        for name in (
            *("n", "c", "h", "w", "width", "step", "first", "rows", "rank_step", "k"),
            *("gh", "gw", "mh", "mw", "th", "tw", "at_top", "at_mean_abs", "at_f16"),
        )
    ]


class SequenceParams(ctypes.Structure):
    """``reduce.c``'s SequenceParams, field by field (see there)."""

    _fields_ = [
        (name, _I64)
        for name in (
            *("n", "length", "dim", "width", "step", "first", "rows"),
            *("hl", "hd", "norms", "at_norms", "at_f16"),
        )
    ]


#: per params struct, its kind in ``nfw_params_size``
PARAMS = {ImageParams: 0, SequenceParams: 1}
_MAX_POOLED = 256  # the longest pooled side reduce.c takes (MAX_POOLED there)
_SMALL_CHANNEL = 1024  # maps of at most this many cells are pooled in groups (reduce.c)
_GROUP_CELLS = 2048  # cells of a group of small maps (ACC_BLOCK there)
#: one kept part laid out: its name, dtype, byte offset in the kept buffer, and shape
Placed = tuple[str, type, int, tuple[int, ...]]


class Plan(NamedTuple):
    """What every call for one shape and budget shares, made once (see :func:`plan_of`)."""

    reducer: str  # the C function
    params: ImageParams | SequenceParams  # its parameters (kept alive here: C reads them)
    params_at: int
    layout: Layout
    kept_bytes: int  # the buffer that every kept part is a view of
    kept_at: int  # where it starts, after the summary's sample (both in one carved buffer)
    parts: tuple[Placed, ...]  # name, dtype, byte offset, shape
    halves: tuple[str, ...]  # the float16 parts (they share the scale)
    work: int  # float32 of scratch
    values: int  # elements of the summary's sample
    sampled: int | None


def _layout(
    parts: tuple[Part, ...],
) -> tuple[tuple[tuple[str, type, int, tuple[int, ...]], ...], int]:
    """Byte offsets of parts packed largest item first (each aligned), listed in their order.
    (The float16 parts come last, one after another in their order, as reduce.c writes them.)"""
    offsets, at = {}, 0
    for name, dtype, shape in sorted(parts, key=lambda p: -np.dtype(p[1]).itemsize):
        offsets[name] = at
        at += np.dtype(dtype).itemsize * math.prod(shape)
    return tuple((name, dtype, offsets[name], shape) for name, dtype, shape in parts), at


@functools.lru_cache(maxsize=1024)
def plan_of(shape: tuple[int, ...], budget: int) -> Plan | None:
    """The plan of one shape and budget, from :mod:`..plans` (what the torch path keeps);
    None when it has no compiled path (too many channels for the budget, a pooled side
    longer than reduce.c takes)."""
    sample = sample_plan(math.prod(shape), MAX_EXACT)
    width, step, first, rows = sample if sample is not None else (0, 0, 0, 0)
    values = rows * width if sample is not None else math.prod(shape)
    params: ImageParams | SequenceParams
    layout_: Layout
    if len(shape) == 4:
        n, c, h, w = shape
        image = image_plan(c, h, w, budget)
        if image is None:
            return None
        (gh, gw), (mh, mw) = image.grid, image.mean
        th, tw = image.top if image.top is not None else (0, 0)
        if max(gh, gw, mh, mw, th, tw) > _MAX_POOLED:
            return None
        spec, kept = _layout(image.parts())
        at = {name: offset for name, _, offset, _ in spec}
        params = ImageParams(
            n, c, h, w, width, step, first, rows, image.rank_step, max(image.k, 1),
            gh, gw, mh, mw, th, tw, at.get("top_channels", 0), at["channel_mean_abs"],
            at["grid"],
        )  # fmt: skip
        # rank totals (doubles), channel sums, a row, a pooled map
        work = 2 * c + h * w + w + max(gh * gw, mh * mw, th * tw)
        if h * w <= _SMALL_CHANNEL:  # small maps: the pooled block, a group's column sums
            work += c * gh * gw + min(c, max(8, (_GROUP_CELLS // (h * w)) & ~7)) * h * gw
        reducer, layout_ = "nfw_image_f32", "image"
    else:
        n, length, dim = shape
        sequence = sequence_plan(length, dim, budget)
        hl, hd = sequence.tokens
        if max(hl, hd) > _MAX_POOLED:
            return None
        spec, kept = _layout(sequence.parts())
        at = {name: offset for name, _, offset, _ in spec}
        params = SequenceParams(
            n, length, dim, width, step, first, rows, hl, hd, sequence.norms, at["norms"],
            at["tokens"],
        )  # fmt: skip
        work = length + dim + hd  # token norms, a row, a pooled row
        reducer, layout_ = "nfw_sequence_f32", "sequence"
    kept_at = -(-values * 4 // 64) * 64
    halves = tuple(name for name, dtype, _, _ in spec if dtype is np.float16)
    return Plan(
        reducer,
        params,
        ctypes.addressof(params),
        layout_,
        kept,
        kept_at,
        spec,
        halves,
        work,
        values,
        rows * width if sample is not None else None,
    )
