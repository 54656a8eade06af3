"""Keep a bounded reduction of one activation at capture time (views render it later).

>>> import torch
>>> kept = retain(torch.randn(2, 8, 32, 32))
>>> (kept.layout, kept.nbytes <= DEFAULT_BUDGET_BYTES, kept.parts["grid"].shape)
('image', True, (8, 32, 32))

:func:`retain_pending` runs inside each module call of the traced run, so it is built for
cost: a dozen torch ops on the tensor's own device (:mod:`.pooling` pools), whose results
stay there until the pass is over (:mod:`.host` brings them over together).  The host keeps
at most ``budget_bytes``; maps are kept as float16 under one power-of-two scale that puts
their largest finite |x| in [2**14, 2**15) (float16's 11 bits, whatever the values' size).
Percentiles and colour ranges belong to render time (:mod:`.views`).  Which reduction is
kept depends on the shape (the *layout*), for one batch element ``sample``:

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

Pooled sizes prefer windows that divide the axes.  Every kept array is a copy made in the
call: later in-place ops on the activation do not reach it.  Int and bool tensors are
reduced as float (int values in the ``vector`` layout stay exact up to 2**53); complex
tensors by their magnitude.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from .dense import Dense, read_dense
from .host import to_host
from .plans import image_plan, sequence_plan
from .pooling import Like, pool_flat

__all__ = [
    "DEFAULT_BUDGET_BYTES",
    "MIN_BUDGET_BYTES",
    "Layout",
    "PendingRetained",
    "Retained",
    "retain",
    "retain_dense",
    "retain_pending",
]

DEFAULT_BUDGET_BYTES = 256 * 1024
#: the smallest budget :func:`retain` accepts
MIN_BUDGET_BYTES = 4096
Layout = Literal["image", "sequence", "vector", "empty"]

_FIRST, _TOPK = 4096, 16
_F16_MAX_EXP = 15  # float16 maps are scaled so that their peak |x| < 2**15 < 65504
_F32_MIN_EXP = -126  # ... by a scale no smaller than float32's smallest normal number
#: a tensor's largest finite |x|: on the host (a float), on its device (a 0-d tensor), unknown
Peak = float | torch.Tensor | None


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
    parts: Mapping[str, np.ndarray]  # read-only arrays by name (maps: float16, scaled)
    # a float16 part times its scale gives the values back (no entry: a scale of 1)
    scales: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
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


class Kept(NamedTuple):
    """One device tensor of a plan: parts laid one after another in it, as (name, shape)
    pairs; float16 maps come with their scale (a 0-d float32 tensor)."""

    tensor: torch.Tensor
    parts: list[tuple[str, tuple[int, ...]]]
    scale: torch.Tensor | None = None


Plan = list[Kept]


class PendingRetained:
    """A :class:`Retained` whose parts are still on the tensor's device (see :mod:`.host`);
    the last of its tensors is the float16 maps' scale when it has maps."""

    __slots__ = ("_head", "_layout", "_plan", "tensors")

    def __init__(self, layout: Layout, head: dict, plan: Plan) -> None:
        self._layout, self._head = layout, head
        self._plan = [(kept.parts, kept.scale is not None) for kept in plan]
        self.tensors: list[torch.Tensor] | None = [
            t for kept in plan for t in (kept.tensor, kept.scale) if t is not None
        ]

    def arrived(self, arrays: list[np.ndarray]) -> None:
        parts: dict[str, np.ndarray] = {}
        scales: dict[str, float] = {}
        given = iter(arrays)
        for names, scaled in self._plan:
            array = next(given)
            scale = float(next(given)) if scaled else 1.0
            at = 0
            for name, shape in names:
                size = math.prod(shape)
                parts[name] = array[at : at + size].reshape(shape)
                at += size
                if scale != 1.0:
                    scales[name] = scale
        self.tensors = None
        self._head |= dict(parts=MappingProxyType(parts), scales=MappingProxyType(scales))

    def result(self) -> Retained:
        if "parts" not in self._head:
            raise RuntimeError("these parts have not reached the host yet")
        return Retained(self._layout, **self._head)


# --------------------------------------------------------------------------------------------
# per-layout plans: device ops only


def _retain_image(
    x: torch.Tensor, shape: tuple[int, ...], budget: int, like: Like, peak: Peak
) -> Plan | None:
    c, h, w = shape
    kept = image_plan(c, h, w, budget)
    if kept is None:
        return None
    grid, mean, k, top, step = kept.grid, kept.mean, kept.k, kept.top, kept.rank_step
    rows = x if step == 1 else x[:, step // 2 :: step]
    mean_abs = rows.abs().mean((1, 2))
    maps = [pool_flat(x, h, w, *grid, like), pool_flat(x.mean(0), h, w, *mean, like)]
    parts = [("grid", (c, *grid)), ("mean", mean)]
    plan: Plan = [Kept(mean_abs.to(torch.float32), [("channel_mean_abs", (c,))])]
    if top is not None:
        chosen = torch.topk(mean_abs, k).indices  # most active first
        maps.append(pool_flat(x.index_select(0, chosen), h, w, *top, like))
        parts.append(("top", (k, *top)))
        plan.append(Kept(chosen, [("top_channels", (k,))]))
    plan.insert(1, _halves(torch.cat(maps), parts, peak))  # (in the parts' order)
    return plan


def _retain_sequence(
    x: torch.Tensor, shape: tuple[int, ...], budget: int, like: Like, peak: Peak
) -> Plan:
    length, dim = shape
    kept = sequence_plan(length, dim, budget)
    n_norms, heat = kept.norms, kept.tokens
    norms = torch.linalg.vector_norm(x, 2, dim=1)  # fast along a contiguous last axis
    if n_norms < length:
        norms = F.adaptive_avg_pool1d(norms[None], n_norms)[0]
    tokens = pool_flat(x, length, dim, *heat, like)
    return [
        _halves(tokens, [("tokens", heat)], peak),
        Kept(norms.to(torch.float32), [("norms", (n_norms,))]),
    ]


def _retain_vector(
    x: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype, budget: int
) -> Plan:
    flat = x.reshape(-1).abs() if dtype.is_complex else x.reshape(-1)
    exact_ints = not (dtype.is_floating_point or dtype.is_complex)
    store = torch.float64 if exact_ints else torch.float32
    numel = math.prod(shape)
    k = min(_TOPK, numel)
    n_first = min(numel, _FIRST, (budget - k * 16) // (8 if exact_ints else 4))
    magnitude = flat.abs() if dtype is not torch.bool else flat.to(torch.uint8)
    top = torch.topk(magnitude, k).indices
    values = torch.cat([flat[:n_first], flat[top]]).to(store)  # (cat copies)
    return [
        Kept(values, [("first", (n_first,)), ("topk_values", (k,))]),
        Kept(top, [("topk_indices", (k,))]),
    ]


def scale_for(peak: float) -> float:
    """The power of two that float16 maps are divided by, for a largest finite |x| of
    ``peak`` known on the host: 1 where float16 holds it well (2**-10 <= peak < 2**15) or
    there is nothing to scale, else the one putting it in [2**14, 2**15), but never below
    float32's smallest normal number, so that it and its inverse stay float32 numbers (a
    peak of 1e-44 next to an Inf: the scale of 2**-161 was 0 in float32, its inverse Inf,
    and every kept value Inf or NaN). The compiled path's rule too.

    >>> scale_for(3.0), scale_for(1e6), scale_for(1e-6), scale_for(1e-44) == 2.0**-126
    (1.0, 32.0, 5.820766091346741e-11, True)
    """
    if not math.isfinite(peak) or peak == 0.0 or 2.0**-10 <= peak < 2.0**_F16_MAX_EXP:
        return 1.0
    return math.ldexp(1.0, max(math.frexp(peak)[1] - _F16_MAX_EXP, _F32_MIN_EXP))


def _halves(maps: torch.Tensor, parts: list[tuple[str, tuple[int, ...]]], peak: Peak) -> Kept:
    """``maps`` (1-D) as float16 divided by a power of two, and that scale. With ``peak`` on
    the host (the CPU): :func:`scale_for`, and no op at all when it is 1. Else, on the device
    with a few tiny ops and no wait for it: always the power of two that puts the largest
    finite |x| (``peak``, or the maps' own when None) in [2**14, 2**15)."""
    if isinstance(peak, float):
        known = scale_for(peak)
        half = (maps if known == 1.0 else maps * (1.0 / known)).to(torch.float16)
        return Kept(half, parts, None if known == 1.0 else torch.tensor(known))
    largest = maps.abs().amax() if peak is None else peak
    largest = torch.nan_to_num(largest.to(torch.float32), nan=0.0, posinf=0.0)
    exponent = (torch.frexp(largest).exponent - _F16_MAX_EXP).clamp(min=_F32_MIN_EXP)
    scale = torch.exp2(exponent.to(torch.float32))
    return Kept((maps / scale).to(torch.float16), parts, scale)


_RETAINERS: dict[str, Callable[[torch.Tensor, tuple[int, ...], int, Like, Peak], Plan | None]] = {
    "image": _retain_image,
    "sequence": _retain_sequence,
}


def _layout_of(ndim: int) -> Layout:
    return "vector" if ndim <= 2 else "sequence" if ndim == 3 else "image"


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
    d: Dense, *, sample: int = 0, budget_bytes: int = DEFAULT_BUDGET_BYTES
) -> Retained:
    """:func:`retain` of a tensor already read by :func:`~.summary.read_dense`."""
    pending = retain_pending(d, sample=sample, budget_bytes=budget_bytes)
    to_host([pending])
    return pending.result()


def retain_pending(
    d: Dense, *, sample: int = 0, budget_bytes: int = DEFAULT_BUDGET_BYTES, peak: Peak = None
) -> PendingRetained:
    """The device ops of :func:`retain_dense`, now; the parts reach the host later.

    ``peak``: the tensor's largest finite |x| where it is known (its summary's), a float on
    the host or a 0-d tensor on the device: the maps' float16 scale comes from it."""
    if budget_bytes < MIN_BUDGET_BYTES:
        raise ValueError(
            f"budget_bytes={budget_bytes} is too small; use at least {MIN_BUDGET_BYTES}"
        )
    head: dict = dict(shape=d.shape, dtype=str(d.dtype).removeprefix("torch."))
    if d.numel == 0:
        head |= dict(sample=None, note=None, parts=MappingProxyType({}))
        return PendingRetained("empty", head, [])
    x, shape, dtype, kept_sample, note = _select(d, sample)
    layout = _layout_of(len(d.shape))
    plan = None
    if layout != "vector":
        like = (torch.float64 if dtype in _DOUBLE else torch.float32, d.device)
        plan = _RETAINERS[layout](_as_float(x, dtype), shape, budget_bytes, like, peak)
    if plan is None:  # a vector by shape, or too many channels for the budget
        if layout != "vector":
            note = f"{note + '; ' if note else ''}too many channels for the budget"
        layout, plan = "vector", _retain_vector(x, shape, dtype, budget_bytes)
    return PendingRetained(layout, head | dict(sample=kept_sample, note=note), plan)
