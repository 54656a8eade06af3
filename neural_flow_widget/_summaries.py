"""Pure tensor -> :class:`Summary` functions, cheap enough to run inside a forward hook.

>>> import torch
>>> s = summarise(torch.tensor([[1.0, -2.0], [0.0, float("nan")]]))
>>> (s.kind, s.min, s.max, s.nan, s.zero_fraction)
('float', -2.0, 1.0, 1, 0.3333333333333333)

Cost model (what keeps a traced forward close to a plain one):

* Every statistic is computed on the tensor's own device; the results are packed into one
  small float64 vector and brought to the host with a single ``.tolist()``: one device -> host
  sync for a finite float or bool tensor.  Rare cases pay one more: a float tensor holding
  NaN/Inf (found from the first pass) is re-summarised with masks, and an int tensor's
  ``torch.unique`` syncs by itself.
* ``min``, ``max`` and ``mean`` (and the NaN/Inf counts) are always exact over the whole
  tensor.  Above ``max_exact`` elements, ``std``, ``mean_abs``, ``zero_fraction``, the
  histogram and int value counts come from a deterministic strided sample of at most
  ``max_exact`` elements (taken in memory order, with a prime step so that it does not alias
  with power-of-two axes); ``Summary.sampled`` then holds the sample size.
* No sorting of large tensors, no Python loops over elements or channels.

Kinds: floating tensors are ``"float"`` (float16 / bfloat16 / float8 are computed in float32);
complex tensors are summarised by their magnitude ``|z|`` as ``"float"`` (``dtype`` still
says ``complex64``); ``torch.bool`` is ``"bool"``; every other dtype is ``"int"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np
import torch

__all__ = [
    "Kind",
    "Summary",
    "check_dense",
    "summarise",
    "summary_failed",
    "tensor_kind",
]

Kind = Literal["float", "int", "bool"]

#: how many of the most frequent values an int tensor's summary keeps
MAX_VALUES = 32


@dataclass(frozen=True, slots=True)
class Summary:
    """What flowed through one tensor leaf of a stage, in a few hundred bytes.

    >>> import torch
    >>> summarise(torch.zeros(2, 3)).zero_fraction
    1.0

    Float statistics are taken over the finite values only; they are ``None`` when there is
    no finite value (an empty tensor, or one that is all NaN/Inf).  ``std`` is the population
    standard deviation (numpy's default, ``ddof=0``).  ``zero_fraction`` is the fraction of
    finite values equal to 0.  For bool tensors the statistics are those of 0/1.
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
# dtype -> kind


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


def check_dense(t: object, *, who: str = "summarise()") -> torch.Tensor:
    """Raise a ``TypeError`` naming the fix unless ``t`` is a dense tensor with data.

    >>> import torch
    >>> check_dense(torch.ones(2)).shape
    torch.Size([2])
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{who} needs a torch.Tensor, got {type(t).__name__}")
    if t.layout is not torch.strided:
        raise TypeError(
            f"{who} needs a dense tensor, got layout {t.layout}; "
            "convert it with t.to_dense() before it leaves the stage"
        )
    if t.is_quantized:
        raise TypeError(
            f"{who} cannot read a quantized tensor ({t.dtype}); use t.dequantize() first"
        )
    if t.device.type == "meta":
        raise TypeError(f"{who} got a meta tensor, which has no data to summarise")
    return t


# --------------------------------------------------------------------------------------------
# sampling helpers


def _flat(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of ``t`` in memory order (no copy for contiguous, channels-last, transposed)."""
    if t.is_contiguous():
        return t.view(-1)
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    permuted = t.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else permuted.reshape(-1)


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, math.isqrt(n) + 1))


def _sample_step(numel: int, max_exact: int) -> int:
    """1 when exact; else the smallest prime step that leaves at most ``max_exact`` elements."""
    if numel <= max_exact:
        return 1
    step = -(-numel // max_exact)
    while not _is_prime(step):
        step += 1
    return step


def _sample(flat: torch.Tensor, max_exact: int) -> tuple[torch.Tensor, int | None]:
    step = _sample_step(flat.numel(), max_exact)
    if step == 1:
        return flat, None
    sample = flat[::step].contiguous()
    return sample, sample.numel()


def _excluded(bins: int) -> float:
    """The scaled value that marks an element left out of the histogram (NaN / Inf)."""
    return bins + 1.0


def _fold(counts: torch.Tensor, bins: int) -> torch.Tensor:
    """(bins + 2,) unit-bin counts -> (bins,): value ``bins`` (the max) joins the last bin."""
    return torch.cat([counts[: bins - 1], counts[bins - 1 : bins + 1].sum(0, keepdim=True)])


def _hist_bincount(y: torch.Tensor, bins: int) -> torch.Tensor:
    # CPU: ~4x faster than histc (on CUDA, bincount would sync to size its output).  The
    # float -> int conversion writes over ``y`` itself (an elementwise copy onto the same
    # memory) to spare a fresh allocation; the clamp keeps a NaN of the unmasked first pass
    # (which is then redone with masks) a legal index.
    same_size = {4: torch.int32, 8: torch.int64}[y.element_size()]
    index = y.view(same_size)
    index.copy_(y)
    return _fold(torch.bincount(index.clamp_(0, bins + 1), minlength=bins + 2), bins)


def _hist_histc(y: torch.Tensor, bins: int) -> torch.Tensor:
    if torch.are_deterministic_algorithms_enabled():  # histc has no deterministic CUDA kernel
        index = y.to(torch.int64).clamp_(0, bins + 1)  # see _hist_bincount on NaN
        ones = torch.ones_like(y, dtype=torch.float64)
        counts = torch.zeros(bins + 2, dtype=torch.float64, device=y.device)
        return _fold(counts.index_put_((index,), ones, accumulate=True), bins)
    exact = y if y.numel() <= 2**24 else y.to(torch.float64)  # float32 counts stay exact
    return torch.histc(exact, bins=bins, min=0.0, max=float(bins))


#: histogram kernels by device type; other devices use histc
_HISTOGRAMS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "cpu": _hist_bincount,
}


def _histogram(y: torch.Tensor, bins: int) -> torch.Tensor:
    """Counts per unit bin of ``y``, which holds values in [0, bins] or ``_excluded(bins)``."""
    return _HISTOGRAMS.get(y.device.type, _hist_histc)(y, bins)


def _scaled_for_hist(sample: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bins: int):
    """``(sample - lo) * bins / (hi - lo)`` clamped to [0, bins]; all 0 when ``lo == hi``."""
    span = hi.to(torch.float64) - lo.to(torch.float64)
    scale = torch.where(span > 0, bins / span, torch.zeros_like(span)).to(sample.dtype)
    return (sample - lo.to(sample.dtype)).mul_(scale).clamp_(0.0, float(bins))


# --------------------------------------------------------------------------------------------
# the packed result: one float64 vector, one transfer

# layout of the packed vector: these scalars, then the histogram counts
_SCALARS = ("min", "max", "sum", "finite", "nan", "posinf", "neginf",
            "s_var", "s_abs", "s_nonzero", "s_finite")  # fmt: skip


def _count(n: int, like: torch.Tensor) -> torch.Tensor:
    """A 0-d float64 constant made on ``like``'s device by a fill (no host -> device copy)."""
    return torch.full((), n, dtype=torch.float64, device=like.device)


def _pack(scalars: dict[str, torch.Tensor], counts: torch.Tensor) -> torch.Tensor:
    head = torch.stack([scalars[name].to(torch.float64).reshape(()) for name in _SCALARS])
    return torch.cat([head, counts.to(torch.float64)])


def _unpack(packed: list[float], bins: int, sampled: int | None) -> dict:
    got = dict(zip(_SCALARS, packed))
    counts = np.asarray(packed[len(_SCALARS) :], dtype=np.float64).round().astype(np.int64)
    counts.setflags(write=False)
    common = dict(
        nan=int(got["nan"]), posinf=int(got["posinf"]), neginf=int(got["neginf"]),
        hist_counts=counts, sampled=sampled,
    )  # fmt: skip
    if got["finite"] == 0:
        return common | _no_stats(bins) | dict(hist_counts=counts)
    s_finite = got["s_finite"]
    return common | dict(
        min=got["min"],
        max=got["max"],
        mean=got["sum"] / got["finite"],
        # float32 variance of a constant is off by ~eps * |x|; a constant has std 0 exactly
        std=(math.sqrt(max(got["s_var"], 0.0)) if got["min"] != got["max"] else 0.0)
        if s_finite
        else None,
        mean_abs=got["s_abs"] / s_finite if s_finite else None,
        zero_fraction=(s_finite - got["s_nonzero"]) / s_finite if s_finite else None,
        hist_lo=got["min"],
        hist_hi=got["max"],
    )


def _no_stats(bins: int) -> dict:
    counts = np.zeros(bins, dtype=np.int64)
    counts.setflags(write=False)
    return dict(
        min=None, max=None, mean=None, std=None, mean_abs=None, zero_fraction=None,
        hist_counts=counts, hist_lo=0.0, hist_hi=0.0,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# per-kind summarisers (a registry keyed by kind)


def _variance(sample: torch.Tensor) -> torch.Tensor:
    """Population variance; no cancellation (centred first, or Welford)."""
    if sample.numel() > 1 << 20:
        return torch.var(sample, correction=0)  # no temporary as large as the sample
    centred = sample - sample.mean()  # small: centre + one dot is ~3x faster than var
    return torch.dot(centred, centred) / sample.numel()


def _abs_sum(sample: torch.Tensor) -> torch.Tensor:
    """Sum of |x| without an |x| temporary; per-row partial sums keep float32 accurate."""
    row = 1024
    head = sample.numel() - sample.numel() % row
    rows = torch.linalg.vector_norm(sample[:head].view(-1, row), 1, dim=1).sum()
    return rows + torch.linalg.vector_norm(sample[head:], 1)


def _as_real(flat: torch.Tensor) -> torch.Tensor:
    if flat.is_complex():
        flat = flat.abs()
    return flat if flat.dtype in (torch.float32, torch.float64) else flat.to(torch.float32)


def _float_fields(t: torch.Tensor, bins: int, max_exact: int) -> dict:
    flat = _as_real(_flat(t))
    sample, sampled = _sample(flat, max_exact)
    zero = _count(0, flat)
    lo, hi = torch.aminmax(flat)
    scalars = dict(
        min=lo, max=hi, sum=flat.sum(), finite=_count(flat.numel(), flat), nan=zero,
        posinf=zero, neginf=zero, s_var=_variance(sample),
        s_abs=_abs_sum(sample), s_nonzero=torch.count_nonzero(sample),
        s_finite=_count(sample.numel(), flat),
    )  # fmt: skip
    counts = _histogram(_scaled_for_hist(sample, lo, hi, bins), bins)
    packed = _pack(scalars, counts).tolist()  # the one device -> host sync
    if not (math.isfinite(packed[0]) and math.isfinite(packed[1])):
        packed = _float_masked(flat, sample, bins).tolist()  # NaN/Inf present: second pass
    return _unpack(packed, bins, sampled)


#: elements per chunk of the masked pass (keeps its temporaries small and cache-friendly)
_CHUNK = 1 << 22


def _finite_chunk(chunk: torch.Tensor) -> torch.Tensor:
    """[finite min, finite max, finite sum, #nan, #+inf, #-inf] of one chunk, as float64."""
    inf = math.inf
    parts = (
        torch.nan_to_num(chunk, nan=inf, posinf=inf, neginf=inf).min(),
        torch.nan_to_num(chunk, nan=-inf, posinf=-inf, neginf=-inf).max(),
        torch.nan_to_num(chunk, nan=0.0, posinf=0.0, neginf=0.0).sum(),
        torch.count_nonzero(torch.isnan(chunk)),
        torch.count_nonzero(chunk == inf),
        torch.count_nonzero(chunk == -inf),
    )
    return torch.stack([p.to(torch.float64) for p in parts])


def _float_masked(flat: torch.Tensor, sample: torch.Tensor, bins: int) -> torch.Tensor:
    """Statistics over the finite values only, for tensors that hold NaN or Inf."""
    per_chunk = torch.stack([_finite_chunk(c) for c in flat.split(_CHUNK)])
    nan, posinf, neginf = per_chunk[:, 3:].sum(0)
    n_finite = flat.numel() - nan - posinf - neginf
    lo, hi = per_chunk[:, 0].min(), per_chunk[:, 1].max()
    s_finite = torch.isfinite(sample)
    s_n = torch.count_nonzero(s_finite)
    s_vals = torch.nan_to_num(sample, nan=0.0, posinf=0.0, neginf=0.0)
    s_mean = s_vals.sum() / s_n.clamp(min=1)
    s_sq = torch.where(s_finite, s_vals - s_mean, 0.0).square().sum()
    scalars = dict(
        min=lo, max=hi, sum=per_chunk[:, 2].sum(), finite=n_finite, nan=nan, posinf=posinf,
        neginf=neginf, s_var=s_sq / s_n.clamp(min=1), s_abs=s_vals.abs().sum(),
        s_nonzero=torch.count_nonzero(s_vals), s_finite=s_n,
    )  # fmt: skip
    has_finite = n_finite > 0
    lo, hi = torch.where(has_finite, lo, 0.0), torch.where(has_finite, hi, 0.0)
    scaled = _scaled_for_hist(s_vals, lo, hi, bins)
    scaled.masked_fill_(~s_finite, _excluded(bins))
    return _pack(scalars, _histogram(scaled, bins))


def _int_fields(t: torch.Tensor, bins: int, max_exact: int) -> dict:
    flat = _flat(t)
    sample, sampled = _sample(flat, max_exact)
    as_float = sample.to(torch.float64)
    zero = _count(0, flat)
    lo, hi = torch.aminmax(flat)
    scalars = dict(
        min=lo, max=hi, sum=flat.sum(), finite=_count(flat.numel(), flat), nan=zero,
        posinf=zero, neginf=zero, s_var=_variance(as_float),
        s_abs=as_float.abs().sum(),
        s_nonzero=torch.count_nonzero(sample), s_finite=_count(sample.numel(), flat),
    )  # fmt: skip
    counts = _histogram(_scaled_for_hist(as_float, lo, hi, bins), bins)
    uniq, uniq_counts = torch.unique(sample, return_counts=True)  # syncs on CUDA by itself
    order = torch.sort(uniq_counts, descending=True, stable=True).indices[:MAX_VALUES]
    top = torch.stack([uniq[order].to(torch.int64), uniq_counts[order]]).cpu().tolist()
    fields = _unpack(_pack(scalars, counts).tolist(), bins, sampled)
    return fields | dict(values=tuple(zip(*top)))


def _bool_fields(t: torch.Tensor, bins: int, max_exact: int) -> dict:
    numel = t.numel()
    n_true = int(torch.count_nonzero(t))  # the one sync
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


_Summariser = Callable[[torch.Tensor, int, int], dict]
_SUMMARISERS: dict[str, _Summariser] = {
    "float": _float_fields,
    "int": _int_fields,
    "bool": _bool_fields,
}


# --------------------------------------------------------------------------------------------
# public constructors


def summarise(t: torch.Tensor, *, bins: int = 64, max_exact: int = 4_000_000) -> Summary:
    """Summarise a tensor on its own device with one device -> host transfer.

    >>> import torch
    >>> s = summarise(torch.arange(6).reshape(2, 3))
    >>> (s.kind, s.min, s.max, s.mean, s.values[:2])
    ('int', 0.0, 5.0, 2.5, ((0, 1), (1, 1)))

    Raises ``TypeError`` for what it cannot read (non-tensors, sparse, quantized and meta
    tensors, tensor subclasses whose ops fail); the capture layer turns that into a stage
    marked with :func:`summary_failed`.
    """
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    if not isinstance(max_exact, int) or max_exact < 1:
        raise ValueError(f"max_exact must be a positive int, got {max_exact!r}")
    try:
        check_dense(t)
        with torch.no_grad():
            return _summarise_dense(t.detach(), bins, max_exact)
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, NotImplementedError) as err:
        raise TypeError(
            f"summarise() cannot read this {type(t).__name__} ({type(err).__name__}: {err}); "
            "return a plain dense tensor from the stage (e.g. t.as_subclass(torch.Tensor), "
            "t.float()) or leave the stage unsummarised"
        ) from err


def _summarise_dense(t: torch.Tensor, bins: int, max_exact: int) -> Summary:
    kind = tensor_kind(t.dtype)
    head = dict(
        shape=tuple(t.shape), dtype=_dtype_name(t.dtype), device=str(t.device), kind=kind,
        numel=t.numel(),
    )  # fmt: skip
    if t.numel() == 0:
        empty = None if kind == "float" else ()
        return Summary(**head, **_no_stats(bins), nan=0, posinf=0, neginf=0, values=empty)
    return Summary(**head, **_SUMMARISERS[kind](t, bins, max_exact))


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
        neginf=0, **_no_stats(bins), error=str(reason),
    )  # fmt: skip
