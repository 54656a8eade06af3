"""Summaries of a tensor: what flowed through one tensor leaf of a stage, in a few hundred bytes.

>>> import torch
>>> s = summarise(torch.tensor([[1.0, -2.0], [0.0, float("nan")]]))
>>> (s.kind, s.min, s.max, s.nan, s.zero_fraction)
('float', -2.0, 1.0, 1, 0.3333333333333333)

Cost model (what keeps a traced forward close to a plain one): inside the call, on the
tensor's own device, two passes over the whole tensor (``aminmax`` and ``sum``) and one
strided copy of a fixed sample of at most ``max_exact`` elements (:mod:`.sampling`); nothing
waits for the device.  After the pass, the small results reach the host together
(:mod:`.host`) and numpy makes the sampled statistics and the histogram on first read
(:class:`PendingSummary`).  See :mod:`.statistics` for the two halves of each kind.

Kinds: floating tensors are ``"float"`` (float16 / bfloat16 / float8 are computed in float32);
complex tensors are summarised by their magnitude ``|z|`` as ``"float"`` (``dtype`` still
says ``complex64``); ``torch.bool`` is ``"bool"``; every other dtype is ``"int"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import torch

from .dense import Dense, check_dense, plain_values, read_dense, unreadable
from .host import to_host
from .sampling import flat_view, sample_plan
from .statistics import FINISHERS, NONFINITE, REDUCERS, no_stats

__all__ = [
    "MAX_EXACT",
    "Dense",
    "Kind",
    "PendingSummary",
    "Summary",
    "check_dense",
    "plain_values",
    "read_dense",
    "summarise",
    "summarise_pending",
    "summary_failed",
    "tensor_kind",
]

Kind = Literal["float", "int", "bool"]

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
    #: the L2 norm over every element (exact; NaN when one is NaN): set for gradients
    #: (``Flow.grad``), None for the forward pass's summaries
    norm: float | None = None
    #: what part of a sharded tensor (a DTensor) the statistics read, in words: the whole
    #: tensor gathered from its ranks, or this rank's shard (:mod:`.sharded`); None: a plain one
    shard: str | None = None

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


_KERNEL_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))


def _flat_input(d: Dense, kind: Kind) -> tuple[torch.Tensor, torch.dtype]:
    """The 1-D tensor the statistics read, and its dtype: complex as magnitudes, float8 and
    other rare floats as float32."""
    flat, dtype = flat_view(d.t), d.dtype
    if kind != "float":
        return flat, dtype
    if dtype.is_complex:
        flat = flat.abs()
        dtype = torch.float64 if dtype is torch.complex128 else torch.float32
    elif dtype not in _KERNEL_FLOATS:  # float8: few kernels take it
        flat, dtype = flat.to(torch.float32), torch.float32
    return flat, dtype


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
    pending = summarise_pending(d, bins=bins, max_exact=max_exact)
    to_host([pending])
    return pending.resolve()


class PendingSummary:
    """A :class:`Summary` whose statistics are finished on first :meth:`resolve` (and cached)
    from the small results of the call, once they reached the host (:func:`~.host.to_host`).

    Resolving gives exactly what :func:`summarise_dense` gives for the same tensor at the
    time the pending summary was made: the same kernels on the same (copied) values.
    """

    __slots__ = (
        "_arrays",
        "_finish",
        "_head",
        "_sample",
        "_sampled",
        "_summary",
        "bins",
        "peak",
        "tensors",
    )

    def __init__(
        self,
        head: dict[str, Any],
        finish: Callable[..., dict[str, Any]],
        tensors: list[torch.Tensor],
        sampled: int | None,
        bins: int,
        *,
        summary: Summary | None = None,
    ) -> None:
        self._head, self._finish, self._sampled, self.bins = head, finish, sampled, bins
        self.tensors: list[torch.Tensor] | None = tensors or None  # until they reach the host
        self._arrays: list[np.ndarray] | None = None if tensors else []
        self._summary = summary
        self._sample: np.ndarray | None = None  # a float tensor's fixed sample, once finished
        #: the tensor's largest finite |x| where the call knew it (host float or 0-d device
        #: tensor; None), which the retained maps' float16 scale comes from
        self.peak: float | torch.Tensor | None = None

    @classmethod
    def of(cls, summary: Summary) -> PendingSummary:
        """An already finished summary."""
        return cls({}, dict, [], None, summary.bins, summary=summary)

    @classmethod
    def on_host(
        cls,
        head: dict[str, Any],
        finish: Callable[..., dict[str, Any]],
        arrays: list[np.ndarray],
        sampled: int | None,
        bins: int,
    ) -> PendingSummary:
        """One whose results are host arrays already (the CPU accelerator's)."""
        pending = cls(head, finish, [], sampled, bins)
        pending._arrays = arrays
        return pending

    def nonfinite(self) -> bool:
        """Whether the tensor held a NaN or an Inf (known without finishing the summary)."""
        if self._summary is not None:
            return self._summary.nan + self._summary.posinf + self._summary.neginf > 0
        check = NONFINITE.get(self._head["kind"])
        return check is not None and self._arrays is not None and check(self._arrays)

    def with_shard(self, words: str) -> PendingSummary:
        """This summary, saying what part of a sharded tensor it read (``Summary.shard``)."""
        if self._summary is not None:
            self._summary = replace(self._summary, shard=words)
        else:
            self._head["shard"] = words
        return self

    def arrived(self, arrays: list[np.ndarray]) -> None:
        """The host copies of :attr:`tensors`, in order."""
        self._arrays, self.tensors = arrays, None

    @property
    def error(self) -> str | None:
        return self._summary.error if self._summary is not None else None

    def resolve(self) -> Summary:
        if self._summary is None:
            if self._arrays is None:
                raise RuntimeError("this summary's results have not reached the host yet")
            numel = self._head["numel"]
            fields = self._finish(self._arrays, numel, self._sampled, self.bins)
            self._summary = Summary(**self._head, **fields)
            if self._head["kind"] == "float":  # kept for comparisons (at most MAX_EXACT values)
                self._sample = self._arrays[-1]
            self._arrays = None
        return self._summary

    def sample(self) -> tuple[np.ndarray, bool] | None:
        """A float tensor's fixed sample (:mod:`.sampling`: the same elements for every tensor
        of its size) and whether it is every element; None for other kinds."""
        self.resolve()
        if self._sample is None:
            return None
        return self._sample, self._sampled is None


def summarise_pending(d: Dense, *, bins: int = 64, max_exact: int = MAX_EXACT) -> PendingSummary:
    """The part of :func:`summarise_dense` that needs the tensor: its device ops, now; the
    statistics are finished later (see :class:`PendingSummary`)."""
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    if not isinstance(max_exact, int) or max_exact < 1:
        raise ValueError(f"max_exact must be a positive int, got {max_exact!r}")
    kind = tensor_kind(d.dtype)
    head: dict[str, Any] = dict(
        shape=d.shape, dtype=_dtype_name(d.dtype), device=str(d.device), kind=kind, numel=d.numel
    )
    if d.numel == 0:
        empty = None if kind == "float" else ()
        return PendingSummary.of(
            Summary(**head, **no_stats(bins), nan=0, posinf=0, neginf=0, values=empty)
        )
    try:
        flat, dtype = _flat_input(d, kind)
        tensors, peak = REDUCERS[kind](flat, dtype, d.numel, max_exact)
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, NotImplementedError) as err:
        raise unreadable(d.t, err) from err
    sampled = None
    if kind != "bool":
        plan = sample_plan(d.numel, max_exact)
        sampled = plan[0] * plan[3] if plan is not None else None
    pending = PendingSummary(head, FINISHERS[kind], tensors, sampled, bins)
    pending.peak = peak
    return pending


def summary_without_data(t: Any, *, bins: int = 64) -> Summary:
    """The :class:`Summary` of a tensor that holds no values (on the meta device): its shape,
    dtype and device, no statistics, and no error (nothing failed).

    >>> s = summary_without_data(torch.empty(2, 3, device="meta"))
    >>> (s.shape, s.device, s.mean, s.error)
    ((2, 3), 'meta', None, None)
    """
    return replace(summary_failed(t, "", bins=bins), error=None)


def summary_failed(t: Any, reason: str, *, bins: int = 64) -> Summary:
    """A :class:`Summary` that records why a tensor could not be summarised.

    >>> import torch
    >>> s = summary_failed(torch.ones(2, 2), "TypeError: no")
    >>> (s.shape, s.error, s.mean)
    ((2, 2), 'TypeError: no', None)

    ``t`` may be anything (or ``None``); whatever of shape, dtype and device can be read from
    it without running tensor ops is kept.
    """
    shape: tuple[int, ...] = ()
    dtype, device, numel = "unknown", "unknown", 0
    kind: Kind = "float"
    try:
        shape = tuple(int(d) for d in t.shape)
        numel = math.prod(shape)
        dtype = _dtype_name(t.dtype)
        kind = tensor_kind(t.dtype)
        device = str(t.device)
    except Exception:
        pass
    return Summary(
        shape=shape,
        dtype=dtype,
        device=device,
        kind=kind,
        numel=numel,
        nan=0,
        posinf=0,
        neginf=0,
        **no_stats(bins),
        error=str(reason),
    )
