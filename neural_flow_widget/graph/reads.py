"""Inputs a call was given and never read: no data flowed, so no edge is drawn from them.

A module may take a tensor only for what it is, not for its values: LLaMA's rotary embedding
is called as ``rotary_emb(hidden_states, position_ids)`` and reads ``hidden_states.dtype`` and
``.device``; Whisper's decoder position embedding reads ``input_ids.shape``; a block may take
an attention mask it ignores. The edge walk (:mod:`.edges`) starts from a call's input ops,
so each of those drew a data edge (the token embedding "feeding" the rotary embedding).

:func:`without_unread` keeps, of each call's inputs, the ops that an op inside the call (or a
call within it) reads: as an argument of a recorded op, returned unchanged (the tracer
retags it as an op of the call), written in place, or read for its value (``.item()``,
``bool(x)``: the tracer records a read with no output). Metadata (``.shape``, ``.dtype``,
``.device``, ``torch.zeros_like(x)``) is no read. A call that then has no input left is an
``order`` edge's target, "runs after, no data", as for a position embedding of
``torch.arange``.

>>> g = OpGraph(owners=(-1, -1, 0), parents=((), (), (1,)), call_parents=(-1,),
...             call_inputs=((0, 1),), input_ops=(("input:0", 0), ("input:1", 1)),
...             output_ops=(("output:0", (2,)),))
>>> r = without_unread(g)  # call 0 was given inputs 0 and 1 and read input 1 only
>>> r.call_inputs, r.arguments(0)
(((1,),), (1,))
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from .records import OpGraph, ran_within

__all__ = ["without_unread"]


def without_unread(graph: OpGraph, unfinished: Collection[int] = ()) -> OpGraph:
    """``graph`` with each call's unread inputs left out (see the module doc), but for the
    ``unfinished`` calls: they raised before reading what they were given, and what they
    were given is what a user debugging them looks for."""
    call_parents = graph.call_parents
    readers: dict[int, set[int]] = {}  # op -> the calls that own an op reading it
    for owner, parents in zip(graph.owners, graph.parents):
        for p in parents:
            readers.setdefault(p, set()).add(owner)

    inputs: list[tuple[int, ...]] = []
    arguments: list[tuple[int, ...]] = []
    changed = False
    for call, ops in enumerate(graph.call_inputs):
        args = graph.arguments(call)
        kept = [
            i
            for i, op in enumerate(ops)
            if call in unfinished
            or any(ran_within(call_parents, c, call) for c in readers.get(op, ()))
        ]
        if len(kept) == len(ops):
            inputs.append(ops)
            arguments.append(graph.call_arguments[call] if graph.call_arguments else ())
            continue
        changed = True
        inputs.append(tuple(ops[i] for i in kept))
        arguments.append(tuple(args[i] for i in kept))
    if not changed:
        return graph
    return replace(graph, call_inputs=tuple(inputs), call_arguments=tuple(arguments))
