"""Capture in the traced run: each call's output is reduced as the call returns.

The call tracker calls :meth:`CaptureState.on_output` (an
:class:`~neural_flow_widget.tracing.protocols.OutputObserver`) inside the module call, with
every ``__torch_function__`` handler off, so summary ops never enter the graph. The
reductions run on the output's own device and leave small results there
(:mod:`.summary`, :mod:`.retained`); :meth:`CaptureState.finish` brings them all to the host
after the pass (:mod:`.host`). On the CPU, float32 images and sequences may take the
optional compiled path (:mod:`.accelerator`), which writes into host memory directly. A
tensor object that several calls return (a ``Sequential`` and its last child) is reduced
once. Attention maps come from the :class:`~.attention.AttentionRecorder`, which the tracer
feeds with the ops it sees.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ..graph import Flow, Stage
from ..tracing.protocols import WriteLog
from . import accelerator
from .attention import AttentionRecorder, AttentionTracer
from .attention.budget import DEFAULT_ATTENTION_BUDGET, fit_budget
from .attention.maps import DeviceMap
from .dense import read_dense
from .host import to_host
from .meaning import Meaning, PendingMeaning, read_input, read_output
from .readings import meaning_view
from .retained import DEFAULT_BUDGET_BYTES, PendingRetained, Retained, retain_pending
from .summary import (
    PendingSummary,
    summarise_pending,
    summary_failed,
    summary_without_data,
)
from .views import available_views, render_view


@dataclass(frozen=True, slots=True)
class Captured:
    """One tensor leaf of a call's output, reduced.

    ``pending`` is a :class:`~.summary.PendingSummary`: the call kept the exact whole-tensor
    reductions and a copy of the sample; ``summary`` finishes it on first read (cached,
    shared by the copies :func:`dataclasses.replace` makes).
    """

    leaf: str  # path of the leaf in the output ("0", "logits", "1.0")
    pending: PendingSummary
    retained: Retained | None  # None when it could not be kept
    error: str | None = None

    @property
    def summary(self) -> Any:
        """The :class:`~.summary.Summary` of the leaf."""
        return self.pending.resolve()


META = (
    "the model ran on the meta device, which holds shapes but no values: the graph shows its "
    "topology, shapes and parameter counts; there is no data to summarise or view"
)

#: what one leaf's reduction gives in the call: the accelerator's record, or the pending
#: summary, the pending retained parts (None if they failed) and why something failed
Made = Any


@dataclass
class CaptureState:
    """Collects the reductions while the model runs (see ``trace(capture=True)``)."""

    sample: int = 0
    budget_bytes: int | None = None
    attention: bool = True
    attention_budget: int | None = DEFAULT_ATTENTION_BUDGET  # bytes all maps may hold
    outputs: dict[int, list[tuple[str, Made]]] = field(default_factory=dict)
    recorder: AttentionRecorder | None = None
    failures: dict[int, str] = field(default_factory=dict)  # call -> why its capture failed
    writes: WriteLog | None = None  # the dataflow tracer, when there is one
    io: dict[str, Made] = field(default_factory=dict)  # model input / output node -> reduced
    meanings: dict[str, PendingMeaning] = field(default_factory=dict)  # node -> its reading
    io_failures: dict[str, str] = field(default_factory=dict)
    _memo: dict[int, tuple[weakref.ref, int, Made]] = field(default_factory=dict)
    _notes: dict[str, None] = field(default_factory=dict)  # (in order, each once)
    _fast: Any = field(default_factory=accelerator.reducer)  # None: torch ops only

    def fresh(self) -> CaptureState:
        return CaptureState(self.sample, self.budget_bytes, self.attention, self.attention_budget)

    def attach(self, stack: list[int], tracer: Any) -> Any:
        """Observe a run whose call stack is ``stack``; returns a mode to enter around the
        forward when there is no dataflow tracer to carry the attention recorder, else
        None."""
        self.writes = tracer
        if not self.attention:
            return None
        # maps of SDPA calls are made when first asked for, from copies of the query and key
        self.recorder = AttentionRecorder(lambda: stack[-1], sample=self.sample, lazy=True)
        if tracer is not None:
            tracer.observe_with(self.recorder)
            self.recorder.writes = tracer  # (SDPA arguments are held until detach)
            return None
        return AttentionTracer.of(self.recorder)

    def detach(self) -> None:
        self._memo.clear()
        if self.recorder is not None:
            self.recorder.forget()

    def on_output(self, call: int, leaves: list[tuple[str, torch.Tensor]]) -> None:
        """A call returned: reduce each tensor leaf of its output."""
        writes, memo = self.writes, self._memo
        try:
            kept = []
            for leaf, tensor in leaves:
                # The same tensor object returned by several calls (a Sequential and its last
                # child, an eval-mode Dropout) is reduced once, unless an in-place op wrote
                # to it in between. Without a tracer to see such writes nothing is shared.
                if writes is not None:
                    entry = memo.get(id(tensor))
                    if (
                        entry is not None
                        and entry[0]() is tensor
                        and not writes.written_since(tensor, entry[1])
                    ):
                        kept.append((leaf, entry[2]))
                        continue
                made = self._reduce(tensor)
                if writes is not None:
                    memo[id(tensor)] = (weakref.ref(tensor), writes.seq, made)
                kept.append((leaf, made))
            self.outputs[call] = kept
        except Exception as error:  # never abort the run: mark the stage instead
            self.failures[call] = f"capture failed: {type(error).__name__}: {error}"

    def on_end(self, node: str, tensor: torch.Tensor, output: bool) -> None:
        """A model input (before the forward) or output (after it): reduce it like a stage's
        output, and read what it means (:mod:`.meaning`)."""
        try:
            self.io[node] = self._reduce(tensor)
            read = read_output if output else read_input
            meaning = read(tensor, node, self.sample)
            if meaning is not None:
                self.meanings[node] = meaning
        except Exception as error:  # never abort the run: mark the node instead
            self.io_failures[node] = f"capture failed: {type(error).__name__}: {error}"

    def _reduce(self, tensor: torch.Tensor) -> Made:
        budget = self.budget_bytes or DEFAULT_BUDGET_BYTES
        if tensor.is_meta:  # shapes without values: nothing failed, there is nothing to read
            self._notes.setdefault(META, None)
            return PendingSummary.of(summary_without_data(tensor)), None, None
        try:
            if self._fast is not None:  # float32 images and sequences on the CPU
                fast = self._fast.reduce(tensor, self.sample, budget)
                if fast is not None:
                    return fast
            dense = read_dense(tensor)  # read once, for both
            summary = summarise_pending(dense)
        except Exception as error:
            reason = f"summary failed: {type(error).__name__}: {error}"
            return PendingSummary.of(summary_failed(tensor, reason)), None, reason
        try:
            retained = retain_pending(
                dense, sample=self.sample, budget_bytes=budget, peak=summary.peak
            )
        except Exception as error:
            return summary, None, f"view failed: {type(error).__name__}: {error}"
        return summary, retained, None

    def finish(self) -> Capture:
        """The run's records, once its small results reached the host (one transfer per
        device)."""
        made = [m for items in self.outputs.values() for _, m in items if type(m) is tuple]
        made += [m for m in self.io.values() if type(m) is tuple]
        recorder = self.recorder
        maps = dict(recorder.maps) if recorder is not None else {}
        waiting = [part for m in made for part in m[:2] if part is not None]
        waiting += [m for entries in maps.values() for m in entries if isinstance(m, DeviceMap)]
        to_host(waiting)  # (one transfer per device for the whole run)
        maps, pooled = fit_budget(maps, self.attention_budget)
        if pooled is not None:
            self._notes.setdefault(pooled, None)
        outputs = {}
        for call, items in self.outputs.items():
            outputs[call] = [Captured(leaf, *_records(m)) for leaf, m in items]
        for call, errors in (recorder.errors if recorder is not None else {}).items():
            if errors and call >= 0:
                self.failures.setdefault(call, f"attention map failed: {errors[0]}")
        ends = {
            node: [Captured(node.partition(":")[2], *_records(m))] for node, m in self.io.items()
        }
        meanings = {}
        for node, pending in self.meanings.items():
            try:
                meanings[node] = pending.result()
            except Exception as error:
                self.io_failures.setdefault(
                    node, f"reading failed: {type(error).__name__}: {error}"
                )
        return Capture(
            outputs,
            maps,
            dict(self.failures),
            self.sample,
            tuple(self._notes),
            ends,
            meanings,
            dict(self.io_failures),
        )


def _records(made: Made) -> tuple[PendingSummary, Retained | None, str | None]:
    if type(made) is not tuple:  # the accelerator's
        return (*made.result(), None)
    summary, retained, error = made
    if isinstance(retained, PendingRetained):
        retained = retained.result()
    return summary, retained, error


@dataclass(frozen=True)
class Capture:
    """The reductions of one run, by call index; the Flow's ``summary``/``view``/``attention``
    read from here."""

    outputs: dict[int, list[Captured]]
    maps: dict[int, list[Any]]  # call index (-1 = model body) -> AttentionMap / PendingMap list
    failures: dict[int, str] = field(default_factory=dict)  # call -> why its capture failed
    sample: int = 0  # which batch sample the views and attention maps show
    notes: tuple[str, ...] = ()  # what the whole run's capture could not do, once each
    ends: dict[str, list[Captured]] = field(default_factory=dict)  # model input / output nodes
    meanings: dict[str, Meaning] = field(default_factory=dict)  # their readings, where known
    end_failures: dict[str, str] = field(default_factory=dict)  # node -> why capture failed

    def nonfinite(self, calls: list[int]) -> list[int]:
        """Of ``calls``, in their order, those whose output held a NaN or an Inf."""
        return [c for c in calls if any(i.pending.nonfinite() for i in self.outputs.get(c, ()))]

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
        if stage_id in flow.inputs or stage_id in flow.outputs:
            if stage_id not in self.ends:
                why = self.end_failures.get(stage_id, "it is not a tensor")
                raise ValueError(f"{stage_id!r} has no captured data: {why}")
            return self.ends[stage_id]
        stage = flow.stage(stage_id)
        if stage.index not in self.outputs:
            why = stage.error or "it returned no tensor"
            raise ValueError(f"stage {stage_id!r} ({stage.type}) has no captured output: {why}")
        return self.outputs[stage.index]

    def summary(self, flow: Flow, stage_id: str) -> list[Any]:
        return [c.summary for c in self.captured(flow, stage_id)]

    def view(
        self,
        flow: Flow,
        stage_id: str,
        kind: str | None,
        *,
        channel: int | None,
        leaf: int,
        page: int | None = None,
        channels: Any = None,
    ) -> Any:
        items = self.captured(flow, stage_id)
        if not 0 <= leaf < len(items):
            raise ValueError(
                f"stage {stage_id!r} has {len(items)} output tensor(s); leaf={leaf} is out of range"
            )
        item = items[leaf]
        meaning = self.meanings.get(stage_id)
        if meaning is not None and kind in (None, meaning.kind):
            return meaning_view(meaning)
        if item.retained is None and item.summary.device == "meta":
            raise ValueError(f"stage {stage_id!r} ran on the meta device: {META}")
        if item.retained is None:
            raise ValueError(f"stage {stage_id!r}: no view was kept ({item.error})")
        return render_view(item.retained, kind, channel=channel, page=page, channels=channels)

    def views(self, flow: Flow, stage_id: str, leaf: int = 0) -> tuple[str, ...]:
        items = self.captured(flow, stage_id)
        kept = items[leaf].retained if leaf < len(items) else None
        meaning = self.meanings.get(stage_id)
        first = (meaning.kind,) if meaning is not None and leaf == 0 else ()
        return first + (available_views(kept) if kept is not None else ())

    def attention(self, flow: Flow, stage_id: str) -> list[Any]:
        return [
            self.maps[call][entry].resolve()
            for call, entry in self.attention_origins(flow, stage_id)
        ]

    def attention_origins(self, flow: Flow, stage_id: str) -> list[tuple[int, int]]:
        """Where each of :meth:`attention`'s maps was made: (module call, its n-th map)."""
        if stage_id in flow.inputs or stage_id in flow.outputs:
            return []
        inside = flow.calls_within(stage_id)
        return [
            (call, i)
            for call in sorted(self.maps)
            if call in inside
            for i in range(len(self.maps[call]))
        ]
