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

2. A **stage reply** to a stage request (a custom message ``{"type": "stage", "request": id,
   "body": ...}``, answered by ``{"type": "stage", "request": id, "reply": ...}``), from
   :func:`encode_reply` (the records that answer a request are chosen in
   :mod:`neural_flow_widget.notebook.replies`): a JSON message plus a list of binary buffers
   (never base64)::

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
                  "norm": float | null,           # the L2 norm over every element (exact):
                                                  #   gradients ("of": "grad"); else null
                  "hist": {"lo": .., "hi": .., "bins": 64, "buffer": 0},  # float64 counts
                  "values": [[value, count], ...] | null,   # int / bool tensors
                  "error": null,
                  "shard": str | null}            # a DTensor's: the whole tensor gathered
                                                  #   from its ranks, or this rank's shard
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

   A request with ``"run": "diff"`` gets A - B (``notebook.replies.difference_reply``): the reply
   above with ``"run": "diff"``, no summaries, ``"view"`` the difference of the two runs'
   retained values for the same view kind, channels and page (``"signed": true``, a range
   symmetric about 0; the readings of inputs and outputs by their own rules, see
   ``capture/readings.py``) and ``"attention"`` the difference of the probabilities
   (float32, signed), or an error reply saying why there is none (topk, shapes that differ).
"""

from __future__ import annotations

from .graph import (
    SCHEMA,
    ComparisonMessage,
    PatchingMessage,
    encode_comparison,
    encode_graph,
    encode_patching,
)
from .reply import (
    AttentionMessage,
    Buffer,
    ReadoutMessage,
    Reply,
    StageRequest,
    SummaryMessage,
    ViewMessage,
    encode_reply,
    error_reply,
    finite_or_none,
    parse_request,
)
from .schema import Graph, WireCall, WireEnd, WireFailure, WireGradientFlow, WireOrigin

__all__ = [
    "SCHEMA",
    "AttentionMessage",
    "Buffer",
    "ComparisonMessage",
    "Graph",
    "PatchingMessage",
    "ReadoutMessage",
    "Reply",
    "StageRequest",
    "SummaryMessage",
    "ViewMessage",
    "WireCall",
    "WireEnd",
    "WireFailure",
    "WireGradientFlow",
    "WireOrigin",
    "encode_comparison",
    "encode_graph",
    "encode_patching",
    "encode_reply",
    "error_reply",
    "finite_or_none",
    "parse_request",
]
