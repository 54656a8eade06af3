"""Stage edges from the op graph: the walk, primary / skip / merge, and order attachments.

``js/src/model/topology.ts`` implements exactly the same algorithm so that the front end can
expand and collapse groups without asking the kernel; ``tests/fixtures/edges_golden.json``
(many flows and selections) holds both to ``Flow.select``.

The walk, for a selection S of call indices:

1. ``owner[c]``: the nearest ancestor-or-self of call c that is in S, else -1. An op belongs to
   the owner of its innermost call.
2. For each stage s, walk back from the ops that produced its inputs. Stop at a model input
   (source: that input), or at an op whose owner is a selected stage other than s and not an
   ancestor of s (source: that stage). Ops of the model body and of unselected calls, and ops of
   s's own ancestors, are walked through.
3. Model outputs: the same walk, stopping at any selected owner.
4. Kinds. The primary incoming edge, ``flow``, is the trunk: the data the stage continues.
   The trunk is an *argument* of the call (positional arguments first, then keywords in the
   order given; a list, tuple or dict argument is one argument): the state the call
   continues, if any (an argument that came from the previous call of the same module and
   has the shapes this call returns: an RNN cell unrolled as ``cell(x[t], (h, c))``
   continues ``(h, c)``), else the first argument that has a source (a model input counts:
   a decoder called ``decoder(tgt, memory)`` continues its target). Of the trunk's sources
   the one with the most ancestors (the deepest pathway) is primary, then the earliest node.
   A product that continues its first operand (a matrix product, an attention: its rows
   are the queries') leads the trunk: where the trunk's data passed through one, only the
   sources behind its first operand are candidates (when any is). So an attention's output
   projection continues its queries, and the keys and values (an encoder's output, however
   deep) merge; without this a decoder's cross-attention would continue the encoder.
   An elementwise join that broadcasts its other operands to one operand's shape
   (``OpGraph.leads``: an adaptive norm's ``norm(x) * (1 + scale) + shift``, a gate
   ``x * sigmoid(s)``, a UNet block's ``h + temb[:, :, None, None]``) leads the trunk the
   same way: the modulated data continues, the conditioning merges, however deep its
   chain (a DiT's first block, whose timestep embedding is deeper than its patches).
   So a UNet block's image path (``hidden_states``) is its trunk and the timestep embedding
   merges into it; a decoder, and each of its layers, continues its own stream and the
   encoder's output merges; a DenseNet layer given ``[x0, f1, ..., fk]`` continues ``fk``; a
   stage reading one tensor (``x + f(x)``, a concatenation) takes its deepest source. The
   stage's *path* is its primary source and that source's path: the chain of flow edges
   behind it. Another source on the path is a ``skip`` (a residual, a U-Net's encoder
   feature into its decoder, a DenseNet's earlier layers); any other source is a ``merge``:
   conditioning (a timestep or text embedding, an attention mask, an encoder's output into
   a decoder's cross-attention, a second modality), even when it entered the trunk earlier.
   So is a source reached directly only through a broadcast join's other operands (walked
   after the rest of the direct part, before the relays of step 5): what modulates the
   data, though it comes from a stage on the path (a folded adaptive norm returns its
   output and the scale, shift and gate of the sublayers after it).
5. Relayed streams: a *relay* is an op the walk goes through that another selected stage also
   takes as input and that carries data of two or more sources (a join, or an op after
   one): a residual stream in a pre-norm transformer, read by every block's first norm. A
   non-primary source reached only through a relay, and that is an ancestor of another
   non-primary source, gets no edge: it was shown entering the stage that read the relay,
   and is carried on by the newer source. Without this every stage after a long residual
   stream would get an edge from every earlier sublayer; with it each gets its predecessor
   and the latest residual. An op that carries one source's data (``tanh(n0)`` read by two
   stages) is no stream: what is behind it counts as reached directly, since nothing else
   draws that data entering the stage. Ancestry (step 4) still counts every source, and
   sources reached directly (a DenseNet's concatenation of all earlier features) all stay.
6. A stage with no source at all (a position embedding reading ``torch.arange``) is attached
   to the previous stage (or the first input) by an ``order`` edge, "runs after, no data", so
   the figure is always connected; such edges do not count as ancestry.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

from .records import Edge, EdgeKind, OpGraph, Stage, Topology

#: joins (``OpGraph.joins``) whose output continues their first operand: a matrix product's
#: rows are its first operand's, an attention's are its queries' (step 4)
LEADING = frozenset(
    (
        "matmul",
        "attention",
        "scaled_dot_product_attention",
        "multi_head_attention_forward",
        "flex_attention",
    )
)


def edges_for(
    topology: Topology,
    graph: OpGraph,
    selected: Sequence[int],
    inputs: Sequence[str],
    outputs: Sequence[str],
    calls: Sequence[Stage],
) -> tuple[Edge, ...]:
    """The edges of a run for a selection, in its topology mode."""
    if topology == "sequential":
        return sequential_edges(selected, inputs, outputs, calls)
    return stage_edges(graph, selected, inputs, outputs, calls)


def stage_edges(
    graph: OpGraph,
    selected: Sequence[int],
    inputs: Sequence[str],
    outputs: Sequence[str],
    calls: Sequence[Stage],
) -> tuple[Edge, ...]:
    """Stage edges recovered by walking back through the op graph (see the module doc)."""
    chosen = set(selected)
    owner = _owners(graph.call_parents, chosen)
    input_of_op = {op: name for name, op in graph.input_ops}
    node_ids = {i: calls[i].id for i in selected}
    own = [owner[call] if call >= 0 else -1 for call in graph.owners]  # op -> selected owner
    parents = graph.parents
    lead_of = {op: parents[op][0] for op, kind in graph.joins if kind in LEADING and parents[op]}
    broadcast = {op for op in graph.leads if parents[op]}  # (modulations: step 4)
    lead_of.update((op, parents[op][0]) for op in broadcast)

    readers: dict[int, list[int]] = {}  # op -> the selected stages that take it as input
    for s in chosen:
        for op in graph.call_inputs[s]:
            readers.setdefault(op, []).append(s)

    # What a relay reaches, by (op, the walking stage's selected ancestors): a relay precedes
    # the stage that walks to it, so what lies behind it depends on nothing else (the stage
    # itself owns no op that early).  Without this every stage behind a long residual
    # stream walked the whole stream back again.
    reached: dict[tuple[int, frozenset[int]], frozenset[str]] = {}

    def stops(op: int, skip: set[int], found: set[str]) -> bool:
        """Whether a walk stops at ``op``: a model input, or an op of a selected stage not in
        ``skip`` (its source, added to ``found``)."""
        name = input_of_op.get(op)
        if name is None:
            who = own[op]
            if who == -1 or who in skip:
                return False
            name = node_ids[who]
        found.add(name)
        return True

    def reach(first: int, skip: set[int], key: frozenset[int]) -> frozenset[str]:
        """Sources reached from op ``first``, walking through every relay."""
        hit = reached.get((first, key))
        if hit is not None:
            return hit
        found: set[str] = set()
        seen: set[int] = set()
        todo = [first]
        while todo:
            op = todo.pop()
            if op in seen:
                continue
            seen.add(op)
            known = reached.get((op, key)) if op != first else None
            if known is not None:
                found |= known
                continue
            if not stops(op, skip, found):
                todo.extend(parents[op])
        reached[(first, key)] = result = frozenset(found)
        return result

    def walk(
        start: Sequence[int], groups: Sequence[Sequence[int]], skip: set[int], key: frozenset[int]
    ) -> tuple[set[str], list[frozenset[str]], set[str], set[str], set[str]]:
        """Sources reached from ``start`` (owners in ``skip`` are walked through); what each
        argument (``groups`` of start ops, in trunk order) reaches, when there are several
        and more than one source (step 4); the sources reached only through a relay: a
        walked-through op that another selected stage also takes as input and that carries
        data of two or more sources (step 5); where the walk went through a leading
        product, the trunk's sources behind its first operands (step 4; else empty); and
        the sources reached directly only through what a broadcast join modulates its data
        with (step 4: walked after the rest of the direct part)."""
        seen: set[int] = set()
        starts = set(start)
        led = False  # whether a leading product was walked through

        def visit(todo: list[int], found: set[str], later: list[int] | None) -> list[int]:
            """Walk from ``todo`` into ``found``; the relays met, to cross later. With
            ``later``, a broadcast join's other operands wait there."""
            nonlocal led
            relays: list[int] = []
            while todo:
                op = todo.pop()
                if op in seen:
                    continue
                seen.add(op)
                if stops(op, skip, found):
                    continue
                if op not in starts and any(r not in skip for r in readers.get(op, ())):
                    behind = reach(op, skip, key)
                    if len(behind) > 1:  # a stream: crossed after the direct part
                        relays.append(op)
                    else:  # one source's data: nothing else shows it entering this stage
                        found |= behind
                    continue
                led = led or op in lead_of
                if later is not None and op in broadcast:
                    todo.append(parents[op][0])
                    later.extend(parents[op][1:])
                else:
                    todo.extend(parents[op])
            return relays

        found: set[str] = set()
        waiting: list[int] = []
        relays = [op for first in start for op in visit([first], found, waiting)]
        modulating: set[str] = set()
        relays += visit(waiting, modulating, None)
        modulating -= found  # (reached as the data too)
        found |= modulating
        direct = set(found)  # then on through the relays
        for op in relays:
            found |= reach(op, skip, key)
        by_argument = (
            [frozenset().union(*(reach(op, skip, key) for op in g)) for g in groups]
            if len(groups) > 1 < len(found)
            else []
        )
        lead: set[str] = set()
        if led and len(found) > 1:
            trunk = next((g for g, hit in zip(groups, by_argument) if hit), start)
            lead = leading(trunk, starts, skip, key)
        return found, by_argument, found - direct, lead, modulating

    def leading(
        trunk: Sequence[int], starts: set[int], skip: set[int], key: frozenset[int]
    ) -> set[str]:
        """The sources behind the ops ``trunk``, through the first operand only of each
        leading product (step 4); a relay counts for all it reaches."""
        found: set[str] = set()
        seen: set[int] = set()
        todo = list(trunk)
        while todo:
            op = todo.pop()
            if op in seen or stops(op, skip, found):
                continue
            seen.add(op)
            if op not in starts and any(r not in skip for r in readers.get(op, ())):
                found |= reach(op, skip, key)
            elif op in lead_of:
                todo.append(lead_of[op])
            else:
                todo.extend(parents[op])
        return found

    sources: dict[str, set[str]] = {}
    arguments: dict[str, list[frozenset[str]]] = {}
    relayed: dict[str, set[str]] = {}
    leads: dict[str, set[str]] = {}
    modulating: dict[str, set[str]] = {}
    for s in sorted(chosen):
        skip = _ancestor_set(graph.call_parents, s)
        key = frozenset(skip & chosen)  # (the selected ancestors)
        skip.add(s)
        node = node_ids[s]
        start = graph.call_inputs[s]
        sources[node], arguments[node], relayed[node], leads[node], modulating[node] = walk(
            start, argument_groups(graph, s), skip, key
        )
    outputs_of = dict(graph.output_ops)
    for name in outputs:
        start = outputs_of.get(name, ())
        sources[name], arguments[name], relayed[name], leads[name], modulating[name] = walk(
            start, [(op,) for op in start], set(), frozenset()
        )
    order = [*inputs, *(node_ids[s] for s in sorted(chosen)), *outputs]
    stages = set(node_ids.values())
    first = inputs[0] if inputs else None
    return _classify(order, sources, arguments, relayed, leads, modulating, stages, first)


def argument_groups(graph: OpGraph, call: int) -> list[tuple[int, ...]]:
    """The start ops of ``call``'s walk grouped by the argument they came in, in the order
    the trunk is looked for: the state the call continues first, then its arguments in order
    (step 4).

    >>> g = OpGraph(owners=(-1, -1, -1), parents=((), (), ()), call_parents=(-1,),
    ...             call_inputs=((0, 1, 2),), input_ops=(), output_ops=(),
    ...             call_arguments=((0, 1, 1),), call_states=(1,))
    >>> argument_groups(g, 0)
    [(1, 2), (0,)]
    """
    groups: dict[int, list[int]] = {}
    for op, arg in zip(graph.call_inputs[call], graph.arguments(call)):
        groups.setdefault(arg, []).append(op)
    state = graph.state(call)
    order = sorted(groups, key=lambda arg: (arg != state, arg))
    return [tuple(groups[arg]) for arg in order]


def sequential_edges(
    selected: Sequence[int], inputs: Sequence[str], outputs: Sequence[str], calls: Sequence[Stage]
) -> tuple[Edge, ...]:
    """Stages chained in execution order from the first input."""
    chain = [*inputs[:1], *(calls[i].id for i in sorted(set(selected)))]
    edges = [Edge(a, b, "flow") for a, b in itertools.pairwise(chain)]
    if chain:
        edges += [Edge(chain[-1], out, "flow") for out in outputs]
    return tuple(edges)


def _classify(
    order: list[str],
    sources: dict[str, set[str]],
    arguments: dict[str, list[frozenset[str]]],
    relayed: dict[str, set[str]],
    leads: dict[str, set[str]],
    modulating: dict[str, set[str]],
    stages: set[str],
    previous: str | None,
) -> tuple[Edge, ...]:
    rank = {name: i for i, name in enumerate(order)}
    ancestors: dict[str, int] = {}  # node -> bitset of its ancestors, by rank
    closed: dict[str, int] = {}  # node -> the same with the node itself
    path: dict[str, int] = {}  # node -> its primary path: itself and the flow chain behind it
    depth: dict[str, int] = {}
    edges: list[Edge] = []
    for node in order:
        found: set[str] = sources.get(node, set())
        if len(found) == 1:  # the common case: one source, a flow edge
            (src,) = found
            bits = ancestors[node] = closed[src]
            closed[node] = bits | (1 << rank[node])
            path[node] = path[src] | (1 << rank[node])
            depth[node] = bits.bit_count()
            edges.append(Edge(src, node, "flow"))
            if node in stages:
                previous = node
            continue
        ordered = sorted(found, key=rank.__getitem__)
        bits = 0
        for src in ordered:
            bits |= closed[src]
        # the trunk: the deepest source of the first argument that has a source
        trunk: Collection[str] = next((g for g in arguments.get(node, ()) if g), found)
        led = leads.get(node, set()) & set(trunk)  # behind the first operands of products
        if led:
            trunk = led
        primary = min(
            (src for src in ordered if src in trunk), key=lambda src: -depth[src], default=""
        )
        ancestors[node] = bits
        closed[node] = bits | (1 << rank[node])
        path[node] = path.get(primary, 0) | (1 << rank[node])
        depth[node] = bits.bit_count()
        if ordered:
            below = path[primary]
            covered = 0  # ancestors of the other sources (a source is never its own)
            for src in ordered:
                if src != primary:
                    covered |= ancestors[src]
            mod = modulating.get(node, set())
            stale = {
                src for src in relayed.get(node, ()) if src != primary and covered >> rank[src] & 1
            }
            for src in ordered:
                if src in stale:
                    continue
                kind: EdgeKind = (
                    "flow"
                    if src == primary
                    else ("skip" if below >> rank[src] & 1 and src not in mod else "merge")
                )
                edges.append(Edge(src, node, kind))
        elif node in stages and previous is not None:
            edges.append(Edge(previous, node, "order"))
        if node in stages:
            previous = node
    return tuple(edges)


def _owners(call_parents: Sequence[int], chosen: set[int]) -> list[int]:
    owner = [-1] * len(call_parents)
    for c, parent in enumerate(call_parents):  # parents come before children
        owner[c] = c if c in chosen else (owner[parent] if parent >= 0 else -1)
    return owner


def _ancestor_set(call_parents: Sequence[int], c: int) -> set[int]:
    found = set()
    c = call_parents[c]
    while c >= 0:
        found.add(c)
        c = call_parents[c]
    return found
