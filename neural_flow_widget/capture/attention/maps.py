"""Attention maps, the records: probabilities of one batch sample, all heads, on the host
(:class:`AttentionMap`), or still on the device where they were made (:class:`DeviceMap`)
until the run's results go to the host together. :mod:`.probabilities` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

__all__ = ["AttentionMap", "DeviceMap", "block_sizes", "make_map", "relabel"]


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

    def heads_grid(self, side: int) -> np.ndarray:
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
