"""Sharded tensors in capture: a stage that returns a DTensor (tensor parallelism, FSDP2) is
summarised from its whole tensor, gathered after the pass, or from this rank's local shard, and
its summary says which (``Summary.shard``).

``trace(shards="full")`` (the default) keeps each DTensor leaf until the forward pass is over
and then gathers them (``full_tensor()``), once each, in the order their calls returned:
``full_tensor`` is a collective, which every rank must call in the same order, and every rank
traces the same model. Gathering after the pass leaves the model's own collectives alone, and
no rank waits on another in the middle of a stage. ``shards="local"`` reads each rank's own
shard (a partial sum for a ``Partial`` placement), with no collective at all. A replicated
DTensor (every placement ``Replicate``) is read where it is, either way: each rank holds all of
it.

``torch.distributed`` is never imported here; a DTensor exists only once it has been.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .host import Pending
from .reduction import Records, Reduction, failed

__all__ = ["SHARDS", "Sharded", "Sharding", "is_sharded", "note", "sharding_of"]

#: what a DTensor's summary reads: the whole tensor (gathered after the pass) or the local shard
SHARDS = ("full", "local")


def is_sharded(tensor: object) -> bool:
    """Whether ``tensor`` is a DTensor (cheap for a plain tensor: one type check).

    >>> is_sharded(torch.ones(2))
    False
    """
    if type(tensor) is torch.Tensor:
        return False
    module = sys.modules.get("torch.distributed.tensor")
    kind = getattr(module, "DTensor", None)
    return kind is not None and isinstance(tensor, kind)


@dataclass(frozen=True, slots=True)
class Sharding:
    """How a DTensor is laid out over its device mesh, in words."""

    placements: str  # "Shard(dim=1)", "Partial(sum)", "Replicate()", joined by ", " per mesh dim
    ranks: int  # processes in its mesh
    rank: int  # this process's rank in the mesh (its coordinate, for a mesh of several dims)
    shape: tuple[int, ...]  # the whole tensor's shape
    local: tuple[int, ...]  # this rank's shard's shape
    replicated: bool  # every placement Replicate: each rank holds the whole tensor
    partial: bool  # a placement Partial: each rank holds a part of a sum


def sharding_of(tensor: torch.Tensor) -> Sharding:
    """The layout of DTensor ``tensor`` (no collective)."""
    placements = tuple(tensor.placements)  # type: ignore[attr-defined]
    mesh = tensor.device_mesh  # type: ignore[attr-defined]
    coordinate = mesh.get_coordinate() or []
    rank = 0
    for size, at in zip(mesh.shape, coordinate):
        rank = rank * size + at
    return Sharding(
        ", ".join(repr(p) for p in placements),
        int(mesh.size()),
        rank,
        tuple(tensor.shape),
        tuple(tensor.to_local().shape),  # type: ignore[attr-defined]
        all(p.is_replicate() for p in placements),
        any(p.is_partial() for p in placements),
    )


def describe(s: Sharding, full: bool) -> str:
    """What a DTensor's summary reads, in words (``Summary.shard``; the inspector's "sharded"
    row).

    >>> s = Sharding("Shard(dim=1)", 2, 0, (2, 16), (2, 8), False, False)
    >>> describe(s, True)
    'the whole tensor, gathered from 2 ranks (Shard(dim=1))'
    >>> describe(s, False)
    "rank 0's shard of 2 (Shard(dim=1)); the whole is 2×16"
    """
    if s.replicated:
        return f"the whole tensor, replicated on {s.ranks} ranks ({s.placements})"
    if full:
        return f"the whole tensor, gathered from {s.ranks} ranks ({s.placements})"
    part = "partial sum" if s.partial else "shard"
    whole = "×".join(map(str, s.shape))
    return f"rank {s.rank}'s {part} of {s.ranks} ({s.placements}); the whole is {whole}"


def note(ranks: int, full: bool) -> str:
    """The run's note for a run whose stages returned DTensors: which stages read what (a
    stage that returns a plain tensor, such as a tensor-parallel model's activations between
    its layers, shows this rank's own tensor either way)."""
    if full:
        return (
            f"DTensors over {ranks} ranks: stages marked 'sharded' show the whole tensor, "
            f"gathered after the pass; the others, this rank's own tensors "
            f"(trace(shards='local'): each rank's shard)"
        )
    return (
        f"DTensors over {ranks} ranks: stages marked 'sharded' show this rank's own shard, the "
        f"others this rank's own tensors (trace(shards='full'): the whole tensors, gathered "
        f"after the pass)"
    )


class Sharded:
    """The :class:`~.reduction.Reduction` of a DTensor leaf: the reduction of its local shard,
    or, until :meth:`gather`, the DTensor itself, waiting to be gathered after the pass.
    Its summary carries :func:`describe`'s words."""

    __slots__ = ("error", "made", "tensor", "words")

    def __init__(
        self, words: str, made: Reduction | None = None, tensor: torch.Tensor | None = None
    ) -> None:
        self.words, self.made, self.tensor = words, made, tensor
        self.error: str | None = made.error if made is not None else None

    def gather(self, reduce: Callable[[torch.Tensor], Reduction]) -> None:
        """Gather the whole tensor (a collective: every rank, in the same order) and reduce it;
        a failure is kept as this leaf's failed summary."""
        if self.tensor is None:
            return
        try:
            with torch.no_grad():
                whole = self.tensor.full_tensor()  # type: ignore[attr-defined]
            self.made = reduce(whole)
        except Exception as error:  # (its summary says so; the other leaves go on)
            reason = f"gathering the DTensor failed: {type(error).__name__}: {error}"
            self.made = failed(self.tensor, reason)
        self.tensor, self.error = None, self.made.error

    def waiting(self) -> list[Pending]:
        return self.made.waiting() if self.made is not None else []

    def nonfinite(self) -> bool:
        return self.made is not None and self.made.nonfinite()

    def result(self) -> Records:
        if self.made is None:
            raise RuntimeError("this DTensor was not gathered: the pass did not finish")
        summary, kept, error = self.made.result()
        return summary.with_shard(self.words), kept, error
