"""The stage replies of the wire format (message 2 of :mod:`neural_flow_widget.wire`, whose
docstring is the reference): what a click on a stage, or on a model input or output, gets
back. ``js/src/wire_reply.ts`` reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypedDict

import numpy as np

GRID_SIDE = 64  # attention heads grid: each head pooled to at most this side
MAP_SIDE = 256  # an attention map on the wire: at most this many rows and columns


class Buffer(TypedDict):
    shape: list[int]
    buffer: int  # index into the reply's buffers


class SummaryMessage(TypedDict):
    leaf: str | None
    shape: list[int]
    dtype: str
    device: str
    kind: str
    numel: int
    stats: dict[str, float | int | None]
    sampled: int | None
    hist: dict[str, Any] | None  # {"lo", "hi", "bins", "buffer"}: float64 counts
    values: list[list[Any]] | None
    error: str | None


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


def finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def error_reply(stage: Any, message: str) -> tuple[Reply, list[bytes]]:
    return {"ok": False, "stage": stage if isinstance(stage, str) else None, "error": message}, []


def encode_stage_reply(
    flow: Any,
    request: Any,
    tokens: list[str] | None = None,
    vocab: Callable[[list[int]], list[str]] | None = None,
    refine: Callable[[str, int, tuple[int, int, int, int]], Any] | None = None,
) -> tuple[Reply, list[bytes]]:
    """The reply to a ``_stage_data`` request: JSON plus binary buffers. A bad request (unknown
    stage, view kind, channel or head) gets ``{"ok": false, "error": ...}``, never a raise.
    ``vocab`` names token ids (a tokenizer's ``convert_ids_to_tokens``) in the views of ids
    and of a predicted next token. ``refine(stage, index, window)``, where the model can run
    again (a live kernel), makes a map's window exact where the run kept block means and the
    window is small enough to show every position (an AttentionMap of the window, or a str:
    why not; the kept blocks are shown then)."""
    if not isinstance(request, dict) or not isinstance(request.get("stage"), str):
        return error_reply(None, 'a request needs a stage id: {"stage": "enc1"}')
    stage_id = request["stage"]
    end = stage_id in flow.inputs or stage_id in flow.outputs  # a model input or output
    try:
        error_of = None if end else flow.stage(stage_id).error
    except KeyError as error:
        return error_reply(stage_id, str(error.args[0]))
    if flow.capture is None:
        return error_reply(stage_id, "this flow was traced with capture=False: no data")
    buffers: list[bytes] = []
    sample = request.get("sample", 0)
    captured_sample = getattr(flow.capture, "sample", 0)
    if sample not in (None, captured_sample):
        return error_reply(
            stage_id,
            f"sample {sample} was not captured; trace with "
            f"sample={sample} to see it (captured: {captured_sample})",
        )
    try:
        summaries = [_summary(s, buffers) for s in flow.summary(stage_id)]
    except ValueError as error:
        summaries = []
        if error_of is None:
            return error_reply(stage_id, str(error))
    views = list(flow.capture.views(flow, stage_id)) if summaries else []
    view = None
    kind = request.get("view")
    picked = _picks(request)
    if isinstance(picked, str):
        return error_reply(stage_id, picked)
    if views:
        try:
            view = _view(_named(flow.view(stage_id, kind, **picked), vocab), buffers)
        except ValueError as error:
            return error_reply(stage_id, str(error))
    elif kind is not None:
        return error_reply(stage_id, f"stage {stage_id!r} has no views")
    try:
        window = request.get("window")
        attention = []
        for i, m in enumerate(flow.attention(stage_id)):
            fine = _finer(m, window, stage_id, i, refine) if refine else None
            attention.append(_attention(m, request.get("head"), buffers, window, fine))
    except ValueError as error:
        return error_reply(stage_id, str(error))
    reply: Reply = {
        "ok": True,
        "stage": stage_id,
        "summaries": summaries,
        "views": views,
        "view": view,
        "attention": attention,
        "tokens": tokens,
        "error": error_of,
    }
    return reply, buffers


def _picks(request: dict) -> dict[str, Any] | str:
    """The view-picking fields of a request (channel, page, channels), or what is wrong."""
    for name in ("view", "channel", "head", "page"):
        value = request.get(name)
        if value is not None and not isinstance(value, str if name == "view" else int):
            return f"{name}={value!r} has the wrong type"
    channels = request.get("channels")
    if channels is not None and not (
        isinstance(channels, list) and all(isinstance(c, int) for c in channels)
    ):
        return f"channels={channels!r}: expected a list of channel indices"
    return {"channel": request.get("channel"), "page": request.get("page"), "channels": channels}


def encode_difference_reply(
    flow_a: Any,
    flow_b: Any,
    request: Any,
    tokens: list[str] | None = None,
    vocab: Callable[[list[int]], list[str]] | None = None,
) -> tuple[Reply, list[bytes]]:
    """The reply to a ``_stage_data`` request with ``"run": "diff"``: A - B of the view it
    asks for (:func:`neural_flow_widget.capture.difference.stage_difference`) and of the
    stage's attention maps, signed; no summaries. Never raises."""
    from ..capture.difference import attention_difference, stage_difference

    if not isinstance(request, dict) or not isinstance(request.get("stage"), str):
        return error_reply(None, 'a request needs a stage id: {"stage": "enc1"}')
    stage_id = request["stage"]
    picked = _picks(request)
    if isinstance(picked, str):
        return error_reply(stage_id, picked)
    buffers: list[bytes] = []
    try:
        views = list(flow_a.views(stage_id))
        view = None
        if views:
            diff = stage_difference(flow_a, flow_b, stage_id, request.get("view"), **picked)
            view = _view(_named(diff, vocab), buffers)
        maps = attention_difference(flow_a.attention(stage_id), flow_b.attention(stage_id))
        window = request.get("window")
        attention = [_attention(m, request.get("head"), buffers, window) for m in maps]
    except (ValueError, KeyError) as error:
        return error_reply(stage_id, str(error.args[0]) if error.args else str(error))
    reply: Reply = {
        "ok": True,
        "stage": stage_id,
        "run": "diff",
        "summaries": [],
        "views": views,
        "view": view,
        "attention": attention,
        "tokens": tokens,
        "error": None,
    }
    return reply, buffers


def _add(buffers: list[bytes], array: np.ndarray) -> int:
    buffers.append(np.ascontiguousarray(array).tobytes())
    return len(buffers) - 1


def _summary(s: Any, buffers: list[bytes]) -> SummaryMessage:
    hist = None
    if s.hist_counts is not None and len(s.hist_counts):
        hist = {
            "lo": finite_or_none(s.hist_lo),
            "hi": finite_or_none(s.hist_hi),
            "bins": len(s.hist_counts),
            "buffer": _add(buffers, np.asarray(s.hist_counts, dtype="<f8")),
        }
    return {
        "leaf": getattr(s, "leaf", None),
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
        "hist": hist,
        "values": [[_plain(v), int(n)] for v, n in s.values] if s.values else None,
        "error": s.error,
    }


def _plain(value: Any) -> Any:
    return bool(value) if isinstance(value, (bool, np.bool_)) else int(value)


def _named(v: Any, vocab: Callable[[list[int]], list[str]] | None) -> Any:
    """A view of token ids or of a next token with the ids named by ``vocab``."""
    if vocab is None or not v.labels or v.kind not in ("ids", "next token"):
        return v
    if v.kind == "ids":  # (A - B: "3 → 5" where the runs' ids differ)
        parts = [label.split(" → ") for label in v.labels]
        names = vocab([int(i) for ids in parts for i in ids])
        at, labels = 0, []
        for ids in parts:
            labels.append(" → ".join(names[at : at + len(ids)]))
            at += len(ids)
        return replace(v, labels=tuple(labels))
    names = vocab([int(i) for i in v.channels])
    odds = [label.partition(": ")[2] for label in v.labels]
    return replace(v, labels=tuple(f"{name}: {p}" for name, p in zip(names, odds)))


def _view(v: Any, buffers: list[bytes]) -> ViewMessage:
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


def _finer(m: Any, window: Any, stage_id: str, index: int, refine: Callable[..., Any]) -> Any:
    """Map ``index`` of the stage over ``window``, made exact by ``refine``, where ``m`` keeps
    block means over it and every position of it fits on the wire; else None."""
    if m.pool == (1, 1) or not isinstance(window, list) or len(window) != 4:
        return None
    q0, q1, k0, k1 = window
    if q1 - q0 > MAP_SIDE or k1 - k0 > MAP_SIDE:
        return None
    _window(m.weights[0], m, window)  # (a window out of range is refused as ever)
    fine = refine(stage_id, index, (q0, q1, k0, k1))
    return fine if getattr(fine, "weights", None) is not None else None


def _attention(
    m: Any, head: int | None, buffers: list[bytes], window: Any = None, fine: Any = None
) -> AttentionMessage:
    """One map's message: ``m`` over ``window``, or ``fine`` (that window, exact) if given."""
    weights = np.asarray(m.weights, dtype="<f4")
    heads = weights.shape[0]
    if head is not None and not 0 <= head < heads:
        raise ValueError(
            f"head={head} is out of range: this attention call has {heads} heads (0..{heads - 1})"
        )
    if fine is not None:
        exact = np.asarray(fine.weights, dtype="<f4")
        shown = np.ascontiguousarray(exact[head] if head is not None else exact.mean(axis=0))
        covered, pool = list(window), [1, 1]
    else:
        chosen = weights[head] if head is not None else weights.mean(axis=0)
        shown, covered, pool = _window(chosen, m, window)
    grid = m.heads_grid(GRID_SIDE)
    return {
        "heads": heads,
        "q_len": m.q_len,
        "k_len": m.k_len,
        "pool": pool,
        "source": m.source,
        "causal": bool(m.causal),
        "head": head,
        "window": covered,
        "map": {"shape": list(shown.shape), "buffer": _add(buffers, shown)},
        "grid": {"shape": list(grid.shape), "buffer": _add(buffers, grid)},
    }


def _window(chosen: np.ndarray, m: Any, window: Any) -> tuple[np.ndarray, list[int], list[int]]:
    """The part of a map (rows, columns of block means of ``m.pool`` positions) that covers
    ``window`` = [q0, q1, k0, k1] (positions; None: all of it), pooled further to at most
    MAP_SIDE a side (exact block means, a short last block weighed by its size); the
    positions it covers, and the positions per row and column."""
    pq, pk = (int(f) for f in m.pool)
    if window is None:
        q0, q1, k0, k1 = 0, m.q_len, 0, m.k_len
    elif (
        not isinstance(window, list)
        or len(window) != 4
        or not all(isinstance(v, int) for v in window)
        or not (0 <= window[0] < window[1] <= m.q_len and 0 <= window[2] < window[3] <= m.k_len)
    ):
        raise ValueError(
            f"window={window!r}: expected [q0, q1, k0, k1] with 0 <= q0 < q1 <= {m.q_len} "
            f"and 0 <= k0 < k1 <= {m.k_len}"
        )
    else:
        q0, q1, k0, k1 = window
    r0, r1, c0, c1 = q0 // pq, -(-q1 // pq), k0 // pk, -(-k1 // pk)
    part = chosen[r0:r1, c0:c1]
    covered = [r0 * pq, min(r1 * pq, m.q_len), c0 * pk, min(c1 * pk, m.k_len)]
    fq, fk = -(-part.shape[0] // MAP_SIDE), -(-part.shape[1] // MAP_SIDE)
    if fq > 1 or fk > 1:
        part = _block_means(part, covered[0], covered[1], pq, fq, axis=0)
        part = _block_means(part, covered[2], covered[3], pk, fk, axis=1)
    return np.ascontiguousarray(part, dtype="<f4"), covered, [pq * fq, pk * fk]


def _block_means(part: np.ndarray, lo: int, hi: int, size: int, f: int, axis: int) -> np.ndarray:
    """Means of ``f`` neighbouring blocks along ``axis``, each weighed by how many positions
    it holds (blocks of ``size`` from ``lo``; the last ends at ``hi``)."""
    if f == 1:
        return part
    n = part.shape[axis]
    sizes = np.full(n, size, np.float64)
    sizes[-1] = hi - lo - size * (n - 1)
    starts = np.arange(0, n, f)
    shape = [1, 1]
    shape[axis] = n
    total = np.add.reduceat(part * sizes.reshape(shape), starts, axis=axis)
    count = np.add.reduceat(sizes, starts).reshape([-1, 1] if axis == 0 else [1, -1])
    return total / count
