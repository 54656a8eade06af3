"""Self-contained, offline HTML pages of a Flow: the JS inlined, stage data baked in.

The page holds the graph message, the stage replies the kernel would have sent (one per stage,
default view, within a byte budget) and their binary buffers packed in one base64 blob: an
HTML file can carry bytes no other way. Nothing is fetched: no CDN, no network.

What a lecture needs comes first (:func:`page_order`): the model's inputs and outputs, every
attention stage's maps, the stages chosen with ``stages=``, each block's view (shallowest
first), then the leaves, shallowest first (the model's own, which its first view draws, before
those inside its blocks), each depth in execution order (a later, smaller one may still fit
where an earlier did not). The attention maps travel as 16-bit codes (the wire's
``"codes"``, exact to 1/65535 of each map's range) and a buffer equal to one already in the
page (a block repeats its attention's maps) is stored once, so GPT-2 small at 128 tokens and
ViT-base keep all their maps within the default 8 MB. A stage left out carries the reply that
says so, why, and the budget that would keep it; the graph's notes say how many.
"""

from __future__ import annotations

import base64
import html
import json
import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import wire
from .replies import difference_reply, stage_reply

DEFAULT_BUDGET = 8_000_000
_NOTE_ROOM = 400  # bytes kept free for the graph note that says what a page left out
_CODE_BITS = 16  # attention maps on a page: unsigned codes of this many bits


@dataclass
class Blob:
    """The page's buffers back to back, each 8-byte aligned; a buffer equal to one already
    in it is stored once (its slice is shared)."""

    data: bytearray = field(default_factory=bytearray)
    spans: dict[bytes, list[int]] = field(default_factory=dict)

    def cost(self, buffers: list[bytes]) -> int:
        """Bytes ``buffers`` would add (aligned), those already in the blob costing none."""
        new = {b: None for b in buffers if b not in self.spans}
        return sum(len(b) + (-len(b) % 8) for b in new)

    def add(self, buffer: bytes) -> list[int]:
        """The [offset, length] of ``buffer`` in the blob, added unless it is there."""
        if buffer not in self.spans:
            self.spans[buffer] = [len(self.data), len(buffer)]
            self.data += buffer
            self.data += b"\0" * (-len(self.data) % 8)  # keep every buffer 8-byte aligned
        return list(self.spans[buffer])


@dataclass(frozen=True, slots=True)
class Baked:
    """Replies baked within a budget: ``{node: {"msg", "buffers"}}``, the nodes left out
    (in page order) and what keeping every node would have cost (bytes of the page)."""

    replies: dict[str, Any]
    left_out: list[str]
    needed: int


def page_order(flow: Any) -> list[str]:
    """The nodes in the order a page keeps their data: the model's inputs and outputs, the
    stages that recorded attention, the stages chosen with ``stages=``, the other blocks
    (stages with children) shallowest first, then the leaves shallowest first (a U-Net's
    ``conv_out`` before its blocks' convolutions); each depth in execution order."""
    maps = flow.capture.maps if flow.capture is not None else {}
    attention = [flow.calls[i].id for i in sorted(maps) if i >= 0]
    chosen = [flow.calls[i].id for i in flow.selected] if flow.explicit else []
    blocks = sorted((c for c in flow.calls if not c.leaf), key=lambda c: (c.depth, c.index))
    leaves = sorted((c for c in flow.calls if c.leaf), key=lambda c: (c.depth, c.index))
    order = [*flow.inputs, *flow.outputs, *attention, *chosen, *(c.id for c in (*blocks, *leaves))]
    return list(dict.fromkeys(order))


def bake(
    flow: Any,
    tokens: list[str] | None,
    budget_bytes: int,
    vocab: Callable[[list[int]], list[str]] | None = None,
    *,
    blob: Blob | None = None,
    make: Callable[[str], tuple[Any, list[bytes]]] | None = None,
    order: list[str] | None = None,
    left_out: Callable[[str, int], str] | None = None,
) -> Baked:
    """Replies for the nodes of ``order`` (default :func:`page_order`), in that order, while
    their JSON and their buffers (as base64) fit in ``budget_bytes``. Each carries its
    default view, and offers only that one (the page has no kernel to make another); a stage
    with no data carries the error reply that says why. ``make`` (node -> reply) bakes other
    replies (run B, A - B) into the same ``blob``. ``left_out(node, bytes it needed)``, if
    given, words the error reply a node that did not fit carries instead: room for those
    words is kept for every node still to come, so each node left out says so (where the
    budget holds them all; the words charged are the longest they can be)."""
    order = page_order(flow) if order is None else order
    if make is None:

        def make(node: str) -> tuple[Any, list[bytes]]:
            return stage_reply(flow, {"stage": node}, tokens, vocab)

    blob = Blob() if blob is None else blob
    after = [0] * (len(order) + 1)  # room kept for the words of the nodes after each one
    if left_out is not None:
        for i in reversed(range(len(order))):
            longest = wire.error_reply(order[i], left_out(order[i], 10**12))
            after[i] = after[i + 1] + _entry_cost(order[i], longest)
    replies: dict[str, Any] = {}
    dropped: list[str] = []
    spent = needed = 0
    for i, node in enumerate(order):
        msg, buffers = make(node)
        if msg.get("ok"):
            view = msg.get("view")
            msg["views"] = [view["kind"]] if view else []
            buffers = _attention_codes(msg, buffers)
        cost = _entry_cost(node, msg, len(buffers)) + _base64_size(blob.cost(buffers))
        needed += cost
        if spent + cost + after[i + 1] <= budget_bytes:
            spent += cost
            replies[node] = {"msg": msg, "buffers": [blob.add(b) for b in buffers]}
            continue
        dropped.append(node)
        if left_out is not None:
            missing = wire.error_reply(node, left_out(node, cost))
            cost = _entry_cost(node, missing)
            if spent + cost <= budget_bytes:
                spent += cost
                replies[node] = {"msg": missing, "buffers": []}
    return Baked(replies, dropped, needed)


def bake_replies(
    flow: Any,
    tokens: list[str] | None,
    budget_bytes: int,
    vocab: Callable[[list[int]], list[str]] | None = None,
    *,
    blob: Blob | None = None,
    make: Callable[[str], tuple[Any, list[bytes]]] | None = None,
    order: list[str] | None = None,
) -> tuple[dict[str, Any], bytes]:
    """:func:`bake`'s replies ``{node id: {"msg": ..., "buffers": [[offset, length], ...]}}``
    and the packed buffers."""
    blob = Blob() if blob is None else blob
    baked = bake(flow, tokens, budget_bytes, vocab, blob=blob, make=make, order=order)
    return baked.replies, bytes(blob.data)


def _entry_cost(node: str, msg: Any, spans: int = 0) -> int:
    """Bytes one reply adds to the page's replies JSON, its buffers aside: the message, the
    node id, the keys and ``spans`` slices of the blob ("[offset,length]", <= 24 each)."""
    return len(_script_json(msg)) + len(_script_json(node)) + 24 + 24 * spans


def _attention_codes(msg: dict[str, Any], buffers: list[bytes]) -> list[bytes]:
    """The reply's attention maps (float32 "map" and "grid") as unsigned 16-bit codes over
    [lo, hi] (the wire's ``"codes"``), half the bytes; a map holding NaN or Inf stays float32.
    ``lo`` is 0 for probabilities, so a masked weight stays exactly 0."""
    buffers = list(buffers)
    top = (1 << _CODE_BITS) - 1
    for a in msg.get("attention") or []:
        for key in ("map", "grid"):
            spec = a.get(key)
            if not spec or "codes" in spec:
                continue
            values = np.frombuffer(buffers[spec["buffer"]], dtype="<f4")
            if values.size == 0 or not np.isfinite(values).all():
                continue
            lo, hi = min(0.0, float(values.min())), max(0.0, float(values.max()))
            scale = top / (hi - lo) if hi > lo else 0.0
            codes = np.rint((values.astype(np.float64) - lo) * scale).astype("<u2")
            buffers[spec["buffer"]] = codes.tobytes()
            spec["codes"] = {"bits": _CODE_BITS, "lo": lo, "hi": hi}
    return buffers


def bake_comparison(
    flow: Any,
    flow_b: Any,
    comparison: dict[str, Any],
    replies_a: dict[str, Any],
    blob: Blob,
    budget_bytes: int,
    tokens: list[str] | None = None,
    vocab: Callable[[list[int]], list[str]] | None = None,
) -> dict[str, Any]:
    """Run B's replies and A - B for the stages whose run A reply is baked, at run A's view
    and tiles (the same channels), half of ``budget_bytes`` each: the first divergent stage
    first, then the inputs and outputs, the divergent stages, the rest. Returns the page's
    ``{"comparison": ..., "b": {node: reply}, "diff": {node: reply}}``."""
    first = comparison.get("first")
    diverging = [flow.calls[row[0]].id for row in comparison.get("stages", []) if row[-1]]
    order = [flow.calls[first].id] if first is not None else []
    order += [*flow.inputs, *flow.outputs, *diverging, *replies_a]
    order = [n for n in dict.fromkeys(order) if n in replies_a and replies_a[n]["msg"].get("ok")]

    def request(node: str, run: str) -> dict[str, Any]:
        view = replies_a[node]["msg"].get("view") or {}
        req: dict[str, Any] = {"stage": node, "view": view.get("kind"), "run": run}
        if view.get("kind") in ("grid", "first") and view.get("channels"):
            req["channels"] = view["channels"]
        return req

    def make_b(node: str) -> tuple[Any, list[bytes]]:
        return stage_reply(flow_b, request(node, "b"), tokens, vocab)

    def make_diff(node: str) -> tuple[Any, list[bytes]]:
        return difference_reply(flow, flow_b, request(node, "diff"), tokens, vocab)

    half = budget_bytes // 2
    b = bake(flow_b, tokens, half, vocab, blob=blob, make=make_b, order=order)
    diff = bake(flow, tokens, half, vocab, blob=blob, make=make_diff, order=order)
    return {"comparison": comparison, "b": b.replies, "diff": diff.replies}


def _base64_size(n: int) -> int:
    return 4 * -(-n // 3)


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f}".removesuffix(".0")


def _size(n: int) -> str:
    return f"{_mb(n)} MB" if n >= 1e6 else f"{max(1, round(n / 1e3))} kB"


def _left_out_words(budget_bytes: int, suggest: int) -> Callable[[str, int], str]:
    """The error reply of a stage a page left out: what (on the node: the first sentence),
    why, and the budget that keeps every stage (``suggest``, the longest it can be: the
    words are charged before the page knows the number)."""

    def words(node: str, cost: int) -> str:
        return (
            f"Not in this page: over its {_mb(budget_bytes)} MB budget (this stage needs "
            f"{_size(cost)}; attention maps come first, then blocks, then leaves). Export "
            f"with budget_bytes={suggest:_} to keep every stage, or open the live widget."
        )

    return words


def _left_out_note(flow: Any, baked: Baked, budget_bytes: int, suggest: int) -> str:
    """The graph note of a page that left stages out: how many, of which kind, and the
    budget that keeps them all."""
    ends = {*flow.inputs, *flow.outputs}
    leaf = {c.id: c.leaf for c in flow.calls}
    maps = flow.capture.maps if flow.capture is not None else {}
    attention = {flow.calls[i].id for i in maps if i >= 0}
    kinds = {"attention stage": 0, "block": 0, "leaf": 0, "input or output": 0}
    for node in baked.left_out:
        if node in ends:
            kinds["input or output"] += 1
        elif node in attention:
            kinds["attention stage"] += 1
        else:
            kinds["leaf" if leaf.get(node) else "block"] += 1
    plural = {"leaf": "leaves", "input or output": "inputs and outputs"}
    which = ", ".join(
        f"{n} {kind if n == 1 else plural.get(kind, kind + 's')}" for kind, n in kinds.items() if n
    )
    total = len(page_order(flow))
    return (
        f"data left out of this page, over its {_mb(budget_bytes)} MB budget: {which} of its "
        f"{total} nodes (attention maps, then blocks, kept first). Export with "
        f"budget_bytes={suggest:_} to keep them all"
    )


def token_labels(inputs: Any, flow: Any) -> list[str] | None:
    """Labels for attention positions: the token ids of the captured sample, when the first
    model input is an integer ``(N, L)`` tensor."""
    import torch

    from ..tracing import leaves

    first = next(leaves(inputs if isinstance(inputs, (tuple, list, dict)) else (inputs,)), None)
    if first is None:
        return None
    tensor = first[1]
    if tensor.dtype.is_floating_point or tensor.dtype == torch.bool or tensor.dim() != 2:
        return None
    if tensor.is_meta:  # (shapes only: there are no ids to show)
        return None
    sample = flow.capture.sample if flow.capture is not None else 0
    if sample >= tensor.shape[0] or tensor.shape[1] > 4096:
        return None
    return [str(int(v)) for v in tensor[sample].tolist()]


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def write_html(
    flow: Any,
    path: str | pathlib.Path,
    *,
    bundle: str,
    tokens: list[str] | None = None,
    vocab: Callable[[list[int]], list[str]] | None = None,
    budget_bytes: int = DEFAULT_BUDGET,
    title: str | None = None,
    flow_b: Any = None,
    comparison: dict[str, Any] | None = None,
    intervention: dict[str, Any] | None = None,
    patching: dict[str, Any] | None = None,
) -> pathlib.Path:
    """Write the page, at most ``budget_bytes`` of it where the graph and the front end
    leave room for stage data (in :func:`page_order`; a stage beyond it carries a reply that
    says so and the budget that would keep it, and the graph's notes count them); returns
    its path. With ``comparison`` (:func:`wire.encode_comparison`) and run B's ``flow_b``,
    half of that room goes to run A's replies and half to run B's and A - B
    (:func:`bake_comparison`); ``intervention`` names run B (the widget's traitlet), and
    ``patching`` (:func:`wire.encode_patching`) colours the patched stages and gives their
    heat map, as in the widget."""
    path = pathlib.Path(path)
    title = title or f"{flow.model} — neural_flow_widget"
    graph = wire.encode_graph(flow)
    bundle = bundle.replace("</script", "<\\/script")
    fixed = len(_PAGE) + len(html.escape(title)) + len(_script_json(graph)) + _NOTE_ROOM
    fixed += len(bundle.encode("utf-8"))
    compared = comparison is not None and flow_b is not None
    fixed += len(_script_json(comparison)) if compared else 0
    fixed += len(_script_json([intervention, patching]))
    room = max(0, budget_bytes - fixed)
    blob = Blob()
    words = _left_out_words(budget_bytes, _LONGEST)
    order = page_order(flow)
    first = (comparison or {}).get("first") if compared else None
    if first is not None:  # a comparison's point: where the runs part, right after the ends
        ends = [*flow.inputs, *flow.outputs]
        order = list(dict.fromkeys([*ends, flow.calls[first].id, *order]))
    share = room // 2 if compared else room
    baked = bake(flow, tokens, share, vocab, blob=blob, order=order, left_out=words)
    replies = baked.replies
    if baked.left_out:  # the budget that keeps every stage, in whole MB
        suggest = math.ceil((fixed + (2 if compared else 1) * baked.needed) / 1e6) * 1_000_000
        for node in baked.left_out:
            msg = replies.get(node, {}).get("msg")
            if msg is not None and not msg.get("ok"):
                msg["error"] = msg["error"].replace(f"{_LONGEST:_}", f"{suggest:_}")
        note = _left_out_note(flow, baked, budget_bytes, suggest)
        graph["notes"] = [*graph["notes"], note[: _NOTE_ROOM - 8]]
    extra: dict[str, Any] | None = None
    if compared:
        spent = len(_script_json(replies)) + _base64_size(len(blob.data))
        extra = bake_comparison(
            flow, flow_b, comparison or {}, replies, blob, room - spent, tokens, vocab
        )
    if patching is not None or (compared and intervention is not None):
        extra = {**(extra or {"comparison": None}), "patching": patching}
        extra["intervention"] = intervention if compared else None
    page = _PAGE.format(
        title=html.escape(title),
        graph=_script_json(graph),
        replies=_script_json(replies),
        compare=_script_json(extra),
        blob=base64.b64encode(bytes(blob.data)).decode("ascii"),
        bundle=bundle,
    )
    path.write_text(page, encoding="utf-8")
    return path


_LONGEST = 999_999_999_999  # the suggested budget while baking: no real one is longer


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  html, body {{ margin: 0; height: 100%; background: #fff; color: #1f2328;
    font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }}
  @media (prefers-color-scheme: dark) {{ html, body {{ background: #111418; color: #e6e6e6; }} }}
  #nfw-root {{ height: 100vh; }}
</style>
</head>
<body>
<div id="nfw-root"></div>
<script type="application/json" id="nfw-graph">{graph}</script>
<script type="application/json" id="nfw-replies">{replies}</script>
<script type="application/json" id="nfw-compare">{compare}</script>
<script type="text/plain" id="nfw-blob">{blob}</script>
<script type="text/plain" id="nfw-bundle">{bundle}</script>
<script type="module">
  const text = (id) => document.getElementById(id).textContent;
  const raw = atob(text("nfw-blob").trim());
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const slices = (baked) => Object.fromEntries(Object.entries(baked).map(([id, r]) => [id,
    {{ msg: r.msg, buffers: r.buffers.map(([at, n]) => new DataView(bytes.buffer, at, n)) }}]));
  const replies = slices(JSON.parse(text("nfw-replies")));
  const compare = JSON.parse(text("nfw-compare"));
  const runs = compare && {{ comparison: compare.comparison, intervention: compare.intervention,
    patching: compare.patching,
    runs: compare.b && {{ b: slices(compare.b), diff: slices(compare.diff) }} }};
  const source = text("nfw-bundle");
  const url = URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }}));
  const mod = await import(url);
  URL.revokeObjectURL(url);
  const root = document.getElementById("nfw-root");
  mod.renderStatic(root, JSON.parse(text("nfw-graph")), replies, runs);
</script>
</body>
</html>
"""
