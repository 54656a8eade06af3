"""Keep a bounded reduction of one activation at capture time (views render it later).

>>> import torch
>>> kept = retain(torch.randn(2, 8, 32, 32))
>>> (kept.layout, kept.nbytes <= DEFAULT_BUDGET_BYTES, kept.parts["grid"].shape)
('image', True, (8, 32, 32))

:func:`retain` runs inside each module call of the traced run, so it is built for cost (about 15-25 torch
calls and two passes over the batch element for an image; :mod:`._pooling` pools,
:mod:`._store` moves the parts to the host): every reduction runs on the tensor's device,
and the host keeps at most ``budget_bytes`` of
results, float16 where values allow (the float16 parts share one power-of-two scale, used
only when values would not fit float16 well).  Percentiles and colour ranges belong to
render time (:mod:`._views`).  Which reduction is kept depends on the shape (the
*layout*), for one batch element ``sample``:

* ``image`` - 4-D ``(N, C, H, W)``; 5-D and up ``(N, C, *extra, H, W)`` are first averaged
  over the ``extra`` axes (e.g. depth, time) so channel indices keep their meaning.  Kept:
  mean |x| of every channel; a grid of all channels pooled to one size with side <= 64
  using about half the budget; the most active channels (by that mean |x|, up to 8) at up
  to 256x256 for the single-channel view; the mean over channels at up to 256x256.
  The mean |x| is exact up to 16K elements; above, it is taken over every s-th row of each
  channel's map (s prime, starting at s // 2, about 16K elements read, at least one row
  per channel), which is what ranks channels.
* ``sequence`` - 3-D ``(N, L, D)``: the token x feature map pooled to at most 256x256, and
  the per-token L2 norms (pooled to at most 4096 tokens).
* ``vector`` - 0-D, 1-D (no batch axis), 2-D ``(N, D)``: the first values (up to 4096, in
  row-major order) and the 16 values largest in |x| with their flat indices.
* ``empty`` - a tensor without elements; it offers no views.

Pooled sizes prefer windows that divide the axes.  Every kept array is a copy: later in-place
ops on the activation do not reach it.  Int and bool tensors are reduced as float (int values
in the ``vector`` layout stay exact up to 2**53); complex tensors by their magnitude.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Literal, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from .pooling import Like, even, even2, fit, fit_axes, pool_flat
from .transfer import BYTES, NUMPY_READS, Plan, Storage, store_device, store_host
from .summary import Dense, read_dense
from .sampling import prime_at_least

__all__ = ["DEFAULT_BUDGET_BYTES", "MIN_BUDGET_BYTES", "Retained", "retain", "retain_dense"]

DEFAULT_BUDGET_BYTES = 256 * 1024
#: the smallest budget :func:`retain` accepts
MIN_BUDGET_BYTES = 4096
Layout = Literal["image", "sequence", "vector", "empty"]

_GRID_SIDE, _MAP_SIDE, _TOP_CHANNELS = 64, 256, 8
_NORMS, _FIRST, _TOPK = 4096, 4096, 16
_RANK_SAMPLE = 1 << 14  # elements read to rank channels by mean |x|


@dataclass(frozen=True, slots=True, eq=False)
class Retained:
    """What one activation leaves behind for later views (host memory, <= the budget).

    >>> import torch
    >>> kept = retain(torch.randn(1, 100, 64))
    >>> (kept.layout, kept.shape, kept.parts["tokens"].shape)
    ('sequence', (1, 100, 64), (100, 64))
    """

    layout: Layout  # which reduction was kept, from the shape (see the module docstring)
    shape: tuple[int, ...]  # the full tensor shape
    dtype: str  # torch dtype name without "torch."
    sample: int | None  # batch index kept; None when the tensor has no batch axis
    parts: Mapping[str, np.ndarray]  # read-only arrays by name (float16 ones are scaled)
    scales: Mapping[str, float]  # a float16 part times its scale gives the values back
    note: str | None = None  # how the shape was reduced before keeping, if it was

    @property
    def nbytes(self) -> int:
        """Bytes held by the kept arrays (what ``budget_bytes`` bounds)."""
        return sum(int(a.nbytes) for a in self.parts.values())

    def values(self, name: str) -> np.ndarray:
        """A kept part as numbers: float16 parts times their scale, as float32; float64 parts
        (exact ints of the ``vector`` layout) as they are; others as float32.

        >>> import torch
        >>> float(retain(torch.full((1, 2, 4, 4), 3.0)).values("mean")[0, 0])
        3.0
        """
        part = self.parts[name]
        if part.dtype == np.float16:
            return part.astype(np.float32) * np.float32(self.scales.get(name, 1.0))
        return part.astype(np.float32) if part.dtype != np.float64 else part


# --------------------------------------------------------------------------------------------
# per-layout plans: device work only; name -> (tensor, storage, shape)



def _rank_rows(c: int, h: int, w: int) -> int:
    """The row step for ranking channels: 1 (every row) up to ``_RANK_SAMPLE`` elements,
    else a prime (so that it does not alias with periodic rows), at most ``h``."""
    if c * h * w <= _RANK_SAMPLE:
        return 1
    return min(prime_at_least(-(-h // max(1, _RANK_SAMPLE // (c * w)))), h)


def _rank_host(x: torch.Tensor, shape: tuple[int, ...], k: int):
    """CPU: mean |x| per channel (see :func:`_rank_rows`) and the ``k`` largest, in numpy
    (a few thousand values: no torch call per step)."""
    c, h, w = shape
    step = _rank_rows(c, h, w)
    values = x.numpy()
    rows = values if step == 1 else values[:, step // 2 :: step]
    magnitude = np.abs(rows).reshape(c, -1)  # a contiguous copy: rows per channel
    count = magnitude.shape[1]
    # a matrix-vector product sums the rows far faster than a reduction over short axes
    mean_abs = (magnitude @ _ones(count, magnitude.dtype)).astype(np.float32) / np.float32(count)
    top = np.argpartition(-mean_abs, k - 1)[:k] if k < c else np.arange(c)
    top = top[np.argsort(-mean_abs[top], kind="stable")]
    return mean_abs, torch.from_numpy(top), top


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(n, dtype)
    ones.setflags(write=False)
    return ones


def _rank_device(x: torch.Tensor, shape: tuple[int, ...], k: int):
    c, h, w = shape
    step = _rank_rows(c, h, w)
    rows = x if step == 1 else x[:, step // 2 :: step]
    mean_abs = rows.abs().mean((1, 2))
    top = torch.topk(mean_abs, k).indices
    return mean_abs, top, top


#: channel rankers by device type: (mean |x| per channel, the k most active, most first, as
#: an index tensor and as what is kept)
_RANKERS = {"cpu": _rank_host}


@functools.lru_cache(maxsize=1024)
def _image_sizes(c: int, h: int, w: int, budget: int):
    """(grid, mean, top channels, top size) of the image layout, or None when too many
    channels for the budget; cached (shapes repeat from call to call)."""
    k_max = min(_TOP_CHANNELS, c)
    grid = even2(h, w, fit(h, w, (budget // 2) // (2 * c), _GRID_SIDE))
    mean = even2(h, w, fit(h, w, (budget // 8) // 2, _MAP_SIDE))
    fixed = 4 * c + 8 * k_max
    if grid is None or mean is None:
        return None  # too many channels for this budget: keep it as a vector
    rest = budget - fixed - 2 * c * grid[0] * grid[1] - 2 * mean[0] * mean[1]
    if rest < 0:
        return None
    k, top = k_max, None
    while k >= 1:
        top = even2(h, w, fit(h, w, rest // (2 * k), _MAP_SIDE))
        if top is not None and top[0] * top[1] > grid[0] * grid[1]:
            break  # sharper than the grid: worth keeping
        k, top = k // 2, None
    return grid, mean, k, top


def _retain_image(x: torch.Tensor, shape: tuple[int, ...], budget: int, like: Like):
    c, h, w = shape
    sizes = _image_sizes(c, h, w, budget)
    if sizes is None:
        return None
    grid, mean, k, top = sizes
    mean_abs, chosen, kept = _RANKERS.get(like[1].type, _rank_device)(x, shape, max(k, 1))
    plan: Plan = {
        "channel_mean_abs": (mean_abs, "f32", (c,)),
        "grid": (pool_flat(x, h, w, *grid, like), "f16", (c, *grid)),
        "mean": (pool_flat(x.mean(0), h, w, *mean, like), "f16", mean),
    }
    if top is not None:
        top_maps = pool_flat(x.index_select(0, chosen), h, w, *top, like)
        plan["top"] = (top_maps, "f16", (k, *top))
        plan["top_channels"] = (kept, "i64", (k,))
    return plan


@functools.lru_cache(maxsize=1024)
def _sequence_sizes(length: int, dim: int, budget: int) -> tuple[int, tuple[int, int]]:
    """(norms kept, token map size) of the sequence layout; cached."""
    n_norms = min(length, _NORMS, budget // 16)
    heat = fit_axes(length, dim, (budget - 4 * n_norms) // 2, _MAP_SIDE)
    return n_norms, (even(length, heat[0]), even(dim, heat[1]))


def _retain_sequence(x: torch.Tensor, shape: tuple[int, ...], budget: int, like: Like):
    length, dim = shape
    n_norms, heat = _sequence_sizes(length, dim, budget)
    norms = torch.linalg.vector_norm(x, 2, dim=1)  # fast along a contiguous last axis
    if n_norms < length:
        norms = F.adaptive_avg_pool1d(norms[None], n_norms)[0]
    return {
        "tokens": (pool_flat(x, length, dim, *heat, like), "f16", heat),
        "norms": (norms, "f32", (n_norms,)),
    }


def _retain_vector(x: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype, budget: int):
    flat = x.reshape(-1).abs() if dtype.is_complex else x.reshape(-1)
    exact_ints = not (dtype.is_floating_point or dtype.is_complex)
    if dtype not in NUMPY_READS:  # bfloat16, complex magnitudes, float8, uint16...
        flat = flat.to(torch.float64 if dtype in _DOUBLE or exact_ints else torch.float32)
    store: Storage = "f64" if exact_ints else "f32"
    numel = math.prod(shape)
    k = min(_TOPK, numel)
    n_first = min(numel, _FIRST, (budget - k * 16) // BYTES[store])
    magnitude = flat.abs() if dtype is not torch.bool else flat.to(torch.uint8)
    top = torch.topk(magnitude, k).indices
    return {
        "first": (flat[:n_first], store, (n_first,)),
        "topk_values": (flat[top], store, (k,)),
        "topk_indices": (top, "i64", (k,)),
    }


_RETAINERS: dict[str, Callable[[torch.Tensor, tuple[int, ...], int, Like], Plan | None]] = {
    "image": _retain_image,
    "sequence": _retain_sequence,
}


def _layout_of(ndim: int) -> Layout:
    return {0: "vector", 1: "vector", 2: "vector", 3: "sequence"}.get(ndim, "image")


_DOUBLE = frozenset((torch.float64, torch.complex128))


def _as_float(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_complex:
        return x.abs()
    return x if dtype in (torch.float32, torch.float64) else x.to(torch.float32)


def broadcast_sample(sample: int, batch: int) -> int:
    """The batch index kept for ``sample``: a batch of one (position embeddings, masks shared
    by the batch) stands for every sample, as it broadcasts in the model.

    >>> broadcast_sample(3, 1), broadcast_sample(3, 4)
    (0, 3)
    """
    return 0 if batch == 1 and sample > 0 else sample


def _select(d: Dense, sample: int):
    """(batch element ``sample`` as (C, H, W) / (L, D) / any, its shape and dtype, the kept
    sample index, a note on reductions)."""
    t, shape = d.t, d.shape
    if len(shape) <= 1:
        return t, shape, d.dtype, None, None
    sample = broadcast_sample(sample, shape[0])
    if not 0 <= sample < shape[0]:
        raise ValueError(
            f"sample={sample} is out of range for a batch of {shape[0]} "
            f"(shape {shape}); use sample=0..{shape[0] - 1}"
        )
    x, inner = t[sample], shape[1:]
    if len(inner) <= 3:
        return x, inner, d.dtype, sample, None
    extra = tuple(range(1, len(inner) - 2))
    note = f"{len(shape)}-D (N, C, *extra, H, W): averaged over axes {[a + 1 for a in extra]}"
    x = _as_float(x, d.dtype).mean(dim=extra)
    dtype = torch.float64 if d.dtype in _DOUBLE else torch.float32
    return x, (inner[0], *inner[-2:]), dtype, sample, note


#: how parts reach the host, by device type; other devices use the one-transfer store
_STORES: dict[str, Callable[[Plan, float | None], tuple[dict, dict]]] = {"cpu": store_host}


# --------------------------------------------------------------------------------------------
# public


def retain(
    t: torch.Tensor, *, sample: int = 0, budget_bytes: int = DEFAULT_BUDGET_BYTES
) -> Retained:
    """Keep a reduction of ``t[sample]`` of at most ``budget_bytes`` on the host.

    >>> import torch
    >>> kept = retain(torch.randn(4, 16), sample=2)
    >>> (kept.layout, kept.sample, kept.parts["first"].shape)
    ('vector', 2, (16,))
    """
    return retain_dense(read_dense(t, who="retain()"), sample=sample, budget_bytes=budget_bytes)


def retain_dense(
    d: Dense, *, sample: int = 0, budget_bytes: int = DEFAULT_BUDGET_BYTES,
    peak: float | None = None,
) -> Retained:  # fmt: skip
    """:func:`retain` of a tensor already read by :func:`~._summaries.read_dense`.

    ``peak``: a known bound on its finite |x| (e.g. from its summary), which spares
    finding the float16 scale.
    """
    if budget_bytes < MIN_BUDGET_BYTES:
        raise ValueError(
            f"budget_bytes={budget_bytes} is too small; use at least {MIN_BUDGET_BYTES}"
        )
    head = dict(shape=d.shape, dtype=str(d.dtype).removeprefix("torch."))
    if d.numel == 0:
        return Retained("empty", **head, sample=None, parts=MappingProxyType({}),
                        scales=MappingProxyType({}))  # fmt: skip
    x, shape, dtype, kept_sample, note = _select(d, sample)
    layout = _layout_of(len(d.shape))
    plan = None
    if layout != "vector":
        like = (torch.float64 if dtype in _DOUBLE else torch.float32, d.device)
        plan = _RETAINERS[layout](_as_float(x, dtype), shape, budget_bytes, like)
    if plan is None:  # a vector by shape, or too many channels for the budget
        if layout != "vector":
            note = f"{note + '; ' if note else ''}too many channels for the budget"
        layout, plan = "vector", _retain_vector(x, shape, dtype, budget_bytes)
    parts, scales = _STORES.get(d.device.type, store_device)(plan, peak)
    return Retained(layout, **head, sample=kept_sample, parts=MappingProxyType(parts),
                    scales=MappingProxyType(scales), note=note)  # fmt: skip
