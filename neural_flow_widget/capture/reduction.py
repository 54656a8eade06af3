"""One tensor leaf reduced inside its call: the :class:`Reduction` protocol, and the torch path.

Capture has two implementations of the same reductions (a summary's exact and sampled parts,
the retained maps that views are rendered from):

* the **torch path** (:func:`reduce_on_device`: :mod:`.summary` and :mod:`.retained`), the
  reference, on every device. It runs a few torch ops on the tensor's own device; their small
  results stay there until the pass is over (:mod:`.host` brings them over together);
* the **compiled CPU path** (:mod:`.accelerator`), optional: a contiguous float32 image or
  sequence on the CPU, reduced in one call into ``reduce.c`` that writes into host memory.
  ``tests/capture/test_accelerator.py`` holds it to the torch path (the same fields, the same
  kept parts); without a C compiler, or with ``NFW_ACCELERATOR=0``, the torch path runs alone.

Either gives a :class:`Reduction`; after the pass, :meth:`Reduction.result` makes the records.

>>> import torch
>>> r = reduce_on_device(torch.arange(6.0).reshape(1, 2, 3), sample=0, budget=1 << 16)
>>> from .host import to_host
>>> to_host(r.waiting())
>>> summary, retained, error = r.result()
>>> (summary.resolve().mean, retained.layout, error)
(2.5, 'sequence', None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from .dense import read_dense
from .host import Pending
from .retained import PendingRetained, Retained, retain_pending
from .summary import PendingSummary, summarise_pending, summary_failed, summary_without_data

__all__ = [
    "Records",
    "Reduction",
    "TorchReduction",
    "failed",
    "reduce_on_device",
    "without_data",
]

#: what a reduction leaves: the summary (finished on first read), the kept parts for views
#: (None when they could not be kept) and why something failed (None when nothing did)
Records = tuple[PendingSummary, "Retained | None", "str | None"]


class Reduction(Protocol):
    """One tensor leaf, reduced in its call (either implementation)."""

    error: str | None  # why a part of it failed (the summary or the kept parts), else None

    def waiting(self) -> list[Pending]:
        """What must reach the host (:func:`~.host.to_host`) before :meth:`result`."""
        ...

    def nonfinite(self) -> bool:
        """Whether the tensor held a NaN or an Inf (read without finishing the summary)."""
        ...

    def result(self) -> Records:
        """The records, once :meth:`waiting` has arrived."""
        ...


@dataclass(slots=True)
class TorchReduction:
    """The torch path's reduction: pending records whose results are still on the device."""

    summary: PendingSummary
    retained: PendingRetained | None = None
    error: str | None = None

    def waiting(self) -> list[Pending]:
        found: list[Pending] = []
        if self.summary.tensors:
            found.append(self.summary)
        if self.retained is not None and self.retained.tensors:
            found.append(self.retained)
        return found

    def nonfinite(self) -> bool:
        return self.summary.nonfinite()

    def result(self) -> Records:
        kept = self.retained.result() if self.retained is not None else None
        return self.summary, kept, self.error


def without_data(tensor: torch.Tensor) -> TorchReduction:
    """The reduction of a tensor that holds no values (the meta device): shape, dtype, no data."""
    return TorchReduction(PendingSummary.of(summary_without_data(tensor)))


def failed(tensor: object, reason: str) -> TorchReduction:
    """The reduction of a tensor that could not be read: a failed summary that says why."""
    return TorchReduction(PendingSummary.of(summary_failed(tensor, reason)), None, reason)


def reduce_on_device(
    tensor: torch.Tensor, *, sample: int, budget: int, views: bool = True
) -> TorchReduction:
    """The torch path: a tensor's summary and kept parts (``views=False``: the summary alone),
    by ops on its own device that wait for nothing. A tensor that cannot be read gives a failed
    summary that says why (never a raise: one failing summary marks its stage, it does not
    abort the run)."""
    try:
        dense = read_dense(tensor)  # (read once, for both)
        summary = summarise_pending(dense)
    except Exception as error:
        return failed(tensor, f"summary failed: {type(error).__name__}: {error}")
    if not views:
        return TorchReduction(summary)
    try:
        retained = retain_pending(dense, sample=sample, budget_bytes=budget, peak=summary.peak)
    except Exception as error:
        return TorchReduction(summary, None, f"view failed: {type(error).__name__}: {error}")
    return TorchReduction(summary, retained)
