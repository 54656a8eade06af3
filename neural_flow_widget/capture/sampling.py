"""The chunk sample and the summary kernels that never sync: the NaN/Inf-masked pass (every
device), the int kernel's pieces and the packed vector they fill.

>>> import torch
>>> sample_plan(10_000, 1000)  # (chunk width, row step, first row, rows)
(3, 11, 5, 303)

The sample: the flat tensor seen as rows of ``width`` elements (a prime <= 251), every
``step``-th row (``step`` prime), starting half a step in, so that neither the chunks nor the
step line up with power-of-two axes; at most ``max_exact`` elements.  Cutting it is one
strided copy of contiguous runs (cheap); a gather of single elements is not.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

__all__ = [
    "CHUNK", "NUMPY_FLOATS", "SCALARS", "count_on", "excluded", "flat_view",
    "float_masked", "hist_histc", "host_sample", "is_prime", "no_stats", "pack",
    "prime_at_least", "sample_of", "sample_plan", "scaled_for_hist", "unpack", "variance",
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# the sample: every k-th row of contiguous chunks


def is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, math.isqrt(n) + 1))


def prime_at_least(n: int) -> int:
    while not is_prime(n):
        n += 1
    return n


def chunk_width(max_exact: int) -> int:
    """Elements per chunk: a prime <= 251 leaving at least ~256 chunks in the sample."""
    width = max(1, min(251, max_exact // 256))
    while width > 2 and not is_prime(width):
        width -= 1
    return width


@functools.lru_cache(maxsize=1024)
def sample_plan(numel: int, max_exact: int) -> tuple[int, int, int, int] | None:
    """(width, step, first row, rows) of the chunk sample, or None when exact."""
    if numel <= max_exact:
        return None
    width = chunk_width(max_exact)
    total = numel // width
    step = prime_at_least(-(-total // max(1, max_exact // width)))
    first = step // 2
    return width, step, first, (total - first - 1) // step + 1


def flat_view(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of ``t`` in memory order (no copy for contiguous, channels-last, transposed)."""
    if t.is_contiguous():
        return t.view(-1)
    strides = t.stride()
    order = sorted(range(len(strides)), key=lambda d: -strides[d])
    permuted = t.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else permuted.reshape(-1)


def sample_of(flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int,
              want: torch.dtype):  # fmt: skip
    """(1-D sample of ``flat`` (of ``dtype``) in ``want``, sample size or None); a copy
    unless exact and already in ``want``."""
    plan = sample_plan(numel, max_exact)
    if plan is None:
        return (flat if dtype is want else flat.to(want)), None
    width, step, first, rows = plan
    chunks = flat[first * width :].unfold(0, width, step * width)  # (rows, width), a view
    sample = chunks.to(want) if dtype is not want else chunks
    sample = sample.reshape(-1)  # the copy (or a view of the converted copy)
    return sample, rows * width


NUMPY_FLOATS = frozenset((torch.float16, torch.float32, torch.float64))


def host_sample(flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int, *,
                copy: bool = False):  # fmt: skip
    """CPU: (the sample as a float32/float64 numpy array, sample size or None), cut by numpy
    from a view of the tensor's memory (one torch call).  With ``copy`` the array never
    shares memory with the tensor (a sampled or converted array never does)."""
    if dtype not in NUMPY_FLOATS:  # bfloat16, float8: torch converts the sample first
        sample, sampled = sample_of(flat, dtype, numel, max_exact, torch.float32)
        return sample.numpy(), sampled  # a converted copy
    values = flat.numpy()  # a view: only read
    plan = sample_plan(numel, max_exact)
    sampled = None
    if plan is not None:
        width, step, first, rows = plan
        item = values.itemsize
        chunks = np.ndarray((rows, width), values.dtype, values, first * width * item,
                            (step * width * item, item))  # a strided view, as as_strided
        values, sampled = chunks.copy().reshape(-1), rows * width  # the copy
    elif copy and dtype is not torch.float16:
        values = values.copy()
    return (values.astype(np.float32) if dtype is torch.float16 else values), sampled


# --------------------------------------------------------------------------------------------
# kernels that never sync: statistics packed into one float64 vector on the device


def excluded(bins: int) -> float:
    """The scaled value that marks an element left out of the histogram (NaN / Inf)."""
    return bins + 1.0


def hist_histc(y: torch.Tensor, bins: int) -> torch.Tensor:
    """Counts per unit bin of ``y`` (values in [0, bins]; ``bins`` joins the last bin,
    :func:`excluded` values are dropped) on its device, as float; no sync."""
    if torch.are_deterministic_algorithms_enabled():  # histc has no deterministic CUDA kernel
        index = y.to(torch.int64).clamp_(0, bins + 1)  # a NaN of an unmasked pass stays legal
        ones = torch.ones_like(y, dtype=torch.float64)
        counts = torch.zeros(bins + 2, dtype=torch.float64, device=y.device)
        counts = counts.index_put_((index,), ones, accumulate=True)
        return torch.cat([counts[: bins - 1], counts[bins - 1 : bins + 1].sum(0, keepdim=True)])
    exact = y if y.numel() <= 2**24 else y.to(torch.float64)  # float32 counts stay exact
    return torch.histc(exact, bins=bins, min=0.0, max=float(bins))


def scaled_for_hist(sample: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bins: int):
    """``(sample - lo) * bins / (hi - lo)`` clamped to [0, bins]; all 0 when ``lo == hi``."""
    span = hi.to(torch.float64) - lo.to(torch.float64)
    scale = torch.where(span > 0, bins / span, torch.zeros_like(span)).to(sample.dtype)
    return (sample - lo.to(sample.dtype)).mul_(scale).clamp_(0.0, float(bins))


# layout of the packed vector: these scalars, then the histogram counts
SCALARS = ("min", "max", "sum", "finite", "nan", "posinf", "neginf",
            "s_var", "s_abs", "s_nonzero", "s_finite")  # fmt: skip


def count_on(n: int, like: torch.Tensor) -> torch.Tensor:
    """A 0-d float64 constant made on ``like``'s device by a fill (no host -> device copy)."""
    return torch.full((), n, dtype=torch.float64, device=like.device)


def pack(scalars: dict[str, torch.Tensor], counts: torch.Tensor) -> torch.Tensor:
    head = torch.stack([scalars[name].to(torch.float64).reshape(()) for name in SCALARS])
    return torch.cat([head, counts.to(torch.float64)])


def unpack(packed: list[float], bins: int, sampled: int | None) -> dict:
    got = dict(zip(SCALARS, packed))
    counts = np.asarray(packed[len(SCALARS) :], dtype=np.float64).round().astype(np.int64)
    counts.setflags(write=False)
    common = dict(
        nan=int(got["nan"]), posinf=int(got["posinf"]), neginf=int(got["neginf"]),
        hist_counts=counts, sampled=sampled,
    )  # fmt: skip
    if got["finite"] == 0:
        return common | no_stats(bins) | dict(hist_counts=counts)
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


def no_stats(bins: int) -> dict:
    counts = np.zeros(bins, dtype=np.int64)
    counts.setflags(write=False)
    return dict(
        min=None, max=None, mean=None, std=None, mean_abs=None, zero_fraction=None,
        hist_counts=counts, hist_lo=0.0, hist_hi=0.0,
    )  # fmt: skip


def variance(sample: torch.Tensor, centre: torch.Tensor | None = None) -> torch.Tensor:
    """Mean squared distance of a 1-D sample from ``centre`` (default: its own mean, which
    gives the population variance), centred first (no cancellation)."""
    centred = sample - (sample.mean() if centre is None else centre)
    return torch.dot(centred, centred) / sample.numel()


#: elements per chunk of the masked pass (keeps its temporaries small and cache-friendly)
CHUNK = 1 << 22


def finite_chunk(chunk: torch.Tensor) -> torch.Tensor:
    """[finite min, finite max, finite sum, #nan, #+inf, #-inf] of one chunk, as float64."""
    inf = math.inf
    parts = (
        torch.nan_to_num(chunk, nan=inf, posinf=inf, neginf=inf).min(),
        torch.nan_to_num(chunk, nan=-inf, posinf=-inf, neginf=-inf).max(),
        torch.nan_to_num(chunk.double(), nan=0.0, posinf=0.0, neginf=0.0).sum(),
        torch.count_nonzero(torch.isnan(chunk)),
        torch.count_nonzero(chunk == inf),
        torch.count_nonzero(chunk == -inf),
    )
    return torch.stack([p.to(torch.float64) for p in parts])


def float_masked(flat: torch.Tensor, dtype: torch.dtype, numel: int, bins: int,
                 max_exact: int):  # fmt: skip
    """Statistics over the finite values only, for tensors that hold NaN or Inf (rare: this
    path spends calls and passes freely); returns (the packed vector on the device, sampled)."""
    sample, sampled = sample_of(flat, dtype, numel, max_exact, torch.float64)
    per_chunk = torch.stack([finite_chunk(c) for c in flat.split(CHUNK)])
    nan, posinf, neginf = per_chunk[:, 3:].sum(0)
    n_finite = numel - nan - posinf - neginf
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
    scaled = scaled_for_hist(s_vals, lo, hi, bins)
    scaled.masked_fill_(~s_finite, excluded(bins))
    return pack(scalars, hist_histc(scaled, bins)), sampled
