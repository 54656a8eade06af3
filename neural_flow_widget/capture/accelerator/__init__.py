"""The optional compiled path of capture: float32 CPU activations reduced in one call.

Capture's torch path (:mod:`..summary`, :mod:`..retained`) is the reference on every device.
On the CPU it runs a dozen or more torch ops per activation, and right after the model's own
op each distinct kernel costs microseconds to tens of microseconds to warm up
(``benchmarks/bench_cold.py``). :class:`Reducer` does the same work for the common case, a
contiguous float32 ``(N, C, H, W)`` or ``(N, L, D)`` tensor on the CPU, in one call into
``reduce.c``, and gives what the torch path gives: the same summary fields (``min``/``max``
exact, the same chunk sample, the mean up to summation order) and the same retained parts
(sizes from :mod:`..retained`, the same pooling windows and channel ranking, float16 maps
under the same scale). ``tests/capture/test_accelerator.py`` holds the two paths to each other.

It is optional: nothing is compiled at install time. On first use it is compiled into a
per-user cache where a C compiler is found (:mod:`.build`); without one, with
``NFW_ACCELERATOR=0`` in the environment or after ``enable(False)``, :func:`reducer` gives
None and capture takes the torch path. ``tests/capture/test_accelerator_sanitized.py`` runs
it under AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import warnings
from types import MappingProxyType

import numpy as np
import torch

from ..host import Pending
from ..reduction import Records
from ..retained import Retained, broadcast_sample
from ..sampling import sample_plan
from ..statistics import finish_float
from ..summary import MAX_EXACT, PendingSummary
from . import build
from .params import PARAMS, Plan, plan_of
from .slabs import Slabs

__all__ = ["Flat", "Reduced", "Reducer", "enable", "enabled", "library", "reducer", "status"]

_I64, _PTR, _F64 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


# (parameters, x, sample index, statistics, sample copy, kept buffer, work, scale expected)
_REDUCER = [_PTR, _PTR, _I64, _PTR, _PTR, _PTR, _PTR, _F64]
_SIGNATURES = {
    "nfw_image_f32": _REDUCER,
    "nfw_sequence_f32": _REDUCER,
    "nfw_to_half": [_PTR, _I64, ctypes.c_float, _PTR],
    "nfw_params_size": [_I64],
    "nfw_flat_f32": [_PTR, _I64, _I64, _I64, _I64, _I64, _PTR, _PTR],
}
_VERSION = 4  # of reduce.c's interface (nfw_version there)

_lock = threading.Lock()
_state: dict = {
    "enabled": os.environ.get("NFW_ACCELERATOR", "1") != "0",
    "loaded": False,
    "lib": None,
    "why": "not loaded yet",
}


def enable(flag: bool = True) -> None:
    """Turn the compiled path on or off for later traces (``NFW_ACCELERATOR=0`` starts off)."""
    _state["enabled"] = bool(flag)


def enabled() -> bool:
    return bool(_state["enabled"])


def open_library(path: os.PathLike | str) -> ctypes.CDLL:
    """Load a build of ``reduce.c`` and declare its functions; ``OSError`` for a build of
    another version, or whose parameter structs are not the size of their mirrors here."""
    lib = ctypes.CDLL(str(path))
    lib.nfw_version.restype = lib.nfw_has_avx2.restype = _I64
    if lib.nfw_version() != _VERSION:
        raise OSError(f"{path} is a build of another version")
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, _I64
    for params, kind in PARAMS.items():
        if lib.nfw_params_size(kind) != ctypes.sizeof(params):
            raise OSError(f"{path} lays out {params.__name__} otherwise than this package")
    return lib


def library() -> ctypes.CDLL | None:
    """The compiled library, compiled on the first call where it is missing; None where it
    cannot be had (see :func:`status`)."""
    if not _state["enabled"]:
        return None
    if not _state["loaded"]:
        with _lock:
            if not _state["loaded"]:
                _state["lib"], _state["why"] = _load()
                _state["loaded"] = True
    return _state["lib"]


def status() -> str:
    """Why the compiled path is or is not in use, in words."""
    if not _state["enabled"]:
        return "off (NFW_ACCELERATOR=0 or enable(False)): capture takes its torch path"
    library()
    return _state["why"]


def _load() -> tuple[ctypes.CDLL | None, str]:
    try:
        paths = build.build()
    except (RuntimeError, OSError) as error:
        warnings.warn(
            f"neural_flow_widget: the compiled capture path could not be built; "
            f"capture takes its torch path (slower on the CPU).\n{error}",
            stacklevel=3,
        )
        return None, f"not built: {error}"
    if not paths:
        return None, "no C compiler found: capture takes its torch path"
    try:
        lib = open_library(paths[0])
        if paths[0].name.endswith("_avx2.so") and not lib.nfw_has_avx2():
            lib = open_library(build.build(("base",))[0])
    except (OSError, AttributeError, RuntimeError) as error:
        warnings.warn(
            f"neural_flow_widget: the compiled capture path at {paths[0]} is "
            f"unreadable ({error}); capture takes its torch path",
            stacklevel=3,
        )
        return None, f"unreadable: {error}"
    return lib, f"in use: {paths[0]}"


def reducer() -> Reducer | None:
    """A reducer for one run (its own host memory), or None when there is no compiled path."""
    lib = library()
    return Reducer(lib) if lib is not None else None


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


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


class Reducer:
    """Reduces the tensors of one run through the compiled library, into host memory carved
    from slabs (:mod:`.slabs`)."""

    __slots__ = ("_lib", "_slabs")

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib, self._slabs = lib, Slabs()

    def reduce(
        self, t: torch.Tensor, sample: int, budget: int, hint: float = 1.0
    ) -> Reduced | None:
        """The pass over ``t``, now; the records are made by :meth:`Reduced.result` (capture
        calls it after the forward pass, where Python runs warm). None where this path does
        not apply (a tensor subclass, another dtype, device, layout or memory order, no
        elements, too many channels for the budget, a sample out of range, NaN or Inf in the
        tensor): the torch path then runs. Reads the tensor's memory directly (no autograd
        is involved). ``hint``: the float16 scale expected (1 for activations; gradients,
        far smaller, pass the scale of the one before: a wrong guess costs a second pass)."""
        if not _readable(t):
            return None
        shape = tuple(t.shape)
        if len(shape) not in (3, 4):
            return None
        sample = broadcast_sample(sample, shape[0])
        if not 0 <= sample < shape[0] or not t.is_contiguous():
            return None
        plan = plan_of(shape, budget) if 0 not in shape else None
        if plan is None:
            return None
        array, at, address = self._slabs.carve(plan.kept_at + plan.kept_bytes)
        stats, stats_at, work_at = _work(plan.work)
        reduce = getattr(self._lib, plan.reducer)
        args = (
            plan.params_at,
            t.data_ptr(),
            sample,
            stats_at,
            address,
            address + plan.kept_at,
            work_at,
        )
        # float16 parts are written divided by the scale expected; where it is another (for
        # activations rarely: a peak |x| below 2**-10 or from 2**15), once more with that one
        if reduce(*args, hint):
            reduce(*args, float(stats[3]))
        lo, hi, total, scale = stats.tolist()
        if not math.isfinite(lo + hi + total):
            return None  # NaN or Inf: the torch path counts them
        return Reduced(plan, shape, sample, array, at, lo, hi, total, scale)

    def flat(self, t: torch.Tensor) -> Flat | None:
        """The summary alone of ``t`` (any shape, read as its values) and its L2 norm, in one
        pass (a parameter's gradient: nothing else of it is kept); None where this path does
        not apply (as :meth:`reduce`) or the tensor holds NaN or Inf."""
        if not _readable(t) or not t.is_contiguous() or t.numel() == 0:
            return None
        n = t.numel()
        sample = sample_plan(n, MAX_EXACT)
        width, step, first, rows = sample if sample is not None else (0, 0, 0, 0)
        values = rows * width if sample is not None else n
        array, at, address = self._slabs.carve(values * 4)
        stats, stats_at, _ = _work(0)
        self._lib.nfw_flat_f32(t.data_ptr(), n, width, step, first, rows, stats_at, address)
        lo, hi, total, squares = stats.tolist()
        if not math.isfinite(lo + hi + total + squares):
            return None  # (the torch path counts NaN and Inf; it scales an overflowing norm)
        values_at = array[at : at + values * 4].view(np.float32)
        sampled = values if sample is not None else None
        return Flat(_summary(tuple(t.shape), lo, hi, total, values_at, sampled), squares**0.5)


def _readable(t: torch.Tensor) -> bool:
    """Whether the compiled path can read ``t``'s memory: a plain float32 CPU tensor."""
    return (
        type(t) is torch.Tensor
        and t.dtype is torch.float32
        and t.is_cpu
        and t.layout is torch.strided
    )


def _summary(
    shape: tuple[int, ...],
    lo: float,
    hi: float,
    total: float,
    values: np.ndarray,
    sampled: int | None,
) -> PendingSummary:
    """The summary of a float32 CPU tensor from the statistics and sample a pass wrote."""
    values.setflags(write=False)
    head = dict(shape=shape, dtype="float32", device="cpu", kind="float", numel=math.prod(shape))
    arrays = [np.array([lo, hi]), np.array(total), values]
    return PendingSummary.on_host(head, finish_float, arrays, sampled, 64)


class Flat:
    """A tensor's summary alone (a :class:`~..reduction.Reduction` with no kept parts) and its
    L2 norm, from :meth:`Reducer.flat`."""

    __slots__ = ("norm", "summary")
    error: str | None = None

    def __init__(self, summary: PendingSummary, norm: float) -> None:
        self.summary, self.norm = summary, norm

    def waiting(self) -> list[Pending]:
        return []

    def nonfinite(self) -> bool:
        return False  # (NaN or Inf take the torch path)

    def result(self) -> Records:
        return self.summary, None, None


def reduce(t: torch.Tensor, sample: int, budget: int) -> Records | None:
    """The records of ``t`` through the compiled path (a run of its own), or None where it
    does not apply or is not available."""
    fast = reducer()
    reduced = fast.reduce(t, sample, budget) if fast is not None else None
    return reduced.result() if reduced is not None else None


class Reduced:
    """One activation reduced by the compiled path (a :class:`~..reduction.Reduction`):
    statistics, and where its sample and kept parts lie in host memory; :meth:`result` makes
    (once) the records the torch path gives."""

    __slots__ = ("_made", "array", "at", "hi", "lo", "plan", "sample", "scale", "shape", "total")
    error: str | None = None  # (nothing fails once the pass is made)

    def __init__(
        self,
        plan: Plan,
        shape: tuple[int, ...],
        sample: int,
        array: np.ndarray,
        at: int,
        lo: float,
        hi: float,
        total: float,
        scale: float,
    ) -> None:
        self.plan, self.shape, self.sample, self.at = plan, shape, sample, at
        self.array: np.ndarray | None = array
        self.lo, self.hi, self.total, self.scale = lo, hi, total, scale
        self._made: Records | None = None

    def waiting(self) -> list[Pending]:
        return []  # (written into host memory)

    def nonfinite(self) -> bool:
        return False  # (a tensor with NaN or Inf takes the torch path, which counts them)

    def result(self) -> Records:
        """``(PendingSummary, Retained, None)``, read-only views of the memory written."""
        if self._made is None:
            plan, shape, at, array = self.plan, self.shape, self.at, self.array
            assert array is not None
            values = array[at : at + plan.values * 4].view(np.float32)
            kept = array[at + plan.kept_at : at + plan.kept_at + plan.kept_bytes]
            kept.setflags(write=False)  # (its views are read-only too)
            summary = _summary(shape, self.lo, self.hi, self.total, values, plan.sampled)
            parts = {
                name: np.ndarray(part_shape, dtype, kept, offset)
                for name, dtype, offset, part_shape in plan.parts
            }
            scale = self.scale
            scales = dict.fromkeys(plan.halves, scale) if scale != 1.0 else {}
            self._made = (
                summary,
                Retained(
                    plan.layout,
                    shape=shape,
                    dtype="float32",
                    sample=self.sample,
                    parts=MappingProxyType(parts),
                    scales=MappingProxyType(scales),
                ),
                None,
            )
            self.array = None  # (the views hold the memory now)
        return self._made
