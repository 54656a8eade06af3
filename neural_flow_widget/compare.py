"""Where two runs part: ``nfw.compare(flow_a, flow_b)``, stage by stage.

>>> import torch, neural_flow_widget as nfw
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
>>> x = torch.ones(1, 4)
>>> c = nfw.compare(nfw.trace(model, x), nfw.trace(model, x + 1))
>>> c.first_divergent().id
'0'
>>> [round(d.rel_l2, 6) for d in nfw.compare(nfw.trace(model, x), nfw.trace(model, x)).stages]
[0.0, 0.0, 0.0]

Two runs of the same model on two inputs (a clean and a corrupted image), of two models of
the same structure (base and fine-tuned), in two dtypes (float32 and bfloat16): stages are
matched by id, and each pair of outputs is compared on what capture keeps of both, the fixed
sample of every float output (:mod:`.capture.sampling`: the same elements of every tensor of
a size, up to 8,192 of them). The figures are exact for outputs of at most that many
elements (``exact``) and estimates from those elements beyond (``elements`` of ``numel``
compared). Stages are in the order they returned (the innermost first), so the first
divergent stage is where the runs began to part.

A run whose forward raised (the ``partial`` Flow of a :class:`~neural_flow_widget.TraceError`)
is never equal to the other: a stage that raised in it has no output to compare and diverges
(``raised``), and when no stage of both runs raised, ``stopped`` says where it stopped, so that
``first_divergent()`` is never None with a failed run:

>>> class Broken(torch.nn.Sequential):
...     def forward(self, x):
...         return self[2](self[1](self[0](x)).T)  # a transpose that the last Linear refuses
>>> broken = Broken(*model)
>>> try:
...     nfw.trace(broken, x)
... except nfw.TraceError as error:
...     c = nfw.compare(nfw.trace(model, x), error.partial)
>>> c.first_divergent().id, c.first_divergent().raised
('2', 'b')
>>> print(c.to_text().splitlines()[-1])
run B raised at stage '2': RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x1 and 4x2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from .capture.difference import captured_difference
from .capture.image import View
from .graph import Failure, Flow

__all__ = ["Comparison", "StageDifference", "compare", "stage_difference"]

#: which run raised in a stage: run A, run B, or both
Raised = Literal["a", "b", "both"]


@dataclass(frozen=True, slots=True)
class StageDifference:
    """How one stage's output differs between run A and run B (over every float leaf)."""

    id: str
    rel_l2: float  # ||a - b|| / ||a||: 0 when equal; inf when a is 0 and b is not; nan: NaN
    cosine: float  # a . b / (||a|| ||b||); 1 when both are 0; nan when either holds NaN
    max_abs: float  # max |a - b| over the elements compared
    exact: bool  # every element compared (else the fixed sample)
    elements: int  # elements compared
    numel: int  # elements of the outputs
    note: str | None = None  # why the figures are what they are (shapes differ, no data ...)
    raised: Raised | None = None  # the run whose forward raised here (it has no output here)

    def diverges(self, rtol: float = 1e-3) -> bool:
        """Whether the outputs differ by more than ``rtol`` (relative L2); a NaN in them counts,
        and so does a stage that raised in either run; a stage without data to compare (an
        integer output, no tensor) does not."""
        return (
            (self.elements > 0 and not self.rel_l2 <= rtol)
            or math.isinf(self.rel_l2)
            or self.raised is not None
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs compared stage by stage (see :func:`compare`)."""

    stages: tuple[StageDifference, ...]  # the stages of both runs, in the order they returned
    only_a: tuple[str, ...]  # stage ids that ran in run A only (control flow, another model)
    only_b: tuple[str, ...]
    ends: tuple[StageDifference, ...] = ()  # the model inputs and outputs of both runs
    failure_a: Failure | None = None  # run A's forward raised: where and what (flow.failure)
    failure_b: Failure | None = None
    #: a run raised but no stage of both runs did (it raised in the model's own forward, or in
    #: a stage the other run lacks): where it stopped, the stage that raised, else the first
    #: stage (or output) of the other run that it never reached; ``raised`` says which run
    stopped: StageDifference | None = None

    def first_divergent(self, rtol: float = 1e-3) -> StageDifference | None:
        """The first stage to return whose output differs by more than ``rtol`` (relative
        L2 difference) or that raised in either run, else where a run that raised stopped
        (``stopped``); None only when both runs completed and no stage differs."""
        return next((d for d in self.stages if d.diverges(rtol)), self.stopped)

    @property
    def failed(self) -> bool:
        """Whether either run's forward raised (the two runs cannot agree)."""
        return self.failure_a is not None or self.failure_b is not None

    def stage(self, stage_id: str) -> StageDifference:
        for d in (*self.stages, *self.ends):
            if d.id == stage_id:
                return d
        raise KeyError(f"no stage {stage_id!r} ran in both runs")

    def to_text(self, rtol: float = 1e-3) -> str:
        """A table: one row per stage, the first divergent one marked."""
        first = self.first_divergent(rtol)
        rows = [("stage", "rel L2", "cosine", "max |a-b|", "compared")]
        for d in (*self.ends[:1], *self.stages, *self.ends[1:]):
            mark = "  <- first divergent" if d is first else ""
            seen = "all" if d.exact else f"{d.elements:,} of {d.numel:,}"
            rows.append(
                (d.id, _fmt(d.rel_l2), _fmt(d.cosine), _fmt(d.max_abs), seen + mark)
            )  # fmt: skip
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows]
        lines += [f"only in run A: {', '.join(self.only_a)}"] if self.only_a else []
        lines += [f"only in run B: {', '.join(self.only_b)}"] if self.only_b else []
        if self.stopped is not None:
            lines.append(f"{self.stopped.id}: {self.stopped.note}")
        for run, failure in (("A", self.failure_a), ("B", self.failure_b)):
            if failure is not None:
                lines.append(f"run {run} raised {_where(failure)}: {_what(failure)}")
        return "\n".join(line.rstrip() for line in lines)


def _fmt(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else str(x)


def _where(failure: Failure) -> str:
    if failure.stage is not None:
        return f"at stage {failure.stage!r}"
    return f"in module {failure.module!r}" if failure.module else "in the model's own forward"


def _what(failure: Failure) -> str:
    """The error of a Failure's message, without its "stage 'x' (module T) raised" lead."""
    text = failure.message
    cut = text.find(" raised ")
    text = text[cut + len(" raised ") :] if cut >= 0 else text
    return text.split("; it received inputs", 1)[0].split(". Check that the inputs", 1)[0]


def compare(a: Flow, b: Flow) -> Comparison:
    """Compare two runs traced with ``capture=True`` stage by stage (see the module doc).

    Stages are matched by id (``block#1`` is the second call of ``block`` in both runs), the
    model's inputs and outputs by node id. Either run may be the partial Flow of a forward that
    raised (``err.partial``): its stages that raised diverge, never equal (see the module doc).
    """
    for name, flow in (("a", a), ("b", b)):
        if flow.capture is None:
            raise ValueError(
                f"flow {name} was traced with capture=False: there is nothing to compare; "
                f"trace both runs with capture=True"
            )
    ids_b = {c.id for c in b.calls}
    order = _return_order(a)
    raised_a, raised_b = _raised(a), _raised(b)
    stages = tuple(
        _raised_difference(a, b, c, raised_a, raised_b) or _difference(a, b, c)
        for c in (a.calls[i].id for i in order)
        if c in ids_b
    )
    ids_a = {c.id for c in a.calls}
    only_a = tuple(a.calls[i].id for i in order if a.calls[i].id not in ids_b)
    only_b = tuple(b.calls[i].id for i in _return_order(b) if b.calls[i].id not in ids_a)
    both = [n for n in (*a.inputs, *a.outputs) if n in (*b.inputs, *b.outputs)]
    ends = tuple(_difference(a, b, n) for n in both)
    stopped = None
    if not any(d.raised for d in stages):
        stopped = _stopped(a, "b", b, only_a) or _stopped(b, "a", a, only_b)
    return Comparison(stages, only_a, only_b, ends, a.failure, b.failure, stopped)


def _raised(flow: Flow) -> dict[str, str]:
    """The calls that raised in a run (stage id -> its error): the innermost that raised and
    the calls around it, which it ended; none when the run did not fail, or when its forward
    raised outside every module call."""
    failure = flow.failure
    if failure is None or failure.module is None:
        return {}
    hits = [c.index for c in flow.calls if c.module == failure.module and c.error is not None]
    found: dict[str, str] = {}
    call = hits[-1] if hits else -1  # (the last call of that module: the run stopped in it)
    while call >= 0:
        found[flow.calls[call].id] = flow.calls[call].error or failure.message
        call = flow.graph.call_parents[call]
    return found


def _raised_difference(
    a: Flow, b: Flow, node: str, raised_a: dict[str, str], raised_b: dict[str, str]
) -> StageDifference | None:
    """A stage that raised in either run: no output to compare, and never equal."""
    if node not in raised_a and node not in raised_b:
        return None
    runs: Raised = (
        "both" if node in raised_a and node in raised_b else "a" if node in raised_a else "b"
    )
    errors = [
        f"run {r.upper()} raised here: {e[node]}"
        for r, e in (("a", raised_a), ("b", raised_b))
        if node in e
    ]
    return replace(_missing(node, "; ".join(errors)), raised=runs)


def _stopped(
    done: Flow, run: Literal["a", "b"], failed: Flow, only_done: tuple[str, ...]
) -> StageDifference | None:
    """Where ``failed`` (run ``run``) stopped when no stage of both runs raised: the stage
    that raised in it, else the first stage of ``done`` it never reached, else ``done``'s
    first output, else the model itself."""
    failure = failed.failure
    if failure is None:
        return None
    what, inner = _what(failure), next(iter(_raised(failed)), None)
    if inner is not None:
        return replace(_missing(inner, f"run {run.upper()} raised here: {what}"), raised=run)
    where = only_done[0] if only_done else next(iter(done.outputs), None) or failed.model
    note = f"run {run.upper()} raised {_where(failure)} before it: {what}"
    return replace(_missing(where, note), raised=run)


def _return_order(flow: Flow) -> list[int]:
    """Call indices in the order the calls returned: children before their parent, siblings
    in start order (a post-order of the call tree)."""
    children: dict[int, list[int]] = {}
    for c, parent in enumerate(flow.graph.call_parents):
        children.setdefault(parent, []).append(c)
    order: list[int] = []
    stack: list[tuple[int, bool]] = [(c, False) for c in reversed(children.get(-1, []))]
    while stack:
        c, done = stack.pop()
        if done:
            order.append(c)
            continue
        stack.append((c, True))
        stack.extend((k, False) for k in reversed(children.get(c, [])))
    return order


def _samples(flow: Flow, node: str) -> tuple[list[tuple[str, Any, Any]], str | None]:
    try:
        _, items = flow.captured(node)
    except (ValueError, KeyError) as error:
        return [], str(error)
    found = []
    for item in items:
        kept = item.pending.sample() if item.error is None else None
        found.append((item.leaf, kept, item.summary))
    return found, None


def _difference(a: Flow, b: Flow, node: str) -> StageDifference:
    leaves_a, why_a = _samples(a, node)
    leaves_b, why_b = _samples(b, node)
    if why_a or why_b:
        return _missing(node, f"no data: {why_a or why_b}")
    by_leaf = {leaf: (kept, summary) for leaf, kept, summary in leaves_b}
    diff = norm_a = norm_b = dot = 0.0
    peak, exact, elements, numel, notes = 0.0, True, 0, 0, []
    for leaf, kept_a, summary_a in leaves_a:
        kept_b, summary_b = by_leaf.get(leaf, (None, None))
        where = f"output {leaf}" if leaf else "the output"
        if summary_b is None:
            notes.append(f"{where} is missing in run B")
            diff = math.inf
            continue
        if tuple(summary_a.shape) != tuple(summary_b.shape):
            notes.append(f"{where}: shapes differ ({summary_a.shape} vs {summary_b.shape})")
            diff = math.inf
            continue
        if kept_a is None or kept_b is None:
            notes.append(f"{where} is not compared ({summary_a.dtype} / {summary_b.dtype})")
            continue
        x = np.asarray(kept_a[0], np.float64)
        y = np.asarray(kept_b[0], np.float64)
        d = x - y
        diff += float(d @ d)
        norm_a, norm_b, dot = norm_a + float(x @ x), norm_b + float(y @ y), dot + float(x @ y)
        peak = max(peak, float(np.max(np.abs(d))) if d.size else 0.0)
        exact &= kept_a[1] and kept_b[1]
        elements += x.size
        numel += int(summary_a.numel)
    if not elements and not notes:
        return _missing(node, "no float output to compare")
    rel = _ratio(math.sqrt(diff), math.sqrt(norm_a))
    if norm_a == 0.0 and norm_b == 0.0:
        cosine = 1.0
    elif norm_a == 0.0 or norm_b == 0.0:
        cosine = 0.0
    else:
        cosine = dot / math.sqrt(norm_a * norm_b)
    note = "; ".join(notes) or None
    return StageDifference(node, rel, cosine, peak, exact, elements, numel, note)


def _ratio(num: float, den: float) -> float:
    if math.isnan(num) or math.isnan(den):
        return math.nan
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def _missing(node: str, note: str) -> StageDifference:
    return StageDifference(node, math.nan, math.nan, math.nan, False, 0, 0, note)


def stage_difference(
    flow_a: Flow,
    flow_b: Flow,
    stage_id: str,
    kind: str | None = None,
    *,
    channel: int | None = None,
    page: int | None = None,
    channels: Any = None,
    leaf: int = 0,
) -> View:
    """A - B of a view of one stage (or model input / output) of two runs traced with capture
    (:func:`~neural_flow_widget.capture.difference.captured_difference`: its reading's
    difference where the view is the reading, else of its retained values)."""
    if flow_a.capture is None or flow_b.capture is None:
        raise ValueError("A - B needs both runs traced with capture=True")
    _, items_a = flow_a.captured(stage_id)
    try:
        _, items_b = flow_b.captured(stage_id)
    except KeyError:
        raise ValueError(f"stage {stage_id!r} did not run in run B: there is no A - B") from None
    if not (0 <= leaf < len(items_a) and leaf < len(items_b)):
        raise ValueError(f"stage {stage_id!r}: leaf={leaf} is not an output of both runs")
    reading = flow_a.reading(stage_id) if leaf == 0 else None
    who = f"stage {stage_id!r}" if reading is None else repr(stage_id)
    return captured_difference(
        who,
        items_a[leaf].retained,
        items_b[leaf].retained,
        kind,
        meanings=(reading, flow_b.reading(stage_id)) if reading is not None else None,
        channel=channel,
        page=page,
        channels=channels,
    )
