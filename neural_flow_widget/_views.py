"""Keep a bounded reduction of one activation at capture time; render views of it later.

>>> import torch
>>> kept = retain(torch.randn(2, 8, 32, 32))
>>> (kept.layout, available_views(kept), kept.nbytes <= DEFAULT_BUDGET_BYTES)
('image', ('grid', 'first', 'channel', 'mean'), True)
>>> render_view(kept, "channel", channel=3).data.shape
(32, 32)

:func:`retain` runs inside the forward hook: every reduction (pooling, per-channel means,
top-k) happens on the tensor's device, the results travel to the host in one transfer, and
the host keeps at most ``budget_bytes`` of them, float16 where values allow.  Which reduction
is kept depends on the shape (the *layout*), for one batch element ``sample``:

* ``image`` - 4-D ``(N, C, H, W)``; 5-D and up ``(N, C, *extra, H, W)`` are first averaged
  over the ``extra`` axes (e.g. depth, time) so channel indices keep their meaning.  Kept:
  mean |x| of every channel; a grid of all channels pooled (adaptive average) to one size
  with side <= 64 using about half the budget; the most active channels (by mean |x|, up to 8)
  at up to 256x256 for the single-channel view; the mean over channels at up to 256x256.
* ``sequence`` - 3-D ``(N, L, D)``: the token x feature map pooled to at most 256x256, and
  the per-token L2 norms (pooled to at most 4096 tokens).
* ``vector`` - 0-D, 1-D (no batch axis), 2-D ``(N, D)``: the first values (up to 4096, in
  row-major order) and the 16 values largest in |x| with their flat indices.
* ``empty`` - a tensor without elements; it offers no views.

Int and bool tensors are reduced as float (int values in the ``vector`` layout stay exact up
to 2**53); complex tensors by their magnitude.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Literal, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from ._summaries import check_dense

__all__ = [
    "DEFAULT_BUDGET_BYTES",
    "DIVERGING",
    "VIRIDIS",
    "Retained",
    "View",
    "available_views",
    "render_view",
    "retain",
]

DEFAULT_BUDGET_BYTES = 256 * 1024
#: the smallest budget :func:`retain` accepts
MIN_BUDGET_BYTES = 4096
Layout = Literal["image", "sequence", "vector", "empty"]

_GRID_SIDE, _MAP_SIDE, _TOP_CHANNELS, _GRID_TILES = 64, 256, 8, 16
_NORMS, _FIRST, _TOPK = 4096, 4096, 16
_F16_MAX_EXP = 15  # float16 parts are scaled by a power of two so |x| < 2**15 < 65504


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
# sizes


def _fit(h: int, w: int, max_elems: int, max_side: int) -> tuple[int, int] | None:
    """The largest (h', w') <= (h, w) of about the same aspect with h'*w' <= max_elems."""
    if max_elems < 1:
        return None
    s = min(1.0, max_side / max(h, w), math.sqrt(max_elems / (h * w)))
    ph = max(1, min(h, max_side, math.floor(h * s)))
    pw = max(1, min(w, max_side, math.floor(w * s), max_elems // ph))
    return ph, pw


def _fit_axes(h: int, w: int, max_elems: int, max_side: int) -> tuple[int, int]:
    """Like :func:`_fit` but each axis is capped on its own (token x feature maps)."""
    ph, pw = min(h, max_side), min(w, max_side)
    if ph * pw <= max_elems:
        return ph, pw
    s = math.sqrt(max_elems / (ph * pw))
    ph = max(1, math.floor(ph * s))
    return ph, max(1, min(math.floor(pw * s), max_elems // ph))


def _pool2d(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Average pool of the last two axes of a 2-D or 3-D tensor down to ``size``.

    Skipped at 1:1.  When the sizes divide: small windows (<= 4 per axis) as sums of strided
    slices (~4x faster than the pooling kernels on CPU), larger ones with ``avg_pool2d``.
    Otherwise the adaptive pool (windows of nearly equal size).
    """
    (h, w), (ph, pw) = x.shape[-2:], size
    if (h, w) == (ph, pw):
        return x
    if h % ph or w % pw:
        return F.adaptive_avg_pool2d(x.unsqueeze(0), size).squeeze(0)
    kh, kw = h // ph, w // pw
    if max(kh, kw) > 4:
        return F.avg_pool2d(x.unsqueeze(0), (kh, kw)).squeeze(0)
    return _window_mean(_window_mean(x, kw, last=True), kh, last=False)


def _window_mean(x: torch.Tensor, k: int, *, last: bool) -> torch.Tensor:
    """Mean of each run of ``k`` along the last (or second-to-last) axis, from k slices."""
    if k == 1:
        return x
    runs = [(..., slice(j, None, k)) + (() if last else (slice(None),)) for j in range(k)]
    total = x[runs[0]] + x[runs[1]]
    for run in runs[2:]:  # at most two more
        total += x[run]
    return total.div_(k)


def _pooled(before: tuple[int, ...], after: tuple[int, ...]) -> str:
    same = tuple(before) == tuple(after)
    text = "x".join(map(str, after))
    return f"{text} (full resolution)" if same else f"pooled {'x'.join(map(str, before))} -> {text}"


# --------------------------------------------------------------------------------------------
# per-layout retention: device work only; returns (name -> (tensor, storage)), note

_Storage = Literal["f16", "f32", "f64", "i64"]
_Plan = dict[str, tuple[torch.Tensor, _Storage]]
_BYTES: dict[str, int] = {"f16": 2, "f32": 4, "f64": 8, "i64": 8}


def _retain_image(x: torch.Tensor, budget: int) -> _Plan | None:
    c, h, w = x.shape
    k_max = min(_TOP_CHANNELS, c)
    grid = _fit(h, w, (budget // 2) // (2 * c), _GRID_SIDE)
    mean = _fit(h, w, (budget // 8) // 2, _MAP_SIDE)
    fixed = 4 * c + 8 * k_max
    if grid is None or mean is None:
        return None  # too many channels for this budget: keep it as a vector
    rest = budget - fixed - 2 * c * grid[0] * grid[1] - 2 * mean[0] * mean[1]
    if rest < 0:
        return None
    k, top = k_max, None
    while k >= 1:
        top = _fit(h, w, rest // (2 * k), _MAP_SIDE)
        if top is not None and top[0] * top[1] > grid[0] * grid[1]:
            break  # sharper than the grid: worth keeping
        k, top = k // 2, None
    # per-channel mean |x|: rows of W first keep float32 sums accurate, no |x| temporary
    mean_abs = torch.linalg.vector_norm(x, 1, dim=2).sum(1) / (h * w)
    plan: _Plan = {
        "channel_mean_abs": (mean_abs, "f32"),
        "grid": (_pool2d(x, grid), "f16"),
        "mean": (_pool2d(x.mean(0), mean), "f16"),
    }
    if top is not None:
        chosen = torch.topk(mean_abs, k).indices
        plan["top"] = (_pool2d(x.index_select(0, chosen), top), "f16")
        plan["top_channels"] = (chosen, "i64")
    return plan


def _retain_sequence(x: torch.Tensor, budget: int) -> _Plan:
    length, dim = x.shape
    n_norms = min(length, _NORMS, budget // 16)
    heat = _fit_axes(length, dim, (budget - 4 * n_norms) // 2, _MAP_SIDE)
    norms = torch.linalg.vector_norm(x, 2, dim=1)
    if n_norms < length:
        norms = F.adaptive_avg_pool1d(norms[None, None], n_norms)[0, 0]
    return {"tokens": (_pool2d(x, heat), "f16"), "norms": (norms, "f32")}


def _retain_vector(x: torch.Tensor, budget: int) -> _Plan:
    flat = x.reshape(-1).abs() if x.is_complex() else x.reshape(-1)
    exact_ints = not (flat.dtype.is_floating_point or flat.dtype.is_complex)
    store: _Storage = "f64" if exact_ints else "f32"
    k = min(_TOPK, flat.numel())
    n_first = min(flat.numel(), _FIRST, (budget - k * 16) // _BYTES[store])
    magnitude = flat.abs() if flat.dtype is not torch.bool else flat.to(torch.uint8)
    top = torch.topk(magnitude, k).indices
    return {
        "first": (flat[:n_first], store),
        "topk_values": (flat[top], store),
        "topk_indices": (top, "i64"),
    }


_RETAINERS: dict[str, Callable[[torch.Tensor, int], _Plan | None]] = {
    "image": _retain_image,
    "sequence": _retain_sequence,
    "vector": _retain_vector,
}


def _layout_of(ndim: int) -> Layout:
    return {0: "vector", 1: "vector", 2: "vector", 3: "sequence"}.get(ndim, "image")


def _as_float(x: torch.Tensor) -> torch.Tensor:
    if x.is_complex():
        return x.abs()
    return x if x.dtype in (torch.float32, torch.float64) else x.to(torch.float32)


def _select(t: torch.Tensor, sample: int) -> tuple[torch.Tensor, int | None, str | None]:
    """The batch element ``sample`` as (C, H, W) / (L, D) / any, and a note on reductions."""
    if t.dim() <= 1:
        return t, None, None
    if not 0 <= sample < t.shape[0]:
        raise ValueError(
            f"sample={sample} is out of range for a batch of {t.shape[0]} "
            f"(shape {tuple(t.shape)}); use sample=0..{t.shape[0] - 1}"
        )
    x = t[sample]
    if x.dim() <= 3:
        return x, sample, None
    extra = tuple(range(1, x.dim() - 2))
    note = f"{t.dim()}-D (N, C, *extra, H, W): averaged over axes {[a + 1 for a in extra]}"
    return _as_float(x).mean(dim=extra), sample, note


# --------------------------------------------------------------------------------------------
# one transfer, then host-side storage


_DTYPES: dict[str, tuple[torch.dtype, type]] = {
    "i64": (torch.int64, np.int64),
    "f64": (torch.float64, np.float64),
    "f32": (torch.float32, np.float32),
    "f16": (torch.float16, np.float16),
}  # in falling item size, so that every part of the packed bytes is aligned


def _half_scaled(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float16 of ``t / scale`` with ``scale`` a power of two putting max |finite| < 2**15."""
    peak = torch.nan_to_num(t.abs(), nan=0.0, posinf=0.0, neginf=0.0).amax()
    exponent = torch.frexp(peak.to(torch.float32)).exponent - _F16_MAX_EXP
    scale = torch.where(peak > 0, torch.ldexp(torch.ones_like(peak), exponent), 1.0)
    return (t / scale).to(torch.float16), scale.to(torch.float32).reshape(1)


def _gather(plan: _Plan) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Convert every part on its device, pack all as bytes, and move them in one transfer."""
    order = sorted(plan, key=lambda name: list(_DTYPES).index(plan[name][1]))
    stored: list[tuple[str, torch.Tensor]] = []
    scales: list[tuple[str, torch.Tensor]] = []
    for name in order:
        tensor, storage = plan[name]
        if storage == "f16":
            tensor, scale = _half_scaled(tensor)
            scales.append((name, scale))
        stored.append((name, tensor.to(_DTYPES[storage][0])))
    pieces = [t.contiguous().reshape(-1).view(torch.uint8) for _, t in stored + scales]
    host = torch.cat(pieces).cpu().numpy()  # the one device -> host transfer
    host.setflags(write=False)
    parts: dict[str, np.ndarray] = {}
    offset = 0
    for name, tensor in stored:
        dtype = _DTYPES[plan[name][1]][1]
        parts[name] = np.frombuffer(host, dtype, tensor.numel(), offset).reshape(tensor.shape)
        offset += tensor.numel() * tensor.element_size()
    scale_values = np.frombuffer(host, np.float32, len(scales), offset) if scales else ()
    kept_scales = {name: float(v) for (name, _), v in zip(scales, scale_values) if v != 1.0}
    return {name: parts[name] for name in plan}, kept_scales


def retain(
    t: torch.Tensor, *, sample: int = 0, budget_bytes: int = DEFAULT_BUDGET_BYTES
) -> Retained:
    """Keep a reduction of ``t[sample]`` of at most ``budget_bytes`` on the host.

    >>> import torch
    >>> kept = retain(torch.randn(4, 16), sample=2)
    >>> (kept.layout, kept.sample, kept.parts["first"].shape)
    ('vector', 2, (16,))
    """
    check_dense(t, who="retain()")
    if budget_bytes < MIN_BUDGET_BYTES:
        raise ValueError(
            f"budget_bytes={budget_bytes} is too small; use at least {MIN_BUDGET_BYTES}"
        )
    head = dict(shape=tuple(t.shape), dtype=str(t.dtype).removeprefix("torch."))
    if t.numel() == 0:
        return Retained("empty", **head, sample=None, parts=MappingProxyType({}),
                        scales=MappingProxyType({}))  # fmt: skip
    with torch.no_grad():
        x, kept_sample, note = _select(t.detach(), sample)
        layout = _layout_of(t.dim())
        plan = None
        if layout != "vector":
            plan = _RETAINERS[layout](_as_float(x), budget_bytes)
        if plan is None:  # a vector by shape, or too many channels for the budget
            if layout != "vector":
                note = f"{note + '; ' if note else ''}too many channels for the budget"
            layout, plan = "vector", _retain_vector(x, budget_bytes)
        parts, scales = _gather(plan)
    return Retained(layout, **head, sample=kept_sample, parts=MappingProxyType(parts),
                    scales=MappingProxyType(scales), note=note)  # fmt: skip


# --------------------------------------------------------------------------------------------
# colormaps (256 x RGB lookup tables, interpolated between a few anchor colours)


def _lut(anchors: list[str]) -> np.ndarray:
    rgb = np.array([[int(a[i : i + 2], 16) for i in (1, 3, 5)] for a in anchors], float)
    at = np.linspace(0.0, 1.0, len(anchors))
    grid = np.linspace(0.0, 1.0, 256)
    table = np.stack([np.interp(grid, at, rgb[:, c]) for c in range(3)], axis=1)
    table = np.rint(table).astype(np.uint8)
    table.setflags(write=False)
    return table


#: perceptually uniform dark-blue -> green -> yellow (viridis' anchor colours), for unsigned data
VIRIDIS = _lut(["#440154", "#482878", "#3e4989", "#31688e", "#26828e",
                "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"])  # fmt: skip
#: blue -> white -> red, centred between codes 127 and 128, for data straddling 0
DIVERGING = _lut(["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fddbc7", "#ef8a62", "#b2182b"])


# --------------------------------------------------------------------------------------------
# views


@dataclass(frozen=True, slots=True, eq=False)
class View:
    """A small quantised image of retained data, ready for the wire or a PNG.

    >>> import numpy as np
    >>> v = View("mean", np.zeros((2, 3), np.uint8), 0.0, 1.0, False, ("y", "x"))
    >>> v.to_png()[:4]
    b'\\x89PNG'
    """

    kind: str  # which view, e.g. "grid", "channel", "tokens"
    data: np.ndarray  # uint8: (h, w) for a map or strip, (n, h, w) for a grid of tiles
    vmin: float  # the value that code 0 stands for
    vmax: float  # the value that code 255 stands for (codes are linear in between)
    signed: bool  # data straddle 0: use a diverging map centred on 0 (vmin == -vmax)
    axes: tuple[str, str]  # labels of the two image axes, rows first
    labels: tuple[str, ...] | None = None  # per-tile (grid) or per-column (topk) labels
    channels: tuple[int, ...] | None = None  # the channel shown in each tile / the view
    note: str | None = None  # how the data were reduced, e.g. "pooled 512x512 -> 32x32"

    def to_png(self, colormap: bool = True) -> bytes:
        """PNG bytes; grids are tiled in rows with a transparent 1-px gap between tiles."""
        from PIL import Image

        tiles = self.data if self.data.ndim == 3 else self.data[None]
        n, h, w = tiles.shape
        cols = max(1, math.ceil(math.sqrt(n)))
        rows = max(1, math.ceil(n / cols))
        table = (DIVERGING if self.signed else VIRIDIS) if colormap else None
        depth = 4 if colormap else 2  # RGBA or grey + alpha
        canvas = np.zeros((rows * (h + 1) - 1, cols * (w + 1) - 1, depth), np.uint8)
        pixels = table[tiles] if table is not None else tiles[..., None]
        for i in range(n):  # at most a few dozen tiles
            r, c = divmod(i, cols)
            y, x = r * (h + 1), c * (w + 1)
            canvas[y : y + h, x : x + w, :-1] = pixels[i]
            canvas[y : y + h, x : x + w, -1] = 255
        buffer = io.BytesIO()
        Image.fromarray(canvas, "RGBA" if colormap else "LA").save(buffer, format="PNG")
        return buffer.getvalue()


#: percentiles that set a view's range (robust to a few extreme values)
_LOW_PCT, _HIGH_PCT, _PCT_SAMPLE = 0.5, 99.5, 1 << 16


def _quantise(values: np.ndarray) -> tuple[np.ndarray, float, float, bool]:
    """uint8 codes and (vmin, vmax, signed) from robust percentiles; NaN -> code 0."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.zeros(values.shape, np.uint8), 0.0, 0.0, False
    step = max(1, math.ceil(finite.size / _PCT_SAMPLE))
    sub = finite[::step]  # "lower"/"higher": with few values the range is their min/max
    lo = float(np.percentile(sub, _LOW_PCT, method="lower"))
    hi = float(np.percentile(sub, _HIGH_PCT, method="higher"))
    signed = lo < 0.0 < hi
    if signed:
        lo, hi = -max(-lo, hi), max(-lo, hi)
    span = hi - lo
    codes = np.zeros(values.shape, np.float64) if span <= 0 else (values - lo) * (255.0 / span)
    codes = np.clip(np.rint(np.nan_to_num(codes, nan=0.0)), 0, 255).astype(np.uint8)
    return codes, lo, hi, signed


def _view(kind: str, values: np.ndarray, axes: tuple[str, str], **extra) -> View:
    codes, vmin, vmax, signed = _quantise(np.asarray(values, np.float64))
    return View(kind, codes, vmin, vmax, signed, axes, **extra)


_ViewFn = Callable[[Retained, "int | None"], View]
_VIEWS: dict[str, dict[str, _ViewFn]] = {
    layout: {} for layout in ("image", "sequence", "vector", "empty")
}


def _register(layout: str, kind: str) -> Callable[[_ViewFn], _ViewFn]:
    """Register a view kind for a layout; the first registered is the layout's default."""

    def add(fn: _ViewFn) -> _ViewFn:
        if kind in _VIEWS[layout]:
            raise ValueError(f"view {kind!r} is already registered for layout {layout!r}")
        _VIEWS[layout][kind] = fn
        return fn

    return add


def _tiles(kept: Retained, kind: str, channels: np.ndarray, how: str) -> View:
    grid = kept.values("grid")[channels]
    c, (h, w) = kept.parts["grid"].shape[0], kept.shape[-2:]
    return _view(kind, grid, ("y", "x"), labels=tuple(f"ch {i}" for i in channels),
                 channels=tuple(int(i) for i in channels),
                 note=f"{how} of {c} channels; {_pooled((h, w), grid.shape[1:])}")  # fmt: skip


@_register("image", "grid")
def _grid_view(kept: Retained, channel: int | None) -> View:
    order = np.argsort(-kept.values("channel_mean_abs"), kind="stable")[:_GRID_TILES]
    return _tiles(kept, "grid", order, f"top {len(order)} by mean |x|")


@_register("image", "first")
def _first_view(kept: Retained, channel: int | None) -> View:
    count = min(_GRID_TILES, kept.parts["grid"].shape[0])
    return _tiles(kept, "first", np.arange(count), f"first {count}")


@_register("image", "channel")
def _channel_view(kept: Retained, channel: int | None) -> View:
    mean_abs = kept.values("channel_mean_abs")
    c, full = mean_abs.shape[0], kept.shape[-2:]
    if channel is None:
        channel = int(np.argmax(mean_abs))
    if not (isinstance(channel, (int, np.integer)) and 0 <= channel < c):
        raise ValueError(f"channel={channel!r} is out of range for {c} channels; use 0..{c - 1}")
    top = list(kept.parts["top_channels"]) if "top_channels" in kept.parts else []
    if channel in top:
        data = kept.values("top")[top.index(channel)]
        how = f"kept sharp as one of the {len(top)} most active channels"
    else:
        data = kept.values("grid")[channel]
        how = "grid resolution" + (
            f" (not among the {len(top)} most active channels kept sharper)" if top else "")
    return _view("channel", data, ("y", "x"), labels=(f"ch {channel}",), channels=(channel,),
                 note=f"channel {channel}: {_pooled(full, data.shape)}, {how}")  # fmt: skip


@_register("image", "mean")
def _mean_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("mean")
    return _view("mean", data, ("y", "x"),
                 note=f"mean over channels; {_pooled(kept.shape[-2:], data.shape)}")  # fmt: skip


@_register("sequence", "tokens")
def _tokens_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("tokens")
    return _view("tokens", data, ("token", "feature"),
                 note=_pooled(kept.shape[-2:], data.shape))  # fmt: skip


@_register("sequence", "norms")
def _norms_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("norms")
    note = f"L2 norm per token; {_pooled(kept.shape[-2:-1], data.shape)}"
    return _view("norms", data[None], ("", "token"), note=note)


@_register("vector", "values")
def _values_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("first")
    total = math.prod(kept.shape[1:] if kept.sample is not None else kept.shape)
    return _view("values", data[None], ("", "index"), note=f"first {data.size} of {total} values")


@_register("vector", "topk")
def _topk_view(kept: Retained, channel: int | None) -> View:
    data, where = kept.values("topk_values"), kept.parts["topk_indices"]
    return _view("topk", data[None], ("", "rank"), labels=tuple(f"#{i}" for i in where),
                 note=f"{data.size} largest |x|, labelled by flat index")  # fmt: skip


def available_views(retained: Retained) -> tuple[str, ...]:
    """The view kinds ``retained`` offers, default first.

    >>> import torch
    >>> available_views(retain(torch.randn(1, 5, 8)))
    ('tokens', 'norms')
    """
    return tuple(_VIEWS[retained.layout])


def render_view(
    retained: Retained, kind: str | None = None, *, channel: int | None = None
) -> View:
    """Render one view of retained data (``kind=None``: the layout's default).

    >>> import torch
    >>> v = render_view(retain(torch.randn(3, 10)), "topk")
    >>> (v.kind, v.data.shape, v.data.dtype)
    ('topk', (1, 10), dtype('uint8'))

    ``channel`` picks the channel of the ``"channel"`` view (default: the most active one);
    other views ignore it.
    """
    views = _VIEWS[retained.layout]
    if not views:
        raise ValueError(f"a tensor of shape {retained.shape} is empty; it has no views")
    kind = next(iter(views)) if kind is None else kind
    if kind not in views:
        raise ValueError(
            f"unknown view kind {kind!r} for a {retained.layout} tensor of shape "
            f"{retained.shape}; available: {', '.join(views)}"
        )
    return views[kind](retained, channel)
