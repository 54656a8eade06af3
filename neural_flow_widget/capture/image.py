"""A view: a small quantised image of retained data (uint8 codes on a robust range, NaN and
Inf marked, clipping counted), its colour tables (one table, read by the front end too) and
its PNG. :mod:`.views` says which views a kept activation offers; this module draws none.

>>> import numpy as np
>>> v = make_view("values", np.array([[0.0, 1.0, 2.0]]), ("", "index"))
>>> (v.data.tolist(), v.vmin, v.vmax)
([[0, 128, 255]], 0.0, 2.0)
"""

from __future__ import annotations

import io
import json
import math
import pathlib
from dataclasses import dataclass

import numpy as np

__all__ = ["CATEGORICAL", "DIVERGING", "NONFINITE", "VIRIDIS", "View", "make_view"]


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
    #: the grid views: which page of :data:`GRID_TILES` channels this is, of how many (None:
    #: not paged, or channels picked by hand)
    page: int | None = None
    pages: int | None = None
    #: finite values below ``vmin`` and above ``vmax``, drawn in the end colours (the range is
    #: robust: 0.5-99.5 percentiles); None where the codes are not a clipped ramp
    clipped: tuple[int, int] | None = None

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


def nonfinite_marks(values: np.ndarray) -> np.ndarray | None:
    """:attr:`View.nonfinite` of ``values`` (None when all are finite)."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    marks = np.zeros(values.shape, np.uint8)
    marks[np.isnan(values)] = 1
    marks[np.isposinf(values)] = 2
    marks[np.isneginf(values)] = 3
    return marks


def _quantise(
    values: np.ndarray, symmetric: bool = False
) -> tuple[np.ndarray, float, float, bool, tuple[int, int]]:
    """uint8 codes, (vmin, vmax, signed) from robust percentiles of the finite values and how
    many finite values fall below / above that range; NaN and Inf get code 0 (their marks say
    what they are). ``symmetric``: always a range centred on 0 (a difference)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.zeros(values.shape, np.uint8), 0.0, 0.0, symmetric, (0, 0)
    step = max(1, math.ceil(finite.size / _PCT_SAMPLE))
    sub = finite[::step]  # "lower"/"higher": with few values the range is their min/max
    if symmetric:
        hi = float(np.percentile(np.abs(sub), _HIGH_PCT, method="higher"))
        lo, signed = -hi, True
    else:
        lo = float(np.percentile(sub, _LOW_PCT, method="lower"))
        hi = float(np.percentile(sub, _HIGH_PCT, method="higher"))
        signed = lo < 0.0 < hi
        if signed:
            lo, hi = -max(-lo, hi), max(-lo, hi)
    span = hi - lo
    if span <= 0:  # constant (a difference of 0: the middle of the diverging map)
        fill = 128.0 if symmetric else 0.0
        codes = np.full(values.shape, fill, np.float64)
    else:
        codes = (values - lo) * (255.0 / span)
    codes = np.clip(np.rint(np.nan_to_num(codes, nan=0.0)), 0, 255).astype(np.uint8)
    clipped = (int((finite < lo).sum()), int((finite > hi).sum()))
    return codes, lo, hi, signed, clipped


def make_view(
    kind: str, values: np.ndarray, axes: tuple[str, str], *, symmetric: bool = False, **extra
) -> View:
    """A :class:`View` of float ``values``: codes on a robust range (0.5-99.5 percentiles;
    ``symmetric``: centred on 0, for differences), NaN and Inf marked, clipping counted.

    >>> v = make_view("values", np.array([[-1.0, 0.0, 3.0]]), ("", "index"), symmetric=True)
    >>> (v.signed, v.vmin, v.vmax, v.clipped)
    (True, -3.0, 3.0, (0, 0))
    """
    values = np.asarray(values, np.float64)
    codes, vmin, vmax, signed, clipped = _quantise(values, symmetric)
    return View(
        kind, codes, vmin, vmax, signed, axes, **extra,
        nonfinite=nonfinite_marks(values), clipped=clipped,
    )  # fmt: skip
