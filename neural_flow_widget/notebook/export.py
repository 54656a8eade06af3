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
) -> tuple[dict[str, Any], bytes]:
    """Replies for the model's inputs and outputs and the selected stages first, then the
    rest of the calls, while their JSON and their buffers (as base64) fit in
    ``budget_bytes``. Each carries its default view, and offers only that one (the page has
    no kernel to make another). Returns ``{node id: {"msg": ..., "buffers": [[offset,
    length], ...]}}`` and the packed buffers."""
    chosen = set(flow.selected)
    order = [*flow.inputs, *flow.outputs, *(flow.calls[i].id for i in flow.selected)]
    order += [c.id for c in flow.calls if c.index not in chosen]
    replies: dict[str, Any] = {}
    blob = bytearray()
    spent = 0
    for node in order:
        msg, buffers = wire.encode_stage_reply(flow, {"stage": node}, tokens, vocab)
        if not msg.get("ok"):
            continue
        view = msg.get("view")
        msg["views"] = [view["kind"]] if view else []
        aligned = sum(len(b) + (-len(b) % 8) for b in buffers)
        cost = len(_script_json(msg)) + 40 + _base64_size(aligned)  # (as the page holds it)
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
) -> pathlib.Path:
    """Write the page, at most ``budget_bytes`` of it where the graph and the front end
    leave room for stage data (stages beyond it open without data); returns its path."""
    path = pathlib.Path(path)
    title = title or f"{flow.model} — neural_flow_widget"
    graph = _script_json(wire.encode_graph(flow))
    bundle = bundle.replace("</script", "<\\/script")
    fixed = len(_PAGE) + len(html.escape(title)) + len(graph) + len(bundle.encode("utf-8"))
    replies, blob = bake_replies(flow, tokens, max(0, budget_bytes - fixed), vocab)
    page = _PAGE.format(
        title=html.escape(title),
        graph=graph,
        replies=_script_json(replies),
        blob=base64.b64encode(blob).decode("ascii"),
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
<script type="text/plain" id="nfw-blob">{blob}</script>
<script type="text/plain" id="nfw-bundle">{bundle}</script>
<script type="module">
  const text = (id) => document.getElementById(id).textContent;
  const raw = atob(text("nfw-blob").trim());
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const baked = JSON.parse(text("nfw-replies"));
  const replies = {{}};
  for (const [id, r] of Object.entries(baked)) {{
    replies[id] = {{ msg: r.msg,
      buffers: r.buffers.map(([at, n]) => new DataView(bytes.buffer, at, n)) }};
  }}
  const source = text("nfw-bundle");
  const url = URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }}));
  const mod = await import(url);
  URL.revokeObjectURL(url);
  mod.renderStatic(document.getElementById("nfw-root"), JSON.parse(text("nfw-graph")), replies);
</script>
</body>
</html>
"""
