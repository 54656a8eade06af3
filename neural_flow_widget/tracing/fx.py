"""``topology="fx"``: stage edges from ``torch.fx.symbolic_trace`` instead of the runtime tracer.

A custom Tracer keeps the selected stages (those with no selected descendant) as leaves and
traces through everything else, remembering which module call each node was created in. The fx
graph then becomes an ``OpGraph`` like the runtime one, so the same walk gives the edges: this
is the notes' "producing-stage sets propagated through the other nodes". fx gives no
activations; shapes and data still come from the observed run. fx knows no operand shapes,
so its graph marks no broadcast joins (``OpGraph.leads``): where a model modulates its data
(``norm(x) * (1 + scale) + shift``), its trunk is the deepest source, as before that rule.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import torch
from torch import fx

from ..graph import Flow, OpGraph
from ..graph.edges import LEADING
from .joins import JOINS


class FxUnavailable(Exception):
    """torch.fx could not give a graph aligned with the observed run; the message says why."""


class _StageTracer(fx.Tracer):
    def __init__(self, leaves: set[str]) -> None:
        super().__init__()
        self.leaves = leaves
        self.within: list[tuple[str, int]] = []  # traced-through calls, innermost last
        self.counts: dict[str, int] = {}
        self.entered: dict[tuple[str, int], Any] = {}  # call -> its (args, kwargs)
        self.node_call: dict[fx.Node, tuple[str, int] | None] = {}
        self.leaf_call: dict[fx.Node, tuple[str, int]] = {}
        self._pending_leaf: tuple[str, int] | None = None

    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return qualname in self.leaves or super().is_leaf_module(m, qualname)

    def call_module(self, m: torch.nn.Module, forward: Any, args: tuple, kwargs: dict) -> Any:
        name = self.path_of_module(m)
        k = self.counts.get(name, 0)
        self.counts[name] = k + 1
        self.entered[(name, k)] = (args, kwargs)
        if self.is_leaf_module(m, name):
            self._pending_leaf = (name, k)
            try:
                return super().call_module(m, forward, args, kwargs)
            finally:
                self._pending_leaf = None
        self.within.append((name, k))
        try:
            return forward(*args, **kwargs)
        finally:
            self.within.pop()

    def create_node(
        self,
        kind: str,
        target: Any,
        args: Any,
        kwargs: Any,
        name: Any = None,
        type_expr: Any = None,
    ) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.node_call[node] = self.within[-1] if self.within else None
        if kind == "call_module" and self._pending_leaf is not None:
            self.leaf_call[node] = self._pending_leaf
        return node


def op_graph(model: torch.nn.Module, flow: Flow, selected: tuple[int, ...]) -> OpGraph:
    """The fx graph of ``model`` as an OpGraph aligned with ``flow``'s calls. Raises
    ``FxUnavailable`` when the model cannot be symbolically traced or fx saw other module
    calls than the run did."""
    chosen = [flow.calls[i].module for i in selected]
    leaves = {m for m in chosen if not any(o.startswith(m + ".") for o in chosen)}
    tracer = _StageTracer(leaves)
    try:
        graph = tracer.trace(model, concrete_args=_concrete_args(model, flow))
    except Exception as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise FxUnavailable(f"{type(error).__name__}: {reason}"[:300]) from error
    index = {(c.module, c.call): c.index for c in flow.calls}
    missing = [
        f"{name}#{k}"
        for name, n in tracer.counts.items()
        for k in range(n)
        if (name, k) not in index
    ]
    if missing:
        raise FxUnavailable(f"fx saw module calls the run did not make: {missing[:3]}")
    owners: list[int] = []
    parents: list[tuple[int, ...]] = []
    reps: dict[fx.Node, tuple[int, ...]] = {}
    input_ops: list[tuple[str, int]] = []
    placeholders = iter(_placeholder_names(model, flow))

    def ops_in(value: Any) -> tuple[int, ...]:
        found: list[int] = []
        fx.node.map_arg(value, lambda n: found.extend(reps.get(n, ())))
        return tuple(dict.fromkeys(found))

    output_ops: list[tuple[str, tuple[int, ...]]] = []
    joins: list[tuple[int, str]] = []  # the products that lead the trunk (graph/edges.py)
    for node in graph.nodes:
        if node.op == "placeholder":
            prefix = next(placeholders, None)
            ops = []
            for name in flow.inputs:
                if prefix is not None and (name == prefix or name.startswith(prefix + ".")):
                    owners.append(-1)
                    parents.append(())
                    input_ops.append((name, len(owners) - 1))
                    ops.append(len(owners) - 1)
            reps[node] = tuple(ops)
        elif node.op == "output":
            for path, value in _output_paths(node.args[0]):
                output_ops.append((f"output:{path}", ops_in(value)))
        else:
            call = tracer.leaf_call.get(node) or tracer.node_call.get(node)
            owners.append(index[call] if call is not None else -1)
            product = _product(node)
            args: Any = node.args
            if product in _BIAS_FIRST:  # the factors first, as the runtime tracer records them
                args = (*node.args[1:], *node.args[:1])
            parents.append(ops_in((args, node.kwargs)))
            if product is not None and len(parents[-1]) > 1:  # (the rest of fx has no joins)
                joins.append((len(owners) - 1, JOINS.get(product, product)))
            reps[node] = (len(owners) - 1,)
    call_inputs: list[tuple[int, ...]] = [()] * len(flow.calls)
    call_arguments: list[tuple[int, ...]] = [()] * len(flow.calls)
    for key, (args, kwargs) in tracer.entered.items():
        first: dict[int, int] = {}  # op -> the argument it came in first (as the runtime tracer)
        for arg, value in enumerate((*args, *kwargs.values())):
            for op in ops_in(_nodes_of(value)):
                first.setdefault(op, arg)
        call_inputs[index[key]], call_arguments[index[key]] = tuple(first), tuple(first.values())
    return OpGraph(
        tuple(owners),
        tuple(parents),
        flow.graph.call_parents,
        tuple(call_inputs),
        tuple(input_ops),
        tuple(output_ops),
        joins=tuple(joins),
        call_arguments=tuple(call_arguments),  # (fx knows no shapes: no state continued)
    )


#: products given their bias first (``torch.baddbmm(bias, q, k)``: tracing/joins.py)
_BIAS_FIRST = frozenset(("baddbmm", "addbmm", "addmm"))


def _product(node: fx.Node) -> str | None:
    """The name of the function or method ``node`` calls where it is a product that leads
    the trunk (``matmul``, ``bmm``, ``scaled_dot_product_attention``, ...), else None."""
    if node.op not in ("call_function", "call_method"):
        return None
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return name if JOINS.get(name, name) in LEADING else None


def with_fx_edges(model: torch.nn.Module, flow: Flow, selected: tuple[int, ...]) -> Flow:
    """``flow`` re-projected onto ``selected`` with edges from the fx graph (``FxUnavailable``
    when fx cannot give one)."""
    graph = op_graph(model, flow, selected)  # (its edges are walked on first read)
    return replace(flow, topology="fx", selected=selected, graph=graph, given_edges=None)


def _nodes_of(value: Any) -> Any:
    """Proxies inside nested args -> their nodes."""
    if isinstance(value, fx.Proxy):
        return value.node
    if isinstance(value, (tuple, list)):
        return (
            type(value)(_nodes_of(v) for v in value)
            if type(value) in (tuple, list)
            else [_nodes_of(v) for v in value]
        )
    if isinstance(value, dict):
        return {k: _nodes_of(v) for k, v in value.items()}
    return value


def _output_paths(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, fx.Node):
        return [(path or "0", value)]
    if isinstance(value, (tuple, list)):
        found = []
        for i, item in enumerate(value):
            found += _output_paths(item, f"{path}.{i}" if path else str(i))
        return found
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            found += _output_paths(item, f"{path}.{key}" if path else str(key))
        return found
    return []


def _forward_params(model: torch.nn.Module) -> list[inspect.Parameter]:
    return [
        p
        for p in inspect.signature(model.forward).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _placeholder_names(model: torch.nn.Module, flow: Flow) -> list[str | None]:
    """For each tensor placeholder, in order, the input-node prefix it stands for."""
    names: list[str | None] = []
    given = {name.split(":", 1)[1].split(".", 1)[0] for name in flow.inputs}
    for position, param in enumerate(_forward_params(model)):
        if param.name in given:
            names.append(f"input:{param.name}")
        elif str(position) in given:
            names.append(f"input:{position}")
        else:
            names.append(None)
    concrete = _concrete_args(model, flow)
    return [n for n, p in zip(names, _forward_params(model)) if p.name not in concrete]


def _concrete_args(model: torch.nn.Module, flow: Flow) -> dict[str, Any]:
    """Forward parameters that got no tensor in the run are fixed to their defaults."""
    given = {name.split(":", 1)[1].split(".", 1)[0] for name in flow.inputs}
    concrete = {}
    for position, param in enumerate(_forward_params(model)):
        if param.name not in given and str(position) not in given:
            concrete[param.name] = None if param.default is param.empty else param.default
    return concrete


def regraph_with_fx(model_ref: Any):
    """The ``Flow.regraph`` of an fx flow: another selection traced again by fx with its
    stages as leaves (None, keeping the op graph's edges, when the model is gone or fx
    cannot trace it)."""

    def regraph(flow: Flow, selected: tuple[int, ...]) -> Flow | None:
        model = model_ref() if model_ref is not None else None
        if model is None:
            return None
        try:
            return with_fx_edges(model, flow, selected)
        except FxUnavailable:
            return None  # keep the graph fx gave for the first selection

    return regraph
