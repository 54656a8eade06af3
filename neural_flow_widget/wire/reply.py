"""The stage replies of the wire format (message 2 of :mod:`neural_flow_widget.wire`, whose
docstring is the reference): what a click on a stage, or on a model input or output, gets
back. ``js/src/wire_reply.ts`` reads them.

This module reads requests (:func:`parse_request`) and writes replies (:func:`encode_reply`)
of records made elsewhere; it computes nothing. Which records answer a request is
:mod:`neural_flow_widget.notebook.replies`' business.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

if TYPE_CHECKING:  # (the records this module writes; it imports nothing that computes)
    from ..capture.attention.maps import AttentionMap, Shown
    from ..capture.image import View
    from ..capture.summary import Summary

__all__ = [
    "AttentionMessage",
    "Buffer",
    "ReadoutMessage",
    "Reply",
    "StageRequest",
    "SummaryMessage",
    "ViewMessage",
    "encode_reply",
    "error_reply",
    "finite_or_none",
    "parse_request",
]


class Buffer(TypedDict):
    shape: list[int]
    buffer: int  # index into the reply's buffers


class HistogramMessage(TypedDict):
    lo: float | None
    hi: float | None
    bins: int
    buffer: int  # float64 counts


class StatsMessage(TypedDict):
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    mean_abs: float | None
    zero_fraction: float | None
    nan: int
    posinf: int
    neginf: int


class SummaryMessage(TypedDict):
    leaf: str | None
    shape: list[int]
    dtype: str
    device: str
    kind: str
    numel: int
    stats: StatsMessage
    sampled: int | None
    norm: float | None  # the L2 norm over every element (exact): set for gradients, else None
    hist: HistogramMessage | None
    values: list[list[int | bool]] | None
    error: str | None
    shard: str | None  # a DTensor's: what part of it the statistics read, in words


class ViewMessage(TypedDict):
    kind: str
    shape: list[int]
    vmin: float | None
    vmax: float | None
    signed: bool
    axes: list[str]
    labels: list[str] | None
    channels: list[int] | None
    note: str | None
    buffer: int  # uint8 codes
    nonfinite: int | None  # uint8 marks: 1 NaN, 2 +Inf, 3 -Inf
    palette: str | None  # None: a ramp; "rgb"; "categorical"
    page: int | None  # grid views: this page of 16 channels, of "pages"
    pages: int | None
    clipped: list[int] | None  # finite values [below vmin, above vmax]


class AttentionMessage(TypedDict):
    heads: int
    q_len: int
    k_len: int
    pool: list[int]
    source: str
    causal: bool
    head: int | None
    window: list[int]  # [q0, q1, k0, k1]: the positions "map" covers (the whole map, or a zoom)
    map: Buffer  # float32 probabilities of one head, or the mean over heads
    grid: Buffer  # float32, every head pooled to <= GRID_SIDE x GRID_SIDE


class ReadoutMessage(TypedDict):
    k: int  # tokens per position, most likely first
    position: int | None  # the position read (null: every position, in order)
    ids: list[list[int]]  # per position, the k token ids
    probs: list[list[float]]  # per position, their probabilities
    names: list[list[str]] | None  # per position, the tokens' text (with a tokenizer)


class Reply(TypedDict, total=False):
    ok: bool
    stage: str | None
    summaries: list[SummaryMessage]
    views: list[str]
    view: ViewMessage | None
    attention: list[AttentionMessage]
    tokens: list[str] | None
    error: str | None
    run: str  # "diff" on A - B replies only
    of: str  # "grad" on replies about the gradient of the stage's output
    readout: ReadoutMessage  # the logit lens, when asked for


@dataclass(frozen=True, slots=True)
class StageRequest:
    """A ``_stage_data`` request, its fields checked for type (see the wire docstring)."""

    stage: str
    view: str | None = None
    channel: int | None = None
    head: int | None = None
    sample: int | None = None
    page: int | None = None
    channels: tuple[int, ...] | None = None
    window: tuple[int, ...] | None = None  # [q0, q1, k0, k1]; its range is the map's to check
    run: Literal["a", "b", "diff"] | None = None
    of: Literal["output", "grad"] | None = None  # the output (null) or its gradient
    readout: int | None = None  # the logit lens's top k, when asked for
    position: int | None = None  # the position the readout reads (null: every position)


def parse_request(raw: object) -> StageRequest | Reply:
    """The request in ``raw`` (a JSON object), or the error reply saying what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("stage"), str):
        return error_reply(None, 'a request needs a stage id: {"stage": "enc1"}')
    stage: str = raw["stage"]
    for name in ("view", "channel", "head", "page", "sample", "readout", "position"):
        value = raw.get(name)
        if value is not None and not _is(value, str if name == "view" else int):
            return error_reply(stage, f"{name}={value!r} has the wrong type")
    of = raw.get("of")
    if of not in (None, "output", "grad"):
        return error_reply(stage, f"of={of!r}: expected 'output' or 'grad'")
    if raw.get("readout") is not None and not 1 <= raw["readout"] <= 100:
        return error_reply(stage, f"readout={raw['readout']!r}: ask for 1 to 100 tokens")
    channels = raw.get("channels")
    if channels is not None and not (
        isinstance(channels, list) and all(_is(c, int) for c in channels)
    ):
        return error_reply(stage, f"channels={channels!r}: expected a list of channel indices")
    window = raw.get("window")
    if window is not None and not (
        isinstance(window, list) and len(window) == 4 and all(_is(v, int) for v in window)
    ):
        return error_reply(stage, f"window={window!r}: expected [q0, q1, k0, k1] (positions)")
    run = raw.get("run")
    if run not in (None, "a", "b", "diff"):
        return error_reply(stage, f"run={run!r}: expected 'a', 'b' or 'diff'")
    return StageRequest(
        stage,
        raw.get("view"),
        raw.get("channel"),
        raw.get("head"),
        raw.get("sample"),
        raw.get("page"),
        tuple(channels) if channels is not None else None,
        tuple(window) if window is not None else None,
        run,
        of,
        raw.get("readout"),
        raw.get("position"),
    )


def _is(value: object, kind: type) -> bool:
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def finite_or_none(value: float | np.floating | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def error_reply(stage: str | None, message: str) -> Reply:
    return {"ok": False, "stage": stage, "error": message}


def encode_reply(
    stage: str,
    summaries: Sequence[tuple[str, Summary]],
    views: Sequence[str],
    view: View | None,
    attention: Sequence[tuple[AttentionMap, Shown, np.ndarray, int | None]],
    tokens: list[str] | None,
    error: str | None,
    run: str | None = None,
    *,
    of: str | None = None,
    readout: ReadoutMessage | None = None,
) -> tuple[Reply, list[bytes]]:
    """The reply to a ``_stage_data`` request: JSON plus binary buffers. ``attention``: per map
    of the stage, the map, what is shown of it, its heads grid and the head shown (None: the
    mean over heads). ``summaries``: per output leaf, its path ("0", "logits") and summary."""
    buffers: list[bytes] = []
    reply: Reply = {"ok": True, "stage": stage}
    if run is not None:
        reply["run"] = run
    if of is not None:
        reply["of"] = of
    if readout is not None:
        reply["readout"] = readout
    reply |= {
        "summaries": [_summary(leaf, s, buffers) for leaf, s in summaries],
        "views": list(views),
        "view": _view(view, buffers) if view is not None else None,
        "attention": [_attention(*parts, buffers) for parts in attention],
        "tokens": tokens,
        "error": error,
    }
    return reply, buffers


def _add(buffers: list[bytes], array: np.ndarray) -> int:
    buffers.append(np.ascontiguousarray(array).tobytes())
    return len(buffers) - 1


def _summary(leaf: str, s: Summary, buffers: list[bytes]) -> SummaryMessage:
    hist: HistogramMessage | None = None
    if s.hist_counts is not None and len(s.hist_counts):
        hist = {
            "lo": finite_or_none(s.hist_lo),
            "hi": finite_or_none(s.hist_hi),
            "bins": len(s.hist_counts),
            "buffer": _add(buffers, np.asarray(s.hist_counts, dtype="<f8")),
        }
    return {
        "leaf": leaf,
        "shape": list(s.shape),
        "dtype": s.dtype,
        "device": s.device,
        "kind": s.kind,
        "numel": int(s.numel),
        "stats": {
            "min": finite_or_none(s.min),
            "max": finite_or_none(s.max),
            "mean": finite_or_none(s.mean),
            "std": finite_or_none(s.std),
            "mean_abs": finite_or_none(s.mean_abs),
            "zero_fraction": finite_or_none(s.zero_fraction),
            "nan": int(s.nan),
            "posinf": int(s.posinf),
            "neginf": int(s.neginf),
        },
        "sampled": s.sampled,
        "norm": finite_or_none(s.norm),
        "hist": hist,
        "values": [[_plain(v), int(n)] for v, n in s.values] if s.values else None,
        "error": s.error,
        "shard": s.shard,
    }


def _plain(value: object) -> int | bool:
    return bool(value) if isinstance(value, (bool, np.bool_)) else int(value)  # type: ignore[call-overload]


def _view(v: View, buffers: list[bytes]) -> ViewMessage:
    data = np.asarray(v.data, dtype=np.uint8)
    return {
        "kind": v.kind,
        "shape": list(data.shape),
        "vmin": finite_or_none(v.vmin),
        "vmax": finite_or_none(v.vmax),
        "signed": bool(v.signed),
        "axes": list(v.axes),
        "labels": list(v.labels) if v.labels else None,
        "channels": [int(c) for c in v.channels] if v.channels else None,
        "note": v.note,
        "buffer": _add(buffers, data),
        "nonfinite": _add(buffers, v.nonfinite) if v.nonfinite is not None else None,
        "palette": v.palette,
        "page": v.page,
        "pages": v.pages,
        "clipped": list(v.clipped) if v.clipped is not None else None,
    }


def _attention(
    m: AttentionMap, shown: Shown, grid: np.ndarray, head: int | None, buffers: list[bytes]
) -> AttentionMessage:
    return {
        "heads": int(m.weights.shape[0]),
        "q_len": m.q_len,
        "k_len": m.k_len,
        "pool": list(shown.pool),
        "source": m.source,
        "causal": bool(m.causal),
        "head": head,
        "window": list(shown.window),
        "map": {"shape": list(shown.weights.shape), "buffer": _add(buffers, shown.weights)},
        "grid": {"shape": list(grid.shape), "buffer": _add(buffers, grid)},
    }
