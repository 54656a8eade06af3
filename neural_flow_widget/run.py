"""``trace()``: check the request (:mod:`.request`), run the model once in a run context
(observed by the tracer and capture), and build its Flow; and the attention zoom, which runs
the model again."""

from __future__ import annotations

import dataclasses
import os
import re
import types
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import torch

from .capture import Capture, CaptureObserver
from .capture.attention.budget import DEFAULT_ATTENTION_BUDGET
from .capture.attention.maps import AttentionMap
from .capture.attention.window import WindowMode
from .capture.readout import Readouts
from .graph import (
    Failure,
    Flow,
    OpGraph,
    Topology,
    TraceError,
    resolve,
)
from .graph.lens import head_input_leaf, on_the_stream
from .graph.reads import without_unread
from .request import Request, checked, split_inputs
from .tracing import Watch, output_leaves
from .tracing.context import ModeObserver, Ran, RunContext
from .tracing.fx import FxUnavailable, regraph_with_fx, with_fx_edges
from .tracing.interventions import InterventionError
from .tracing.joins import join_kinds
from .tracing.modules import uncompiled
from .tracing.offload import offload_fix
from .tracing.origin import NO_ORIGIN, find_origin, rng_state
from .tracing.ranks import Held, alone, backward_leaving_grads, held_grads


def trace(
    model: torch.nn.Module,
    inputs: Any = (),
    *,
    stages: Any = None,
    topology: str = "auto",
    kwargs: Mapping[str, Any] | None = None,
    capture: bool = True,
    attention: bool = True,
    capture_device: Any = None,
    sample: int = 0,
    budget_bytes: int | None = None,
    attention_budget_bytes: int | None = DEFAULT_ATTENTION_BUDGET,
    loss: Callable[[Any], torch.Tensor] | None = None,
    keep_grads: bool = False,
    replace: Mapping[str, Any] | None = None,
    readout: Any = None,
    shards: str = "full",
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
    stage's output is summarised inside its call, on its own device (``flow.summary``,
    ``flow.view``), and attention maps are recorded (``flow.attention``): exact up to 512
    positions per axis, block-mean pooled beyond, and all of a run's maps together within
    ``attention_budget_bytes`` (default 48 MiB; ``None``: no bound), pooled further to fit,
    with a note in ``flow.notes`` when they are. What capture keeps lives in host memory
    (``capture_device``, deprecated, takes only ``"cpu"``).

    ``loss``: ``loss(output) -> scalar tensor``; the run then records autograd's graph and
    runs one backward pass of the loss, and each stage's gradient (of the loss with respect to
    its output) is reduced like its output, inside the backward pass on its own device
    (``flow.grad``, ``flow.param_grads``, ``flow.nonfinite_grad``, ``flow.gradient_flow``).
    The parameters' ``.grad`` are left as they were (None stays None) unless ``keep_grads``.

    ``replace``: ``{stage id: spec}``, the stage's output replaced in the run (``"zero"``,
    ``"mean"``, a tensor, a function ``out -> out``, or ``nfw.heads(zero=[2, 5])`` for an
    attention stage; see :mod:`.tracing.interventions`), said in ``flow.notes``.

    ``shards``: a stage that returns a DTensor (tensor parallelism; every rank runs
    ``trace``) is summarised from the whole tensor, gathered after the pass (``"full"``), or
    from this rank's own shard (``"local"``, no collective); its summary says which
    (``Summary.shard``; see :mod:`.capture.sharded`).

    ``readout``: the logit lens (``flow.readout``, :mod:`.capture.readout`): None (default) for
    a model with an unembedding (``get_output_embeddings()``: a Hugging Face language model),
    ``True`` to insist, ``False`` for none, or ``(final_norm, unembedding)`` modules.
    """
    request = checked(
        model, inputs, stages, topology, kwargs, capture_device, capture, attention, sample,
        budget_bytes, attention_budget_bytes, loss, keep_grads, replace, readout, shards,
    )  # fmt: skip
    rng = rng_state()  # (the run's random draws, for the diagnosis of a NaN run)
    ran, observed, mode = _observe(request)
    flow = _build(request, ran, observed, mode)
    if flow.nonfinite and alone() is not None:  # (a rank must not run the model by itself)
        flow = dataclasses.replace(flow, notes=(*flow.notes, NO_ORIGIN))
    elif flow.nonfinite:  # where the first NaN / Inf was made (a second run, only for these)
        origin = find_origin(
            request.model, request.modules, request.args, request.kwargs, flow, rng,
            request.interventions,
        )  # fmt: skip
        flow = dataclasses.replace(flow, nonfinite_origin=origin)
    if ran.error is not None:
        raise _trace_error(flow, ran, request.loss is not None) from ran.error
    if topology == "fx":
        try:
            return dataclasses.replace(
                with_fx_edges(model, flow, flow.selected), regraph=regraph_with_fx(flow.model_ref)
            )
        except FxUnavailable as why:
            warnings.warn(
                f"model could not be symbolically traced by torch.fx ({why}). Using "
                f"runtime execution order instead.",
                stacklevel=2,
            )
    return flow


def _observe(request: Request) -> tuple[Ran, Capture | None, Topology]:
    """The run, watched by the dataflow tracer when the topology asks for it; where the tracer
    could not follow the model, the run again without it (and its execution order)."""
    dataflow = request.topology in ("auto", "dataflow")
    ran, observed = _once(request, dataflow)
    mode: Topology = "dataflow" if dataflow else "sequential"
    failure = ran.tracer.failure if ran.tracer is not None else None
    if dataflow and ran.error is not None and failure is None:
        retry, retry_observed = _once(request, False)
        if retry.error is None:
            warnings.warn(
                f"the dataflow tracer could not follow this model "
                f"({type(ran.error).__name__}: {ran.error}); it ran again "
                f"without it and shows stages in execution order",
                stacklevel=3,
            )
            return retry, retry_observed, "sequential"
    elif failure is not None:
        warnings.warn(
            f"the dataflow tracer failed ({failure!r}); stages are shown in execution order",
            stacklevel=3,
        )
        mode = "sequential"
    return ran, observed, mode


def _once(request: Request, dataflow: bool) -> tuple[Ran, Capture | None]:
    """One observed forward pass, and what capture kept of it."""
    settings = request.capture
    observe = (lambda watch: CaptureObserver(settings, watch)) if settings is not None else None
    grad = request.loss is not None
    model = request.model
    held = held_grads(model) if grad and not request.keep_grads else None  # (FSDP2)
    with RunContext(
        model,
        request.modules,
        dataflow=dataflow,
        observe=observe,
        grad=grad,
        interventions=request.interventions,
    ) as run:
        ran = run.forward(request.args, request.kwargs)
        if grad and ran.error is None and run.observer is not None:
            _backward(request, ran, run.observer, held)
    observed = run.observer.finish() if run.observer is not None else None
    if observed is not None and request.head is not None and run.observer is not None:
        found = Readouts.of_modules(run.observer.hidden, request.head, request.norm)
        observed = dataclasses.replace(observed, readouts=found)
    return ran, observed


def _backward(request: Request, ran: Ran, observer: CaptureObserver, held: Held) -> None:
    """The loss of the run's output, and one backward pass of it: the stages' gradients are
    reduced by the hooks capture put on their outputs; the parameters' gradients here.
    Without ``keep_grads`` the backward pass is ``torch.autograd.grad`` (an FSDP2 model's:
    ``.backward()``, :mod:`.tracing.ranks`), which leaves every ``.grad`` as it was."""
    assert request.loss is not None
    loss = request.loss(ran.output)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = list(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise ValueError(
            f"loss(output) returned {shape}; it must return one number, a tensor such as "
            f"output.logits[0, -1].max() or torch.nn.functional.cross_entropy(output, target)"
        )
    named = [(n, p) for n, p in request.model.named_parameters() if p.requires_grad]
    views = [v for v in ran.views if v.requires_grad]
    if not loss.requires_grad:
        raise ValueError(
            "loss(output) does not depend on anything that requires grad: no parameter of "
            "the model requires grad and it has no floating-point input; unfreeze a "
            "parameter (p.requires_grad_(True)) to see gradients"
        )
    if held is not None:  # (FSDP2: only .backward() reaches its parameters)
        grads = backward_leaving_grads(loss.reshape(()), request.model, held)
    elif request.keep_grads:
        loss.reshape(()).backward()  # (the parameters read after it: FSDP2 swaps them)
        after = request.model.named_parameters()
        grads = [(n, p.grad) for n, p in after if p.requires_grad and p.grad is not None]
    else:
        found = torch.autograd.grad(
            loss.reshape(()), [p for _, p in named] + views, allow_unused=True
        )
        grads = [(n, g) for (n, _), g in zip(named, found) if g is not None]
    observer.on_param_grads(grads)


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
) -> AttentionMap | str:
    """Attention map ``index`` of ``flow.attention(stage_id)`` at full resolution over
    ``window`` = (q0, q1, k0, k1), made by running ``model`` on ``inputs`` again (as
    :func:`trace` ran them; see :mod:`.capture.attention.window`): an AttentionMap of the
    window's rows and columns, or a ``str`` saying why it cannot be made."""
    if flow.capture is None:
        return "this flow was traced with capture=False: it has no attention maps"
    why = alone()
    if why is not None:
        return why
    origins = flow.attention_origins(stage_id)
    if not 0 <= index < len(origins):
        return f"stage {stage_id!r} has no attention map {index}"
    call, entry = origins[index]
    args, kw = split_inputs(inputs, kwargs)
    calls = flow.calls_within(flow.calls[call].id)

    def observe(watch: Watch) -> ModeObserver:
        zoom = WindowMode(
            watch.current, calls=calls, call=call, entry=entry, window=window, sample=sample
        )
        return ModeObserver(zoom)

    with RunContext(uncompiled(model), observe=observe) as run:
        ran = run.forward(args, kw)
    if ran.error is not None:  # (the kept blocks are shown instead, with this reason)
        return f"running the model again failed: {type(ran.error).__name__}: {ran.error}"
    assert run.observer is not None and isinstance(run.observer.mode, WindowMode)
    zoomed = run.observer.mode
    return zoomed.map if zoomed.map is not None else zoomed.why


def _build(request: Request, ran: Ran, capture: Capture | None, mode: Topology) -> Flow:
    tracker, tracer = ran.tracker, ran.tracer
    calls = tracker.stages()
    outs = output_leaves(ran.output) if ran.error is None else []
    outputs = tuple(f"output:{path}" for path, _ in outs)
    records = tracker.calls
    within = tuple(r.parent for r in records)  # per call, the call it ran in
    if tracer is not None:
        output_ops = tuple((f"output:{path}", tracer.ops_of([t])) for path, t in outs)
        joins = join_kinds(tracer.joins, tracer.softmaxes, tracer.owners, tracer.parents, within)
        graph = OpGraph(
            tuple(tracer.owners),
            tuple(tracer.parents),
            within,
            tuple(r.inputs for r in records),
            tuple(ran.input_ops),
            output_ops,
            joins,
            tuple(r.arguments for r in records),
            tuple(r.state for r in records),
            tuple(tracer.named.items()),
            tuple(tracer.leads),
        )
        if not tracer.paused:  # (a paused tracer saw no reads after it stopped)
            unfinished = {i for i, r in enumerate(records) if r.error is not None or not r.done}
            graph = without_unread(graph, unfinished)
    else:
        graph = OpGraph((), (), within, tuple(() for _ in records), (), ())
    selected = resolve(request.stages, request.modules.infos, calls, request.model)
    inputs = tuple(ran.inputs)
    notes, nonfinite = tuple(ran.notes), tuple[str, ...]()
    if request.replaced:
        notes += (f"intervention: {'; '.join(request.replaced)}",)
    if capture is not None and capture.readouts is not None:
        _fit_readouts(request, records, graph, capture.readouts)
    if capture is not None:
        calls = capture.mark(calls)
        notes += capture.notes
        returned = sorted((r.ended, i) for i, r in enumerate(records) if r.ended >= 0)
        nonfinite = tuple(calls[i].id for i in capture.nonfinite([i for _, i in returned]))
    return Flow(
        model=type(request.model).__name__,
        calls=calls,
        selected=selected,
        topology=mode,
        inputs=inputs,
        outputs=outputs,
        graph=graph,
        modules=request.modules.infos,
        capture=capture,
        model_ref=model_weakref(request.model),
        explicit=request.stages is not None,
        notes=notes,
        nonfinite=nonfinite,
    )


def _fit_readouts(request: Request, records: list[Any], graph: OpGraph, found: Readouts) -> None:
    """Keep the readouts of the stream the unembedding reads (an encoder-decoder's encoder
    predicts no token: :mod:`.graph.lens`), and, unless ``readout=`` named it, read through
    the norm whose op made the unembedding's input, when it is one (its class says so)."""
    table = request.modules
    index = next((i for i, m in enumerate(table.modules) if m is request.head), None)
    call = next((c for c in range(len(records) - 1, -1, -1) if records[c].module == index), None)
    if call is None or not graph.owners:
        return
    read = on_the_stream(graph, call, found.kept)
    found.kept = {c: h for c, h in found.kept.items() if c in read}
    if request.norm is not None:
        return
    leaf = head_input_leaf(graph, call, lambda c: table.infos[records[c].module].leaf)
    module = table.modules[records[leaf].module] if leaf >= 0 else None
    norm = module if module is not None and "norm" in type(module).__name__.lower() else None
    found.norm = weakref.ref(norm) if norm is not None else None


def _trace_error(flow: Flow, run: Ran, grad: bool = False) -> TraceError:
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
    if isinstance(error, InterventionError):  # (the intervention failed, not the model)
        what = f"in {where}, {error}. Fix the replace= spec"
    elif grad and _AUTOGRAD.search(str(error)):  # (it runs without loss=, under no_grad)
        what = (
            f"{where} raised {text}{shapes}, with autograd on for loss=. This op has no "
            f"gradient: trace without loss=, or make the module differentiable"
        )
    else:
        fix = offload_fix(error) or "Check that the inputs match what this module expects"
        what = f"{where} raised {text}{shapes}. {fix[0].upper()}{fix[1:]}."
    partial = dataclasses.replace(flow, failure=Failure(what, stage_id, module, call_id))
    if error is not None:  # its traceback without the tracer's frames: it ends in the model
        error.with_traceback(_without_our_frames(error.__traceback__))
    return TraceError(
        f"{what} The graph up to that point is in err.partial.",
        partial=partial,
        stage=stage_id,
        module=module,
    )


#: what torch says of an op that autograd cannot record
_AUTOGRAD = re.compile(r"automatic differentiation|requires grad|does not require grad|grad_fn")
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
