"""A summary's statistics in two halves, one pair per kind of tensor (a registry).

* ``reduce`` runs inside the module call, on the tensor's own device, with few torch ops:
  the passes that need the whole tensor (min and max in one ``aminmax``, the sum) and a copy
  of the fixed sample (:mod:`.sampling`).  Its results stay on the device: nothing waits
  for it.  On the CPU, where reading a number costs nothing, a tensor whose extremes show
  NaN or Inf is counted exactly at once (:func:`finite_counts`).
* ``finish`` runs on the host after the pass (numpy, a few thousand values): the sampled
  statistics, the histogram, an int tensor's most frequent values.

>>> import torch
>>> results, peak = reduce_float(torch.arange(6.0), torch.float32, 6, 8192)
>>> arrays = [t.numpy() for t in results]
>>> finish_float(arrays, 6, None, 4)["hist_counts"].tolist()
[2, 1, 1, 2]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from .sampling import sample_of

__all__ = [
    "FINISHERS",
    "REDUCERS",
    "finish_float",
    "finite_counts",
    "host_counts",
    "no_stats",
    "reduce_float",
    "unit_counts",
]

#: how many of the most frequent values an int tensor's summary keeps
MAX_VALUES = 32
#: elements per chunk of the exact NaN/Inf count (keeps its temporaries small)
CHUNK = 1 << 22
#: device types whose extremes the call may read (free on the CPU; elsewhere it would wait
#: for the device), so that a tensor holding NaN/Inf is counted exactly
COUNT_IN_CALL = frozenset({"cpu"})

#: a reducer's results, and the tensor's largest finite |x| where the reducer knows it (a
#: float read on the host, a 0-d tensor on the device, or None)
Reduced = tuple[list[torch.Tensor], "float | torch.Tensor | None"]
Reduce = Callable[[torch.Tensor, torch.dtype, int, int], Reduced]
Finish = Callable[[list[np.ndarray], int, "int | None", int], dict]


# --------------------------------------------------------------------------------------------
# float


def reduce_float(flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int) -> Reduced:
    """``[(min, max), sum, sample]`` of a 1-D float tensor, or ``[counts, sample]`` on the CPU
    when it holds NaN or Inf (:func:`finite_counts`)."""
    acc = torch.float64 if dtype is torch.float64 else torch.float32
    ends = torch.stack(torch.aminmax(flat))  # a NaN anywhere comes out in both
    if dtype is not acc:
        ends = ends.to(acc)
    total = flat.sum(dtype=acc)
    sample, _ = sample_of(flat, dtype, numel, max_exact, acc)
    if flat.device.type in COUNT_IN_CALL:  # (elsewhere the extremes are read after the pass)
        lo, hi = ends.tolist()
        if not math.isfinite(lo + hi + total.item()):  # (or a float32 sum that overflowed)
            counts = finite_counts(flat)
            lo, hi = counts[:2].tolist()
            return [counts, sample], max(-lo, hi, 0.0) if math.isfinite(lo) else None
        return [ends, total, sample], max(-lo, hi)
    return [ends, total, sample], ends.abs().amax()


def finite_counts(flat: torch.Tensor) -> torch.Tensor:
    """float64 ``[finite min, finite max, finite sum, #NaN, #+Inf, #-Inf]`` of a 1-D float
    tensor, in chunks (rare: this spends ops and passes freely)."""
    inf = math.inf
    parts = []
    for chunk in flat.split(CHUNK):
        parts.append(
            torch.stack(
                [
                    p.to(torch.float64)
                    for p in (
                        torch.nan_to_num(chunk, nan=inf, posinf=inf, neginf=inf).min(),
                        torch.nan_to_num(chunk, nan=-inf, posinf=-inf, neginf=-inf).max(),
                        torch.nan_to_num(chunk.double(), nan=0.0, posinf=0.0, neginf=0.0).sum(),
                        torch.count_nonzero(torch.isnan(chunk)),
                        torch.count_nonzero(chunk == inf),
                        torch.count_nonzero(chunk == -inf),
                    )
                ]
            )
        )
    both = torch.stack(parts)
    return torch.cat(
        [both[:, 0].amin(0, keepdim=True), both[:, 1].amax(0, keepdim=True), both[:, 2:].sum(0)]
    )


def finish_float(arrays: list[np.ndarray], numel: int, sampled: int | None, bins: int) -> dict:
    """The summary fields of :func:`reduce_float`'s results (on the host)."""
    if len(arrays) == 2:  # counted exactly in the call
        lo, hi, total, nan, posinf, neginf = (float(v) for v in arrays[0])
        counts = int(nan), int(posinf), int(neginf)
        sample = arrays[1]
    else:
        lo, hi, total = float(arrays[0][0]), float(arrays[0][1]), float(arrays[1])
        sample, counts = arrays[2], None
        if not (math.isfinite(lo) and math.isfinite(hi)):  # NaN/Inf, seen after the pass
            counts, lo, hi, total, numel = _counted_in_sample(sample, lo, hi)
        elif not math.isfinite(total):  # only the float32 sum overflowed: the sample's mean
            total = float(sample.sum(dtype=np.float64)) / sample.size * numel
    if counts is None:
        return _float_fields(sample, lo, hi, total / numel, sampled, bins) | dict(
            nan=0, posinf=0, neginf=0
        )
    finite = numel - sum(counts)
    common = dict(nan=counts[0], posinf=counts[1], neginf=counts[2])
    if finite == 0:
        return no_stats(bins) | common | dict(sampled=sampled)
    values = sample[np.isfinite(sample)]
    if values.size == 0:  # no finite value in the sample: the exact extremes stand alone
        return no_stats(bins) | common | dict(min=lo, max=hi, mean=total / finite, sampled=sampled)
    # around the sample's own mean: the exact one is of other values than the sample's
    fields = _float_fields(values, lo, hi, float(values.mean(dtype=np.float64)), sampled, bins)
    return fields | common | dict(mean=total / finite)


def _counted_in_sample(sample: np.ndarray, lo: float, hi: float):
    """Counts and finite statistics of a tensor that held NaN/Inf but was reduced where the
    pass could not look (a GPU): from the sample, with at least one of each kind that the
    whole-tensor min and max show (a NaN makes both NaN).  Returns ``(counts, lo, hi, total,
    numel)`` for the sample."""
    nan = int(np.isnan(sample).sum()) or int(math.isnan(lo) or math.isnan(hi))
    posinf = int(np.isposinf(sample).sum()) or int(hi == math.inf)
    neginf = int(np.isneginf(sample).sum()) or int(lo == -math.inf)
    finite = sample[np.isfinite(sample)]
    if finite.size == 0:
        return (nan, posinf, neginf), math.nan, math.nan, 0.0, nan + posinf + neginf
    return (
        (nan, posinf, neginf),
        float(finite.min()),
        float(finite.max()),
        float(finite.sum(dtype=np.float64)),
        finite.size + nan + posinf + neginf,
    )


def _float_fields(
    values: np.ndarray, lo: float, hi: float, mean: float, sampled: int | None, bins: int
) -> dict:
    if hi - lo > 1e38:  # (x - lo) would overflow float32
        values = values.astype(np.float64)
    real = values.dtype.type
    centred = values - real(mean)
    m = values.size
    return dict(
        min=lo,
        max=hi,
        mean=mean,
        # a constant has std 0 exactly (float32 rounding of the mean would say otherwise)
        std=math.sqrt(float(centred @ centred) / m) if lo != hi else 0.0,
        mean_abs=float(np.abs(values).sum(dtype=np.float64)) / m,
        zero_fraction=(m - int(np.count_nonzero(values))) / m,
        hist_counts=host_counts(values, lo, hi, bins),
        hist_lo=lo,
        hist_hi=hi,
        sampled=sampled,
    )


# --------------------------------------------------------------------------------------------
# int and bool


def reduce_int(flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int) -> Reduced:
    sample, _ = sample_of(flat, dtype, numel, max_exact, torch.int64)
    ends = torch.stack(torch.aminmax(flat))
    if flat.device.type in COUNT_IN_CALL:
        lo, hi = ends.tolist()
        peak: float | torch.Tensor = float(max(-lo, hi))
    else:
        peak = ends.abs().amax()
    return [ends, flat.sum(dtype=torch.int64), sample], peak


def finish_int(arrays: list[np.ndarray], numel: int, sampled: int | None, bins: int) -> dict:
    lo, hi, total = float(arrays[0][0]), float(arrays[0][1]), int(arrays[1])
    sample = arrays[2]
    values = sample.astype(np.float64)
    m = values.size
    uniq, counts = np.unique(sample, return_counts=True)
    order = np.lexsort((uniq, -counts))[:MAX_VALUES]  # most frequent first, ties by value
    return dict(
        min=lo,
        max=hi,
        mean=total / numel,
        std=float(values.std()),
        mean_abs=float(np.abs(values).sum(dtype=np.float64)) / m,
        zero_fraction=(m - int(np.count_nonzero(sample))) / m,
        nan=0,
        posinf=0,
        neginf=0,
        hist_counts=host_counts(values, lo, hi, bins),
        hist_lo=lo,
        hist_hi=hi,
        sampled=sampled,
        values=tuple(zip(uniq[order].tolist(), counts[order].tolist())),
    )


def reduce_bool(flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int) -> Reduced:
    return [torch.count_nonzero(flat)], 1.0


def finish_bool(arrays: list[np.ndarray], numel: int, sampled: int | None, bins: int) -> dict:
    n_true = int(arrays[0])
    n_false = numel - n_true
    p = n_true / numel
    counts = np.zeros(bins, dtype=np.int64)
    counts[0] += n_false
    counts[-1] += n_true
    counts.setflags(write=False)
    values = sorted(((False, n_false), (True, n_true)), key=lambda vc: (-vc[1], vc[0]))
    return dict(
        min=0.0 if n_false else 1.0,
        max=1.0 if n_true else 0.0,
        mean=p,
        std=math.sqrt(p * (1.0 - p)),
        mean_abs=p,
        zero_fraction=n_false / numel,
        nan=0,
        posinf=0,
        neginf=0,
        hist_counts=counts,
        hist_lo=0.0,
        hist_hi=1.0,
        sampled=None,
        values=tuple(values),
    )


def nonfinite_float(arrays: list[np.ndarray]) -> bool:
    """Whether :func:`reduce_float`'s results show a NaN or an Inf (without finishing)."""
    if len(arrays) == 2:
        return bool(arrays[0][3:].sum() > 0)
    return not (math.isfinite(float(arrays[0][0])) and math.isfinite(float(arrays[0][1])))


#: the two halves by summary kind, and what tells a NaN/Inf from the results
REDUCERS: dict[str, Reduce] = {"float": reduce_float, "int": reduce_int, "bool": reduce_bool}
FINISHERS: dict[str, Finish] = {"float": finish_float, "int": finish_int, "bool": finish_bool}
NONFINITE: dict[str, Callable[[list[np.ndarray]], bool]] = {"float": nonfinite_float}


# --------------------------------------------------------------------------------------------
# histograms


def host_counts(values: np.ndarray, lo: float, hi: float, bins: int) -> np.ndarray:
    """Histogram over [lo, hi] (the max joins the last bin; a constant fills bin 0)."""
    if hi == lo:
        counts = np.zeros(bins, dtype=np.int64)
        counts[0] = values.size
    else:
        factor = bins / (hi - lo)
        if values.dtype != np.float64 and (hi - lo > 1e38 or factor > 1e38):
            values = values.astype(np.float64)  # (a span or a factor float32 cannot hold)
        real = values.dtype.type  # subtract first: exact near lo
        counts = unit_counts((values - real(lo)) * real(factor), bins)
    counts.setflags(write=False)
    return counts


def unit_counts(unit: np.ndarray, bins: int) -> np.ndarray:
    """Counts per unit bin of ``unit`` (values in [0, bins + 1); what truncates to ``bins``
    joins the last bin; anything from ``bins + 1`` is dropped), by truncation and bincount."""
    raw = np.bincount(unit.astype(np.intp), minlength=bins + 1)
    counts = raw[:bins].astype(np.int64)
    counts[-1] += raw[bins]
    return counts


def no_stats(bins: int) -> dict:
    counts = np.zeros(bins, dtype=np.int64)
    counts.setflags(write=False)
    return dict(
        min=None,
        max=None,
        mean=None,
        std=None,
        mean_abs=None,
        zero_fraction=None,
        hist_counts=counts,
        hist_lo=0.0,
        hist_hi=0.0,
    )
