"""The compiled capture path for float32 CPU activations (``reduce.c``), and its loader.

Capture's torch path reduces an activation with some twenty torch and numpy calls, and right
after the model's own op each distinct kernel costs tens of microseconds to warm up
(``benchmarks/bench_cold.py``).  :func:`reduce` does the same work for the common case, a
contiguous float32 ``(N, C, H, W)`` or ``(N, L, D)`` tensor on the CPU, in one call into
``reduce.c``, and gives what the torch path gives: the same summary fields (``min``/``max``
exact, the same chunk sample, the mean up to summation order) and the same retained parts
(sizes from :mod:`.._retain`, the same pooling windows and channel ranking, float16 with
the same scale).  ``tests/test_native.py`` holds the two paths to each other.

The library is built with the package (``hatch_build.py``: a baseline and an AVX2 build;
the AVX2 one is loaded where the processor has it).  Without a C compiler, on other
platforms, or with ``NFW_NATIVE=0`` in the environment, :data:`LIB` is None and capture
takes the torch path.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import pathlib
import threading
from types import MappingProxyType

import numpy as np
import torch

from .._retain import Retained, _image_sizes, _rank_rows, _sequence_sizes
from .._summaries import MAX_EXACT, PendingSummary, _FloatSample
from .._summary_kernels import sample_plan

__all__ = ["LIB", "library_path", "reduce"]

_HERE = pathlib.Path(__file__).parent
_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURES = {
    "nfw_image_f32": [_PTR, _I64, _I64, _I64, _I64, _I64, _PTR, _I64, _I64, _I64, _I64, _PTR,
                      _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _PTR, _PTR, _PTR, _PTR,
                      ctypes.c_double],
    "nfw_sequence_f32": [_PTR, _I64, _I64, _I64, _I64, _PTR, _I64, _I64, _I64, _I64, _PTR,
                         _I64, _I64, _I64, _PTR, _PTR, _PTR, ctypes.c_double],
    "nfw_to_half": [_PTR, _I64, ctypes.c_float, _PTR],
}  # fmt: skip


def library_path(variant: str) -> pathlib.Path:
    """Where the build puts the ``base`` or ``avx2`` library."""
    return _HERE / f"_reduce_{variant}.so"


def _load() -> ctypes.CDLL | None:
    if os.environ.get("NFW_NATIVE", "1") == "0" or not library_path("base").exists():
        return None
    try:
        lib = ctypes.CDLL(str(library_path("base")))
        lib.nfw_has_avx2.restype = _I64
        if lib.nfw_has_avx2() and library_path("avx2").exists():
            lib = ctypes.CDLL(str(library_path("avx2")))
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, _I64
    except (OSError, AttributeError):  # a stale or foreign build: the torch path still works
        return None
    return lib


#: the loaded library, or None (capture then takes the torch path)
LIB = _load()


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


_MAX_POOLED = 256  # the longest pooled side reduce.c takes (MAX_POOLED there)
_SMALL_CHANNEL = 1024  # maps of at most this many cells are pooled as one block (reduce.c)
_local = threading.local()  # per thread: a work buffer reused from call to call


def _work(floats: int) -> tuple[np.ndarray, int, int]:
    """(a float64 array of 4 for the statistics, its address, the address of ``floats``
    float32 of scratch), reused: a fresh buffer of this size would cost page faults."""
    got = getattr(_local, "work", None)
    if got is None or got[0] < floats:
        buffer = np.empty(max(floats, 1 << 16) + 8, np.float32)  # + the statistics
        address = _address(buffer)
        stats = np.ndarray(4, np.float64, buffer, 0)
        got = _local.work = (buffer.size - 8, buffer, stats, address)
    return got[2], got[3], got[3] + 32


@functools.lru_cache(maxsize=1024)
def _plan(shape: tuple[int, ...], budget: int):
    """What one call needs for a shape, computed once: (layout, the C arguments that depend
    only on the shape, float16 parts as (name, shape), float16 count, work floats, kept part
    size, sample plan); None when the shape has no compiled path (too many channels)."""
    plan = sample_plan(math.prod(shape), MAX_EXACT)
    if len(shape) == 4:
        n, c, h, w = shape
        sizes = _image_sizes(c, h, w, budget)
        if sizes is None:
            return None
        (gh, gw), (mh, mw), k, top = sizes
        k = max(k, 1)
        th, tw = top if top is not None else (0, 0)
        if max(gh, gw, mh, mw, th, tw) > _MAX_POOLED:
            return None
        halves = (("grid", (c, gh, gw)), ("mean", (mh, mw)))
        if top is not None:
            halves += (("top", (k, th, tw)),)
        n_halves = sum(math.prod(s) for _, s in halves)
        args = (n, c, h, w, _rank_rows(c, h, w), k, gh, gw, mh, mw, th, tw)
        # (reduce.c's layout: channel sums, a row, one pooled map, small maps' pooled block)
        work = h * w + w + max(gh * gw, mh * mw, th * tw)
        if h * w <= _SMALL_CHANNEL:
            work += c * gh * gw + c * h * gw
        return "image", args, halves, n_halves, work, (c, k), plan
    n, length, dim = shape
    n_norms, (hl, hd) = _sequence_sizes(length, dim, budget)
    if max(hl, hd) > _MAX_POOLED:
        return None
    work = length + dim + hd  # token norms, a row, a pooled row
    return "sequence", (n, length, dim), (("tokens", (hl, hd)),), hl * hd, work, n_norms, plan


def reduce(t: torch.Tensor, sample: int, budget: int):
    """``(PendingSummary, Retained)`` of a plain contiguous float32 CPU tensor of 3 or 4
    dimensions, batch element ``sample`` kept; None where this path does not apply (a tensor
    subclass, another dtype, device, layout or memory order, no elements, too many channels
    for the budget, a sample out of range, NaN or Inf in the tensor): the torch path then
    runs.  Reads the tensor's memory directly (no autograd is involved)."""
    if LIB is None or type(t) is not torch.Tensor or t.dtype is not torch.float32 \
            or not t.is_cpu or t.layout is not torch.strided:  # fmt: skip
        return None
    shape = tuple(t.shape)
    if len(shape) not in (3, 4) or not 0 <= sample < shape[0] or not t.is_contiguous():
        return None
    numel = math.prod(shape)
    if numel == 0:
        return None
    planned = _plan(shape, budget)
    if planned is None:
        return None
    layout, args, halves, n_halves, work, kept_size, plan = planned
    width, step, first, rows = plan if plan is not None else (0, 0, 0, 0)
    values = np.empty(rows * width if plan is not None else numel, np.float32)
    f16 = np.empty(n_halves, np.float16)
    stats, stats_at, work_at = _work(work)
    if layout == "image":
        c, k = kept_size
        mean_abs, chosen = np.empty(c, np.float32), np.empty(k, np.int64)
        n, c, h, w, rank_step, k, gh, gw, mh, mw, th, tw = args
        call = functools.partial(
            LIB.nfw_image_f32, t.data_ptr(), n, c, h, w, sample, stats_at, width, step, first,
            rows, _address(values), rank_step, k, gh, gw, mh, mw, th, tw, _address(mean_abs),
            _address(chosen), _address(f16), work_at)  # fmt: skip
        kept = {"channel_mean_abs": _read_only(mean_abs)}
        if th:
            kept["top_channels"] = _read_only(chosen)
    else:
        norms = np.empty(kept_size, np.float32)
        n, length, dim = args
        hl, hd = halves[0][1]
        call = functools.partial(
            LIB.nfw_sequence_f32, t.data_ptr(), n, length, dim, sample, stats_at, width, step,
            first, rows, _address(values), hl, hd, kept_size, _address(f16), _address(norms),
            work_at)  # fmt: skip
        kept = {"norms": _read_only(norms)}
    # float16 parts are written divided by the scale expected (1); rarely it is another
    # (a peak |x| below 2**-10 or from 2**15): then once more with that one
    if call(1.0):
        call(float(stats[3]))
    lo, hi, total, scale = stats.tolist()
    if not math.isfinite(lo + hi + total):
        return None  # NaN or Inf: the torch path's masked kernels count them
    summary = PendingSummary(
        head=dict(shape=shape, dtype="float32", device="cpu", kind="float", numel=numel),
        sample=_FloatSample(lo, hi, total / numel, values, rows * width if plan else None, 64),
    )  # fmt: skip
    _read_only(f16)
    parts, offset = {}, 0
    for name, part_shape in halves:
        size = math.prod(part_shape)
        parts[name] = f16[offset : offset + size].reshape(part_shape)
        offset += size
    parts |= kept
    parts = {name: parts[name] for name in _ORDER if name in parts}
    scales = {name: scale for name, _ in halves} if scale != 1.0 else {}
    retained = Retained(layout, shape=shape, dtype="float32", sample=sample,
                        parts=MappingProxyType(parts), scales=MappingProxyType(scales))
    return summary, retained


#: the parts in the order the torch path's plans give them
_ORDER = ("channel_mean_abs", "grid", "mean", "top", "top_channels", "tokens", "norms")
