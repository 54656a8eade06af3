"""The fixed sample of a summary: every k-th run of a few dozen contiguous elements.

>>> sample_plan(10_000, 1000)  # (chunk width, row step, first row, rows)
(3, 11, 5, 303)

The flat tensor is seen as rows of ``width`` elements (a prime <= 251); the sample is every
``step``-th row (``step`` prime), starting half a step in, so that neither the chunks nor the
step line up with power-of-two axes; at most ``max_exact`` elements.  Cutting it is one
strided copy of contiguous runs, on the tensor's own device; a gather of single elements is
not needed.
"""

from __future__ import annotations

import functools
import math

import torch

__all__ = ["chunk_width", "flat_view", "is_prime", "prime_at_least", "sample_of", "sample_plan"]


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


def sample_of(
    flat: torch.Tensor, dtype: torch.dtype, numel: int, max_exact: int, want: torch.dtype
) -> tuple[torch.Tensor, int | None]:
    """(the 1-D sample of ``flat`` (of ``dtype``) in ``want``, always a copy of its own;
    the sample size, or None when it holds every element)."""
    plan = sample_plan(numel, max_exact)
    if plan is None:
        return flat.to(want, copy=True), None
    width, step, first, rows = plan
    chunks = flat[first * width :].unfold(0, width, step * width)  # (rows, width), a view
    sample = chunks.to(want) if dtype is not want else chunks
    return sample.reshape(-1), rows * width  # the copy (or a view of the converted copy)
