"""Sizes and average pooling of retained maps, chosen for speed on CPU.

>>> even(112, 32)  # a pooled length of at most 32 for 112: 28 windows of 4
28

Pooling has ``adaptive_avg_pool2d``'s windows but mostly not its kernel, which is 2-4x
slower on CPU, as are reductions over short axes; each choice in :func:`pool_flat` was timed
on CPU shapes of ResNet, U-Net and GPT-2 activations.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["Like", "even", "even2", "fit", "fit_axes", "pool2d", "pool_flat"]

Like = tuple[torch.dtype, torch.device]  # what pooling matrices are made for

_SMALL_MAP = 64  # maps of at most this many cells are pooled by one matmul
_FEW_COLUMNS = 32  # up to this many pooled columns: a matmul with the pooling matrix
# Whole blocks of rows pooled by one matmul: a multiply-add per element and pooled column,
# cheaper than two passes up to about this many columns (timed on ResNet / U-Net maps).
_BLOCK_COLUMNS = 20
_BLOCK_ROW = 4096  # longest block (window rows x width) that the matrix may cover
_MATRICES: dict[tuple, torch.Tensor] = {}  # pooling matrices by sizes, dtype and device


# --------------------------------------------------------------------------------------------
# sizes


def fit(h: int, w: int, max_elems: int, max_side: int) -> tuple[int, int] | None:
    """The largest (h', w') <= (h, w) of about the same aspect with h'*w' <= max_elems."""
    if max_elems < 1:
        return None
    s = min(1.0, max_side / max(h, w), math.sqrt(max_elems / (h * w)))
    ph = max(1, min(h, max_side, math.floor(h * s)))
    pw = max(1, min(w, max_side, math.floor(w * s), max_elems // ph))
    return ph, pw


def fit_axes(h: int, w: int, max_elems: int, max_side: int) -> tuple[int, int]:
    """Like :func:`fit` but each axis is capped on its own (token x feature maps)."""
    ph, pw = min(h, max_side), min(w, max_side)
    if ph * pw <= max_elems:
        return ph, pw
    s = math.sqrt(max_elems / (ph * pw))
    ph = max(1, math.floor(ph * s))
    return ph, max(1, min(math.floor(pw * s), max_elems // ph))


def even(n: int, most: int) -> int:
    """A pooled length <= ``most`` for an axis of ``n``: ``n // k`` for the smallest window
    ``k`` that divides ``n`` and keeps at least about half of ``most``; else ``most``."""
    if n <= most:
        return n
    smallest = -(-n // most)
    for k in range(smallest, 2 * smallest + 1):
        if n % k == 0:
            return n // k
    return most


def even2(h: int, w: int, size: tuple[int, int] | None) -> tuple[int, int] | None:
    """:func:`even` of both axes (None stays None)."""
    return None if size is None else (even(h, size[0]), even(w, size[1]))


# --------------------------------------------------------------------------------------------
# pooling


def pool_flat(x: torch.Tensor, h: int, w: int, ph: int, pw: int, like: Like) -> torch.Tensor:
    """Average pool of the last two axes (``h`` x ``w``) of ``x`` to ``ph`` x ``pw``, flattened.

    Maps of at most 64 cells: one matmul with the pooling matrix of both axes.  Row windows
    that divide ``h`` with at most 20 pooled columns: one matmul of row blocks.  Others one
    axis at a time, narrow maps (``w <= 32``) columns first so that rows are pooled on less
    data.  Columns: a matmul with the pooling matrix when few, else the mean of 2-4 strided
    slices, a matrix-vector product, or the adaptive kernel.  Rows: a reshaped mean, the mean
    of 2-4 slices for short windows of narrow rows, or the adaptive kernel.  ``like``: the
    (dtype, device) of ``x``, passed in because reading them is a torch call.
    """
    if (h, w) == (ph, pw):
        return x.reshape(-1)
    if h * w <= _SMALL_MAP:
        return torch.mm(x.reshape(-1, h * w), _pooling(like, (h, w), (ph, pw))).reshape(-1)
    if h % ph == 0 and pw <= _BLOCK_COLUMNS and (h // ph) * w <= _BLOCK_ROW:
        # each run of h // ph rows is one contiguous block: one matmul pools both axes
        block = (h // ph) * w
        return torch.mm(x.reshape(-1, block), _block_pooling(like, h // ph, w, pw)).reshape(-1)
    if w <= _FEW_COLUMNS:
        return _pool_rows(_pool_columns(x, w, pw, like), h, ph, pw).reshape(-1)
    return _pool_columns(_pool_rows(x, h, ph, w), w, pw, like).reshape(-1)


def pool2d(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Average pool of the last two axes of ``x`` to ``size``, as ``adaptive_avg_pool2d``.

    >>> import torch
    >>> pool2d(torch.arange(16.0).reshape(4, 4), (2, 2)).tolist()
    [[2.5, 4.5], [10.5, 12.5]]
    """
    *lead, h, w = x.shape
    return pool_flat(x, h, w, *size, (x.dtype, x.device)).view(*lead, *size)


def _pool_rows(x: torch.Tensor, h: int, ph: int, width: int) -> torch.Tensor:
    """Pool axis -2 (``h`` rows of ``width``) to ``ph``; returns (-1, width) or flat."""
    if h == ph:
        return x
    if h % ph:
        return F.adaptive_avg_pool2d(x.reshape(-1, h, width), (ph, width))
    k = h // ph
    if k > 4 or (k > 2 and width > _FEW_COLUMNS):
        return x.reshape(-1, k, width).mean(1)
    return _mean_of(x.reshape(-1, k, width).unbind(1))


def _pool_columns(x: torch.Tensor, w: int, pw: int, like: Like) -> torch.Tensor:
    """Pool the last axis (``w`` columns) to ``pw``; returns (-1, pw) or flat."""
    if w == pw:
        return x
    if pw <= _FEW_COLUMNS or (w % pw and pw <= 2 * _FEW_COLUMNS):
        return torch.mm(x.reshape(-1, w), _pooling(like, (w,), (pw,)))
    if w % pw == 0 and w // pw <= 4:
        return _mean_of(x.reshape(-1, pw, w // pw).unbind(2))
    if w % pw == 0:  # a matrix-vector product beats a reduction over short rows
        return torch.mv(x.reshape(-1, w // pw), _pooling(like, (w // pw,), ()))
    return F.adaptive_avg_pool1d(x.reshape(-1, w), pw)


def _mean_of(slices: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The mean of 2-4 equal slices (a reduction over an axis that short is slow)."""
    if len(slices) == 2:
        return torch.lerp(*slices, 0.5)
    total = slices[0] + slices[1]
    for part in slices[2:]:
        total += part
    return total.mul_(1.0 / len(slices))


def _block_pooling(like: Like, rows: int, w: int, pw: int) -> torch.Tensor:
    """The (rows * w, pw) matrix averaging a block of ``rows`` rows of ``w`` into ``pw``
    columns (the column windows of :func:`_windows`)."""
    key = ("block", rows, w, pw, *like)
    matrix = _MATRICES.get(key)
    if matrix is None:
        matrix = _cache(key, (_windows(w, pw, like[1]).repeat(rows, 1) / rows).to(like[0]))
    return matrix


def _cache(key: tuple, matrix: torch.Tensor) -> torch.Tensor:
    if len(_MATRICES) >= 256:
        _MATRICES.clear()
    _MATRICES[key] = matrix
    return matrix


def _windows(n: int, p: int, device: torch.device) -> torch.Tensor:
    """(n, p) float64 matrix averaging ``adaptive_avg_pool1d``'s windows, made on ``device``
    (no transfer from the host)."""
    i = torch.arange(p, dtype=torch.int64, device=device)
    start = torch.div(i * n, p, rounding_mode="floor")
    end = -torch.div(-(i + 1) * n, p, rounding_mode="floor")
    rows = torch.arange(n, dtype=torch.int64, device=device)[:, None]
    inside = (rows >= start) & (rows < end)
    return inside.to(torch.float64) / (end - start).to(torch.float64)


def _pooling(like: Like, sizes: tuple[int, ...], pooled: tuple[int, ...]) -> torch.Tensor:
    """The cached pooling matrix of one axis, or two (a Kronecker product), for ``like``;
    with ``pooled == ()`` the weights of one window of ``sizes[0]``."""
    key = (sizes, pooled, *like)
    matrix = _MATRICES.get(key)
    if matrix is None:
        if not pooled:
            dense = torch.full((sizes[0],), 1.0 / sizes[0], dtype=torch.float64, device=like[1])
        else:
            dense = _windows(sizes[0], pooled[0], like[1])
            if len(sizes) == 2:
                dense = torch.kron(dense, _windows(sizes[1], pooled[1], like[1]))
        matrix = _cache(key, dense.to(like[0]))
    return matrix
