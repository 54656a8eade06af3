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

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from .image import View, make_view
from .retained import Retained

__all__ = [
    "GRID_TILES",
    "Pick",
    "available_views",
    "checked_channel",
    "render_view",
    "sharp_channel",
    "tile_channels",
]


def _pooled(before: tuple[int, ...], after: tuple[int, ...]) -> str:
    same = tuple(before) == tuple(after)
    text = "x".join(map(str, after))
    return f"{text} (full resolution)" if same else f"pooled {'x'.join(map(str, before))} -> {text}"


GRID_TILES = 16  # tiles in the grid views: one page of them


_view = make_view


class Pick(NamedTuple):
    """What a request picks inside a view kind (every field optional)."""

    channel: int | None = None  # the "channel" view: which channel (default: the most active)
    page: int | None = None  # the grid views: which page of GRID_TILES channels (default 0)
    channels: Sequence[int] | None = None  # the grid views: these channels, in this order


_ViewFn = Callable[[Retained, Pick], View]
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


def tile_channels(kept: Retained, kind: str, pick: Pick) -> tuple[np.ndarray, str, int | None]:
    """The channels of a grid view (``kind`` "grid": ranked by mean |x|; "first": in index
    order) for ``pick``: its page, or the channels it names; how they were chosen, and the
    page (None for channels named by hand)."""
    c = kept.parts["grid"].shape[0]
    if pick.channels is not None:
        chosen = [int(i) for i in pick.channels]
        if not 0 < len(chosen) <= GRID_TILES or any(not 0 <= i < c for i in chosen):
            raise ValueError(f"channels={chosen!r}: name 1 to {GRID_TILES} channels in 0..{c - 1}")
        return np.asarray(chosen, np.int64), "channels as asked", None
    pages = -(-c // GRID_TILES)
    page = 0 if pick.page is None else pick.page
    if not 0 <= page < pages:
        raise ValueError(
            f"page={page} is out of range: {c} channels make {pages} page(s) of "
            f"{GRID_TILES} (0..{pages - 1})"
        )
    at = slice(page * GRID_TILES, (page + 1) * GRID_TILES)
    if kind == "grid":
        ranked = np.argsort(-kept.values("channel_mean_abs"), kind="stable")[at]
        first, last = page * GRID_TILES + 1, page * GRID_TILES + len(ranked)
        how = f"top {len(ranked)} by mean |x|" if page == 0 else f"ranks {first}-{last} by mean |x|"
        return ranked, how, page
    chosen_first = np.arange(c)[at]
    if page == 0:
        return chosen_first, f"first {len(chosen_first)}", page
    return chosen_first, f"channels {chosen_first[0]}-{chosen_first[-1]}", page


def _tiles(kept: Retained, kind: str, pick: Pick) -> View:
    channels, how, page = tile_channels(kept, kind, pick)
    grid = kept.values("grid")[channels]
    c, (h, w) = kept.parts["grid"].shape[0], kept.shape[-2:]
    return _view(
        kind,
        grid,
        ("y", "x"),
        labels=tuple(f"ch {i}" for i in channels),
        channels=tuple(int(i) for i in channels),
        note=f"{how} of {c} channels; {_pooled((h, w), grid.shape[1:])}",
        page=page,
        pages=-(-c // GRID_TILES) if page is not None else None,
    )


@_register("image", "grid")
def _grid_view(kept: Retained, pick: Pick) -> View:
    return _tiles(kept, "grid", pick)


@_register("image", "first")
def _first_view(kept: Retained, pick: Pick) -> View:
    return _tiles(kept, "first", pick)


def sharp_channel(kept: Retained, channel: int) -> tuple[np.ndarray, bool]:
    """One channel's map: the sharp copy when it is among the most active channels (True),
    else its grid tile (False)."""
    top = list(kept.parts["top_channels"]) if "top_channels" in kept.parts else []
    if channel in top:
        return kept.values("top")[top.index(channel)], True
    return kept.values("grid")[channel], False


def checked_channel(kept: Retained, channel: int | None) -> int:
    """``channel``, or the most active one for None; a ValueError naming the range when it
    is not a channel of ``kept``."""
    mean_abs = kept.values("channel_mean_abs")
    c = mean_abs.shape[0]
    if channel is None:
        return int(np.argmax(mean_abs))
    if not (isinstance(channel, (int, np.integer)) and 0 <= channel < c):
        raise ValueError(f"channel={channel!r} is out of range for {c} channels; use 0..{c - 1}")
    return int(channel)


@_register("image", "channel")
def _channel_view(kept: Retained, pick: Pick) -> View:
    channel = checked_channel(kept, pick.channel)
    top = len(kept.parts["top_channels"]) if "top_channels" in kept.parts else 0
    data, sharp = sharp_channel(kept, channel)
    if sharp:
        how = f"kept sharp as one of the {top} most active channels"
    else:
        how = "grid resolution" + (
            f" (not among the {top} most active channels kept sharper)" if top else ""
        )
    return _view(
        "channel",
        data,
        ("y", "x"),
        labels=(f"ch {channel}",),
        channels=(channel,),
        note=f"channel {channel}: {_pooled(kept.shape[-2:], data.shape)}, {how}",
    )


@_register("image", "mean")
def _mean_view(kept: Retained, pick: Pick) -> View:
    data = kept.values("mean")
    return _view(
        "mean", data, ("y", "x"), note=f"mean over channels; {_pooled(kept.shape[-2:], data.shape)}"
    )


@_register("sequence", "tokens")
def _tokens_view(kept: Retained, pick: Pick) -> View:
    data = kept.values("tokens")
    return _view("tokens", data, ("token", "feature"), note=_pooled(kept.shape[-2:], data.shape))


@_register("sequence", "norms")
def _norms_view(kept: Retained, pick: Pick) -> View:
    data = kept.values("norms")
    note = f"L2 norm per token; {_pooled(kept.shape[-2:-1], data.shape)}"
    return _view("norms", data[None], ("", "token"), note=note)


@_register("vector", "values")
def _values_view(kept: Retained, pick: Pick) -> View:
    data = kept.values("first")
    total = math.prod(kept.shape[1:] if kept.sample is not None else kept.shape)
    return _view("values", data[None], ("", "index"), note=f"first {data.size} of {total} values")


@_register("vector", "topk")
def _topk_view(kept: Retained, pick: Pick) -> View:
    data, where = kept.values("topk_values"), kept.parts["topk_indices"]
    return _view(
        "topk",
        data[None],
        ("", "rank"),
        labels=tuple(f"#{i}" for i in where),
        note=f"{data.size} largest |x|, labelled by flat index",
    )


def available_views(retained: Retained) -> tuple[str, ...]:
    """The view kinds ``retained`` offers, default first.

    >>> import torch
    >>> from neural_flow_widget.capture.retained import retain
    >>> available_views(retain(torch.randn(1, 5, 8)))
    ('tokens', 'norms')
    """
    return tuple(_VIEWS[retained.layout])


def render_view(
    retained: Retained,
    kind: str | None = None,
    *,
    channel: int | None = None,
    page: int | None = None,
    channels: Sequence[int] | None = None,
) -> View:
    """Render one view of retained data (``kind=None``: the layout's default).

    >>> import torch
    >>> from neural_flow_widget.capture.retained import retain
    >>> v = render_view(retain(torch.randn(3, 10)), "topk")
    >>> (v.kind, v.data.shape, v.data.dtype)
    ('topk', (1, 10), dtype('uint8'))

    ``channel`` picks the channel of the ``"channel"`` view (default: the most active one);
    ``page`` the page of :data:`GRID_TILES` channels of the grid views (``"grid"``: ranked by
    mean |x|; ``"first"``: in index order), or ``channels`` their channels by hand (run B
    shown with run A's tiles); other views ignore them.
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
    return views[kind](retained, Pick(channel, page, channels))
