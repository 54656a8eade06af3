"""The contract between the tracing layer and what observes a run (capture, attention, the
NaN-origin diagnosis, the attention zoom).

The run context (:mod:`.context`), the tracer and the call tracker know nothing of capture:
they call these methods, and capture implements them. Capture in turn reads the tracer only
through :class:`WriteLog`, and the run through :class:`Watch`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode


class OpObserver(Protocol):
    """Sees chosen torch ops after they ran (the attention recorder).

    The tracer calls :meth:`observe` from inside its ``__torch_function__`` for each func in
    ``watched`` (a set the observer may grow or shrink in place while the run goes on); the
    call tracker asks :meth:`follows_any` before it runs a leaf module's call without the
    tracer, which would hide its ops.
    """

    @property
    def watched(self) -> Collection[Any]: ...

    def observe(self, func: Any, args: tuple, kwargs: dict | None, result: Any) -> None: ...

    def follows_any(self, tensors: list[torch.Tensor]) -> bool: ...


class OutputObserver(Protocol):
    """Sees each module call's output as the call returns (capture's reductions).

    ``leaves`` are the ``(path, tensor)`` pairs of the output; the call runs with every
    ``__torch_function__`` handler off, so its torch ops never enter the graph.
    """

    def __call__(self, call: int, leaves: list[tuple[str, torch.Tensor]]) -> None: ...


class WriteLog(Protocol):
    """What the dataflow tracer tells an observer about in-place writes.

    ``seq`` is a clock that moves with every recorded op; :meth:`written_since` says whether
    an in-place op wrote into a tensor's storage after a reading of that clock;
    :meth:`before_next_write` asks for one call before the next in-place op (an observer that
    holds tensors copies them then). ``failure`` is set when the tracer itself failed (what
    it says about writes can no longer be trusted).
    """

    seq: int
    failure: BaseException | None

    def written_since(self, tensor: torch.Tensor, seq: int) -> bool: ...

    def before_next_write(self, callback: Callable[[], None] | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Watch:
    """What an observer of a run may read while the run goes on (given when it is made)."""

    stack: list[int]  # the running module calls, innermost last; -1: the model's own body
    calls: list[Any]  # the module calls so far (``tracing.calls.CallRecord``), in start order
    writes: WriteLog | None  # the dataflow tracer's account of in-place writes, when it runs
    leaves: frozenset[int] = frozenset()  # the module indices of the leaf modules

    def current(self) -> int:
        """The innermost running module call (-1: the model's own body)."""
        return self.stack[-1]


class RunObserver(Protocol):
    """What watches one run beside the call tracker; the run context makes it (from a
    :class:`Watch`), feeds it, and closes it when the pass is over, whatever happened.

    ``ops``: torch ops it must see (the attention recorder), fed by the dataflow tracer or,
    without one, by a mode of the context's own; ``mode``: a TorchFunctionMode of its own,
    entered inside the tracer (the NaN-origin run's, the attention zoom's); ``on_output``:
    each call's output as it returns; :meth:`on_end`: each model input before the forward and
    each output after it.
    """

    @property
    def ops(self) -> OpObserver | None: ...
    @property
    def mode(self) -> TorchFunctionMode | None: ...
    @property
    def on_output(self) -> OutputObserver | None: ...

    def on_end(self, node: str, tensor: torch.Tensor, output: bool) -> None: ...

    def close(self) -> None: ...
