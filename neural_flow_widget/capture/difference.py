"""A - B: one view of a stage in two runs, subtracted, from what capture kept of each.

>>> import torch
>>> from neural_flow_widget.capture.retained import retain
>>> a, b = retain(torch.ones(1, 4, 8, 8)), retain(torch.zeros(1, 4, 8, 8))
>>> d = difference_view(a, b, "mean")
>>> (d.kind, d.signed, d.vmin, d.vmax, d.note.split(";")[0])
('mean', True, -1.0, 1.0, 'A - B')

The two runs (:func:`neural_flow_widget.compare`) are subtracted view by view on their
retained values: the same channels of a grid (those run A shows, on its page), the same
channel (at the sharper resolution when both kept it sharp), the channel mean, the token map,
the per-token norms, the first values. Colours are diverging around 0 on a symmetric robust
range (red: A is larger). The top-k view has no A - B: each run's largest values sit at
indices of their own. Readings of the model's ends are compared in :mod:`.readings`; the
input image on its values (the mean over its channels), not on its colours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .image import View, make_view
from .meaning import Meaning
from .readings import reading_difference
from .retained import Retained
from .views import render_view, sharp_channel

__all__ = ["attention_difference", "captured_difference", "difference_view"]

#: the retained part each plain view kind is made of
_PARTS = {"mean": "mean", "tokens": "tokens", "norms": "norms", "values": "first"}


def difference_view(
    a: Retained,
    b: Retained,
    kind: str | None = None,
    *,
    channel: int | None = None,
    page: int | None = None,
    channels: Any = None,
) -> View:
    """A - B of one view kind (None: the default) of two retained reductions of the same
    stage; ``channel``, ``page`` and ``channels`` pick as in :func:`.views.render_view`, in
    run A (run B is shown at the same places)."""
    if a.layout != b.layout:
        raise ValueError(
            f"A - B: the runs' outputs have different layouts ({a.layout} {a.shape} vs "
            f"{b.layout} {b.shape})"
        )
    shown = render_view(a, kind, channel=channel, page=page, channels=channels)  # (checks)
    kind = shown.kind
    extra: dict[str, Any] = {}
    if kind in ("grid", "first", "channel"):
        picked = list(shown.channels or ())
        count = b.parts["grid"].shape[0]
        if any(c >= count for c in picked):
            raise ValueError(f"A - B: run B's output has {count} channels, run A's more")
        extra = {"labels": shown.labels, "channels": shown.channels}
    if kind in ("grid", "first"):
        x, y = a.values("grid")[picked], b.values("grid")[picked]
        extra |= {"page": shown.page, "pages": shown.pages}
    elif kind == "channel":
        (x, sharp_a), (y, sharp_b) = sharp_channel(a, picked[0]), sharp_channel(b, picked[0])
        if x.shape != y.shape or sharp_a != sharp_b:  # compare at one resolution
            x, y = a.values("grid")[picked[0]], b.values("grid")[picked[0]]
    elif kind in _PARTS:
        x, y = a.values(_PARTS[kind]), b.values(_PARTS[kind])
        if kind in ("norms", "values"):
            x, y = x[None], y[None]
    else:
        raise ValueError(
            f"A - B of the {kind} view is not defined: each run's largest values sit at "
            f"indices of their own; the values view compares them place by place"
        )
    if x.shape != y.shape:
        raise ValueError(
            f"A - B: the runs kept {kind} views of different sizes ({x.shape} vs {y.shape}); "
            f"their outputs are {a.shape} and {b.shape}"
        )
    note = f"A - B; {shown.note}" if shown.note else "A - B"
    return make_view(kind, x - y, shown.axes, symmetric=True, note=note, **extra)


def captured_difference(
    who: str,
    kept_a: Retained | None,
    kept_b: Retained | None,
    kind: str | None = None,
    *,
    meanings: tuple[Meaning, Meaning | None] | None = None,
    channel: int | None = None,
    page: int | None = None,
    channels: Sequence[int] | None = None,
) -> View:
    """A - B of one captured leaf of two runs (``who`` names it in errors): the difference of
    its reading where the view asked for is the reading (``meanings``: run A's and run B's
    readings of a model end), else :func:`difference_view` of the retained values."""
    if meanings is not None and kind in (None, meanings[0].kind):
        meaning_a, meaning_b = meanings
        if meaning_b is None:
            raise ValueError(f"{who}: run B has no {meaning_a.kind} reading to compare")
        if meaning_a.kind != "image":
            return reading_difference(meaning_a, meaning_b)
        if kept_a is None or kept_b is None or kept_a.layout != "image":
            raise ValueError(f"{who}: the input values were not kept in both runs")
        mean = difference_view(kept_a, kept_b, "mean")
        note = "A - B of the input values (not their colours), mean over channels"
        return replace(mean, kind="image", note=f"{note}; {(mean.note or '').partition('; ')[2]}")
    if kept_a is None or kept_b is None:
        raise ValueError(f"{who}: no view was kept in {'A' if kept_a is None else 'B'}")
    return difference_view(kept_a, kept_b, kind, channel=channel, page=page, channels=channels)


def attention_difference(maps_a: list[Any], maps_b: list[Any]) -> list[Any]:
    """A - B of a stage's attention maps, call by call: maps whose weights are the
    difference of the probabilities (signed; heads, queries and keys must agree)."""
    if len(maps_a) != len(maps_b):
        raise ValueError(f"A - B: run A has {len(maps_a)} attention maps here, run B {len(maps_b)}")
    out = []
    for i, (ma, mb) in enumerate(zip(maps_a, maps_b)):
        if ma.weights.shape != mb.weights.shape:
            raise ValueError(
                f"A - B: attention map {i} has shape {ma.weights.shape} in A, "
                f"{mb.weights.shape} in B"
            )
        out.append(replace(ma, weights=(ma.weights - mb.weights).astype(np.float32)))
    return out
