"""Scoped module-call tracking: installed on enter, removed in ``finally``.

Every module of the model (not the model itself) has its ``forward`` wrapped for the run (see
:class:`CallTracker`). The wrappers keep ``stack`` (the innermost running call last; -1 is the
model's own body), record each call's parent, inputs and output shapes, and note the innermost
call that raised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..graph import Stage
from .dataflow import DataflowTracer
from .interventions import HeadsMode, Interventions, replacing
from .modules import ModuleTable, dtype_name
from .opaque import is_opaque
from .protocols import OutputObserver
from .pytree import among, output_leaves, tensors_in
from .structure import structure


class CallRecord:
    """A module call while the run is in progress (mutable; frozen into a Stage at the end).

    A plain class whose defaults are class attributes: a call sets only what it has, so that
    making one costs two stores, not thirteen (one per call of every module, every trace).
    """

    inputs: tuple[int, ...] = ()  # op ids of the input tensors' producers
    arguments: tuple[int, ...] = ()  # per op of ``inputs``: the argument it came in
    state: int = -1  # the argument that is a state this call continues (see ``_end``)
    previous: int = -1  # the previous call of the same module
    ends: tuple[int, ...] | None = None  # per argument: where its tensors end in ``found``
    input_shapes: tuple[tuple[int, ...], ...] = ()
    outputs: tuple[tuple[torch.Size, torch.dtype], ...] = ()  # per tensor leaf (as read)
    error: str | None = None
    done: bool = False
    ended: int = -1  # when the call returned (or raised), in the run's order of returns
    found: list | None = None  # the input tensors while the call runs (dropped on return)

    def __init__(self, module: int, parent: int) -> None:
        self.module = module  # index into the tracker's module list
        self.parent = parent  # the enclosing call's index; -1: the model's own body

    def __repr__(self) -> str:
        return f"CallRecord({self.__dict__})"


#: Hooks run their own torch code (shape reads, capture's reductions) with every
#: ``__torch_function__`` handler off: the dataflow tracer and the attention recorder never
#: see it, and it pays no Python dispatch per call.
_unobserved = torch._C.DisableTorchFunction
# the mode stack (an opaque leaf's call runs with the tracer lifted off it)
_mode_depth, _mode_at = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
_pop_mode, _push_mode = torch._C._pop_torch_function_stack, torch._C._push_on_torch_function_stack


def _arguments(args: tuple, kwargs: dict) -> tuple[list, tuple[int, ...]]:
    """The tensors of a call's arguments, in order, and where each argument's end: positional
    arguments, then keywords in the order given; a container argument is one argument."""
    found: list = []
    ends = []
    for arg in args:
        tensors_in(arg, found)
        ends.append(len(found))
    for arg in kwargs.values():
        tensors_in(arg, found)
        ends.append(len(found))
    return found, tuple(ends)


_NONE = object()  # a module without a forward of its own in its __dict__


@dataclass
class CallTracker:
    """Context manager that tracks the module calls of ``model`` while it runs.

    ``tracer`` (optional) is the DataflowTracer sharing ``stack``; ``on_output(call, leaves)``
    (optional) is called when each call returns, with the output's ``(path, tensor)`` leaves,
    for capture.

    Each module's ``forward`` is wrapped for the run: a wrapper in the module's instance
    ``__dict__`` (what ``module.forward`` finds first) that records the call around the
    original. Registering two hooks per module cost more than running them on deep models
    (GPT-2 with 48 layers: ~4 ms of registration and removal per trace, against ~0 for the
    wrappers), and a module with hooks takes ``Module._call_impl``'s slow path on every call.
    The wrapper sees the arguments after the user's forward pre-hooks and the output before
    the user's forward hooks, and it works on TorchScript modules, which refuse hooks.
    ``__exit__`` puts every ``forward`` back as it was.
    """

    model: torch.nn.Module
    tracer: DataflowTracer | None = None
    on_output: OutputObserver | None = None
    stack: list[int] = field(default_factory=lambda: [-1])
    calls: list[CallRecord] = field(default_factory=list)
    failed: int | None = None  # innermost call that raised
    table: ModuleTable | None = None  # the model's modules, walked from it if None
    interventions: Interventions | None = None  # outputs replaced, heads switched off
    heads: HeadsMode | None = None  # the mode that switches heads off (with interventions)

    def __post_init__(self) -> None:
        if self.table is None:
            self.table = ModuleTable.of(self.model)
        self.names, self.modules = self.table.names, self.table.modules
        self._undo: list[tuple[torch.nn.Module, Any]] = []  # (module, its own forward entry)
        self._ended = 0
        self._last: dict[int, int] = {}  # module -> its latest call

    def __enter__(self) -> CallTracker:
        chosen, mode = self.interventions, self.heads
        replaced = chosen.modules if chosen is not None else None
        try:
            for i, module in enumerate(self.modules):
                own = module.__dict__.get("forward", _NONE)
                self._undo.append((module, own))
                # (straight into __dict__: Module.__setattr__ would cost more and do the same)
                if replaced is not None and i in replaced:
                    assert chosen is not None
                    hooks = (self._begin, self._end, self._fail)
                    module.__dict__["forward"] = replacing(i, module.forward, chosen, mode, hooks)
                    continue
                lift = self.tracer is not None and own is _NONE and is_opaque(module)
                module.__dict__["forward"] = (self._wrap_opaque if lift else self._wrap)(
                    i, module.forward
                )
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for module, own in self._undo:
            if own is _NONE:
                module.__dict__.pop("forward", None)
            else:
                module.__dict__["forward"] = own
        self._undo.clear()

    def _wrap(self, module: int, original: Callable) -> Callable:
        begin, end, fail = self._begin, self._end, self._fail

        def forward(*args: Any, **kwargs: Any) -> Any:
            begin(module, args, kwargs)
            try:
                output = original(*args, **kwargs)
            except BaseException as error:
                fail(error)
                raise
            end(output)
            return output

        forward.__wrapped__ = original  # type: ignore[attr-defined]  # (inspect.signature)
        return forward

    def _wrap_opaque(self, module: int, original: Callable) -> Callable:
        """:meth:`_wrap` for an opaque leaf (:mod:`.opaque`): its calls run with the tracer
        lifted off the mode stack (when :meth:`_liftable` allows) and are recorded as the one
        op they condense to, so that torch's dispatch to the mode is saved for every op inside
        (for one op too: the Python ``handle_torch_function`` of ``F.relu``, ``F.batch_norm``
        and the like costs more than lifting). A leaf that writes in place (``inplace=True``)
        has its write recorded as the mode would (:meth:`DataflowTracer.record_write`), and
        the callback waiting for the next in-place write runs first."""
        begin, end, fail, liftable = self._begin, self._end, self._fail, self._liftable
        traced = self.tracer
        assert traced is not None  # (only a traced run lifts)
        inplace = bool(self.modules[module].__dict__.get("inplace", False))
        record, lifted_end = self._record_lifted, self._lifted_end

        def forward(*args: Any, **kwargs: Any) -> Any:
            begin(module, args, kwargs)
            tracer = liftable()
            if tracer is None:
                try:
                    output = original(*args, **kwargs)
                except BaseException as error:
                    fail(error)
                    raise
                end(output)
                return output
            if inplace and tracer.before_write is not None:
                tracer.before_write()  # (once: it unsets itself)
            _pop_mode()
            try:
                output = original(*args, **kwargs)
                if type(output) is torch.Tensor:  # (read while the mode is off)
                    lifted_end(tracer, output, (output.shape, output.dtype), inplace)
                    return output
            except BaseException as error:
                fail(error)
                raise
            finally:
                _push_mode(tracer)
            record(tracer, output, inplace)
            end(output)
            return output

        forward.__wrapped__ = original  # type: ignore[attr-defined]
        return forward

    def _liftable(self) -> Any:
        """The tracer, when the call that just began may run without it: the tracer is
        recording, is the innermost mode, no in-place write went into a parameter or buffer
        (ops inside would have to look for it), and the attention recorder follows none of the
        call's inputs (the scores of a hand-written attention)."""
        tracer = self.tracer
        if tracer is None or tracer.paused or tracer.wrote_untagged:
            return None
        depth = _mode_depth()
        if not depth or _mode_at(depth - 1) is not tracer:
            return None
        observer = tracer.observer
        if observer is not None and observer.follows_any(self.calls[-1].found):
            return None
        return tracer

    def _lifted_end(
        self, tracer: DataflowTracer, output: torch.Tensor, read: tuple, inplace: bool
    ) -> None:
        """:meth:`_record_lifted` and :meth:`_end` of a lifted call that returned one tensor
        (most of them), ``read`` its (shape, dtype): one op of the call made from its input
        ops, or (returned its input) the input retagged, after its write if it wrote in place."""
        record = self.calls[-1]
        passed = record.found
        if passed and among(output, passed):
            index = self.stack.pop()
            if inplace:
                tracer.written_by(output, index, record.inputs)
            tracer.retag([output], index)
        else:
            index = self.stack.pop()
            tracer.made_by(output, index, record.inputs)
        record.done, record.ended, record.found = True, self._ended, None
        self._ended += 1
        record.outputs = (read,)
        if self.on_output is not None:
            self.on_output(index, [("0", output)])

    def _record_lifted(self, tracer: DataflowTracer, output: Any, inplace: bool) -> None:
        """Record an opaque call as the one op it condenses to (before ``_end`` pops it)."""
        found = self.calls[-1].found or []
        outs = [output] if type(output) is torch.Tensor else [t for _, t in output_leaves(output)]
        made = [t for t in outs if not among(t, found)]
        if inplace:  # (an input it returned, it wrote into)
            for t in outs:
                if among(t, found):
                    tracer.record_write(t)
        if made:  # (none: it returned its input, nn.Identity, eval dropout; _end retags it)
            tracer.record_call(found, made)  # (its inputs: every tensor it was given)

    def _begin(self, module: int, args: tuple, kwargs: dict) -> None:
        """A call of ``self.modules[module]`` starts, with these arguments."""
        record = CallRecord(module, self.stack[-1])
        index = len(self.calls)
        record.previous = self._last.get(module, -1)
        self._last[module] = index
        tracer = self.tracer
        if tracer is not None:
            if not kwargs and len(args) == 1 and type(args[0]) is torch.Tensor:
                found = [args[0]]  # (most calls)
                ends = None
            else:
                found, ends = _arguments(args, kwargs)
            if tracer.writes:  # (reading where in-place writes went calls torch)
                with _unobserved():
                    self._inputs(record, tracer, found, ends)
            else:
                self._inputs(record, tracer, found, ends)
            record.found = found
        self.calls.append(record)
        self.stack.append(index)

    @staticmethod
    def _inputs(
        record: CallRecord, tracer: DataflowTracer, found: list, ends: tuple[int, ...] | None
    ) -> None:
        """The call's input ops, and the argument each came in."""
        if ends is None or len(ends) < 2:
            record.inputs = inputs = tracer.ops_of(found)
            record.arguments = (0,) * len(inputs)
            return
        ops: dict[int, int] = {}  # op -> its first argument
        begin = 0
        for arg, end in enumerate(ends):
            if end > begin:
                for op in tracer.ops_of(found[begin:end]):
                    ops.setdefault(op, arg)
            begin = end
        record.inputs, record.arguments = tuple(ops), tuple(ops.values())
        record.ends = ends

    def _fail(self, error: BaseException) -> None:
        """The innermost call raised ``error``."""
        index = self.stack.pop()
        record = self.calls[index]
        record.done, record.ended = True, self._ended
        self._ended += 1
        passed, record.found = record.found, None
        record.error = f"{type(error).__name__}: {error}"
        if passed:  # (for the error message: what the failing call received)
            with _unobserved():
                record.input_shapes = tuple(tuple(t.shape) for t in passed)
        if self.failed is None:
            self.failed = index

    def _end(self, output: Any) -> None:
        """The innermost call returned ``output``."""
        index = self.stack.pop()
        record = self.calls[index]
        record.done, record.ended = True, self._ended
        self._ended += 1
        passed, record.found = record.found, None
        with _unobserved():
            if type(output) is torch.Tensor:  # (most calls: no generators)
                found = [("0", output)]
                record.outputs = ((output.shape, output.dtype),)
                same = [output] if passed and among(output, passed) else None
            else:
                found = output_leaves(output)
                record.outputs = tuple((t.shape, t.dtype) for _, t in found)
                same = [t for _, t in found if among(t, passed)] if passed else None
            tracer = self.tracer
            if record.previous >= 0 and record.ends is not None and passed:
                record.state = self._state(record, passed)
            if same:  # outputs that are inputs, unchanged (nn.Identity; only when traced)
                tracer.retag(same, index)  # type: ignore[union-attr]
            if tracer is not None and not tracer.paused:
                # outputs that ran outside the mode (TorchScript, a C++ extension): one op of
                # this call, made from everything it was given
                get = tracer.table.get
                untagged = [t for _, t in found if get(t) is None and not among(t, passed or [])]
                if untagged:
                    tracer.record_call(passed or [], untagged, call=index)
            if self.on_output is not None:
                self.on_output(index, found)

    def _state(self, record: CallRecord, passed: list) -> int:
        """The argument (after the first) that is a state this call continues: its tensors
        came from the previous call of the same module and have the shapes of this call's
        output (an RNN cell's ``(h, c)``); -1 if none."""
        tracer, ends = self.tracer, record.ends
        assert tracer is not None and ends is not None
        shapes = [shape for shape, _ in record.outputs]
        begin = ends[0]
        for arg, end in enumerate(ends[1:], 1):
            group, begin = passed[begin:end], end
            if [t.shape for t in group] == shapes and all(
                self._within(op, record.previous) for op in tracer.ops_of(group)
            ):
                return arg
        return -1

    def _within(self, op: int, call: int) -> bool:
        """Whether op ``op`` ran inside ``call`` (or a call within it)."""
        c = self.tracer.owners[op] if self.tracer is not None else -1
        while c > call:  # (a call's children start after it)
            c = self.calls[c].parent
        return c == call

    # -- results ------------------------------------------------------------------------------

    def stages(self) -> tuple[Stage, ...]:
        """Frozen Stage records of the calls so far, with ids ``name`` or ``name#k``."""
        calls = self.calls
        assert self.table is not None
        names, infos = self.names, self.table.infos
        per_module = Counter([r.module for r in calls])
        seen: dict[int, int] = {}
        ids: list[str] = []
        stages = []
        params, sigs = structure(self.model, self.modules)
        for index, record in enumerate(calls):
            m = record.module
            k = seen.get(m, 0)
            seen[m] = k + 1
            name, info = names[m], infos[m]
            sid = name if per_module[m] == 1 else f"{name}#{k}"
            ids.append(sid)
            error = record.error if record.done else (record.error or "did not finish")
            outputs = record.outputs
            shapes: tuple[tuple[int, ...], ...]
            dtypes: tuple[str, ...]
            if len(outputs) == 1:  # (most calls: no generators)
                shapes, dtypes = (tuple(outputs[0][0]),), (dtype_name(outputs[0][1]),)
            else:
                shapes = tuple(tuple(shape) for shape, _ in outputs)
                dtypes = tuple(dtype_name(dtype) for _, dtype in outputs)
            parent = ids[record.parent] if record.parent >= 0 else None
            stages.append(
                Stage(
                    index,
                    sid,
                    name,
                    info.type,
                    k,
                    parent,
                    info.depth,
                    info.leaf,
                    params[m],
                    shapes,
                    dtypes,
                    sigs[m],
                    error,
                )
            )
        return tuple(stages)
