"""``trace()``: run the model once, observed by the tracer and capture, and build its Flow."""

from __future__ import annotations

import gc
import os
import types
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .capture.attention.budget import DEFAULT_ATTENTION_BUDGET
from .graph import (
    Failure,
    Flow,
    ModuleInfo,
    OpGraph,
    Topology,
    TraceError,
    condense,
    resolve,
    sequential_edges,
    stage_edges,
)
from .tracing import CallTracker, DataflowTracer, map_tensors, output_leaves
from .tracing.calls import uncompiled
from .tracing.dataflow import join_kind
from .tracing.eager import eager as _eager
from .tracing.fx import FxUnavailable, regraph_with_fx, with_fx_edges
from .tracing.origin import find_origin, rng_state

_MODES = ("auto", "dataflow", "fx", "sequential")


@dataclass
class _Run:
    """What one observed forward pass left behind."""

    tracker: CallTracker
    tracer: DataflowTracer | None
    input_ops: list[tuple[str, int]]
    inputs: list[str]
    capture: Any = None  # the CaptureState that watched this run
    output: Any = None
    error: BaseException | None = None
    notes: list[str] = field(default_factory=list)  # what this run could not show


SCRIPTED = (
    "the model is a TorchScript module: the modules inside it run in TorchScript, out of the "
    "tracer's sight, so the graph shows the model as one step from its inputs to its outputs; "
    "trace the nn.Module you scripted to see its stages"
)


def trace(
    model: torch.nn.Module,
    inputs: Any = (),
    *,
    stages: Any = None,
    topology: str = "auto",
    kwargs: Mapping[str, Any] | None = None,
    capture: bool = True,
    attention: bool = True,
    capture_device: Any = "cpu",
    sample: int = 0,
    budget_bytes: int | None = None,
    attention_budget_bytes: int | None = DEFAULT_ATTENTION_BUDGET,
) -> Flow:
    """Run ``model`` on ``inputs`` once and return its stages and the edges between them.

    >>> import torch, neural_flow_widget as nfw
    >>> model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    >>> flow = nfw.trace(model, torch.randn(1, 3, 16, 16))
    >>> [s.id for s in flow.stages]
    ['0', '1']

    ``inputs``: a tensor -> ``model(inputs)``; a tuple or list -> ``model(*inputs)``; a dict
    (or HF ``BatchEncoding``) -> ``model(**inputs)``; ``kwargs`` adds keyword arguments.
    The model runs in eval mode under ``torch.no_grad()``; its training flags, parameters and
    buffers are as before afterwards, and the caller's tensors are never modified (they enter
    as detached views). ``stages`` selects stages (see ``Flow.select``); ``topology`` is
    ``"auto"`` (runtime dataflow), ``"fx"`` or ``"sequential"``. With ``capture=True`` each
    stage's output is summarised inside its hook (``flow.summary``, ``flow.view``) and
    attention maps are recorded (``flow.attention``): exact up to 512 positions per axis,
    block-mean pooled beyond, and all of a run's maps together within
    ``attention_budget_bytes`` (default 48 MiB; ``None``: no bound), pooled further to fit,
    with a note in ``flow.notes`` when they are.
    """
    if str(capture_device) != "cpu":
        raise ValueError(
            f"capture_device={capture_device!r}: captured summaries and views are "
            f"kept in host memory; use capture_device='cpu' (the reductions "
            f"themselves still run on each tensor's own device)"
        )
    if topology not in _MODES:
        raise ValueError(f"topology={topology!r}; choose one of {', '.join(_MODES)}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"trace() takes an nn.Module, got {type(model).__name__}")
    model = uncompiled(model)  # (torch.compile: the model's own modules, run eagerly)
    args, kw = _split_inputs(inputs, kwargs)
    probe = CallTracker(model)
    modules = probe.module_infos()
    resolve(stages, modules, (), model)  # bad names fail before running
    use_tracer = topology in ("auto", "dataflow")
    capture_state = None
    if capture:
        from .capture import CaptureState

        capture_state = CaptureState(sample, budget_bytes, attention, attention_budget_bytes)
    flags = [(m, m.training) for m in (model, *probe.modules)]
    collecting = gc.isenabled()
    try:
        # The run allocates tens of thousands of small records (tags, call records) that
        # would trigger the cyclic collector over and over; nothing it makes is cyclic.
        gc.disable()
        if any(flag for _, flag in flags):  # (setting a flag costs a Module.__setattr__)
            model.eval()
        with torch.no_grad(), _eager():
            rng = rng_state()  # (the run's random draws, for the diagnosis of a NaN run)
            run = _run(probe.fresh(), args, kw, use_tracer, capture_state)
            mode: Topology = "dataflow" if use_tracer else "sequential"
            failure = run.tracer.failure if run.tracer is not None else None
            if use_tracer and run.error is not None and failure is None:
                retry = _run(
                    probe.fresh(), args, kw, False, capture_state and capture_state.fresh()
                )
                if retry.error is None:
                    warnings.warn(
                        f"the dataflow tracer could not follow this model "
                        f"({type(run.error).__name__}: {run.error}); it ran again "
                        f"without it and shows stages in execution order",
                        stacklevel=2,
                    )
                    run, mode = retry, "sequential"
            elif failure is not None:
                warnings.warn(
                    f"the dataflow tracer failed ({failure!r}); stages "
                    f"are shown in execution order",
                    stacklevel=2,
                )
                mode = "sequential"
        flow = _build(model, run, stages, mode, modules)
        if flow.nonfinite:  # where the first NaN / Inf was made (a second run, only for these)
            flow = replace(flow, nonfinite_origin=find_origin(probe.fresh(), args, kw, flow, rng))
    finally:
        for module, flag in flags:
            if module.training != flag:
                module.training = flag
        if collecting:
            gc.enable()
    if run.error is not None:
        raise _trace_error(flow, run) from run.error
    if topology == "fx":
        try:
            return replace(
                with_fx_edges(model, flow, flow.selected), regraph=regraph_with_fx(flow.model_ref)
            )
        except FxUnavailable as why:
            warnings.warn(
                f"model could not be symbolically traced by torch.fx ({why}). Using "
                f"runtime execution order instead.",
                stacklevel=2,
            )
    return flow


def attention_window(
    model: torch.nn.Module,
    inputs: Any,
    flow: Flow,
    stage_id: str,
    index: int,
    window: tuple[int, int, int, int],
    *,
    kwargs: Mapping[str, Any] | None = None,
    sample: int = 0,
) -> Any:
    """Attention map ``index`` of ``flow.attention(stage_id)`` at full resolution over
    ``window`` = (q0, q1, k0, k1), made by running ``model`` on ``inputs`` again (as
    :func:`trace` ran them; see :mod:`.capture.attention.window`): an AttentionMap of the
    window's rows and columns, or a ``str`` saying why it cannot be made."""
    from .capture.attention.window import WindowMode

    if flow.capture is None:
        return "this flow was traced with capture=False: it has no attention maps"
    origins = flow.capture.attention_origins(flow, stage_id)
    if not 0 <= index < len(origins):
        return f"stage {stage_id!r} has no attention map {index}"
    call, entry = origins[index]
    model = uncompiled(model)
    args, kw = _split_inputs(inputs, kwargs)
    tracker = CallTracker(model)
    flags = [(m, m.training) for m in (model, *tracker.modules)]
    mode = WindowMode(
        lambda: tracker.stack[-1],
        calls=flow.calls_within(flow.calls[call].id),
        call=call,
        entry=entry,
        window=window,
        sample=sample,
    )
    try:
        model.eval()
        with torch.no_grad(), _eager(), tracker, mode:
            model(*map_tensors(args, _detached), **map_tensors(kw, _detached))
    except Exception as error:  # (the kept blocks are shown instead, with this reason)
        return f"running the model again failed: {type(error).__name__}: {error}"
    finally:
        for module, flag in flags:
            module.training = flag
    return mode.map if mode.map is not None else mode.why


def _detached(_path: str, tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach()


def _split_inputs(inputs: Any, kwargs: Mapping[str, Any] | None) -> tuple[tuple, dict]:
    args: tuple
    if isinstance(inputs, Mapping):
        args, kw = (), dict(inputs)
    elif isinstance(inputs, (tuple, list)):
        args, kw = tuple(inputs), {}
    else:
        args, kw = (inputs,), {}
    if kwargs:
        clash = set(kw) & set(kwargs)
        if clash:
            raise ValueError(f"keyword inputs given twice: {sorted(clash)}")
        kw.update(kwargs)
    return args, kw


def _run(tracker: CallTracker, args: tuple, kw: dict, use_tracer: bool, capture_state: Any) -> _Run:
    model = tracker.model
    tracer = DataflowTracer(tracker.stack) if use_tracer else None
    tracker.tracer = tracer
    mode = tracer
    if capture_state is not None:
        tracker.on_output = capture_state.on_output
        mode = capture_state.attach(tracker.stack, tracer) or tracer
    names: list[str] = []
    input_ops: list[tuple[str, int]] = []

    def enter(prefix: str) -> Any:
        def tag(path: str, tensor: torch.Tensor) -> torch.Tensor:
            name = f"input:{prefix}{'.' if prefix and path else ''}{path}"
            names.append(name)
            if capture_state is not None:
                capture_state.on_end(name, tensor, output=False)
            if tracer is None:
                return tensor.detach()
            view, op = tracer.tag_input(tensor)
            input_ops.append((name, op))
            return view

        return tag

    call_args = tuple(map_tensors(a, enter(str(i))) for i, a in enumerate(args))
    call_kw = {k: map_tensors(v, enter(str(k))) for k, v in kw.items()}
    run = _Run(tracker, tracer, input_ops, names, capture_state)
    try:
        with tracker:
            if mode is None:
                run.output = model(*call_args, **call_kw)
            else:
                with mode:
                    run.output = model(*call_args, **call_kw)
    except Exception as error:  # the model's own error: reported with the partial graph
        run.error = error
    finally:
        if capture_state is not None:
            capture_state.detach()
    if tracer is not None and run.error is None and isinstance(model, torch.jit.ScriptModule):
        # its forward ran in TorchScript, out of the mode: its output, one op of the model's
        # body made from every input (as for a TorchScript submodule's call)
        views = [t for a in (*call_args, *call_kw.values()) for _, t in output_leaves(a)]
        outputs = [t for _, t in output_leaves(run.output) if not tracer.ops_of([t])]
        tracer.record_call(views, outputs, call=-1)
        run.notes.append(SCRIPTED)
    return run


def _build(
    model: torch.nn.Module,
    run: _Run,
    stages: Any,
    mode: Topology,
    modules: tuple[ModuleInfo, ...],
) -> Flow:
    tracker, tracer = run.tracker, run.tracer
    calls = tracker.stages()
    outs = output_leaves(run.output) if run.error is None else []
    outputs = tuple(f"output:{path}" for path, _ in outs)
    if tracer is not None:
        output_ops = tuple((f"output:{path}", tracer.ops_of([t])) for path, t in outs)
        full = OpGraph(
            tuple(tracer.owners),
            tuple(tracer.parents),
            tuple(r.parent for r in tracker.calls),
            tuple(r.inputs for r in tracker.calls),
            tuple(run.input_ops),
            output_ops,
            tuple((op, join_kind(func)) for op, func in tracer.joins.items()),
            tuple(r.arguments for r in tracker.calls),
            tuple(r.state for r in tracker.calls),
        )
        graph = condense(full)  # (the same edges for every selection, fewer nodes)
    else:
        graph = OpGraph(
            (), (), tuple(r.parent for r in tracker.calls), tuple(() for _ in tracker.calls), (), ()
        )
    selected = resolve(stages, modules, calls, model)
    inputs = tuple(run.inputs)
    if mode == "sequential":
        edges = sequential_edges(selected, inputs, outputs, calls)
    else:
        edges = stage_edges(graph, selected, inputs, outputs, calls)
    capture, notes, nonfinite = None, tuple(run.notes), ()
    if run.capture is not None:
        for path, tensor in outs:
            run.capture.on_end(f"output:{path}", tensor, output=True)
        capture = run.capture.finish()
        calls = capture.mark(calls)
        notes += capture.notes
        returned = sorted((r.ended, i) for i, r in enumerate(tracker.calls) if r.ended >= 0)
        nonfinite = tuple(calls[i].id for i in capture.nonfinite([i for _, i in returned]))
    return Flow(
        model=type(model).__name__,
        calls=calls,
        selected=selected,
        edges=edges,
        topology=mode,
        inputs=inputs,
        outputs=outputs,
        graph=graph,
        modules=modules,
        capture=capture,
        model_ref=model_weakref(model),
        explicit=stages is not None,
        notes=notes,
        nonfinite=nonfinite,
    )


def _trace_error(flow: Flow, run: _Run) -> TraceError:
    error = run.error
    failed = run.tracker.failed
    if failed is None:
        done = [s for s in flow.stages if s.error is None]
        after = f", after stage {done[-1].id!r}" if done else ""
        where = f"the model's own forward ({flow.model}{after})"
        stage_id = module = call_id = None
        shapes = ""
    else:
        call = flow.calls[failed]
        owner = next(
            (flow.calls[i] for i in reversed(flow.selected) if _is_within(flow, failed, i)), call
        )
        stage_id, module, call_id = owner.id, call.module, call.id
        inner = "" if owner.index == failed else f", inside {call.module!r} ({call.type})"
        where = f"stage {owner.id!r} (module {owner.type}{inner})"
        got = run.tracker.calls[failed].input_shapes
        shapes = (
            f"; it received inputs of shape {', '.join(str(list(s)) for s in got)}" if got else ""
        )
    text = f"{type(error).__name__}: {error}".rstrip(". ")
    what = f"{where} raised {text}{shapes}. Check that the inputs match what this module expects."
    partial = replace(flow, failure=Failure(what, stage_id, module, call_id))
    if error is not None:  # its traceback without the tracer's frames: it ends in the model
        error.with_traceback(_without_our_frames(error.__traceback__))
    return TraceError(
        f"{what} The graph up to that point is in err.partial.",
        partial=partial,
        stage=stage_id,
        module=module,
    )


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _without_our_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the frames of this package (the forward wrappers, the tracer's mode)."""
    frames = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
            frames.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for frame in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return rebuilt


def _is_within(flow: Flow, call: int, ancestor: int) -> bool:
    parents = flow.graph.call_parents
    while call >= 0:
        if call == ancestor:
            return True
        call = parents[call]
    return False


def model_weakref(model: Any) -> Any:
    try:
        return weakref.ref(model)
    except TypeError:  # pragma: no cover - every nn.Module is weak-referenceable
        return None
