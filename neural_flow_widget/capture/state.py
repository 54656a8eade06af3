"""Capture in the traced run: each call's output is reduced as the call returns.

The call tracker's wrapper (``_calls.CallTracker``: the run's forward hook) calls
:meth:`CaptureState._on_output` inside the module call, on the output's own device, with every
``__torch_function__`` handler off, so summary ops never enter the graph. Only small results
are kept, in host memory: a summary and a bounded :class:`~._retain.Retained` per tensor leaf
(the compiled path's records are made after the pass, from what it wrote). A tensor object
that several calls return (a ``Sequential`` and its last child) is reduced once. Attention
maps come from the :class:`~._attention.AttentionRecorder`, which the tracer feeds with the
ops it sees.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ..graph import Flow, Stage
from . import accelerator as _native
from . import retained as _retain
from . import summary as _summaries
from .attention.maps import PendingMap


@dataclass(frozen=True, slots=True)
class Captured:
    """One tensor leaf of a call's output, reduced.

    ``pending`` is a :class:`~._summaries.PendingSummary`: the hook keeps the exact
    whole-tensor reductions and a copy of the sample; ``summary`` finishes it on first read
    (cached, shared by the copies :func:`dataclasses.replace` makes).
    """

    leaf: str  # path of the leaf in the output ("0", "logits", "1.0")
    pending: Any  # _summaries.PendingSummary
    retained: Any  # _retain.Retained, or None when it could not be kept
    error: str | None = None

    @property
    def summary(self) -> Any:
        """The :class:`~._summaries.Summary` of the leaf."""
        return self.pending.resolve()


@dataclass
class CaptureState:
    """Collects the reductions while the model runs (see ``trace(capture=True)``)."""

    sample: int = 0
    budget_bytes: int | None = None
    attention: bool = True
    outputs: dict[int, list[tuple[str, Any]]] = field(default_factory=dict)  # leaf, _reduce's
    recorder: Any = None
    failures: dict[int, str] = field(default_factory=dict)  # call -> why its capture failed
    tracer: Any = None
    _memo: dict[int, tuple[weakref.ref, int, Any]] = field(default_factory=dict)
    _slabs: Any = field(default_factory=lambda: _native.Slabs())

    def fresh(self) -> CaptureState:
        return CaptureState(self.sample, self.budget_bytes, self.attention)

    def attach(self, tracker: Any, tracer: Any) -> Any:
        """Hook into a run; returns a mode to enter around the forward when there is no
        dataflow tracer to carry the attention recorder, else None."""
        tracker.on_output = self._on_output
        self.tracer = tracer
        if not self.attention:
            return None
        from .attention.recorder import AttentionRecorder, AttentionTracer

        stack = tracker.stack
        # maps of SDPA calls are made when first asked for, from copies of the query and key
        self.recorder = AttentionRecorder(lambda: stack[-1], sample=self.sample, lazy=True)
        if tracer is not None:
            tracer.observe_with(self.recorder)
            self.recorder.writes = tracer  # (SDPA arguments are held until detach)
            return None
        return AttentionTracer(self.recorder)

    def detach(self) -> None:
        self._memo.clear()
        if self.recorder is not None:
            self.recorder.forget()

    def _on_output(self, call: int, leaves: list[tuple[str, torch.Tensor]]) -> None:
        tracer, memo = self.tracer, self._memo
        try:
            kept = []
            for leaf, tensor in leaves:
                # The same tensor object returned by several calls (a Sequential and its last
                # child, an eval-mode Dropout) is reduced once, unless an in-place op wrote
                # to it in between. Without a tracer to see such writes nothing is shared.
                if tracer is not None:
                    entry = memo.get(id(tensor))
                    if entry is not None and entry[0]() is tensor and \
                            not tracer.written_since(tensor, entry[1]):
                        kept.append((leaf, entry[2]))
                        continue
                made = self._reduce(tensor)
                if tracer is not None:
                    memo[id(tensor)] = (weakref.ref(tensor), tracer.seq, made)
                kept.append((leaf, made))
            self.outputs[call] = kept
        except Exception as error:  # never abort the run: mark the stage instead
            self.failures[call] = f"capture failed: {type(error).__name__}: {error}"

    def _reduce(self, tensor: torch.Tensor) -> Any:
        """A :class:`~._native.Reduced` (its records are made after the run), or
        ``(pending summary, retained, error)``."""
        # Runs with __torch_function__ off (the call tracker turns it off around this), so
        # these ops never enter the graph.
        budget = self.budget_bytes or _retain.DEFAULT_BUDGET_BYTES
        try:
            # the compiled path, where it applies (float32 image / sequence on the CPU)
            if _native.LIB is not None:
                fast = _native.reduce_later(tensor, self.sample, budget, self._slabs)
                if fast is not None:
                    return fast
            # the tensor is read once (attribute reads are torch calls too) for both
            dense = _summaries.read_dense(tensor)
            summary = _summaries.summarise_pending(dense)
        except Exception as error:
            reason = f"summary failed: {type(error).__name__}: {error}"
            failed = _summaries.summary_failed(tensor, reason)
            return _summaries.PendingSummary(failed), None, reason
        try:
            # the summary's exact min/max bound what retention keeps: no scale search
            peak = None if summary.min is None else max(-summary.min, summary.max)
            retained = _retain.retain_dense(dense, sample=self.sample, budget_bytes=budget,
                                            peak=peak)
        except Exception as error:
            return summary, None, f"view failed: {type(error).__name__}: {error}"
        return summary, retained, summary.error

    def finish(self) -> Capture:
        outputs = {}
        for call, items in self.outputs.items():
            outputs[call] = [Captured(leaf, *(made.result() + (None,) if type(made) is
                                              _native.Reduced else made))
                             for leaf, made in items]
        maps = dict(self.recorder.maps) if self.recorder is not None else {}
        for call, errors in (self.recorder.errors if self.recorder is not None else {}).items():
            if errors and call >= 0:
                self.failures.setdefault(call, f"attention map failed: {errors[0]}")
        return Capture(outputs, maps, dict(self.failures), self.sample)


@dataclass(frozen=True)
class Capture:
    """The reductions of one run, by call index; the Flow's ``summary``/``view``/``attention``
    read from here."""

    outputs: dict[int, list[Captured]]
    maps: dict[int, list[Any]]  # call index (-1 = model body) -> AttentionMap / PendingMap list
    failures: dict[int, str] = field(default_factory=dict)  # call -> why its capture failed
    sample: int = 0  # which batch sample the views and attention maps show

    def mark(self, calls: tuple[Stage, ...]) -> tuple[Stage, ...]:
        """Calls whose reduction failed carry the reason in ``error``."""
        marked = []
        for call in calls:
            failed = [c.error for c in self.outputs.get(call.index, ()) if c.error]
            if call.index in self.failures:
                failed.insert(0, self.failures[call.index])
            if failed and not call.error:
                call = replace(call, error=failed[0])
            marked.append(call)
        return tuple(marked)

    def captured(self, flow: Flow, stage_id: str) -> list[Captured]:
        stage = flow.stage(stage_id)
        if stage.index not in self.outputs:
            why = stage.error or "it returned no tensor"
            raise ValueError(f"stage {stage_id!r} ({stage.type}) has no captured output: {why}")
        return self.outputs[stage.index]

    def summary(self, flow: Flow, stage_id: str) -> list[Any]:
        return [c.summary for c in self.captured(flow, stage_id)]

    def view(self, flow: Flow, stage_id: str, kind: str | None, *, channel: int | None,
             leaf: int) -> Any:
        from . import views as _views

        items = self.captured(flow, stage_id)
        if not 0 <= leaf < len(items):
            raise ValueError(f"stage {stage_id!r} has {len(items)} output tensor(s); "
                             f"leaf={leaf} is out of range")
        item = items[leaf]
        if item.retained is None:
            raise ValueError(f"stage {stage_id!r}: no view was kept ({item.error})")
        return _views.render_view(item.retained, kind, channel=channel)

    def views(self, flow: Flow, stage_id: str, leaf: int = 0) -> tuple[str, ...]:
        from . import views as _views

        items = self.captured(flow, stage_id)
        if leaf >= len(items) or items[leaf].retained is None:
            return ()
        return _views.available_views(items[leaf].retained)

    def attention(self, flow: Flow, stage_id: str) -> list[Any]:
        stage = flow.stage(stage_id)
        parents = flow.graph.call_parents
        found = []
        for call in sorted(self.maps):
            c = call
            while c >= 0 and c != stage.index:
                c = parents[c]
            if c == stage.index:
                found.extend(m.resolve() if isinstance(m, PendingMap) else m
                             for m in self.maps[call])
        return found
