"""Render views of retained activations: small quantised images for the wire or a PNG.

>>> import torch
>>> from neural_flow_widget.capture.retained import retain
>>> kept = retain(torch.randn(2, 8, 32, 32))
>>> available_views(kept)
('grid', 'first', 'channel', 'mean')
>>> render_view(kept, "channel", channel=3).data.shape
(32, 32)

This is the render side of :mod:`.retained` (which runs inside each call): everything
here runs later, on the host, when a view is asked for. Colour ranges come from robust
percentiles of the kept values.
"""

from __future__ import annotations

import io
import json
import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .meaning import Meaning
from .retained import Retained

__all__ = [
    "CATEGORICAL",
    "DIVERGING",
    "NONFINITE",
    "VIRIDIS",
    "View",
    "available_views",
    "meaning_view",
    "render_view",
]


def _pooled(before: tuple[int, ...], after: tuple[int, ...]) -> str:
    same = tuple(before) == tuple(after)
    text = "x".join(map(str, after))
    return f"{text} (full resolution)" if same else f"pooled {'x'.join(map(str, before))} -> {text}"


_GRID_TILES = 16  # tiles in the grid views


# --------------------------------------------------------------------------------------------
# colormaps: 256 x RGB lookup tables, the same table the front end reads


def _table(name: str) -> np.ndarray:
    table = np.array(_COLORMAPS[name], dtype=np.uint8)
    table.setflags(write=False)
    return table


_COLORMAPS = json.loads((pathlib.Path(__file__).parent / "colormaps.json").read_text())
#: perceptually uniform dark-blue -> green -> yellow, for unsigned data
VIRIDIS = _table("viridis")
#: blue -> white -> red, centred between codes 127 and 128, for data straddling 0
DIVERGING = _table("diverging")
#: by :attr:`View.nonfinite` mark: (unused), NaN, +Inf, -Inf
NONFINITE = np.array(
    [[0, 0, 0], *(_COLORMAPS["nonfinite"][k] for k in ("nan", "posinf", "neginf"))], np.uint8
)
NONFINITE.setflags(write=False)
#: colours of class indices (:attr:`View.palette` ``"categorical"``), cycled beyond 20
CATEGORICAL = np.array(_COLORMAPS["categorical"]["colors"], np.uint8)
CATEGORICAL.setflags(write=False)


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
    #: uint8 like ``data``, where a value is not a number: 1 NaN, 2 +Inf, 3 -Inf (0: finite);
    #: None when every value is finite. Drawn in the colours of :data:`NONFINITE`.
    nonfinite: np.ndarray | None = None
    #: None: codes on a ramp (:data:`DIVERGING` when ``signed``, else :data:`VIRIDIS`);
    #: ``"rgb"``: ``data`` is (h, w, 3) colours as they are (an input image);
    #: ``"categorical"``: codes are class indices, coloured by :data:`CATEGORICAL`
    palette: str | None = None

    def to_png(self, colormap: bool = True) -> bytes:
        """PNG bytes; grids are tiled in rows with a transparent 1-px gap between tiles;
        NaN and +/-Inf in their own colours (:data:`NONFINITE`)."""
        from PIL import Image

        if self.palette == "rgb":
            buffer = io.BytesIO()
            Image.fromarray(np.ascontiguousarray(self.data), "RGB").save(buffer, format="PNG")
            return buffer.getvalue()
        tiles = self.data if self.data.ndim == 3 else self.data[None]
        n, h, w = tiles.shape
        cols = max(1, math.ceil(math.sqrt(n)))
        rows = max(1, math.ceil(n / cols))
        table = (DIVERGING if self.signed else VIRIDIS) if colormap else None
        if colormap and self.palette == "categorical":
            table = CATEGORICAL[np.arange(256) % len(CATEGORICAL)]
        depth = 4 if colormap else 2  # RGBA or grey + alpha
        canvas = np.zeros((rows * (h + 1) - 1, cols * (w + 1) - 1, depth), np.uint8)
        pixels = table[tiles] if table is not None else tiles[..., None]
        if self.nonfinite is not None and table is not None:
            marks = self.nonfinite if self.nonfinite.ndim == 3 else self.nonfinite[None]
            pixels = np.where(marks[..., None] > 0, NONFINITE[marks], pixels)
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


def _nonfinite(values: np.ndarray) -> np.ndarray | None:
    """:attr:`View.nonfinite` of ``values`` (None when all are finite)."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    marks = np.zeros(values.shape, np.uint8)
    marks[np.isnan(values)] = 1
    marks[np.isposinf(values)] = 2
    marks[np.isneginf(values)] = 3
    return marks


def _quantise(values: np.ndarray) -> tuple[np.ndarray, float, float, bool]:
    """uint8 codes and (vmin, vmax, signed) from robust percentiles of the finite values;
    NaN and Inf get code 0 (their marks say what they are)."""
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
    values = np.asarray(values, np.float64)
    codes, vmin, vmax, signed = _quantise(values)
    return View(kind, codes, vmin, vmax, signed, axes, **extra, nonfinite=_nonfinite(values))


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
    return _view(
        kind,
        grid,
        ("y", "x"),
        labels=tuple(f"ch {i}" for i in channels),
        channels=tuple(int(i) for i in channels),
        note=f"{how} of {c} channels; {_pooled((h, w), grid.shape[1:])}",
    )


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
            f" (not among the {len(top)} most active channels kept sharper)" if top else ""
        )
    return _view(
        "channel",
        data,
        ("y", "x"),
        labels=(f"ch {channel}",),
        channels=(channel,),
        note=f"channel {channel}: {_pooled(full, data.shape)}, {how}",
    )


@_register("image", "mean")
def _mean_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("mean")
    return _view(
        "mean", data, ("y", "x"), note=f"mean over channels; {_pooled(kept.shape[-2:], data.shape)}"
    )


@_register("sequence", "tokens")
def _tokens_view(kept: Retained, channel: int | None) -> View:
    data = kept.values("tokens")
    return _view("tokens", data, ("token", "feature"), note=_pooled(kept.shape[-2:], data.shape))


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
    return _view(
        "topk",
        data[None],
        ("", "rank"),
        labels=tuple(f"#{i}" for i in where),
        note=f"{data.size} largest |x|, labelled by flat index",
    )


def meaning_view(meaning: Meaning) -> View:
    """The view of a model input's or output's reading (:mod:`.meaning`).

    >>> import torch
    >>> from neural_flow_widget.capture.meaning import read_output
    >>> v = meaning_view(read_output(torch.full((1, 1, 4, 4), 2.0), "output:0", 0).result())
    >>> (v.kind, v.vmin, v.vmax, int(v.data[0, 0]))  # sigmoid(2) = 0.881
    ('mask', 0.0, 1.0, 225)
    """
    kind, data, note = meaning.kind, meaning.data, meaning.note
    if kind == "image":
        return View(kind, data, 0.0, 255.0, False, ("y", "x"), note=note, palette="rgb")
    if kind == "ids":
        view = _view(kind, data[None].astype(np.float64), ("", "position"), note=note)
        return replace(view, labels=tuple(str(int(i)) for i in data))
    if kind == "mask":
        codes = np.clip(np.rint(data * 255.0), 0, 255).astype(np.uint8)
        return View(kind, codes, 0.0, 1.0, False, ("y", "x"), note=note)
    if kind == "segmentation":
        present = np.unique(data)
        share = meaning.confidence.mean() if meaning.confidence is not None else float("nan")
        labels = tuple(f"class {c}" for c in range(meaning.classes))
        note += f"; {len(present)} classes present, mean winning probability {share:.0%}"
        return View(
            kind, data, 0.0, float(meaning.classes - 1), False, ("y", "x"),
            labels=labels, note=note, palette="categorical",
        )  # fmt: skip
    # probabilities, next token: a strip of the most likely, largest first
    codes = np.clip(np.rint(data[None] * 255.0), 0, 255).astype(np.uint8)
    what = "class" if kind == "probabilities" else "id"
    indices = meaning.indices if meaning.indices is not None else np.arange(data.size)
    labels = tuple(f"{what} {int(i)}: {float(p):.1%}" for i, p in zip(indices, data))
    return View(
        kind, codes, 0.0, 1.0, False, ("", "rank"), labels=labels,
        channels=tuple(int(i) for i in indices), note=note,
    )  # fmt: skip


def available_views(retained: Retained) -> tuple[str, ...]:
    """The view kinds ``retained`` offers, default first.

    >>> import torch
    >>> from neural_flow_widget.capture.retained import retain
    >>> available_views(retain(torch.randn(1, 5, 8)))
    ('tokens', 'norms')
    """
    return tuple(_VIEWS[retained.layout])


def render_view(retained: Retained, kind: str | None = None, *, channel: int | None = None) -> View:
    """Render one view of retained data (``kind=None``: the layout's default).

    >>> import torch
    >>> from neural_flow_widget.capture.retained import retain
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
