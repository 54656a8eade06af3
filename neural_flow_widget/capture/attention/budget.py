"""What a run's attention maps may hold: at most ``budget`` bytes, all maps together.

>>> import numpy as np
>>> from .maps import AttentionMap
>>> m = AttentionMap(np.full((2, 8, 8), 1 / 8, np.float32), 8, 8, (1, 1), "sdpa", False)
>>> kept, note = fit_budget({3: [m]}, budget=2 * 4 * 4 * 4)
>>> kept[3][0].weights.shape, kept[3][0].pool
((2, 4, 4), (2, 2))

A map keeps each axis exact up to 512 positions (:mod:`.probabilities`), which is 1 MiB per
head at 512 tokens: a 12-layer model with 12 heads holds 150 MiB of maps, more than its own
forward pass needs. After the pass, when the maps (and the query/key copies of the maps not
made yet) would hold more than the budget, every map is made and block-mean pooled a further
``f`` x ``f`` (the smallest ``f`` that fits; a pooled entry stays the exact mean of its
block), and the run says so in a note. Short axes (a decode step's one query) stay as they
are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .maps import AttentionMap, DeviceMap
from .probabilities import PendingMap

__all__ = ["DEFAULT_ATTENTION_BUDGET", "fit_budget", "held_bytes", "repool"]

#: bytes the attention maps of one run may hold by default
DEFAULT_ATTENTION_BUDGET = 48 * 2**20


def held_bytes(entry: Any) -> int:
    """Bytes an entry of the recorder's maps holds: its weights, or for a pending map the
    larger of the copies it will make them from and the map it will make."""
    if isinstance(entry, PendingMap):
        return entry.held_bytes()
    if isinstance(entry, DeviceMap):
        entry = entry.resolve()
    return int(entry.weights.nbytes)


def _sizes(length: int, pool: int) -> np.ndarray:
    blocks = -(-length // pool)
    sizes = np.full(blocks, pool, np.float64)
    sizes[-1] = length - pool * (blocks - 1)
    return sizes


def repool(m: AttentionMap, f: int) -> AttentionMap:
    """``m`` block-mean pooled a further ``f`` x ``f`` (each axis at most down to one block):
    every entry the mean of the probabilities in its new, larger block."""
    _, nq, nk = m.weights.shape
    fq, fk = min(f, nq), min(f, nk)
    if fq == fk == 1:
        return m
    (pq, pk), (lq, lk) = m.pool, (m.q_len, m.k_len)
    mass = m.weights.astype(np.float64) * _sizes(lq, pq)[None, :, None] * _sizes(lk, pk)
    mass = np.add.reduceat(mass, np.arange(0, nq, fq), axis=1)
    mass = np.add.reduceat(mass, np.arange(0, nk, fk), axis=2)
    pool = (pq * fq, pk * fk)
    weights = mass / _sizes(lq, pool[0])[None, :, None] / _sizes(lk, pool[1])
    weights = weights.astype(np.float32)
    weights.setflags(write=False)
    return AttentionMap(weights, lq, lk, pool, m.source, m.causal)


def fit_budget(
    maps: dict[int, list[Any]], budget: int | None
) -> tuple[dict[int, list], str | None]:
    """The maps of a run within ``budget`` bytes (None: no bound), and a note when they were
    pooled to get there (see the module doc)."""
    total = sum(held_bytes(e) for entries in maps.values() for e in entries)
    if budget is None or total <= budget:
        return maps, None
    made = {call: [e.resolve() for e in entries] for call, entries in maps.items()}
    full = sum(int(m.weights.nbytes) for entries in made.values() for m in entries)
    f = 1
    while f < 1 << 16:
        f += 1
        size = sum(
            4 * m.weights.shape[0] * -(-m.weights.shape[1] // min(f, m.weights.shape[1]))
            * -(-m.weights.shape[2] // min(f, m.weights.shape[2]))
            for entries in made.values() for m in entries
        )  # fmt: skip
        if size <= budget:
            break
    pooled = {call: [repool(m, f) for m in entries] for call, entries in made.items()}
    note = (
        f"the attention maps of this run would hold {full / 2**20:.0f} MiB, more than the "
        f"attention budget of {budget / 2**20:.0f} MiB, so each is pooled a further {f}x{f} "
        f"(every entry the mean of its block); trace with attention_budget_bytes=None or a "
        f"larger budget to keep more"
    )
    return pooled, note
