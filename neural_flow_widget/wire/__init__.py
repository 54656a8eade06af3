"""The wire format: what travels from the kernel to the front end.

This module is the only place where Python names become wire names; it computes nothing
(the records it encodes did). It is mirrored once in TypeScript (``js/src/wire.ts``); the
golden fixtures in ``tests/fixtures/`` (all written by ``scripts/make_fixtures.py``) are read
by both pytest and the JS tests. Bump ``SCHEMA`` on any change to a field.

Two messages exist.

1. The **graph** (traitlet ``graph``, plain JSON, no images), from :func:`encode_graph`::

    {
      "schema": 5,
      "model": "UNet",                 # class name of the traced model
      "topology": "dataflow",          # "dataflow" | "fx" | "sequential": what made the edges
      "inputs": ["input:0"],           # model input node ids, in argument order
      "outputs": ["output:0"],         # model output node ids, in output order
      "calls": [                       # every module call of the run, in start order;
        {                              #   a call's index in this list is its "call index"
          "id": "enc1",                # stage id: qualified name, or "name#k" for a reused module
          "module": "enc1",            # qualified module name
          "type": "ConvBlock",         # class name (text, never HTML)
          "call": 0,                   # k: which call of this module (0-based)
          "parent": -1,                # call index of the enclosing call; -1 = the model itself
          "depth": 1,                  # module-tree depth (1 = a child of the model)
          "leaf": false,               # the module has no children
          "params": 1234,              # parameters of the module (recursive)
          "shapes": [[1, 16, 64, 64]], # output tensor shapes (one per tensor leaf)
          "dtypes": ["float32"],       # output tensor dtypes, torch names without "torch."
          "sig": "3f2a9c1e",           # structure signature: equal for blocks of equal structure
          "error": null,               # why the call failed (or its summary failed), else null
          "in": [4, 7],                # op ids (below) that produced this call's input tensors
          "args": [0, 1],              # per op of "in": the argument it came in (positional,
                                       #   then keywords as given; a list or tuple is one)
          "state": -1                  # the argument that is a state the call continues (the
                                       #   previous call of its module returned it: an RNN
                                       #   cell's (h, c)), else -1
        }
      ],
      "ops": [[-1, []], [0, [0]]],     # the condensed op graph: [owner call index, parent op ids];
                                       #   owner -1 = the model's own forward body
      "input_ops": [["input:0", 0]],   # which op is each model input
      "output_ops": [["output:0", [9]]],  # which ops produced each model output
      "joins": [[7, "add"], [8, "cat"]],  # ops where data of two or more ops meets, and what
                                       #   they do: add, sub, mul, div, cat, stack, matmul,
                                       #   or the torch function's name ("where")
      "selected": [0, 1, 2],           # call indices of the stages trace() selected
      "initial": [0, 1, 2] | null,     # stages the first view shows (the user chose them with
                                       #   stages=); null: the view picks a readable depth
      "attention": [3],                # call indices that recorded attention maps
      "stats": [[0.1, 0.5]],           # per call: [mean |x|, std] of its first output, or null
      "nonfinite": [5, 6, 2],          # call indices whose output held NaN or +/-Inf, in the
                                       #   order the calls returned (the first: where it began)
      "nonfinite_origin": {            # the first of "nonfinite" received NaN / Inf in its
                                       #   input: where it was made (graph/origin.py); null
                                       #   when that call made it itself, or there is none
        "op": "torch.Tensor.div",      # the torch function that made it
        "module": "",                  # qualified name of the module whose forward ran it
                                       #   ("": the model itself)
        "type": "ConvNet",             # that module's class name (text, never HTML)
        "function": "ConvNet.forward", # the user's function that called the op
        "file": "model.py",            # its source file, the name only (no folders)
        "line": 12,                    # the line in it (0: unknown)
        "text": "x / (x - x)",         # the op's expression in the source ("" unknown)
        "before": 2 | null,            # call index of the call that returned last in that
                                       #   forward before the op
        "after": 3 | null},            # call index of the call in that forward that
                                       #   received it next (the front end words it as
                                       #   NonfiniteOrigin.describe() does)
      "failure": {                     # the forward raised: the graph is what ran before, or
        "message": "stage 'dec1' ...", #   null. What raised where, with the inputs' shapes
        "stage": 7 | null,             # call index of the selected stage that was running
        "call": 9 | null},             # call index of the innermost call that raised (its
                                       #   module: calls[call]["module"])
      "notes": ["the model ran on the meta device ..."],  # what the run could not show
      "ends": {"input:0": {"shape": [1, 3, 64, 64], "dtype": "float32", "reading": "image"}}
                                       # model inputs / outputs whose data was captured: a
                                       #   click asks for them like a stage; "reading": what
                                       #   they mean (capture/meaning.py's kinds) or null
    }

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

from typing import Any, TypedDict

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

# -- the messages, typed (the fields are documented above) ------------------------------------

WireCall = TypedDict(
    "WireCall",
    {"id": str, "module": str, "type": str, "call": int, "parent": int, "depth": int,
     "leaf": bool, "params": int, "shapes": list[list[int]], "dtypes": list[str], "sig": str,
     "error": "str | None", "in": list[int], "args": list[int], "state": int},
)  # fmt: skip


class WireFailure(TypedDict):
    message: str
    stage: int | None
    call: int | None


class Graph(TypedDict):
    schema: int
    model: str
    topology: str
    inputs: list[str]
    outputs: list[str]
    calls: list[WireCall]
    ops: list[list[Any]]  # [owner, [parent op ids]]
    input_ops: list[list[Any]]  # [input node id, op]
    output_ops: list[list[Any]]  # [output node id, [ops]]
    joins: list[list[Any]]  # [op, what it does]
    selected: list[int]
    initial: list[int] | None
    attention: list[int]
    stats: list[list[float | None] | None]
    nonfinite: list[int]
    nonfinite_origin: dict[str, Any] | None  # {"op", "module", "type", "function", "file", ...}
    failure: WireFailure | None
    notes: list[str]
    ends: dict[str, dict[str, Any]]  # node -> {"shape", "dtype", "reading"}


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
        "ops": [[owner, list(p)] for owner, p in zip(flow.graph.owners, flow.graph.parents)],
        "input_ops": [[name, op] for name, op in flow.graph.input_ops],
        "output_ops": [[name, list(ops)] for name, ops in flow.graph.output_ops],
        "joins": [[op, kind] for op, kind in flow.graph.joins],
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


def _ends(flow: Any) -> dict[str, dict[str, Any]]:
    capture = flow.capture
    ends: dict[str, dict[str, Any]] = {}
    for node, items in (getattr(capture, "ends", None) or {}).items():
        summary = items[0].summary
        meaning = capture.meanings.get(node)
        ends[node] = {
            "shape": [int(n) for n in summary.shape],
            "dtype": summary.dtype,
            "reading": meaning.kind if meaning is not None else None,
        }
    return ends


def _origin(flow: Any, index_of: dict[str, int]) -> dict[str, Any] | None:
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


def _stats(capture: Any, index: int) -> list[float | None] | None:
    items = capture.outputs.get(index) if capture is not None else None
    if not items:
        return None
    summary = items[0].summary
    if summary.kind != "float" or summary.mean_abs is None:
        return None
    return [finite_or_none(summary.mean_abs), finite_or_none(summary.std)]


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
