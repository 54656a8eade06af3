"""Host memory for what the compiled capture path keeps: slabs carved in order, recycled.

Each activation's kept parts and summary sample are a few KB to a few hundred KB, kept past
the forward pass.  Allocated one by one, every buffer above the C library's mmap threshold
(128 KB) is a fresh mapping whose pages fault in when ``reduce.c`` first writes them (about
2 µs a page on the machines measured: a U-Net at 128² faulted ~1,150 extra pages per trace),
and every buffer costs an allocation and an address lookup in the hook.  Here a run carves
its buffers from slabs of :data:`SLAB_BYTES`, each address a sum; a slab goes back to a
small pool when the last array carved from it dies (the Flow that held it was dropped), so a
later trace writes into pages that are already mapped.  The pool holds at most
:data:`POOL_BYTES` (what capture of a 48-layer GPT-2 carves, ~36 MB, fits: with 32 MB each
trace of it mapped two fresh slabs, ~1,000 page faults); the tail of a run's last slab is
left unused.
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np

SLAB_BYTES = 2 << 20
POOL_BYTES = 64 << 20  # free slabs kept for later runs, at most
_ALIGN = 64

_pool: list[mmap.mmap] = []
_lock = threading.Lock()


def _release(raw: mmap.mmap) -> None:
    """Called as a slab's array dies: keep its memory for another run (else the mapping goes
    when the array's buffer export and this last reference do)."""
    with _lock:
        if len(_pool) * SLAB_BYTES < POOL_BYTES:
            _pool.append(raw)


def _slab() -> tuple[np.ndarray, int]:
    with _lock:
        raw = _pool.pop() if _pool else None
    if raw is None:
        raw = mmap.mmap(-1, SLAB_BYTES)
    array = np.frombuffer(raw, np.uint8)
    weakref.finalize(array, _release, raw)
    return array, array.__array_interface__["data"][0]


class Slabs:
    """The buffers of one run (one thread).

    >>> slabs = Slabs()
    >>> array, offset, address = slabs.carve(100)
    >>> (offset, array[offset:offset + 100].nbytes)
    (0, 100)
    """

    __slots__ = ("_address", "_array", "_at")

    def __init__(self) -> None:
        self._array: np.ndarray | None = None
        self._address = 0
        self._at = SLAB_BYTES

    def carve(self, nbytes: int) -> tuple[np.ndarray, int, int]:
        """``nbytes`` of memory: ``(array, offset, address)``, the bytes being
        ``array[offset:offset + nbytes]`` at ``address``.  Larger requests than a quarter
        slab get an array of their own."""
        if nbytes > SLAB_BYTES // 4:
            array = np.empty(nbytes, np.uint8)
            return array, 0, array.__array_interface__["data"][0]
        at = self._at
        if self._array is None or at + nbytes > SLAB_BYTES:
            self._array, self._address = _slab()
            at = 0
        self._at = at + (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        return self._array, at, self._address + at
