"""The wire format: what travels from the kernel to the front end.

This module is the only place where Python names become wire names; it computes nothing
(the records it encodes did). It is mirrored once in TypeScript (``js/src/wire.ts``); the
golden fixtures in ``tests/fixtures/`` (all written by ``scripts/make_fixtures.py``) are read
by both pytest and the JS tests. Bump ``SCHEMA`` on any change to a field.

Two messages exist.

1. The **graph** (traitlet ``graph``, plain JSON, no images), from :func:`encode_graph`: the
   traced run as records of its module calls. ``schema`` (this module's ``SCHEMA``), the model's
   class name, what made the edges (``topology``), the model's input and output node ids, and
   ``calls``: every module call in start order, where a call's index in that list is its *call
   index*, which every other field uses to name a call (its parent, the stages selected and
   shown first, the calls with attention maps, with NaN / Inf, the failing call). ``ops`` is the
   condensed op graph ([owner call index, parent op ids]) that the calls' ``in`` point into,
   with the ops that are the model's inputs and make its outputs, and the ``joins`` where data
   meets; ``stats`` gives each call's [mean |x|, std]; ``nonfinite_origin`` says where the
   first NaN / Inf was made when it arrived from outside a stage, ``failure`` what raised where
   (call indices, never names to search for), ``notes`` what the run could not show, ``ends``
   the inputs and outputs with captured data. Each field, its type and its comment are defined
   once, in :mod:`neural_flow_widget.wire.schema`; the front end's types and checks
   (``js/src/wire_schema.ts``) are generated from there by ``scripts/make_wire_schema.py``.

   Stage edges for any selection (a set of call indices) follow from ``calls``, ``ops``,
   ``input_ops`` and ``output_ops`` by the walk of ``graph.edges.stage_edges``; the front end
   re-implements exactly that walk so that expanding or collapsing a group needs no kernel
   round trip.

2. A **stage reply** to the ``_stage_data`` command, from :func:`encode_stage_reply`: a JSON
   message plus a list of binary buffers (never base64)::

    request:  {"stage": "enc1", "view": "grid" | null, "channel": int | null,
               "head": int | null, "sample": int | null,  # null: the captured sample
               "page": int | null,       # the grid views ("grid": channels ranked by mean
                                         #   |x|, "first": in index order): which page of 16
                                         #   channels (null: 0); every channel is kept, <= 64 px
               "channels": [int] | null, # the grid views: these channels (1..16), in this
                                         #   order, instead of a page (run B at A's tiles)
               "window": [q0, q1, k0, k1] | null,  # attention: the query and key
                                         #   positions to zoom into (null: the whole map)
               "run": "a" | "b" | "diff" | null}   # the widget's runs (compare): null / "a"
                                         #   this run, "b" the compared run, "diff" A - B
    reply:    {"ok": true, "stage": "enc1",
               "summaries": [                     # one per tensor leaf of the output
                 {"leaf": "0", "shape": [...], "dtype": "float32", "device": "cpu",
                  "kind": "float" | "int" | "bool", "numel": int,
                  "stats": {"min": .., "max": .., "mean": .., "std": .., "mean_abs": ..,
                            "zero_fraction": .., "nan": int, "posinf": int, "neginf": int},
                  "sampled": int | null,          # elements used when sampled, else null
                  "hist": {"lo": .., "hi": .., "bins": 64, "buffer": 0},  # float64 counts
                  "values": [[value, count], ...] | null,   # int / bool tensors
                  "error": null}
               ],
               "views": ["grid", "first", "channel", "mean"],  # kinds this stage offers
               "view": {"kind": "grid", "shape": [16, 32, 32],  # uint8 buffer layout
                        "vmin": -1.2, "vmax": 1.2, "signed": true,
                        "axes": ["y", "x"], "labels": ["ch 3", ...] | null,
                        "channels": [3, 7, ...] | null,
                        "note": "pooled 512x512 -> 64x64" | null, "buffer": 1,
                        "nonfinite": 2 | null,   # uint8 buffer like "buffer": 1 NaN,
                                                 #   2 +Inf, 3 -Inf, 0 finite; null: none
                        "palette": null,         # null: codes on viridis (diverging when
                                                 #   signed); "rgb": shape [h, w, 3], the
                                                 #   colours themselves (an input image);
                                                 #   "categorical": codes are class indices
                        "page": 0, "pages": 4,   # grid views: this page of 16 channels of
                                                 #   "pages"; null: not paged (or "channels")
                        "clipped": [12, 40] | null} | null,  # finite values below vmin /
                                                 #   above vmax, drawn in the end colours
                                                 #   (the range is the 0.5-99.5 percentiles);
                                                 #   null: the codes are not a clipped ramp
               "attention": [{                    # one per attention call inside the stage
                   "heads": 4, "q_len": 16, "k_len": 16,   # original lengths
                   "pool": [1, 1],                # positions per row / column of "map"
                                                  #   (block means); [1, 1] = exact
                   "source": "sdpa" | "mha" | "softmax", "causal": false,
                   "head": int | null,            # the head of "map"; null = mean over heads
                   "window": [0, 16, 0, 16],      # the positions "map" covers: all, or the
                                                  #   zoom asked for (widened to whole blocks
                                                  #   of what the run kept)
                   "map": {"shape": [16, 16], "buffer": 2},          # float32 probabilities,
                                                  #   at most 256 a side (pooled further)
                   "grid": {"shape": [4, 16, 16], "buffer": 3}}],    # float32, every head,
                                                                     #   pooled to <= 64 x 64
                                                  # "map" and "grid" may carry "codes": {"bits":
                                                  #   16, "lo": 0.0, "hi": 0.93}: the buffer
                                                  #   holds little-endian unsigned codes of 8
                                                  #   or 16 bits, value = lo + (hi - lo) *
                                                  #   code / (2**bits - 1) (offline pages,
                                                  #   notebook/export.py); absent: float32
               "tokens": ["12", ...] | null,      # labels of the query / key positions
               "error": null}
    error:    {"ok": false, "stage": "enc1", "error": "unknown view kind 'foo' for ..."}

   A request with ``"run": "diff"`` gets A - B (:func:`encode_difference_reply`): the reply
   above with ``"run": "diff"``, no summaries, ``"view"`` the difference of the two runs'
   retained values for the same view kind, channels and page (``"signed": true``, a range
   symmetric about 0; the readings of inputs and outputs by their own rules, see
   ``capture/readings.py``) and ``"attention"`` the difference of the probabilities
   (float32, signed), or an error reply saying why there is none (topk, shapes that differ).
"""

from __future__ import annotations

from typing import Any

from .reply import (
    GRID_SIDE,
    AttentionMessage,
    Buffer,
    Reply,
    SummaryMessage,
    ViewMessage,
    encode_difference_reply,
    encode_stage_reply,
    error_reply,
    finite_or_none,
)
from .schema import Graph, WireCall, WireEnd, WireFailure, WireOrigin

__all__ = [
    "COMMAND",
    "GRID_SIDE",
    "SCHEMA",
    "AttentionMessage",
    "Buffer",
    "Graph",
    "Reply",
    "SummaryMessage",
    "ViewMessage",
    "encode_comparison",
    "encode_difference_reply",
    "encode_graph",
    "encode_stage_reply",
    "error_reply",
]

SCHEMA = 5
COMMAND = "_stage_data"


def encode_graph(flow: Any) -> Graph:
    """The graph message for a Flow (see the module docstring). No images, no buffers."""
    index_of = {c.id: c.index for c in flow.calls}
    parents = [index_of[c.parent] if c.parent is not None else -1 for c in flow.calls]
    capture = flow.capture
    calls: list[WireCall] = []
    for c in flow.calls:
        calls.append(
            {
                "id": c.id,
                "module": c.module,
                "type": c.type,
                "call": c.call,
                "parent": parents[c.index],
                "depth": c.depth,
                "leaf": c.leaf,
                "params": c.params,
                "shapes": [list(s) for s in c.shapes],
                "dtypes": list(c.dtypes),
                "sig": c.sig,
                "error": c.error,
                "in": list(flow.graph.call_inputs[c.index]),
                "args": list(flow.graph.arguments(c.index)),
                "state": flow.graph.state(c.index),
            }
        )
    return {
        "schema": SCHEMA,
        "model": flow.model,
        "topology": flow.topology,
        "inputs": list(flow.inputs),
        "outputs": list(flow.outputs),
        "calls": calls,
        "ops": [(owner, list(p)) for owner, p in zip(flow.graph.owners, flow.graph.parents)],
        "input_ops": [(name, op) for name, op in flow.graph.input_ops],
        "output_ops": [(name, list(ops)) for name, ops in flow.graph.output_ops],
        "joins": [(op, kind) for op, kind in flow.graph.joins],
        "selected": list(flow.selected),
        "initial": list(flow.selected) if flow.explicit else None,
        "attention": sorted(i for i in (capture.maps if capture else {}) if i >= 0),
        "stats": [_stats(capture, c.index) for c in flow.calls],
        "nonfinite": [index_of[name] for name in flow.nonfinite],
        "nonfinite_origin": _origin(flow, index_of),
        "failure": _failure(flow, index_of),
        "notes": list(flow.notes),
        "ends": _ends(flow),
    }


def _ends(flow: Any) -> dict[str, WireEnd]:
    capture = flow.capture
    ends: dict[str, WireEnd] = {}
    for node, items in (getattr(capture, "ends", None) or {}).items():
        summary = items[0].summary
        meaning = capture.meanings.get(node)
        ends[node] = {
            "shape": [int(n) for n in summary.shape],
            "dtype": summary.dtype,
            "reading": meaning.kind if meaning is not None else None,
        }
    return ends


def _origin(flow: Any, index_of: dict[str, int]) -> WireOrigin | None:
    o = getattr(flow, "nonfinite_origin", None)
    if o is None:
        return None
    return {
        "op": o.op,
        "module": o.module,
        "type": o.type,
        "function": o.function,
        "file": o.file.replace("\\", "/").rpartition("/")[2],
        "line": o.line,
        "text": o.text,
        "before": index_of.get(o.before) if o.before is not None else None,
        "after": index_of.get(o.after) if o.after is not None else None,
    }


def _failure(flow: Any, index_of: dict[str, int]) -> WireFailure | None:
    failure = flow.failure
    if failure is None:
        return None
    stage = index_of.get(failure.stage) if failure.stage is not None else None
    call = index_of.get(failure.call) if failure.call is not None else None
    return {"message": failure.message, "stage": stage, "call": call}


def _stats(capture: Any, index: int) -> tuple[float | None, float | None] | None:
    items = capture.outputs.get(index) if capture is not None else None
    if not items:
        return None
    summary = items[0].summary
    if summary.kind != "float" or summary.mean_abs is None:
        return None
    return (finite_or_none(summary.mean_abs), finite_or_none(summary.std))


def encode_comparison(comparison: Any, flow: Any, rtol: float) -> dict[str, Any]:
    """The ``comparison`` traitlet: run A (``flow``) against run B, stage by stage.

    ``{"rtol": 1e-3, "first": 5 | null,  # call index (in A) of the first divergent stage
       "stages": [[5, 0.02, 0.999, 0.1, true, true], ...],  # [call index, relative L2,
                  #   cosine, max |a - b| (null where not finite), exact, diverges]
       "ends": {"input:0": [0.5, 0.8, 1.0, true, true]},  # the same for inputs and outputs
       "only_a": [7], "only_b": ["head#1"],  # calls of one run only (A: indices; B: ids)
       "raised": [[5, "b"]],  # [call index, "a" | "b" | "both"]: stages where a run's forward
                              #   raised (no output to compare: they diverge, never equal)
       "failed": [{"run": "b",  # a run whose forward raised ("a" | "b"); []: both completed
                   "stage": "dec1" | null,  # the stage that was running (its id in that run)
                   "call": 5 | null,   # that stage's call index in run A (null: none there)
                   "module": "dec1.conv" | null,  # the innermost module that raised
                   "message": "stage 'dec1' (module Conv2d) raised ..."}]}``  # what, where
    ``first`` is never null when ``failed`` is not empty, unless the place a run stopped is
    not a stage of run A (an output, a stage of run B only).
    """
    index_of = {c.id: c.index for c in flow.calls}
    first = comparison.first_divergent(rtol)
    failed = [
        {
            "run": run,
            "stage": failure.stage,
            "call": index_of.get(failure.stage) if failure.stage is not None else None,
            "module": failure.module,
            "message": failure.message,
        }
        for run, failure in (("a", comparison.failure_a), ("b", comparison.failure_b))
        if failure is not None
    ]

    def row(d: Any) -> list[Any]:
        return [
            finite_or_none(d.rel_l2),
            finite_or_none(d.cosine),
            finite_or_none(d.max_abs),
            bool(d.exact),
            bool(d.diverges(rtol)),
        ]

    return {
        "rtol": rtol,
        "first": index_of.get(first.id) if first is not None else None,
        "stages": [[index_of[d.id], *row(d)] for d in comparison.stages if d.id in index_of],
        "ends": {d.id: row(d) for d in comparison.ends},
        "only_a": [index_of[i] for i in comparison.only_a if i in index_of],
        "only_b": list(comparison.only_b),
        "raised": [
            [index_of[d.id], d.raised] for d in comparison.stages if d.raised and d.id in index_of
        ],
        "failed": failed,
    }
