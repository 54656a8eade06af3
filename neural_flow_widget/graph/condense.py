"""Condensing the op graph after the run, so that it stays small without changing any edge.

The tracer records every op as a node (the *full* graph). :func:`condense` then bypasses the
nodes that the edge walk (:mod:`.edges`) cannot tell from their parents: a node ``v`` goes when

* it is not a model input, not a producer of a model output, not the producer of any
  module call's input (the walk starts there, and a relay is such a producer), and no join
  (an op that reads two or more ops: the front end draws where data meets, such as
  ``F.scaled_dot_product_attention`` of q, k and v in an attention's own forward); and
* it has parents, all of them ops of the same module call as ``v``.

Its children then take its parents instead. For any selection of stages the walk reaches the
same sources through the same relays: at ``v`` and at its parents it makes the same decision
(the same owner for every selection: ownership goes by call), and ``v`` itself is neither a
start, a relay nor a source of its own. ``tests/graph/test_condense.py`` holds the condensed
graph's edges to the full graph's on real and random architectures.

>>> g = OpGraph(owners=(-1, 0, 0, -1), parents=((), (0,), (1,), (2,)), call_parents=(-1,),
...             call_inputs=((0,),), input_ops=(("input:0", 0),),
...             output_ops=(("output:0", (3,)),))
>>> condense(g).parents  # op 2 (a second op of call 0) goes; op 3 reads op 1
((), (0,), (1,))
"""

from __future__ import annotations

from .records import NAMED_JOINS, OpGraph

__all__ = ["condense"]


def condense(graph: OpGraph) -> OpGraph:
    """The graph with every node bypassed that changes no stage edge (see the module doc)."""
    owners, parents = graph.owners, graph.parents
    keep_ids: set[int] = {op for _, op in graph.input_ops}
    for ops in graph.call_inputs:
        keep_ids.update(ops)
    for _, ops in graph.output_ops:
        keep_ids.update(ops)
    keep_ids.update(op for op, _ in graph.joins)
    new_id: list[int] = [-1] * len(owners)
    stands_for: list[tuple[int, ...]] = [()] * len(owners)  # op -> the kept nodes it is
    kept_owners: list[int] = []
    kept_parents: list[tuple[int, ...]] = []
    for op, owner in enumerate(owners):  # parents come before children
        mine = parents[op]
        merged = tuple(dict.fromkeys(n for p in mine for n in stands_for[p]))
        if op not in keep_ids and mine and all(owners[p] == owner for p in mine):
            stands_for[op] = merged  # bypassed: its children read its parents
            continue
        new_id[op] = len(kept_owners)
        kept_owners.append(owner)
        kept_parents.append(merged)
        stands_for[op] = (new_id[op],)
    return OpGraph(
        owners=tuple(kept_owners),
        parents=tuple(kept_parents),
        call_parents=graph.call_parents,
        call_inputs=tuple(tuple(new_id[op] for op in ops) for ops in graph.call_inputs),
        input_ops=tuple((name, new_id[op]) for name, op in graph.input_ops),
        output_ops=tuple((name, tuple(new_id[op] for op in ops)) for name, ops in graph.output_ops),
        joins=tuple((new_id[op], kind) for op, kind in graph.joins if new_id[op] >= 0),
        operands=_operands(graph, new_id, kept_parents),
        call_arguments=graph.call_arguments,  # (per call input, which condense keeps)
        call_states=graph.call_states,
        leads=tuple(new_id[op] for op in graph.leads if new_id[op] >= 0),
    )


def _operands(
    graph: OpGraph, new_id: list[int], parents: list[tuple[int, ...]]
) -> tuple[tuple[int, str], ...]:
    """The named operands (kept: they have no parents) that a kept add or concatenation reads
    (past the reshapes and casts of its own call, which condensing bypassed)."""
    added = {new_id[op] for op, kind in graph.joins if kind in NAMED_JOINS and new_id[op] >= 0}
    read = {p for op in added for p in parents[op]}
    return tuple((new_id[op], name) for op, name in graph.operands if new_id[op] in read)
