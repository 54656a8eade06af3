"""The graph message of the wire format (message 1 of :mod:`neural_flow_widget.wire`; its
fields are defined once, in :mod:`.schema`), and the ``comparison`` traitlet: what the front
end draws, read from a Flow (and a Comparison). ``js/src/wire.ts`` reads them. Nothing here
computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

from ..graph import Flow
from .reply import finite_or_none
from .schema import SCHEMA, Graph, WireCall, WireEnd, WireFailure, WireGradientFlow, WireOrigin

if TYPE_CHECKING:  # (records this module writes; at run time it imports only the graph)
    from ..capture.summary import Summary
    from ..compare import Comparison, StageDifference
    from ..patching import Patching

__all__ = [
    "SCHEMA",
    "ComparisonMessage",
    "PatchingMessage",
    "encode_comparison",
    "encode_graph",
    "encode_patching",
]


def encode_graph(flow: Flow, vocab: Callable[[list[int]], list[str]] | None = None) -> Graph:
    """The graph message for a Flow (see the module docstring). No images, no buffers.
    ``vocab`` names the token ids of readouts (a tokenizer's ``convert_ids_to_tokens``)."""
    index_of = {c.id: c.index for c in flow.calls}
    parents = [index_of[c.parent] if c.parent is not None else -1 for c in flow.calls]
    graph = flow.condensed
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
                "in": list(graph.call_inputs[c.index]),
                "args": list(graph.arguments(c.index)),
                "state": graph.state(c.index),
            }
        )
    capture = flow.capture
    grad, nonfinite_grad, trunk = _backward(flow, index_of)
    readouts, readout_names = _readouts(flow, vocab)
    return {
        "schema": SCHEMA,
        "model": flow.model,
        "topology": flow.topology,
        "inputs": list(flow.inputs),
        "outputs": list(flow.outputs),
        "calls": calls,
        "ops": [(owner, list(p)) for owner, p in zip(graph.owners, graph.parents)],
        "input_ops": [(name, op) for name, op in graph.input_ops],
        "output_ops": [(name, list(ops)) for name, ops in graph.output_ops],
        "joins": [(op, kind) for op, kind in graph.joins],
        "operands": [(op, name) for op, name in graph.operands],
        "leads": list(graph.leads),
        "selected": list(flow.selected),
        "initial": list(flow.selected) if flow.explicit else None,
        "attention": sorted(i for i in (capture.maps if capture else {}) if i >= 0),
        "stats": [_stats(flow, c.index) for c in flow.calls],
        "nonfinite": [index_of[name] for name in flow.nonfinite],
        "nonfinite_origin": _origin(flow, index_of),
        "failure": _failure(flow, index_of),
        "notes": list(flow.notes),
        "ends": _ends(flow),
        "grad": grad,
        "nonfinite_grad": nonfinite_grad,
        "gradient_flow": trunk,
        "readouts": readouts,
        "readout_names": readout_names,
    }


def _backward(
    flow: Flow, index_of: dict[str, int]
) -> tuple[list[float | None] | None, list[int], WireGradientFlow | None]:
    """The graph's gradient fields (a run with ``loss=``): per call the gradient's norm, the
    calls whose gradient held NaN / Inf, the gradient along the trunk."""
    grads = flow.capture.grads if flow.capture is not None else None
    if grads is None:
        return None, [], None
    found = flow.gradient_flow()
    trunk: WireGradientFlow | None = None
    if found is not None:
        trunk = {
            "kind": found.kind,
            "at": index_of.get(found.at) if found.at is not None else None,
            "ratio": finite_or_none(found.ratio),
            "calls": [index_of[s] for s in found.stages],
            "norms": [finite_or_none(n) for n in found.norms],  # (a NaN is no JSON)
            "text": found.describe(),
        }
    norms = [finite_or_none(grads.norm(c.index)) for c in flow.calls]
    return norms, [index_of[s] for s in flow.nonfinite_grad if s in index_of], trunk


def _readouts(
    flow: Flow, vocab: Callable[[list[int]], list[str]] | None
) -> tuple[list[tuple[int, int, float]], dict[str, str]]:
    """The graph's readout fields: the top-1 next token at the last position of each call
    with a readout."""
    calls = flow.capture.read_calls if flow.capture is not None else ()
    rows: list[tuple[int, int, float]] = []
    for call in calls:
        top = flow.readout(flow.calls[call].id, k=1, position=-1)
        rows.append((call, int(top.ids[0, 0]), float(top.probs[0, 0])))
    ids = sorted({token for _, token, _ in rows})
    names = dict(zip(map(str, ids), vocab(ids))) if vocab is not None and ids else {}
    return rows, names


def _ends(flow: Flow) -> dict[str, WireEnd]:
    ends: dict[str, WireEnd] = {}
    if flow.capture is None:
        return ends
    for node in (*flow.inputs, *flow.outputs):
        items = flow.capture.captured(node)
        if not items:
            continue
        summary: Summary = items[0].summary
        meaning = flow.reading(node)
        ends[node] = {
            "shape": [int(n) for n in summary.shape],
            "dtype": summary.dtype,
            "reading": meaning.kind if meaning is not None else None,
        }
    return ends


def _origin(flow: Flow, index_of: dict[str, int]) -> WireOrigin | None:
    o = flow.nonfinite_origin
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


def _failure(flow: Flow, index_of: dict[str, int]) -> WireFailure | None:
    failure = flow.failure
    if failure is None:
        return None
    stage = index_of.get(failure.stage) if failure.stage is not None else None
    call = index_of.get(failure.call) if failure.call is not None else None
    return {"message": failure.message, "stage": stage, "call": call}


def _stats(flow: Flow, index: int) -> tuple[float | None, float | None] | None:
    items = flow.capture.captured(index) if flow.capture is not None else None
    if not items:
        return None
    summary: Summary = items[0].summary
    if summary.kind != "float" or summary.mean_abs is None:
        return None
    return (finite_or_none(summary.mean_abs), finite_or_none(summary.std))


class PatchingMessage(TypedDict):
    stages: list[int]  # call indices of the stages patched
    positions: int  # sequence positions patched one by one (0: none)
    scores: list[float | None]  # per stage: the metric with its whole output restored
    restored: list[list[float | None]] | list[float | None]  # the share of the gap each closes
    #                          (per stage x position when positions, else per stage)
    clean: float | None  # the metric of the clean run (this one)
    corrupted: float | None  # the metric of the corrupted run


def encode_patching(patching: Patching, flow: Flow) -> PatchingMessage:
    """The ``patching`` traitlet: :func:`neural_flow_widget.patch`'s result on this graph."""
    index_of = {c.id: c.index for c in flow.calls}
    restored = patching.restored()
    return {
        "stages": [index_of[s] for s in patching.stages],
        "positions": patching.positions,
        "scores": [finite_or_none(v) for v in patching.scores],
        "restored": (
            [[finite_or_none(v) for v in row] for row in restored]
            if restored.ndim == 2
            else [finite_or_none(v) for v in restored]
        ),
        "clean": finite_or_none(patching.clean),
        "corrupted": finite_or_none(patching.corrupted),
    }


class RunFailureMessage(TypedDict):
    run: str  # "a" | "b": the run whose forward raised
    stage: str | None  # the stage that was running (its id in that run)
    call: int | None  # that stage's call index in run A (None: none there)
    module: str | None  # the innermost module that raised
    message: str  # what raised where


class ComparisonMessage(TypedDict):
    rtol: float
    first: int | None
    stages: list[list[int | float | bool | None]]
    ends: dict[str, list[float | bool | None]]
    only_a: list[int]
    only_b: list[str]
    raised: list[tuple[int, str]]
    failed: list[RunFailureMessage]


def encode_comparison(comparison: Comparison, flow: Flow, rtol: float) -> ComparisonMessage:
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
    failed: list[RunFailureMessage] = [
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

    def row(d: StageDifference) -> list[float | bool | None]:
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
            (index_of[d.id], d.raised) for d in comparison.stages if d.raised and d.id in index_of
        ],
        "failed": failed,
    }
