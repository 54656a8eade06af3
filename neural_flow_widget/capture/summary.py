"""Pure tensor -> :class:`Summary` functions, cheap enough to run inside every module call.

>>> import torch
>>> s = summarise(torch.tensor([[1.0, -2.0], [0.0, float("nan")]]))
>>> (s.kind, s.min, s.max, s.nan, s.zero_fraction)
('float', -2.0, 1.0, 1, 0.3333333333333333)

Cost model (what keeps a traced forward close to a plain one):

* Two passes over the whole tensor, ``aminmax`` and ``sum``; everything else reads a sample
  of at most ``max_exact`` elements (default :data:`MAX_EXACT`; the whole tensor when it
  is that small).
* The sample is a set of contiguous chunks, every k-th run of a few dozen elements (see
  :mod:`._summary_kernels`); cutting it is one cheap strided copy, not an element gather.
* Float kernels per device type (a registry of :mod:`._float_kernels`): on the CPU min,
  max and sum come back as Python numbers, elsewhere (CUDA) they and the sample come to
  the host in one transfer; numpy computes the sampled statistics and the histogram on the
  host in both.  A float tensor holding NaN/Inf (the first pass shows it) is redone with
  masks; an int tensor's ``torch.unique`` syncs by itself.
* No sorting of large tensors, no Python loops over elements or channels.
* Capture (:func:`summarise_pending`) splits the float kernels: the hook runs only the
  whole-tensor passes and copies the sample; the numpy statistics and the histogram run
  on first read of the summary (same values as :func:`summarise`, cached).

Kinds: floating tensors are ``"float"`` (float16 / bfloat16 / float8 are computed in float32);
complex tensors are summarised by their magnitude ``|z|`` as ``"float"`` (``dtype`` still
says ``complex64``); ``torch.bool`` is ``"bool"``; every other dtype is ``"int"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, NamedTuple

import numpy as np
import torch

from .float_stats import (
    FloatSample,
    float_device,
    float_device_read,
    float_finish,
    float_host,
    float_host_read,
)
from .sampling import (
    count_on,
    flat_view,
    hist_histc,
    no_stats,
    pack,
    sample_of,
    scaled_for_hist,
    unpack,
    variance,
)

__all__ = [
    "Dense",
    "Kind",
    "MAX_EXACT",
    "PendingSummary",
    "Summary",
    "check_dense",
    "read_dense",
    "summarise",
    "summarise_dense",
    "summarise_pending",
    "summary_failed",
    "tensor_kind",
]

Kind = Literal["float", "int", "bool"]

#: how many of the most frequent values an int tensor's summary keeps
MAX_VALUES = 32
#: default sample size: larger tensors get their sampled fields from this many elements
MAX_EXACT = 1 << 13


@dataclass(frozen=True, slots=True)
class Summary:
    """What flowed through one tensor leaf of a stage, in a few hundred bytes.

    >>> import torch
    >>> summarise(torch.zeros(2, 3)).zero_fraction
    1.0

    Exactness: ``min``, ``max``, ``mean`` and the NaN/Inf counts are exact over the whole
    tensor (``mean`` up to float32 summation when the tensor is float32).  ``std``,
    ``mean_abs``, ``zero_fraction``, the histogram and an int tensor's ``values`` are exact
    up to ``max_exact`` elements (default 8192) and above that come from the chunk sample
    (about ``max_exact`` elements spread over the whole tensor); ``sampled`` then holds the
    sample size.  A sampled ``std`` is taken around the exact mean (around the sample's
    mean when the tensor holds NaN/Inf).  Float statistics are over the finite values only;
    they are ``None`` when there is none (an empty tensor, or one that is all NaN/Inf).
    ``std`` is the population standard deviation (numpy's default, ``ddof=0``).
    ``zero_fraction`` is the fraction of finite values equal to 0.  For bool tensors the
    statistics are those of 0/1 (all exact).
    """

    shape: tuple[int, ...]  # the full tensor shape
    dtype: str  # torch dtype name without "torch.", e.g. "float32"
    device: str  # where the tensor lived, e.g. "cpu", "cuda:0"
    kind: Kind  # "float" | "int" | "bool": which statistics are meaningful
    numel: int  # number of elements
    min: float | None  # smallest finite value (exact)
    max: float | None  # largest finite value (exact)
    mean: float | None  # mean of the finite values (exact)
    std: float | None  # population std of the finite values (of the sample if sampled)
    mean_abs: float | None  # mean |x| of the finite values (of the sample if sampled)
    zero_fraction: float | None  # fraction of finite values == 0 (of the sample if sampled)
    nan: int  # number of NaN elements (exact)
    posinf: int  # number of +Inf elements (exact)
    neginf: int  # number of -Inf elements (exact)
    hist_counts: np.ndarray = field(compare=False)  # int64 (bins,), over [hist_lo, hist_hi]
    hist_lo: float = 0.0  # left edge of the first bin (= min)
    hist_hi: float = 0.0  # right edge of the last bin (= max); equal to hist_lo if constant
    sampled: int | None = None  # elements used for the sampled fields, None if exact
    values: tuple[tuple[int | bool, int], ...] | None = None  # int/bool: (value, count), most
    #                              frequent first, ties by value; at most MAX_VALUES entries
    error: str | None = None  # why summarising failed; the other fields are then partial

    @property
    def bins(self) -> int:
        """Number of histogram bins.

        >>> import torch
        >>> summarise(torch.ones(3), bins=8).bins
        8
        """
        return int(self.hist_counts.shape[0])


# --------------------------------------------------------------------------------------------
# reading a tensor once


def tensor_kind(dtype: torch.dtype) -> Kind:
    """The summary kind of a dtype.

    >>> import torch
    >>> tensor_kind(torch.bfloat16), tensor_kind(torch.int32), tensor_kind(torch.bool)
    ('float', 'int', 'bool')
    """
    if dtype is torch.bool:
        return "bool"
    return "float" if (dtype.is_floating_point or dtype.is_complex) else "int"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


_QUANTIZED = frozenset(
    getattr(torch, name) for name in ("quint8", "qint8", "qint32", "quint4x2", "quint2x4")
    if hasattr(torch, name)
)  # fmt: skip


class Dense(NamedTuple):
    """A checked, detached dense tensor and what was read from it (each attribute read
    is a torch call under a TorchFunctionMode, so summary and retention share one read)."""

    t: torch.Tensor  # detached
    shape: tuple[int, ...]
    numel: int
    dtype: torch.dtype
    device: torch.device


def read_dense(t: object, *, who: str = "summarise()") -> Dense:
    """Check ``t`` (see :func:`check_dense`) and read it once.

    >>> import torch
    >>> read_dense(torch.ones(2, 3)).numel
    6
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{who} needs a torch.Tensor, got {type(t).__name__}")
    try:
        layout, dtype, device = t.layout, t.dtype, t.device
        if layout is not torch.strided:
            raise TypeError(
                f"{who} needs a dense tensor, got layout {layout}; "
                "convert it with t.to_dense() before it leaves the stage"
            )
        if dtype in _QUANTIZED:
            raise TypeError(
                f"{who} cannot read a quantized tensor ({dtype}); use t.dequantize() first"
            )
        if device.type == "meta":
            raise TypeError(f"{who} got a meta tensor, which has no data to summarise")
        shape = tuple(t.shape)
        return Dense(t.detach(), shape, math.prod(shape), dtype, device)
    except (RuntimeError, NotImplementedError) as err:
        raise _unreadable(t, err, who) from err


def _unreadable(t: object, err: BaseException, who: str = "summarise()") -> TypeError:
    return TypeError(
        f"{who} cannot read this {type(t).__name__} ({type(err).__name__}: {err}); "
        "return a plain dense tensor from the stage (e.g. t.as_subclass(torch.Tensor), "
        "t.float()) or leave the stage unsummarised"
    )


def check_dense(t: object, *, who: str = "summarise()") -> torch.Tensor:
    """Raise a ``TypeError`` naming the fix unless ``t`` is a dense tensor with data.

    >>> import torch
    >>> check_dense(torch.ones(2)).shape
    torch.Size([2])
    """
    read_dense(t, who=who)
    return t  # type: ignore[return-value]


_KERNEL_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))

#: float kernels by device type, as (eager kernel, read for a pending summary); other devices
#: use the device pair (one transfer)
_FLOAT_KERNELS: dict[str, tuple[Callable, Callable]] = {"cpu": (float_host, float_host_read)}
_DEVICE_KERNELS = (float_device, float_device_read)


# --------------------------------------------------------------------------------------------
# per-kind summarisers (a registry keyed by kind)


def _float_input(d: Dense) -> tuple[torch.Tensor, torch.dtype]:
    flat, dtype = flat_view(d.t), d.dtype
    if dtype.is_complex:
        flat = flat.abs()
        dtype = torch.float64 if dtype is torch.complex128 else torch.float32
    elif dtype not in _KERNEL_FLOATS:  # float8: few kernels take it
        flat, dtype = flat.to(torch.float32), torch.float32
    return flat, dtype


def _float_fields(d: Dense, bins: int, max_exact: int) -> dict:
    flat, dtype = _float_input(d)
    kernel = _FLOAT_KERNELS.get(d.device.type, _DEVICE_KERNELS)[0]
    return kernel(flat, dtype, d.numel, bins, max_exact)


def _int_fields(d: Dense, bins: int, max_exact: int) -> dict:
    flat = flat_view(d.t)
    sample, sampled = sample_of(flat, d.dtype, d.numel, max_exact, d.dtype)
    as_float = sample.to(torch.float64)
    zero = count_on(0, flat)
    lo, hi = torch.aminmax(flat)
    scalars = dict(
        min=lo, max=hi, sum=flat.sum(), finite=count_on(d.numel, flat), nan=zero,
        posinf=zero, neginf=zero, s_var=variance(as_float), s_abs=as_float.abs().sum(),
        s_nonzero=torch.count_nonzero(sample), s_finite=count_on(sample.numel(), flat),
    )  # fmt: skip
    counts = hist_histc(scaled_for_hist(as_float, lo, hi, bins), bins)
    uniq, uniq_counts = torch.unique(sample, return_counts=True)  # syncs on CUDA by itself
    order = torch.sort(uniq_counts, descending=True, stable=True).indices[:MAX_VALUES]
    top = torch.stack([uniq[order].to(torch.int64), uniq_counts[order]]).cpu().tolist()
    fields = unpack(pack(scalars, counts).tolist(), bins, sampled)
    return fields | dict(values=tuple(zip(*top)))


def _bool_fields(d: Dense, bins: int, max_exact: int) -> dict:
    numel = d.numel
    n_true = int(torch.count_nonzero(d.t))  # the one sync
    n_false = numel - n_true
    p = n_true / numel
    counts = np.zeros(bins, dtype=np.int64)
    counts[0] += n_false
    counts[-1] += n_true
    counts.setflags(write=False)
    values = sorted(((False, n_false), (True, n_true)), key=lambda vc: (-vc[1], vc[0]))
    return dict(
        min=0.0 if n_false else 1.0, max=1.0 if n_true else 0.0, mean=p,
        std=math.sqrt(p * (1.0 - p)), mean_abs=p, zero_fraction=n_false / numel,
        nan=0, posinf=0, neginf=0, hist_counts=counts, hist_lo=0.0, hist_hi=1.0,
        sampled=None, values=tuple(values),
    )  # fmt: skip


_Summariser = Callable[[Dense, int, int], dict]
_SUMMARISERS: dict[str, _Summariser] = {
    "float": _float_fields,
    "int": _int_fields,
    "bool": _bool_fields,
}


# --------------------------------------------------------------------------------------------
# public constructors


def summarise(t: torch.Tensor, *, bins: int = 64, max_exact: int = MAX_EXACT) -> Summary:
    """Summarise a tensor on its own device (see the module docstring for the cost).

    >>> import torch
    >>> s = summarise(torch.arange(6).reshape(2, 3))
    >>> (s.kind, s.min, s.max, s.mean, s.values[:2])
    ('int', 0.0, 5.0, 2.5, ((0, 1), (1, 1)))

    Raises ``TypeError`` for what it cannot read (non-tensors, sparse, quantized and meta
    tensors, tensor subclasses whose ops fail); the capture layer turns that into a stage
    marked with :func:`summary_failed`.
    """
    return summarise_dense(read_dense(t), bins=bins, max_exact=max_exact)


def summarise_dense(d: Dense, *, bins: int = 64, max_exact: int = MAX_EXACT) -> Summary:
    """:func:`summarise` of a tensor already read by :func:`read_dense`."""
    return summarise_pending(d, bins=bins, max_exact=max_exact).resolve()


class PendingSummary:
    """A :class:`Summary` whose sampled fields are computed on first :meth:`resolve` (and
    cached), from a small host copy taken while the tensor was live.

    ``min``, ``max`` and ``error`` are known at once (capture reads them in the hook).
    Resolving gives exactly what :func:`summarise_dense` gives for the same tensor at the
    time the pending summary was made: the same kernel on the same (copied) values.
    """

    __slots__ = ("_head", "_sample", "_summary", "error", "max", "min")

    def __init__(self, summary: Summary | None = None, *, head: dict | None = None,
                 sample: FloatSample | None = None) -> None:  # fmt: skip
        self._summary, self._head, self._sample = summary, head, sample
        if summary is not None:
            self.min, self.max, self.error = summary.min, summary.max, summary.error
        else:
            self.min, self.max, self.error = sample.lo, sample.hi, None

    def resolve(self) -> Summary:
        if self._summary is None:
            self._summary = Summary(**self._head, **float_finish(*self._sample))
            self._head = self._sample = None  # the sample copy is no longer needed
        return self._summary


def summarise_pending(d: Dense, *, bins: int = 64, max_exact: int = MAX_EXACT
                      ) -> PendingSummary:  # fmt: skip
    """:func:`summarise_dense` with the sampled statistics of a finite CPU float tensor left
    for later (see :class:`PendingSummary`): in the hook only the passes over the whole
    tensor (min/max, sum) and the copy of the sample run."""
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    if not isinstance(max_exact, int) or max_exact < 1:
        raise ValueError(f"max_exact must be a positive int, got {max_exact!r}")
    kind = tensor_kind(d.dtype)
    head = dict(shape=d.shape, dtype=_dtype_name(d.dtype), device=str(d.device), kind=kind,
                numel=d.numel)  # fmt: skip
    if d.numel == 0:
        empty = None if kind == "float" else ()
        return PendingSummary(
            Summary(**head, **no_stats(bins), nan=0, posinf=0, neginf=0, values=empty))
    try:
        if kind == "float":
            flat, dtype = _float_input(d)
            read_fields = _FLOAT_KERNELS.get(d.device.type, _DEVICE_KERNELS)[1]
            read = read_fields(flat, dtype, d.numel, bins, max_exact, copy=True)
            if isinstance(read, dict):
                return PendingSummary(Summary(**head, **read))
            return PendingSummary(head=head, sample=read)
        return PendingSummary(Summary(**head, **_SUMMARISERS[kind](d, bins, max_exact)))
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, NotImplementedError) as err:
        raise _unreadable(d.t, err) from err


def summary_failed(t: object, reason: str, *, bins: int = 64) -> Summary:
    """A :class:`Summary` that records why a tensor could not be summarised.

    >>> import torch
    >>> s = summary_failed(torch.ones(2, 2), "TypeError: no")
    >>> (s.shape, s.error, s.mean)
    ((2, 2), 'TypeError: no', None)

    ``t`` may be anything (or ``None``); whatever of shape, dtype and device can be read from
    it without running tensor ops is kept.
    """
    shape: tuple[int, ...] = ()
    dtype, device, kind, numel = "unknown", "unknown", "float", 0
    try:
        shape = tuple(int(d) for d in t.shape)  # type: ignore[union-attr]
        numel = math.prod(shape)
        dtype = _dtype_name(t.dtype)  # type: ignore[union-attr]
        kind = tensor_kind(t.dtype)  # type: ignore[union-attr]
        device = str(t.device)  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - a failed summary must never raise
        pass
    return Summary(
        shape=shape, dtype=dtype, device=device, kind=kind, numel=numel, nan=0, posinf=0,
        neginf=0, **no_stats(bins), error=str(reason),
    )  # fmt: skip
