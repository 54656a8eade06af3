"""Host memory: the small results that capture made on the tensors' devices, brought to the
host together once the forward pass is over.

A *pending* record (:class:`~.summary.PendingSummary`, :class:`~.retained.PendingRetained`)
holds its device results in ``tensors`` until :func:`to_host` hands it their host copies
(``arrived``). On the CPU they are read where they are (every result is a tensor capture
made, never a view of an activation); on any other device every result of the run is packed
into one byte buffer and moved in one transfer: nothing during the pass waits for the device.

>>> import torch
>>> from neural_flow_widget.capture.summary import read_dense, summarise_pending
>>> pending = summarise_pending(read_dense(torch.arange(4.0)))
>>> to_host([pending]); pending.resolve().mean
1.5
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np
import torch

__all__ = ["Pending", "numpy_of", "to_host"]

#: numpy's dtype for each torch dtype capture keeps (numpy has no bfloat16: its bits, which
#: Retained.values reads)
_NUMPY: dict[torch.dtype, np.dtype] = {
    torch.bfloat16: np.dtype(np.uint16),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.int64: np.dtype(np.int64),
    torch.int32: np.dtype(np.int32),
    torch.int16: np.dtype(np.int16),
    torch.int8: np.dtype(np.int8),
    torch.uint8: np.dtype(np.uint8),
    torch.bool: np.dtype(np.bool_),
}


#: device types whose results are read where they are (not packed and moved)
READ_IN_PLACE = frozenset({"cpu"})


class Pending(Protocol):
    """A record waiting for the host copies of its device results."""

    tensors: list[torch.Tensor] | None

    def arrived(self, arrays: list[np.ndarray]) -> None: ...


def numpy_of(t: torch.Tensor) -> np.ndarray:
    """A read-only numpy view of a CPU tensor (bfloat16 as its uint16 bits)."""
    array = t.view(torch.int16).numpy().view(np.uint16) if t.dtype is torch.bfloat16 else t.numpy()
    array.setflags(write=False)
    return array


def to_host(items: Iterable[Pending]) -> None:
    """Give every pending item the host copies of its device results (see the module doc)."""
    by_device: dict[torch.device, list[Pending]] = {}
    seen: set[int] = set()  # (an item listed twice arrives once)
    for item in items:
        tensors = item.tensors
        if not tensors or id(item) in seen:
            continue
        seen.add(id(item))
        device = tensors[0].device
        if device.type in READ_IN_PLACE:
            item.arrived([numpy_of(t) for t in tensors])
        else:
            by_device.setdefault(device, []).append(item)
    for waiting in by_device.values():
        _transfer(waiting)


def _transfer(items: list[Pending]) -> None:
    """One device -> host transfer for every result of ``items`` (all on one device)."""
    results = [t for item in items for t in item.tensors or ()]
    # the largest items first: every result then starts aligned in the packed bytes
    order = sorted(range(len(results)), key=lambda i: -results[i].element_size())
    raw = torch.cat([results[i].reshape(-1).view(torch.uint8) for i in order]).cpu().numpy()
    arrays: list[np.ndarray | None] = [None] * len(results)
    offset = 0
    for i in order:
        t = results[i]
        count = t.numel()
        array = np.frombuffer(raw, _NUMPY[t.dtype], count, offset).reshape(t.shape)
        array.setflags(write=False)
        arrays[i] = array
        offset += count * t.element_size()
    at = 0
    for item in items:
        n = len(item.tensors or ())
        item.arrived(arrays[at : at + n])  # type: ignore[arg-type]
        at += n
