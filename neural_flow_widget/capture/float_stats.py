"""The float summary kernels, one per kind of device, each split in two: a *read* that runs
in the hook and takes what needs the whole tensor (exact min, max and sum) and a copy of the
sample, and a *finish* (numpy, on the host) that makes the sampled statistics and the
histogram from that copy, when the summary is first read.

* CPU (:func:`float_host_read`): a device -> host read is free, so numpy takes min and max
  of float32 and float64 (faster than ``torch.aminmax`` there, and fewer calls).
* Other devices (:func:`float_device_read`): min, max, sum and the sample are made on the
  device and come to the host in one transfer (five kernels, not dozens of launches).

A tensor holding NaN or Inf (the read shows it) is redone on the masked path of
:mod:`._summary_kernels` and finished at once.

>>> import torch
>>> read = float_host_read(torch.arange(6.0), torch.float32, 6, 4, 8192)
>>> float_finish(*read)["hist_counts"].tolist()
[2, 1, 1, 2]
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from .sampling import float_masked, host_sample, sample_of, unpack

__all__ = ["FloatSample", "float_device", "float_device_read", "float_finish", "float_host",
           "float_host_read", "host_counts", "unit_counts"]  # fmt: skip

_NUMPY_EXTREMES = frozenset((torch.float32, torch.float64))


def float_host_read(flat: torch.Tensor, dtype: torch.dtype, numel: int, bins: int,
                     max_exact: int, *, copy: bool = False):  # fmt: skip
    """The part of the CPU float kernel that reads the whole tensor: exact min, max and sum,
    and the sample.  Returns the finished fields (a dict) for a tensor holding NaN/Inf, else
    a :class:`FloatSample` for :func:`float_finish` (whose array is a copy with ``copy``)."""
    acc = torch.float64 if dtype is torch.float64 else torch.float32
    if dtype in _NUMPY_EXTREMES:  # numpy's min and max: vectorised, and fewer calls
        values = flat.numpy()
        lo, hi = float(values.min()), float(values.max())  # a NaN anywhere comes out
        total = flat.sum(dtype=acc).item()
    else:
        lo_t, hi_t = torch.aminmax(flat)
        lo, hi, total = torch.stack((lo_t, hi_t, flat.sum(dtype=acc))).tolist()
    if not math.isfinite(lo + hi + total):  # NaN/Inf somewhere (or a float32 sum overflow)
        packed, sampled = float_masked(flat, dtype, numel, bins, max_exact)
        return unpack(packed.tolist(), bins, sampled)
    # a few thousand values: numpy does the rest without a torch call per statistic
    values, sampled = host_sample(flat, dtype, numel, max_exact, copy=copy)
    return FloatSample(lo, hi, total / numel, values, sampled, bins)


class FloatSample(NamedTuple):
    """What the CPU float kernel keeps of a finite tensor to finish its statistics."""

    lo: float
    hi: float
    mean: float  # exact (sum / numel)
    values: np.ndarray  # the sample (or all values), float32/float64
    sampled: int | None
    bins: int


def float_finish(lo: float, hi: float, mean: float, values: np.ndarray,
                  sampled: int | None, bins: int) -> dict:  # fmt: skip
    """The sampled statistics and the histogram of a :class:`FloatSample` (numpy only)."""
    if hi - lo > 1e38:  # (x - lo) would overflow float32
        values = values.astype(np.float64)
    real = values.dtype.type
    centred = values - real(mean)
    m = values.size
    return dict(
        min=lo, max=hi, mean=mean,
        # a constant has std 0 exactly (float32 rounding of the mean would say otherwise)
        std=math.sqrt(float(centred @ centred) / m) if lo != hi else 0.0,
        mean_abs=float(np.abs(values).sum()) / m,
        zero_fraction=(m - int(np.count_nonzero(values))) / m, nan=0, posinf=0, neginf=0,
        hist_counts=host_counts(values, lo, hi, bins), hist_lo=lo, hist_hi=hi,
        sampled=sampled,
    )  # fmt: skip


def float_host(flat: torch.Tensor, dtype: torch.dtype, numel: int, bins: int,
                max_exact: int) -> dict:  # fmt: skip
    read = float_host_read(flat, dtype, numel, bins, max_exact)
    return read if isinstance(read, dict) else float_finish(*read)


def float_device_read(flat: torch.Tensor, dtype: torch.dtype, numel: int, bins: int,
                       max_exact: int, *, copy: bool = False):  # fmt: skip
    """The device (CUDA) counterpart of :func:`float_host_read`: min, max, sum and the
    sample are made there and come to the host in one transfer (the one sync); numpy
    finishes the sampled statistics and the histogram from the sample, as on the CPU.
    Five kernels and a copy, where computing every statistic on the device takes dozens
    of launches.  ``copy`` is accepted for symmetry: the host array is always its own."""
    acc = torch.float64 if dtype is torch.float64 else torch.float32
    sample, sampled = sample_of(flat, dtype, numel, max_exact, acc)
    lo, hi = torch.aminmax(flat)
    head = torch.stack((lo.to(acc), hi.to(acc), flat.sum(dtype=acc)))
    packed = torch.cat((head, sample)).cpu().numpy()  # the one device -> host transfer
    lo_, hi_, total = (float(v) for v in packed[:3])
    if not math.isfinite(lo_ + hi_ + total):  # NaN/Inf somewhere (or a float32 sum overflow)
        masked, sampled = float_masked(flat, dtype, numel, bins, max_exact)
        return unpack(masked.tolist(), bins, sampled)
    return FloatSample(lo_, hi_, total / numel, packed[3:], sampled, bins)


def float_device(flat: torch.Tensor, dtype: torch.dtype, numel: int, bins: int,
                  max_exact: int) -> dict:  # fmt: skip
    read = float_device_read(flat, dtype, numel, bins, max_exact)
    return read if isinstance(read, dict) else float_finish(*read)


def host_counts(values: np.ndarray, lo: float, hi: float, bins: int) -> np.ndarray:
    """Histogram over [lo, hi] (the max joins the last bin; a constant fills bin 0)."""
    if hi == lo:
        counts = np.zeros(bins, dtype=np.int64)
        counts[0] = values.size
    else:
        real = values.dtype.type  # subtract first: exact near lo
        counts = unit_counts((values - real(lo)) * real(bins / (hi - lo)), bins)
    counts.setflags(write=False)
    return counts


def unit_counts(unit: np.ndarray, bins: int) -> np.ndarray:
    """Counts per unit bin of ``unit`` (values in [0, bins]; value ``bins`` joins the last
    bin; anything above, e.g. ``excluded(bins)``, is dropped), by truncation and bincount."""
    raw = np.bincount(unit.astype(np.intp), minlength=bins + 1)
    counts = raw[:bins].astype(np.int64)
    counts[-1] += raw[bins]
    return counts


