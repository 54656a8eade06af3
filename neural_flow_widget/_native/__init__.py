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
import math
import os
import pathlib
from types import MappingProxyType

import numpy as np
import torch

__all__ = ["LIB", "library_path", "reduce"]

_HERE = pathlib.Path(__file__).parent
_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURES = {
    "nfw_image_f32": [_PTR, _I64, _I64, _I64, _I64, _I64, _PTR, _I64, _I64, _I64, _I64, _PTR,
                      _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _PTR, _PTR, _PTR, _PTR],
    "nfw_sequence_f32": [_PTR, _I64, _I64, _I64, _I64, _PTR, _I64, _I64, _I64, _I64, _PTR,
                         _I64, _I64, _I64, _PTR, _PTR, _PTR],
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


def reduce(d, sample: int, budget: int):
    """``(PendingSummary, Retained)`` of a float32 CPU tensor (a :class:`~.._summaries.Dense`)
    of 3 or 4 dimensions, batch element ``sample`` kept; None where this path does not apply
    (another dtype, device, layout or memory order, too many channels for the budget, a
    sample out of range, NaN or Inf in the tensor): the torch path then runs."""
    from .._retain import _image_sizes, _rank_rows, _scale_for, _sequence_sizes, Retained
    from .._summaries import MAX_EXACT, PendingSummary, _FloatSample
    from .._summary_kernels import sample_plan

    shape, numel = d.shape, d.numel
    if LIB is None or d.dtype is not torch.float32 or d.device.type != "cpu" or numel == 0 \
            or len(shape) not in (3, 4) or not 0 <= sample < shape[0] \
            or not d.t.is_contiguous():  # fmt: skip
        return None
    plan = sample_plan(numel, MAX_EXACT)
    width, step, first, rows = plan if plan is not None else (0, 0, 0, 0)
    values = np.empty(rows * width if plan is not None else numel, np.float32)
    stats = np.empty(3, np.float64)
    if len(shape) == 4:
        n, c, h, w = shape
        sizes = _image_sizes(c, h, w, budget)
        if sizes is None:
            return None
        (gh, gw), (mh, mw), k, top = sizes
        k = max(k, 1)
        th, tw = top if top is not None else (0, 0)
        halves = {"grid": (c, gh, gw), "mean": (mh, mw)}
        if top is not None:
            halves["top"] = (k, th, tw)
        n_halves = sum(math.prod(s) for s in halves.values())
        buffer = np.empty(n_halves + h * w + w, np.float32)
        mean_abs, chosen = np.empty(c, np.float32), np.empty(k, np.int64)
        LIB.nfw_image_f32(
            d.t.data_ptr(), n, c, h, w, sample, _address(stats), width, step, first, rows,
            _address(values), _rank_rows(c, h, w), k, gh, gw, mh, mw, th, tw,
            _address(mean_abs), _address(chosen), _address(buffer),
            _address(buffer) + 4 * n_halves,
        )  # fmt: skip
        kept = {"channel_mean_abs": _read_only(mean_abs)}
        if top is not None:
            kept["top_channels"] = _read_only(chosen)
        layout = "image"
    else:
        n, length, dim = shape
        n_norms, (hl, hd) = _sequence_sizes(length, dim, budget)
        halves = {"tokens": (hl, hd)}
        n_halves = hl * hd
        buffer = np.empty(n_halves + length + max(length, dim), np.float32)
        norms = np.empty(n_norms, np.float32)
        LIB.nfw_sequence_f32(
            d.t.data_ptr(), n, length, dim, sample, _address(stats), width, step, first, rows,
            _address(values), hl, hd, n_norms, _address(buffer), _address(norms),
            _address(buffer) + 4 * n_halves,
        )  # fmt: skip
        kept = {"norms": _read_only(norms)}
        layout = "sequence"
    lo, hi, total = stats.tolist()
    if not math.isfinite(lo + hi + total):
        return None  # NaN or Inf: the torch path's masked kernels count them
    summary = PendingSummary(
        head=dict(shape=shape, dtype="float32", device="cpu", kind="float", numel=numel),
        sample=_FloatSample(lo, hi, total / numel, values, rows * width if plan else None, 64),
    )  # fmt: skip
    scale = _scale_for(max(-lo, hi))
    host = np.empty(n_halves, np.float16)
    LIB.nfw_to_half(_address(buffer), n_halves, 1.0 / scale, _address(host))
    host = _read_only(host)
    parts, offset = {}, 0
    for name, part_shape in halves.items():
        size = math.prod(part_shape)
        parts[name] = host[offset : offset + size].reshape(part_shape)
        offset += size
    parts |= kept
    order = ("channel_mean_abs", "grid", "mean", "top", "top_channels", "tokens", "norms")
    parts = {name: parts[name] for name in order if name in parts}
    scales = {name: scale for name in halves} if scale != 1.0 else {}
    retained = Retained(layout, shape=shape, dtype="float32", sample=sample,
                        parts=MappingProxyType(parts), scales=MappingProxyType(scales))
    return summary, retained
