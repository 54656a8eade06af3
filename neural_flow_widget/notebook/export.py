"""Self-contained, offline HTML pages of a Flow: the JS inlined, stage data baked in.

The page holds the graph message, the stage replies the kernel would have sent (one per stage,
default view, within a byte budget) and their binary buffers packed in one base64 blob: an
HTML file can carry bytes no other way. Nothing is fetched: no CDN, no network.
"""

from __future__ import annotations

import base64
import html
import json
import pathlib
from collections.abc import Callable
from typing import Any

from .. import wire


def bake_replies(
    flow: Any,
    tokens: list[str] | None,
    budget_bytes: int,
    vocab: Callable[[list[int]], list[str]] | None = None,
    *,
    blob: bytearray | None = None,
    make: Callable[[str], tuple[Any, list[bytes]]] | None = None,
    order: list[str] | None = None,
) -> tuple[dict[str, Any], bytes]:
    """Replies for the model's inputs and outputs and the selected stages first, then the
    rest of the calls, while their JSON and their buffers (as base64) fit in
    ``budget_bytes``. Each carries its default view, and offers only that one (the page has
    no kernel to make another); a stage with no data carries the error reply that says why.
    Returns ``{node id: {"msg": ..., "buffers": [[offset, length], ...]}}`` and the packed
    buffers. ``make`` (node -> reply) and ``order`` bake other replies (run B, A - B) into
    the same ``blob``."""
    if order is None:
        chosen = set(flow.selected)
        order = [*flow.inputs, *flow.outputs, *(flow.calls[i].id for i in flow.selected)]
        order += [c.id for c in flow.calls if c.index not in chosen]
    if make is None:

        def make(node: str) -> tuple[Any, list[bytes]]:
            return wire.encode_stage_reply(flow, {"stage": node}, tokens, vocab)

    replies: dict[str, Any] = {}
    blob = bytearray() if blob is None else blob
    spent = 0
    for node in order:
        msg, buffers = make(node)
        if msg.get("ok"):
            view = msg.get("view")
            msg["views"] = [view["kind"]] if view else []
        aligned = sum(len(b) + (-len(b) % 8) for b in buffers)
        cost = len(_script_json(msg)) + len(_script_json(node)) + 40 + _base64_size(aligned)
        if spent + cost > budget_bytes:
            continue
        spent += cost
        spans = []
        for buffer in buffers:
            spans.append([len(blob), len(buffer)])
            blob += buffer
            blob += b"\0" * (-len(blob) % 8)  # keep every buffer 8-byte aligned
        replies[node] = {"msg": msg, "buffers": spans}
    return replies, bytes(blob)


def bake_comparison(
    flow: Any,
    flow_b: Any,
    comparison: dict[str, Any],
    replies_a: dict[str, Any],
    blob: bytearray,
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
        return wire.encode_stage_reply(flow_b, request(node, "b"), tokens, vocab)

    def make_diff(node: str) -> tuple[Any, list[bytes]]:
        return wire.encode_difference_reply(flow, flow_b, request(node, "diff"), tokens, vocab)

    half = budget_bytes // 2
    b, _ = bake_replies(flow_b, tokens, half, vocab, blob=blob, make=make_b, order=order)
    diff, _ = bake_replies(flow, tokens, half, vocab, blob=blob, make=make_diff, order=order)
    return {"comparison": comparison, "b": b, "diff": diff}


def _base64_size(n: int) -> int:
    return 4 * -(-n // 3)


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
    budget_bytes: int = 8_000_000,
    title: str | None = None,
    flow_b: Any = None,
    comparison: dict[str, Any] | None = None,
) -> pathlib.Path:
    """Write the page, at most ``budget_bytes`` of it where the graph and the front end
    leave room for stage data (stages beyond it open without data, and say so); returns its
    path. With ``comparison`` (:func:`wire.encode_comparison`) and run B's ``flow_b``, half
    of that room goes to run A's replies and half to run B's and A - B
    (:func:`bake_comparison`)."""
    path = pathlib.Path(path)
    title = title or f"{flow.model} — neural_flow_widget"
    graph = _script_json(wire.encode_graph(flow))
    bundle = bundle.replace("</script", "<\\/script")
    fixed = len(_PAGE) + len(html.escape(title)) + len(graph) + len(bundle.encode("utf-8"))
    compared = comparison is not None and flow_b is not None
    fixed += len(_script_json(comparison)) if compared else 0
    room = max(0, budget_bytes - fixed)
    blob = bytearray()
    replies, _ = bake_replies(flow, tokens, room // 2 if compared else room, vocab, blob=blob)
    extra: dict[str, Any] | None = None
    if compared:
        spent = len(_script_json(replies)) + _base64_size(len(blob))
        extra = bake_comparison(
            flow, flow_b, comparison or {}, replies, blob, room - spent, tokens, vocab
        )
    page = _PAGE.format(
        title=html.escape(title),
        graph=graph,
        replies=_script_json(replies),
        compare=_script_json(extra),
        blob=base64.b64encode(bytes(blob)).decode("ascii"),
        bundle=bundle,
    )
    path.write_text(page, encoding="utf-8")
    return path


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
  const runs = compare && {{ comparison: compare.comparison,
    runs: {{ b: slices(compare.b), diff: slices(compare.diff) }} }};
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
