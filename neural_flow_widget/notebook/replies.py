"""What answers a click: the records of one stage (or model input / output) that a
``_stage_data`` request asks for, read from the Flow (or from two, comparing runs) and written
by :mod:`neural_flow_widget.wire`. The live widget and the offline page's baked replies both
answer through here.

    >>> import torch, neural_flow_widget as nfw
    >>> flow = nfw.trace(torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.ones(1, 4))
    >>> reply, buffers = stage_reply(flow, {"stage": "0"})
    >>> reply["ok"], reply["summaries"][0]["shape"], reply["views"]
    (True, [1, 4], ['values', 'topk'])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import wire
from ..capture.attention.maps import AttentionMap, Shown, Window
from ..capture.difference import attention_difference
from ..capture.readings import named_tokens
from ..compare import stage_difference
from ..graph import Flow

__all__ = ["Refine", "Vocab", "answer", "difference_reply", "stage_reply"]

#: names token ids: a tokenizer's ``convert_ids_to_tokens``
Vocab = Callable[[list[int]], list[str]]
#: map ``index`` of a stage over a window, made again at full resolution (a live kernel
#: runs the model again), or why it cannot be
Refine = Callable[[str, int, Window], "AttentionMap | str"]
Attention = tuple[AttentionMap, Shown, np.ndarray, int | None]


def answer(
    flow: Flow,
    flow_b: Flow | None,
    raw: object,
    tokens: list[str] | None = None,
    vocab: Vocab | None = None,
    refine: Refine | None = None,
) -> tuple[wire.Reply, list[bytes]]:
    """The reply to a request of the widget's runs: ``"run"`` null / ``"a"`` this run, ``"b"``
    the compared run, ``"diff"`` A - B. Never raises: a failure is an error reply."""
    request = wire.parse_request(raw)
    if not isinstance(request, wire.StageRequest):
        return request, []
    try:
        if request.run in ("b", "diff") and flow_b is None:
            return wire.error_reply(request.stage, "there is no run B: compare first"), []
        if request.run == "b" and flow_b is not None:
            return stage_reply(flow_b, request, tokens, vocab)
        if request.run == "diff" and flow_b is not None:
            return difference_reply(flow, flow_b, request, tokens, vocab)
        return stage_reply(flow, request, tokens, vocab, refine)
    except Exception as error:  # a reply, never a kernel traceback or a hung spinner
        return wire.error_reply(request.stage, f"{type(error).__name__}: {error}"), []


def stage_reply(
    flow: Flow,
    raw: object,
    tokens: list[str] | None = None,
    vocab: Vocab | None = None,
    refine: Refine | None = None,
) -> tuple[wire.Reply, list[bytes]]:
    """The reply to a ``_stage_data`` request about ``flow``. A bad request (unknown stage,
    view kind, channel or head) gets ``{"ok": false, "error": ...}``, never a raise.
    ``vocab`` names token ids in the views of ids and of a predicted next token.
    ``refine``, where the model can run again (a live kernel), makes a map's window exact
    where the run kept block means and the window is small enough to show every position
    (the kept blocks are shown where it cannot)."""
    request = raw if isinstance(raw, wire.StageRequest) else wire.parse_request(raw)
    if not isinstance(request, wire.StageRequest):
        return request, []
    stage_id = request.stage
    end = stage_id in flow.inputs or stage_id in flow.outputs  # a model input or output
    try:
        error_of = None if end else flow.stage(stage_id).error
    except KeyError as error:
        return wire.error_reply(stage_id, str(error.args[0])), []
    if flow.capture is None:
        return wire.error_reply(stage_id, "this flow was traced with capture=False: no data"), []
    captured = flow.capture.sample
    if request.sample not in (None, captured):
        return wire.error_reply(
            stage_id,
            f"sample {request.sample} was not captured; trace with "
            f"sample={request.sample} to see it (captured: {captured})",
        ), []
    if request.of == "grad":
        return _gradient_reply(flow, request, tokens)
    try:
        _, items = flow.captured(stage_id)
    except ValueError as error:
        if error_of is None:
            return wire.error_reply(stage_id, str(error)), []
        items = []
    views = list(flow.views(stage_id)) if items else []
    view = None
    try:
        if views:
            view = named_tokens(
                flow.view(
                    stage_id,
                    request.view,
                    channel=request.channel,
                    page=request.page,
                    channels=request.channels,
                ),
                vocab,
            )
        elif request.view is not None:
            return wire.error_reply(stage_id, f"stage {stage_id!r} has no views"), []
        attention = []
        for index, m in enumerate(flow.attention(stage_id)):
            fine = _refined(m, request.window, stage_id, index, refine)
            attention.append(_shown(m, request.head, request.window, fine))
        readout = _readout(flow, request, vocab) if request.readout is not None else None
    except ValueError as error:
        return wire.error_reply(stage_id, str(error)), []
    summaries = [(item.leaf, item.summary) for item in items]
    return wire.encode_reply(
        stage_id, summaries, views, view, attention, tokens, error_of, readout=readout
    )


def _gradient_reply(
    flow: Flow, request: wire.StageRequest, tokens: list[str] | None
) -> tuple[wire.Reply, list[bytes]]:
    """The reply about the gradient of a stage's output (``"of": "grad"``): its summaries
    (with their norms) and a view of it, as of the output itself; no attention."""
    stage_id = request.stage
    try:
        summaries = [(str(i), s) for i, s in enumerate(flow.grad(stage_id))]
        views = list(flow.grad_views(stage_id))
        view = None
        if views:
            view = flow.grad_view(
                stage_id,
                request.view,
                channel=request.channel,
                page=request.page,
                channels=request.channels,
            )
    except ValueError as error:
        return wire.error_reply(stage_id, str(error)), []
    return wire.encode_reply(stage_id, summaries, views, view, [], tokens, None, of="grad")


def _readout(flow: Flow, request: wire.StageRequest, vocab: Vocab | None) -> wire.ReadoutMessage:
    """The logit lens of a stage (``"readout": k``), at every position or at one."""
    assert request.readout is not None
    found = flow.readout(request.stage, k=request.readout, position=request.position)
    ids = [[int(i) for i in row] for row in found.ids]
    names = [vocab(row) for row in ids] if vocab is not None else None
    return {
        "k": request.readout,
        "position": request.position,
        "ids": ids,
        "probs": [[float(p) for p in row] for row in found.probs],
        "names": names,
    }


def difference_reply(
    flow_a: Flow,
    flow_b: Flow,
    raw: object,
    tokens: list[str] | None = None,
    vocab: Vocab | None = None,
) -> tuple[wire.Reply, list[bytes]]:
    """The reply to a request with ``"run": "diff"``: A - B of the view it asks for
    (:func:`~neural_flow_widget.compare.stage_difference`) and of the stage's attention maps,
    signed; no summaries. Never raises."""
    request = raw if isinstance(raw, wire.StageRequest) else wire.parse_request(raw)
    if not isinstance(request, wire.StageRequest):
        return request, []
    stage_id = request.stage
    try:
        views = list(flow_a.views(stage_id))
        view = None
        if views:
            diff = stage_difference(
                flow_a,
                flow_b,
                stage_id,
                request.view,
                channel=request.channel,
                page=request.page,
                channels=request.channels,
            )
            view = named_tokens(diff, vocab)
        maps = attention_difference(flow_a.attention(stage_id), flow_b.attention(stage_id))
        attention = [_shown(m, request.head, request.window) for m in maps]
    except (ValueError, KeyError) as error:
        return wire.error_reply(stage_id, str(error.args[0]) if error.args else str(error)), []
    return wire.encode_reply(stage_id, [], views, view, attention, tokens, None, run="diff")


def _shown(
    m: AttentionMap, head: int | None, window: object, fine: AttentionMap | None = None
) -> Attention:
    """What the wire carries of one map: the map, what is shown of it, every head pooled."""
    return m, m.shown(head, window, fine), m.heads_grid(), head


def _refined(
    m: AttentionMap, window: object, stage_id: str, index: int, refine: Refine | None
) -> AttentionMap | None:
    """Map ``index`` of the stage over ``window``, made exact by ``refine``, where ``m`` keeps
    block means over it and every position of it fits on the wire; else None."""
    wanted = m.to_refine(window) if refine is not None else None
    if wanted is None or refine is None:
        return None
    fine = refine(stage_id, index, wanted)
    return fine if isinstance(fine, AttentionMap) else None
