"""Attention maps, the records: probabilities of one batch sample, all heads, on the host
(:class:`AttentionMap`), or still on the device where they were made (:class:`DeviceMap`)
until the run's results go to the host together. :mod:`.probabilities` makes them.

What a viewer is shown of a map is made here too: :meth:`AttentionMap.shown` (one head or the
mean over heads, over a window of positions, block-mean pooled to at most :data:`MAP_SIDE` a
side) and :meth:`AttentionMap.heads_grid` (every head, at most :data:`GRID_SIDE` a side).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "GRID_SIDE",
    "MAP_SIDE",
    "AttentionMap",
    "DeviceMap",
    "MapEntry",
    "Shown",
    "Window",
    "block_sizes",
    "make_map",
    "relabel",
]

GRID_SIDE = 64  # the heads grid: each head pooled to at most this side
MAP_SIDE = 256  # a map shown: at most this many rows and columns

#: query and key positions, ``(q0, q1, k0, k1)``: rows q0..q1-1, columns k0..k1-1
Window = tuple[int, int, int, int]


class Shown(NamedTuple):
    """What is shown of one map: float32 probabilities (one head, or the mean over heads)
    covering ``window`` (whole blocks of what was kept), ``pool`` positions per row and
    column (block means; (1, 1): exact)."""

    weights: np.ndarray
    window: Window
    pool: tuple[int, int]


class MapEntry(Protocol):
    """A recorded attention map: made already (:class:`AttentionMap`), on its way to the host
    (:class:`DeviceMap`), or made on first read (:class:`~.probabilities.PendingMap`)."""

    def resolve(self) -> AttentionMap: ...


@dataclass(frozen=True, slots=True, eq=False)
class AttentionMap:
    """Attention probabilities of one batch sample, all heads, float32, read-only.

        >>> import numpy as np
        >>> m = AttentionMap(np.full((1, 2, 2), 0.5, np.float32), 2, 2, (1, 1), "sdpa", False)
        >>> m.mass().sum(-1).tolist()
        [[1.0, 1.0]]

    ``weights`` is (heads, q_len', k_len'). When an axis is longer than ``max_exact`` it is
    block-mean pooled by ``pool`` = (query factor, key factor): each entry is the mean of the
    probabilities in its block (a last, shorter block averages its own members), so a pooled
    row sums to about 1/pool[1]; :meth:`mass` rescales it to sum to 1. ``q_len``/``k_len`` are
    the original lengths; ``source`` is "sdpa", "mha" or "softmax"; ``causal`` is True when the
    op was given ``is_causal=True`` (masks are not inspected). Compared by identity (eq=False).
    """

    weights: np.ndarray
    q_len: int
    k_len: int
    pool: tuple[int, int]
    source: str
    causal: bool

    def mass(self) -> np.ndarray:
        """Weights times the number of keys in each key block: rows sum to 1 (0 when masked out)."""
        return self.weights * block_sizes(self.k_len, self.pool[1], torch.device("cpu")).numpy()

    def resolve(self) -> AttentionMap:
        """Itself (a map made on the host already; see :class:`PendingMap`, :class:`DeviceMap`)."""
        return self

    def check_window(self, window: object) -> Window:
        """``window`` as positions of this map, or ``ValueError`` saying what is expected."""
        if (
            not isinstance(window, (list, tuple))
            or len(window) != 4
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in window)
            or not (0 <= window[0] < window[1] <= self.q_len)
            or not (0 <= window[2] < window[3] <= self.k_len)
        ):
            raise ValueError(
                f"window={window!r}: expected [q0, q1, k0, k1] with 0 <= q0 < q1 <= "
                f"{self.q_len} and 0 <= k0 < k1 <= {self.k_len}"
            )
        q0, q1, k0, k1 = window
        return q0, q1, k0, k1

    def head_weights(self, head: int | None) -> np.ndarray:
        """One head's probabilities, or the mean over heads (None); ``ValueError`` for a head
        out of range."""
        heads = self.weights.shape[0]
        if head is not None and not 0 <= head < heads:
            raise ValueError(
                f"head={head} is out of range: this attention call has {heads} heads "
                f"(0..{heads - 1})"
            )
        return self.weights[head] if head is not None else self.weights.mean(axis=0)

    def shown(
        self, head: int | None, window: object = None, refined: AttentionMap | None = None
    ) -> Shown:
        """The part of the map (one head, or the mean over heads) that covers ``window``
        (positions; None: all of it), widened to whole blocks of what was kept and pooled
        further to at most :data:`MAP_SIDE` a side (exact block means, a short last block
        weighed by its size); or, given ``refined`` (that window made again at full
        resolution, :meth:`to_refine`), that window exact.

        >>> m = AttentionMap(np.ones((2, 600, 10), np.float32) / 10, 600, 10, (1, 1), "sdpa", False)
        >>> s = m.shown(None, [0, 600, 0, 10])
        >>> s.weights.shape, s.window, s.pool
        ((200, 10), (0, 600, 0, 10), (3, 1))
        """
        chosen = self.head_weights(head)
        if refined is not None:
            exact = np.ascontiguousarray(refined.head_weights(head), dtype="<f4")
            return Shown(exact, self.check_window(window), (1, 1))
        pq, pk = (int(f) for f in self.pool)
        q0, q1, k0, k1 = (
            (0, self.q_len, 0, self.k_len) if window is None else self.check_window(window)
        )
        r0, r1, c0, c1 = q0 // pq, -(-q1 // pq), k0 // pk, -(-k1 // pk)
        part = chosen[r0:r1, c0:c1]
        covered = (r0 * pq, min(r1 * pq, self.q_len), c0 * pk, min(c1 * pk, self.k_len))
        fq, fk = -(-part.shape[0] // MAP_SIDE), -(-part.shape[1] // MAP_SIDE)
        if fq > 1 or fk > 1:
            part = _block_means(part, covered[0], covered[1], pq, fq, axis=0)
            part = _block_means(part, covered[2], covered[3], pk, fk, axis=1)
        return Shown(np.ascontiguousarray(part, dtype="<f4"), covered, (pq * fq, pk * fk))

    def to_refine(self, window: object) -> Window | None:
        """``window`` when it is worth making again at full resolution (the map keeps block
        means over it, and every position of it fits :data:`MAP_SIDE`), else None;
        ``ValueError`` for a window out of range."""
        if self.pool == (1, 1) or window is None:
            return None
        q0, q1, k0, k1 = self.check_window(window)
        if q1 - q0 > MAP_SIDE or k1 - k0 > MAP_SIDE:
            return None
        return q0, q1, k0, k1

    def heads_grid(self, side: int = GRID_SIDE) -> np.ndarray:
        """Every head block-mean pooled to at most ``side`` x ``side`` (float32).

        >>> m = AttentionMap(np.ones((2, 100, 10), np.float32), 100, 10, (1, 1), "sdpa", False)
        >>> m.heads_grid(64).shape
        (2, 64, 10)
        """
        _, q, k = self.weights.shape
        qs = np.linspace(0, q, min(q, side) + 1).astype(int)
        ks = np.linspace(0, k, min(k, side) + 1).astype(int)
        rows = np.add.reduceat(self.weights, qs[:-1], axis=1) / np.diff(qs)[None, :, None]
        grid = np.add.reduceat(rows, ks[:-1], axis=2) / np.diff(ks)[None, None, :]
        return grid.astype("<f4", copy=False)


def _block_means(part: np.ndarray, lo: int, hi: int, size: int, f: int, axis: int) -> np.ndarray:
    """Means of ``f`` neighbouring blocks along ``axis``, each weighed by how many positions
    it holds (blocks of ``size`` from ``lo``; the last ends at ``hi``)."""
    if f == 1:
        return part
    n = part.shape[axis]
    sizes = np.full(n, size, np.float64)
    sizes[-1] = hi - lo - size * (n - 1)
    starts = np.arange(0, n, f)
    shape = [1, 1]
    shape[axis] = n
    total = np.add.reduceat(part * sizes.reshape(shape), starts, axis=axis)
    count = np.add.reduceat(sizes, starts).reshape([-1, 1] if axis == 0 else [1, -1])
    return total / count


def block_sizes(length: int, factor: int, device: torch.device) -> Tensor:
    """Members of each block of ``factor`` (the last may be shorter), made on ``device``."""
    sizes = torch.full((-(-length // factor),), float(factor), device=device)
    sizes[-1] = length - factor * (len(sizes) - 1)
    return sizes


def make_map(
    weights: Tensor,
    q_len: int,
    k_len: int,
    pool: tuple[int, int],
    source: str,
    causal: bool,
    *,
    owned: bool = False,
) -> AttentionMap | DeviceMap:
    """``owned``: ``weights`` is a tensor made here, which the map may keep as it is (float32);
    otherwise it is copied, so that the model's own tensors are never kept. A map on another
    device than the CPU stays there until the run's results go to the host together."""
    weights = weights.detach().to(dtype=torch.float32, copy=not owned)
    meta = (int(q_len), int(k_len), pool, source, causal)
    if not weights.is_cpu:
        return DeviceMap(weights, meta)
    array = weights.numpy()
    array.setflags(write=False)
    return AttentionMap(array, *meta)


class DeviceMap:
    """An attention map made on a device (a GPU), whose weights reach the host with the run's
    other results (:func:`~neural_flow_widget.capture.host.to_host`): making it waits for
    nothing."""

    __slots__ = ("_map", "_meta", "_weights", "tensors")

    def __init__(self, weights: Tensor, meta: tuple) -> None:
        self.tensors: list[Tensor] | None = [weights]
        self._weights, self._meta = weights, meta
        self._map: AttentionMap | None = None

    def arrived(self, arrays: list[np.ndarray]) -> None:
        self._map, self.tensors = AttentionMap(arrays[0], *self._meta), None
        del self._weights

    def relabelled(self, source: str, causal: bool) -> DeviceMap:
        q_len, k_len, pool, _, _ = self._meta
        return DeviceMap(self._weights, (q_len, k_len, pool, source, causal))

    def resolve(self) -> AttentionMap:
        if self._map is None:
            raise RuntimeError("this attention map has not reached the host yet")
        return self._map


def relabel(m: AttentionMap | DeviceMap, source: str, causal: bool) -> AttentionMap | DeviceMap:
    """The same map, said to come from ``source`` (e.g. ``"mha"``)."""
    if isinstance(m, DeviceMap):
        return m.relabelled(source, causal)
    return replace(m, source=source, causal=causal)
