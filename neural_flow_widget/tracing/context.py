"""One observed forward pass: :class:`RunContext` builds what watches it and puts it all back.

Entering the context builds, together, the call tracker (every module's ``forward`` wrapped),
the dataflow tracer (a TorchFunctionMode, when asked for) and the run's observer (capture, or
the NaN-origin diagnosis, or the attention zoom: a :class:`~.protocols.RunObserver` made from a
:class:`~.protocols.Watch`); it sets eval mode, ``torch.no_grad()``, eager compiled code and
turns the cyclic garbage collector off. :meth:`RunContext.forward` runs the model with the
modes on. Leaving the context restores every one of them in one exit, whatever the model
raised. ``trace()``, :func:`~.origin.find_origin` and the attention zoom
all run a model through it, so the model is left as it was by one piece of code.

    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()).train()
    >>> with RunContext(model, dataflow=True) as run:
    ...     ran = run.forward((torch.ones(1, 2),), {})
    >>> [r.parent for r in ran.calls], len(ran.tracer.owners) > 0, model.training
    ([-1, -1], True, True)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import torch
from torch.overrides import TorchFunctionMode

from .calls import CallRecord, CallTracker
from .dataflow import DataflowTracer
from .eager import eager
from .interventions import HeadsMode, Interventions
from .modules import ModuleTable
from .protocols import OpObserver, OutputObserver, RunObserver, Watch
from .pytree import map_tensors, output_leaves

__all__ = ["SCRIPTED", "ModeObserver", "Ran", "RunContext"]

SCRIPTED = (
    "the model is a TorchScript module: the modules inside it run in TorchScript, out of the "
    "tracer's sight, so the graph shows the model as one step from its inputs to its outputs; "
    "trace the nn.Module you scripted to see its stages"
)


@dataclass
class Ran:
    """What one observed forward pass left behind."""

    tracker: CallTracker
    tracer: DataflowTracer | None
    inputs: list[str]  # the model input node ids ("input:0", "input:mask"), in order
    input_ops: list[tuple[str, int]]  # (input node id, its op), when the tracer ran
    views: list[torch.Tensor] = field(default_factory=list)  # the inputs as the model got them
    output: Any = None
    error: Exception | None = None  # what the model's own forward raised
    notes: list[str] = field(default_factory=list)  # what this run could not show

    @property
    def calls(self) -> list[CallRecord]:
        return self.tracker.calls


class ObservingMode(TorchFunctionMode):
    """Shows an :class:`~.protocols.OpObserver` the ops it watches, where no dataflow tracer
    runs to do it."""

    def __init__(self, observer: OpObserver) -> None:
        super().__init__()
        self.observer = observer

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        result = func(*args, **(kwargs or {}))
        if func in self.observer.watched:
            self.observer.observe(func, args, kwargs, result)
        return result


@dataclass
class ModeObserver:
    """A run observer that is a TorchFunctionMode of its own (the NaN-origin run's, the
    attention zoom's), and perhaps a look at each call's output."""

    mode: TorchFunctionMode
    on_output: OutputObserver | None = None
    ops: OpObserver | None = None

    def on_end(self, node: str, tensor: torch.Tensor, output: bool) -> None:
        pass

    def close(self) -> None:
        pass


ObserverT = TypeVar("ObserverT", bound=RunObserver)


class RunContext(Generic[ObserverT]):
    """The context of one observed forward pass of ``model`` (see the module docstring).

    ``modules``: the model's modules, when the caller walked them already; ``dataflow``: run
    the dataflow tracer; ``observe``: makes the run's observer (:attr:`observer`) from what it
    may read; ``grad``: autograd records the pass (for a backward pass after it; the model's
    floating inputs enter as views that require grad), else it runs under ``no_grad``;
    ``interventions``: outputs replaced and heads switched off (:mod:`.interventions`).
    """

    observer: ObserverT | None

    def __init__(
        self,
        model: torch.nn.Module,
        modules: ModuleTable | None = None,
        *,
        dataflow: bool = False,
        observe: Callable[[Watch], ObserverT] | None = None,
        grad: bool = False,
        interventions: Interventions | None = None,
    ) -> None:
        stack: list[int] = [-1]
        calls: list[CallRecord] = []
        self.model = model
        self.tracer = DataflowTracer(stack, _tensor_names(model)) if dataflow else None
        table = modules if modules is not None else ModuleTable.of(model)
        leaves = frozenset(i for i, info in enumerate(table.infos) if info.leaf)
        watch = Watch(stack, calls, self.tracer, leaves)
        self.observer = observe(watch) if observe else None
        observer = self.observer
        heads = HeadsMode() if interventions is not None and interventions.heads else None
        self.tracker = CallTracker(
            model,
            tracer=self.tracer,
            on_output=observer.on_output if observer is not None else None,
            stack=stack,
            calls=calls,
            table=table,
            interventions=interventions,
            heads=heads,
        )
        ops = observer.ops if observer is not None else None
        modes: list[TorchFunctionMode] = []
        if self.tracer is not None:
            if ops is not None:
                self.tracer.observe_with(ops)
            modes.append(self.tracer)
        elif ops is not None:
            modes.append(ObservingMode(ops))
        if observer is not None and observer.mode is not None:
            modes.append(observer.mode)
        if heads is not None:
            modes.append(heads)  # (innermost: the tracer sees the heads' outputs zeroed)
        self._modes = modes
        self.grad = grad
        self._exit: contextlib.ExitStack | None = None

    def __enter__(self) -> RunContext[ObserverT]:
        with contextlib.ExitStack() as stack:
            if gc.isenabled():
                # the run makes tens of thousands of small records (tags, call records) that
                # would set off the cyclic collector over and over; nothing it makes is cyclic
                gc.disable()
                stack.callback(gc.enable)
            flags = [(m, m.training) for m in (self.model, *self.tracker.modules)]
            stack.callback(_restore_flags, flags)
            if any(flag for _, flag in flags):  # (setting a flag costs a Module.__setattr__)
                self.model.eval()
            stack.enter_context(torch.enable_grad() if self.grad else torch.no_grad())
            stack.enter_context(eager())
            if self.observer is not None:
                stack.callback(self.observer.close)
            stack.enter_context(self.tracker)
            self._exit = stack.pop_all()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._exit is not None:
            exit_stack, self._exit = self._exit, None
            exit_stack.__exit__(*exc)

    def forward(self, args: tuple, kwargs: dict) -> Ran:
        """Run the model once on ``args`` and ``kwargs`` (inside the context). The inputs enter
        as detached views (the caller's tensors are never modified; with the tracer, tagged as
        input ops); what the model raises is kept in :attr:`Ran.error`, not raised."""
        tracer, observer, grad = self.tracer, self.observer, self.grad
        names: list[str] = []
        input_ops: list[tuple[str, int]] = []
        views: list[torch.Tensor] = []

        def enter(prefix: str) -> Callable[[str, torch.Tensor], torch.Tensor]:
            def tag(path: str, tensor: torch.Tensor) -> torch.Tensor:
                name = f"input:{prefix}{'.' if prefix and path else ''}{path}"
                names.append(name)
                if tracer is None:
                    view = tensor.detach()
                else:
                    view, op = tracer.tag_input(tensor)
                    input_ops.append((name, op))
                if grad and (view.is_floating_point() or view.is_complex()):
                    view.requires_grad_(True)  # (our view: the caller's tensor is untouched)
                if observer is not None:
                    observer.on_end(name, view, output=False)
                views.append(view)
                return view

            return tag

        call_args = tuple(map_tensors(a, enter(str(i))) for i, a in enumerate(args))
        call_kw = {k: map_tensors(v, enter(str(k))) for k, v in kwargs.items()}
        ran = Ran(self.tracker, tracer, names, input_ops, views)
        try:
            with contextlib.ExitStack() as modes:
                for mode in self._modes:  # (the tracer first: the observer's mode inside it)
                    modes.enter_context(mode)
                ran.output = self.model(*call_args, **call_kw)
        except Exception as error:  # the model's own error: reported with the partial graph
            ran.error = error
            return ran
        if tracer is not None and isinstance(self.model, torch.jit.ScriptModule):
            # its forward ran in TorchScript, out of the mode: its output, one op of the
            # model's body made from every input (as for a TorchScript submodule's call)
            given = [t for a in (*call_args, *call_kw.values()) for _, t in output_leaves(a)]
            outputs = [t for _, t in output_leaves(ran.output) if not tracer.ops_of([t])]
            tracer.record_call(given, outputs, call=-1)
            ran.notes.append(SCRIPTED)
        if observer is not None:
            for path, tensor in output_leaves(ran.output):
                observer.on_end(f"output:{path}", tensor, output=True)
        return ran


def _restore_flags(flags: list[tuple[torch.nn.Module, bool]]) -> None:
    for module, flag in flags:
        if module.training != flag:
            module.training = flag


def _tensor_names(model: torch.nn.Module) -> dict[int, str]:
    """The model's parameters and buffers by ``id``: their qualified names (a shared one's
    first)."""
    names: dict[int, str] = {}
    for named in (model.named_parameters, model.named_buffers):
        for name, t in named(remove_duplicate=False):
            names.setdefault(id(t), name)
    return names
