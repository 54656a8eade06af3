"""Frozen records of one traced run: stages, edges, the condensed op graph, and the Flow.

No torch here: a Flow is plain data that prints itself (:meth:`Flow.to_text`), checks itself
(:meth:`Flow.lint`) and re-projects itself onto another selection (:meth:`Flow.select`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Literal

EdgeKind = Literal["flow", "skip", "merge"]
Topology = Literal["dataflow", "fx", "sequential"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("flow", "skip", "merge")
TOPOLOGIES: tuple[Topology, ...] = ("dataflow", "fx", "sequential")


@dataclass(frozen=True, slots=True)
class Edge:
    """A stage edge: data produced by ``src`` reaches ``dst``."""

    src: str
    dst: str
    kind: EdgeKind

    def __iter__(self):  # so that ``src, dst, kind = edge`` works
        return iter((self.src, self.dst, self.kind))


@dataclass(frozen=True, slots=True)
class Stage:
    """One module call of the run.

    ``id`` is the module's qualified name, or ``name#k`` when the module was called more than
    once (each call is its own stage). ``parent`` is the id of the enclosing module call, or
    None for a direct child of the model.
    """

    index: int  # position in execution (start) order among all calls of the run
    id: str
    module: str  # qualified module name
    type: str  # class name
    call: int  # which call of this module, 0-based
    parent: str | None
    depth: int  # module-tree depth; 1 = a child of the model
    leaf: bool  # the module has no children
    params: int  # parameters of the module, recursive
    shapes: tuple[tuple[int, ...], ...]  # output tensor shapes, one per tensor leaf
    dtypes: tuple[str, ...]  # output tensor dtypes ("float32", ...)
    sig: str = ""  # structure signature: equal for modules of equal type and structure
    error: str | None = None  # why this call (or its summary) failed


@dataclass(frozen=True, slots=True)
class OpGraph:
    """The run's op graph, condensed: ops whose parents all belong to the same module call are
    merged into them, which changes no stage edge. Integers only, no tensors."""

    owners: tuple[int, ...]  # per op: index of the innermost module call; -1 = model body
    parents: tuple[tuple[int, ...], ...]  # per op: parent op ids
    call_parents: tuple[int, ...]  # per call: index of the enclosing call; -1 = the model
    call_inputs: tuple[tuple[int, ...], ...]  # per call: ops that produced its input tensors
    input_ops: tuple[tuple[str, int], ...]  # model input node id -> its op
    output_ops: tuple[tuple[str, tuple[int, ...]], ...]  # model output node id -> its ops


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """A module of the model, as the stage selection sees it."""

    name: str
    type: str
    depth: int
    leaf: bool


@dataclass(frozen=True, slots=True)
class Flow:
    """What ``trace()`` returns: the stages of one run and the edges between them.

    >>> import torch, neural_flow_widget as nfw
    >>> flow = nfw.trace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), torch.ones(1, 4))
    >>> [(e.src, e.dst, e.kind) for e in flow.edges]
    [('input:0', '0', 'flow'), ('0', '1', 'flow'), ('1', 'output:0', 'flow')]
    """

    model: str  # class name of the traced model
    calls: tuple[Stage, ...]  # every module call of the run, in execution order
    selected: tuple[int, ...]  # indices into ``calls`` of the selected stages
    edges: tuple[Edge, ...]
    topology: Topology
    inputs: tuple[str, ...]  # model input node ids
    outputs: tuple[str, ...]  # model output node ids
    graph: OpGraph
    modules: tuple[ModuleInfo, ...]
    capture: Any = None  # the _capture.Capture of the run (summaries, views, attention)
    model_ref: Any = field(default=None, compare=False, repr=False)  # weakref to the model
    explicit: bool = field(default=False, compare=False)  # stages were chosen, not defaulted

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The selected stage calls, in execution order."""
        return tuple(self.calls[i] for i in self.selected)

    def stage(self, stage_id: str) -> Stage:
        """The call with this id; ``KeyError`` naming close ids when there is none."""
        for call in self.calls:
            if call.id == stage_id:
                return call
        import difflib

        close = difflib.get_close_matches(stage_id, [c.id for c in self.calls], n=5)
        raise KeyError(f"no stage {stage_id!r} in this flow; closest: {close or 'none'}")

    def select(self, stages: Any) -> Flow:
        """The same run re-projected onto another selection, without running the model again.

        ``stages`` takes what ``trace(stages=...)`` takes, and also stage ids (``"block#1"``).

        >>> import torch, neural_flow_widget as nfw
        >>> model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.nn.ReLU())
        >>> [s.id for s in nfw.trace(model, torch.ones(1, 2)).select(1).stages]
        ['0', '1']
        """
        from . import _select, _topology

        model = self.model_ref() if self.model_ref is not None else None
        selected = _select.resolve(stages, self.modules, self.calls, model)
        if self.topology == "fx" and model is not None:
            from . import _fx

            try:
                return replace(_fx.with_fx_edges(model, self, selected), explicit=True)
            except _fx.FxUnavailable:
                pass  # keep the graph fx gave for the first selection
        edges = _topology.edges_for(self, selected)
        return replace(self, selected=selected, edges=edges, explicit=True)

    def to_text(self) -> str:
        """The graph as a readable table: one row per stage, then the edges."""
        rows = [("stage", "type", "shape", "params", "from")]
        sources: dict[str, list[str]] = {}
        for edge in sorted(self.edges, key=lambda e: EDGE_KINDS.index(e.kind)):
            mark = {"flow": "", "skip": " (skip)", "merge": " (merge)"}[edge.kind]
            sources.setdefault(edge.dst, []).append(edge.src + mark)
        for stage in self.stages:
            shape = ", ".join("x".join(map(str, s)) or "scalar" for s in stage.shapes) or "-"
            if stage.error:
                shape += "  ! " + stage.error.splitlines()[0][:60]
            rows.append((stage.id, stage.type, shape, f"{stage.params:,}",
                         ", ".join(sources.get(stage.id, [])) or "-"))
        for out in self.outputs:
            rows.append((out, "", "", "", ", ".join(sources.get(out, [])) or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"{self.model} — {len(self.stages)} stages, {len(self.edges)} edges, "
                 f"topology: {self.topology}"]
        for r in rows:
            lines.append("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
        return "\n".join(line.rstrip() for line in lines)

    def lint(self) -> None:
        """Check the graph: unique ids, both ends of every edge exist, edges go forward in
        execution order, closed kinds. Raises ``ValueError`` listing every problem."""
        problems = []
        ids = [c.id for c in self.calls]
        if len(set(ids)) != len(ids):
            problems.append("duplicate stage ids")
        order = {name: i for i, name in enumerate(self.inputs)}
        for rank, i in enumerate(self.selected):
            order[self.calls[i].id] = len(self.inputs) + rank
        base = len(order)
        for i, name in enumerate(self.outputs):
            order[name] = base + i
        if list(self.selected) != sorted(set(self.selected)):
            problems.append("selected stages are not in execution order")
        for edge in self.edges:
            if edge.kind not in EDGE_KINDS:
                problems.append(f"edge {edge.src}->{edge.dst}: unknown kind {edge.kind!r}")
            for end in (edge.src, edge.dst):
                if end not in order:
                    problems.append(f"edge {edge.src}->{edge.dst}: {end!r} is not a node")
            if edge.src in order and edge.dst in order and order[edge.src] >= order[edge.dst]:
                problems.append(f"edge {edge.src}->{edge.dst} goes backwards")
        if len(set((e.src, e.dst) for e in self.edges)) != len(self.edges):
            problems.append("duplicate edges")
        n = len(self.calls)
        for c in self.calls:
            if c.parent is not None and c.parent not in ids[: c.index]:
                problems.append(f"stage {c.id}: parent {c.parent!r} is not an earlier call")
        for op, owner in enumerate(self.graph.owners):
            if not -1 <= owner < n or any(p >= op for p in self.graph.parents[op]):
                problems.append(f"op {op}: bad owner or parent order")
        if self.topology not in TOPOLOGIES:
            problems.append(f"unknown topology {self.topology!r}")
        if problems:
            raise ValueError("flow lint failed:\n  " + "\n  ".join(problems))

    # -- capture (filled by trace(capture=True)) ---------------------------------------------

    def summary(self, stage_id: str):
        """Summaries of a stage's output, one per tensor leaf (see ``_capture``)."""
        return self._captured().summary(self, stage_id)

    def view(self, stage_id: str, kind: str | None = None, *, channel: int | None = None,
             leaf: int = 0):
        """A rendered view of a stage's output (a channel grid, a token map, values...)."""
        return self._captured().view(self, stage_id, kind, channel=channel, leaf=leaf)

    def views(self, stage_id: str, leaf: int = 0) -> tuple[str, ...]:
        """The view kinds a stage's output offers, the default first."""
        return self._captured().views(self, stage_id, leaf)

    def attention(self, stage_id: str):
        """Attention maps recorded inside a stage call: a list of ``AttentionMap``."""
        return self._captured().attention(self, stage_id)

    def _captured(self):
        if self.capture is None:
            raise ValueError("this flow was traced with capture=False; trace again with "
                             "capture=True to get summaries, views and attention maps")
        return self.capture


def model_weakref(model: Any) -> Any:
    try:
        return weakref.ref(model)
    except TypeError:  # pragma: no cover - every nn.Module is weak-referenceable
        return None
