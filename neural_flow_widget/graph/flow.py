"""The Flow: what ``trace()`` returns, one run's stages and the edges between them.

No torch here: a Flow is plain data that prints itself (:meth:`Flow.to_text`), checks itself
(:meth:`Flow.lint`) and re-projects itself onto another selection (:meth:`Flow.select`). What
capture kept (summaries, views, attention maps, gradients) hangs off it as a
:class:`~.reading.CaptureRecord`, read through the methods of :class:`~.reading.Readings`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .condense import condense
from .edges import edges_for
from .origin import NonfiniteOrigin
from .reading import CaptureRecord, Readings
from .records import EDGE_KINDS, TOPOLOGIES, Edge, Failure, ModuleInfo, OpGraph, Stage, Topology
from .selection import resolve


@dataclass(frozen=True, slots=True)
class Flow(Readings):
    """What ``trace()`` returns: the stages of one run and the edges between them.

    >>> import torch, neural_flow_widget as nfw
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    >>> flow = nfw.trace(model, torch.ones(1, 4))
    >>> [(e.src, e.dst, e.kind) for e in flow.edges]
    [('input:0', '0', 'flow'), ('0', '1', 'flow'), ('1', 'output:0', 'flow')]
    """

    model: str  # class name of the traced model
    calls: tuple[Stage, ...]  # every module call of the run, in execution order
    selected: tuple[int, ...]  # indices into ``calls`` of the selected stages
    topology: Topology
    inputs: tuple[str, ...]  # model input node ids
    outputs: tuple[str, ...]  # model output node ids
    graph: OpGraph  # the run's op graph as recorded (:attr:`condensed`: the one to walk)
    modules: tuple[ModuleInfo, ...]
    capture: CaptureRecord | None = None  # the run's summaries, views and attention maps
    model_ref: Any = field(default=None, compare=False, repr=False)  # weakref to the model
    explicit: bool = field(default=False, compare=False)  # stages were chosen, not defaulted
    notes: tuple[str, ...] = ()  # what the run could not show, in words (e.g. no data on meta)
    #: the call ids whose output held NaN or +/-Inf, in the order the calls returned (the first
    #: is where a NaN or an Inf appeared; the calls around it return it later)
    nonfinite: tuple[str, ...] = ()
    #: where the NaN / Inf was made that the first of ``nonfinite`` received in its input (made
    #: between stages, in a parent's forward); None when that call made it itself, or none is
    nonfinite_origin: NonfiniteOrigin | None = None
    failure: Failure | None = None  # set on the partial Flow of a run whose forward raised
    #: how another selection gets its edges when the op graph cannot give them (``topology
    #: ="fx"`` traces the model again with the new stages as leaves); None when it can, or
    #: returns None to keep the op graph's edges
    regraph: Callable[[Flow, tuple[int, ...]], Flow | None] | None = field(
        default=None, compare=False, repr=False
    )
    #: the edges of the selection when they were given, else None: :attr:`edges` walks the
    #: op graph on first read (the live widget never reads them: the front end walks the
    #: same graph itself)
    given_edges: tuple[Edge, ...] | None = field(default=None, compare=False, repr=False)
    _condensed: OpGraph | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def condensed(self) -> OpGraph:
        """:attr:`graph` with every node bypassed that changes no stage edge
        (:func:`~.condense.condense`: the same edges for every selection, fewer nodes), made
        on first read: what the edge walk and the wire use."""
        if self._condensed is None:
            object.__setattr__(self, "_condensed", condense(self.graph))
        assert self._condensed is not None
        return self._condensed

    @property
    def edges(self) -> tuple[Edge, ...]:
        """The stage edges of the selection (see :mod:`.edges`), found on first read."""
        if self.given_edges is None:
            object.__setattr__(self, "given_edges", self._edges(self.selected))
        assert self.given_edges is not None
        return self.given_edges

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The selected stage calls, in execution order."""
        return tuple(self.calls[i] for i in self.selected)

    def stage(self, stage_id: str) -> Stage:
        """The call with this id; ``KeyError`` naming close ids when there is none."""
        for call in self.calls:
            if call.id == stage_id:
                return call
        close = difflib.get_close_matches(stage_id, [c.id for c in self.calls], n=5)
        raise KeyError(f"no stage {stage_id!r} in this flow; closest: {close or 'none'}")

    def calls_within(self, stage_id: str) -> frozenset[int]:
        """The indices of this stage's call and of every call made inside it.

        >>> import torch, neural_flow_widget as nfw
        >>> model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.nn.ReLU())
        >>> sorted(nfw.trace(model, torch.ones(1, 2)).calls_within("0"))
        [0, 1]
        """
        top = self.stage(stage_id).index
        parents = self.graph.call_parents
        inside = set()
        for call in range(top, len(parents)):
            c = call
            while c > top:
                c = parents[c]
            if c == top:
                inside.add(call)
        return frozenset(inside)

    def select(self, stages: Any) -> Flow:
        """The same run re-projected onto another selection, without running the model again.

        ``stages`` takes what ``trace(stages=...)`` takes, and also stage ids (``"block#1"``).

        >>> import torch, neural_flow_widget as nfw
        >>> model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.nn.ReLU())
        >>> [s.id for s in nfw.trace(model, torch.ones(1, 2)).select(1).stages]
        ['0', '1']
        """
        model = self.model_ref() if self.model_ref is not None else None
        selected = resolve(stages, self.modules, self.calls, model)
        if self.regraph is not None:
            again = self.regraph(self, selected)
            if again is not None:
                return replace(again, explicit=True)
        again = replace(self, selected=selected, given_edges=None, explicit=True)
        object.__setattr__(again, "_condensed", self._condensed)  # (the same graph)
        return again

    def _edges(self, selected: tuple[int, ...]) -> tuple[Edge, ...]:
        graph = self.condensed
        return edges_for(self.topology, graph, selected, self.inputs, self.outputs, self.calls)

    def to_text(self) -> str:
        """The graph as a readable table: one row per stage, then the edges."""
        rows = [("stage", "type", "shape", "params", "from")]
        sources: dict[str, list[str]] = {}
        for edge in sorted(self.edges, key=lambda e: EDGE_KINDS.index(e.kind)):
            mark = {"flow": "", "skip": " (skip)", "merge": " (merge)", "order": " (order)"}[
                edge.kind
            ]
            sources.setdefault(edge.dst, []).append(edge.src + mark)
        nonfinite = set(self.nonfinite)
        for stage in self.stages:
            shape = ", ".join("x".join(map(str, s)) or "scalar" for s in stage.shapes) or "-"
            if stage.id in nonfinite:
                shape += "  ! NaN/Inf"
            if stage.error:
                shape += "  ! " + stage.error.splitlines()[0][:60]
            rows.append(
                (
                    stage.id,
                    stage.type,
                    shape,
                    f"{stage.params:,}",
                    ", ".join(sources.get(stage.id, [])) or "-",
                )
            )
        for out in self.outputs:
            rows.append((out, "", "", "", ", ".join(sources.get(out, [])) or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            f"{self.model} — {len(self.stages)} stages, {len(self.edges)} edges, "
            f"topology: {self.topology}"
        ]
        lines += [f"note: {note}" for note in self.notes]
        if self.nonfinite_origin is not None:
            where = self.nonfinite_origin.describe()
            lines.append(f"first NaN/Inf in the input of {self.nonfinite[0]}: {where}")
        elif self.nonfinite:
            lines.append(f"first NaN/Inf at {self.nonfinite[0]}")
        for r in rows:
            lines.append("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
        if self.failure is not None:
            lines.append(f"failed: {self.failure.message}")
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
        if len({(e.src, e.dst) for e in self.edges}) != len(self.edges):
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
