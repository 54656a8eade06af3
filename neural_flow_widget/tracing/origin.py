"""Where a run's first NaN / Inf was made, when the first call that returned one received it
in its input: :func:`find_origin` runs the model once more, only for such a run, and says
which op made it (a :class:`~neural_flow_widget.graph.origin.NonfiniteOrigin`).

The traced run checks no op for NaN (that would wait for the device at every op); capture
tells which calls *returned* NaN / Inf. For a run with one, the model runs again on the same
inputs (as ``trace`` ran it: eval mode, ``torch.no_grad()``, compiled code eager, the random
generators at the state the traced run began from) under :class:`OriginMode`, which keeps
per op its parent ops and, on the op's device without waiting, whether its output held
NaN / Inf, and stops the model when the first such call returns. After that one wait: the
first op inside that call whose output is not finite; if a parent of it outside the call
held NaN / Inf already, the values came in with the call's input, and the op that made them
is found by walking back through the parents that were not finite to one whose parents all
were. Its module call, the line of the user's code that ran it (the first frame outside
torch and this package) and the calls around it make the record. Afterwards the model's
buffers, the random generators' state and its forwards are as they were.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode, resolve_name

from ..graph import Flow
from ..graph.origin import NonfiniteOrigin
from .calls import CallTracker
from .context import ModeObserver, RunContext
from .dataflow import TagTable
from .interventions import Interventions
from .modules import ModuleTable
from .protocols import Watch
from .pytree import tensors_in

__all__ = ["NO_ORIGIN", "OriginMode", "find_origin", "rng_state"]

#: the note of a NaN run on one rank of several (:mod:`.ranks`), where none is looked for
NO_ORIGIN = (
    "where the first NaN / Inf was made is not looked for in a run over several ranks: it "
    "would run the model again on this rank alone (flow.nonfinite has the stages it reached)"
)

_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TEXT = 120  # characters of source text kept


class _Stop(BaseException):
    """The first call that returned NaN / Inf returned: the rest of the forward is not needed
    (a BaseException, so that a model's ``except Exception`` does not swallow it)."""


class OriginMode(TorchFunctionMode):
    """Records, per op of the run: the torch function, the innermost module call (``stack``),
    how many calls had started, its parent ops, the user's frame (code, instruction, line), and
    a device flag of whether its outputs held NaN / Inf (:meth:`bad_ops` reads them)."""

    def __init__(self, stack: list[int], calls: Sequence[Any]) -> None:
        super().__init__()
        self.stack, self.calls = stack, calls
        self.table = TagTable()  # tensor -> (the op that made it, -1, ())
        self.ops: list[tuple[Any, int, int, tuple[int, ...], Any, int, int]] = []
        self.flags: list[tuple[int, torch.Tensor]] = []

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if type(result) is torch.Tensor:
            outs = [result]
        elif isinstance(result, (tuple, list)):
            outs = [t for t in result if isinstance(t, torch.Tensor)]
        else:
            return result
        if not outs:
            return result
        get = self.table.get
        found = tensors_in(kwargs, tensors_in(args, []))
        parents = tuple(sorted({tag[0] for t in found if (tag := get(t)) is not None}))
        op = len(self.ops)
        frame = _user_frame(sys._getframe(1))
        code, lasti, line = (frame.f_code, frame.f_lasti, frame.f_lineno) if frame else (None, 0, 0)
        self.ops.append((func, self.stack[-1], len(self.calls), parents, code, lasti, line or 0))
        for t in outs:
            if (t.is_floating_point() or t.is_complex()) and not t.is_meta and t.numel():
                with contextlib.suppress(Exception):  # (a layout isfinite does not take)
                    self.flags.append((op, ~torch.isfinite(t).all()))
            self.table.set(t, (op, -1, ()))
        return result

    def bad_ops(self) -> set[int]:
        """The ops whose output held NaN / Inf (one wait per device, after the run)."""
        by_device: dict[torch.device, list[tuple[int, torch.Tensor]]] = {}
        for op, flag in self.flags:
            by_device.setdefault(flag.device, []).append((op, flag))
        bad: set[int] = set()
        for pairs in by_device.values():
            held = torch.stack([f for _, f in pairs]).cpu().tolist()
            bad.update(op for (op, _), b in zip(pairs, held) if b)
        return bad


def _user_frame(frame: types.FrameType | None) -> types.FrameType | None:
    """The first frame outside torch and this package: the user's code that called the op."""
    while frame is not None:
        if not frame.f_code.co_filename.startswith((_TORCH, _PACKAGE)):
            return frame
        frame = frame.f_back
    return None


def rng_state() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The random generators' state (the CPU's; CUDA's where it is in use), a few µs."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def _set_rng(state: tuple[torch.Tensor, list[torch.Tensor] | None]) -> None:
    torch.random.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state_all(state[1])


def find_origin(
    model: torch.nn.Module,
    modules: ModuleTable,
    args: tuple,
    kwargs: dict,
    flow: Flow,
    rng: tuple[torch.Tensor, list[torch.Tensor] | None] | None = None,
    interventions: Interventions | None = None,
) -> NonfiniteOrigin | None:
    """Where the NaN / Inf was made that the first call of ``flow.nonfinite`` received, or
    None: that call made it itself, or it could not be found (ops out of the tracer's sight, a
    run that went another way, inputs that a second run would change: a cache object that a
    forward appends to). ``modules``, ``args`` and ``kwargs`` are those of ``flow``'s run,
    ``rng`` the random generators' state (:func:`rng_state`) before it, ``interventions``
    its ``replace=`` (the second run replaces what the first did)."""
    if not flow.nonfinite or not _replayable((args, kwargs)):
        return None
    first = flow.stage(flow.nonfinite[0]).index
    call_ids, call_modules = [c.id for c in flow.calls], [c.module for c in flow.calls]

    def stop(call: int, leaves: list[tuple[str, torch.Tensor]]) -> None:
        if call == first:
            raise _Stop

    def observe(watch: Watch) -> ModeObserver:
        return ModeObserver(OriginMode(watch.stack, watch.calls), on_output=stop)

    try:  # (what a forward may write into: put back afterwards)
        buffers = [
            (module, name, b, b._version, b.clone())
            for module in (model, *modules.modules)
            for name, b in module._buffers.items()
            if b is not None and not b.is_meta
        ]
    except Exception:  # (no memory for the copies: no second run)
        return None
    after = rng_state()
    stopped = False
    run = RunContext(model, modules, observe=observe, interventions=interventions)
    try:
        if rng is not None:
            _set_rng(rng)
        with run:
            run.forward(args, kwargs)
    except _Stop:
        stopped = True
    finally:
        _set_rng(after)
        with torch.no_grad():
            for module, name, b, version, saved in buffers:
                if module._buffers.get(name) is not b:
                    module._buffers[name] = b
                if b._version != version:
                    b.copy_(saved)
    tracker = run.tracker
    calls = tracker.calls
    if not stopped or any(
        tracker.names[calls[i].module] != call_modules[i] for i in range(first + 1)
    ):
        return None
    assert run.observer is not None and isinstance(run.observer.mode, OriginMode)
    try:
        return _origin(run.observer.mode, calls, first, call_ids, call_modules, tracker, flow.model)
    except Exception:  # (a diagnosis that fails says nothing; the run's records stand)
        return None


_PLAIN = (bool, int, float, complex, str, bytes, torch.dtype, torch.device, type(None))


def _replayable(obj: Any) -> bool:
    """Whether inputs can be given to the model a second time: tensors (they enter as
    detached views), plain values and containers of them; not other objects (an HF cache
    that the forward appends to would hold the second run too)."""
    if isinstance(obj, (torch.Tensor, *_PLAIN)):
        return True
    if isinstance(obj, (tuple, list)):
        return all(_replayable(x) for x in obj)
    if isinstance(obj, Mapping):
        return all(_replayable(x) for x in obj.values())
    return False


def _origin(
    mode: OriginMode,
    calls: Sequence[Any],
    first: int,
    call_ids: Sequence[str],
    call_modules: Sequence[str],
    tracker: CallTracker,
    model_type: str,
) -> NonfiniteOrigin | None:
    def within(call: int, top: int) -> bool:
        while call > top:  # (a call's children start after it)
            call = calls[call].parent
        return call == top

    bad = mode.bad_ops()
    ops = mode.ops
    inside = [op for op in sorted(bad) if within(ops[op][1], first)]
    if not inside:
        return None
    todo = [p for p in ops[inside[0]][3] if p in bad and not within(ops[p][1], first)]
    if not todo:
        return None  # the call made it (from finite values, or from its own parameters)
    seen, sources = set(), []
    while todo:  # back through the ops whose output was not finite, to where it began
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        held = [p for p in ops[op][3] if p in bad]
        if held:
            todo.extend(held)
        else:
            sources.append(op)
    func, owner, started, _, code, lasti, line = ops[min(sources)]
    before = max((i for i in range(started) if calls[i].parent == owner), default=None)
    after = first
    while after >= 0 and calls[after].parent != owner:
        after = calls[after].parent
    if owner >= 0:
        module, instance = call_modules[owner], tracker.modules[calls[owner].module]
        kind = type(instance).__name__
    else:
        module, kind, instance = "", model_type, tracker.model
    file = code.co_filename if code is not None else ""
    return NonfiniteOrigin(
        op=_op_name(func),
        module=module,
        type=kind,
        function=_function(code, instance) if code is not None else "",
        file=file,
        line=line,
        text=_text(code, lasti, line) if code is not None else "",
        before=call_ids[before] if before is not None else None,
        after=call_ids[after] if after >= 0 else None,
    )


def _op_name(func: Any) -> str:
    try:
        return resolve_name(func) or getattr(func, "__name__", str(func))
    except Exception:
        return getattr(func, "__name__", str(func))


def _function(code: types.CodeType, instance: Any) -> str:
    """``Class.method`` of the code (``co_qualname`` from Python 3.11, without the
    ``<locals>`` of a class made in a function; before it, the class of the module whose
    forward ran it that defines this code), else the function's name."""
    qualname = getattr(code, "co_qualname", None)
    if qualname:
        return qualname.rpartition("<locals>.")[2]
    for cls in type(instance).__mro__:
        for value in vars(cls).values():
            if getattr(value, "__code__", None) is code:
                return f"{cls.__name__}.{code.co_name}"
    return code.co_name


def _text(code: types.CodeType, lasti: int, line: int) -> str:
    """The source of the expression that ran the op (its columns, from Python 3.11), else
    the whole line, stripped; shortened to ``_TEXT`` characters."""
    source = linecache.getline(code.co_filename, line)
    text = source.strip()
    positions = getattr(code, "co_positions", None)
    if positions is not None and source:
        try:
            first, last, start, end = list(positions())[lasti // 2]
        except (IndexError, ValueError):
            first = None
        if first == last == line and start is not None and end is not None:
            text = source.encode()[start:end].decode(errors="replace").strip() or text
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"
