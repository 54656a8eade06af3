"""What capture leaves of one run: :class:`Capture`, a plain record keyed by module call index.

The record knows nothing of stage ids or of the Flow that owns it: the Flow resolves a stage
id to a call index (or a model input / output node) and asks with that *key*. Its parts are
made on first read: a leaf's records (:class:`Captured`) from its reduction, a model end's
reading from its pending arrays, so that ``trace()`` pays only for what is looked at.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from .attention.maps import AttentionMap, MapEntry
from .image import View
from .meaning import Meaning, PendingMeaning
from .readings import meaning_view
from .readout import Readout, Readouts
from .reduction import Reduction
from .retained import Retained
from .summary import PendingSummary, Summary
from .views import available_views, render_view

__all__ = ["META", "Capture", "Captured", "Gradients", "Key", "Lazy"]

#: what the record is asked with: a module call's index, or a model input / output node id
Key = int | str

META = (
    "the model ran on the meta device, which holds shapes but no values: the graph shows its "
    "topology, shapes and parameter counts; there is no data to summarise or view"
)


@dataclass(frozen=True, slots=True)
class Captured:
    """One tensor leaf of a call's output, reduced.

    ``pending`` is a :class:`~.summary.PendingSummary`: the call kept the exact whole-tensor
    reductions and a copy of the sample; ``summary`` finishes it on first read (cached,
    shared by the copies :func:`dataclasses.replace` makes).
    """

    leaf: str  # path of the leaf in the output ("0", "logits", "1.0")
    pending: PendingSummary
    retained: Retained | None  # None when it could not be kept
    error: str | None = None

    @property
    def summary(self) -> Summary:
        """The :class:`~.summary.Summary` of the leaf."""
        return self.pending.resolve()

    @classmethod
    def of(cls, leaf: str, reduction: Reduction) -> Captured:
        return cls(leaf, *reduction.result())


K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")


class Lazy(Mapping[K, V], Generic[K, R, V]):
    """A read-only mapping whose values are made from raw ones on first read (and kept)."""

    __slots__ = ("_made", "_make", "_raw")

    def __init__(self, raw: Mapping[K, R], make: Callable[[K, R], V]) -> None:
        self._raw, self._make = raw, make
        self._made: dict[K, V] = {}

    def __getitem__(self, key: K) -> V:
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = self._make(key, self._raw[key])
        return made

    def __iter__(self) -> Iterator[K]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw


def leaves_of(items: Sequence[tuple[str, Reduction]]) -> list[Captured]:
    return [Captured.of(leaf, reduction) for leaf, reduction in items]


@dataclass(frozen=True, eq=False)
class Gradients:
    """What the backward pass of a run with ``loss=`` left: per call index (or model input /
    output node), per output leaf, the gradient of the loss with respect to it, reduced like
    the forward pass's outputs (and its L2 norm); the calls in the order their gradient came
    (the backward pass's order: the first is nearest the loss); per parameter, its gradient."""

    leaves: Mapping[Key, Sequence[tuple[str, Reduction, float]]]
    order: tuple[Key, ...]
    params: Mapping[str, tuple[Reduction, float]]
    _made: dict[Key, list[Captured]] = field(default_factory=dict, repr=False)

    def captured(self, key: Key) -> list[Captured] | None:
        """The gradient's leaves of a call (or end), their summaries carrying the norm; None
        when no gradient reached it (its output did not lead to the loss)."""
        if key not in self.leaves:
            return None
        if key not in self._made:
            self._made[key] = [_with_norm(leaf, r, norm) for leaf, r, norm in self.leaves[key]]
        return self._made[key]

    def norm(self, key: Key) -> float | None:
        """The L2 norm of the gradient of a call's output (its leaves together), or None."""
        found = self.leaves.get(key)
        if not found:
            return None
        return math.sqrt(sum(norm * norm for _, _, norm in found))

    def nonfinite(self) -> list[Key]:
        """The calls (and ends) whose gradient held NaN or Inf, in backward order: the first
        is where it entered the backward pass."""
        return [
            key
            for key in self.order
            if any(not math.isfinite(norm) or r.nonfinite() for _, r, norm in self.leaves[key])
        ]

    def param_summaries(self, prefix: str) -> dict[str, Summary]:
        """The gradients' summaries of the parameters whose names start with ``prefix``
        (a module's qualified name and a dot; "" for all), by name."""
        return {
            name: _with_norm(name, r, norm).summary
            for name, (r, norm) in self.params.items()
            if name.startswith(prefix)
        }


def _with_norm(leaf: str, reduction: Reduction, norm: float) -> Captured:
    summary, retained, error = reduction.result()
    pending = PendingSummary.of(replace(summary.resolve(), norm=norm))
    return Captured(leaf, pending, retained, error)


@dataclass(frozen=True, eq=False)
class Capture:
    """The reductions of one run. ``outputs`` and ``maps`` are keyed by module call index
    (-1 in ``maps``: the model's own body), ``ends`` by model input / output node id."""

    outputs: Mapping[int, Sequence[Captured]]
    maps: Mapping[int, Sequence[MapEntry]]  # AttentionMap, or one made on first resolve()
    #: call -> why its capture failed (the reduction of a leaf, an attention map), the first
    failures: Mapping[int, str] = field(default_factory=dict)
    held_nonfinite: frozenset[int] = frozenset()  # calls whose output held NaN or +/-Inf
    sample: int = 0  # which batch sample the views and attention maps show
    notes: tuple[str, ...] = ()  # what the whole run's capture could not do, once each
    ends: Mapping[str, Sequence[Captured]] = field(default_factory=dict)
    readings: Mapping[str, PendingMeaning] = field(default_factory=dict)  # end -> its reading
    end_failures: dict[str, str] = field(default_factory=dict)  # node -> why capture failed
    grads: Gradients | None = None  # the backward pass (a run with ``loss=``), else None
    readouts: Readouts | None = None  # what readouts read (a language model's run), else None
    _meanings: dict[str, Meaning | None] = field(default_factory=dict, repr=False)

    # -- what the run left --------------------------------------------------------------------

    def captured(self, key: Key) -> Sequence[Captured] | None:
        """The leaves of a call's output or of a model end; None when nothing was kept."""
        if isinstance(key, str):
            return self.ends.get(key)
        return self.outputs.get(key)

    def meaning(self, node: str) -> Meaning | None:
        """What a model input or output means (:mod:`.meaning`), made on first read; None
        when it has no reading (or making it failed: then ``end_failures`` says why)."""
        if node not in self._meanings:
            pending, made = self.readings.get(node), None
            if pending is not None:
                try:
                    made = pending.result()
                except Exception as error:
                    self.end_failures.setdefault(
                        node, f"reading failed: {type(error).__name__}: {error}"
                    )
            self._meanings[node] = made
        return self._meanings[node]

    def nonfinite(self, calls: Iterable[int]) -> list[int]:
        """Of ``calls``, in their order, those whose output held a NaN or an Inf."""
        return [c for c in calls if c in self.held_nonfinite]

    def mark(self, calls: Sequence[Any]) -> tuple[Any, ...]:
        """The Stage records ``calls``, those whose reduction failed with the reason in
        ``error`` (the first of them)."""
        failures = self.failures
        return tuple(
            replace(c, error=failures[c.index]) if not c.error and c.index in failures else c
            for c in calls
        )

    # -- reading it ---------------------------------------------------------------------------

    def view(
        self,
        key: Key,
        items: Sequence[Captured],
        kind: str | None,
        *,
        who: str,
        channel: int | None = None,
        leaf: int = 0,
        page: int | None = None,
        channels: Sequence[int] | None = None,
    ) -> View:
        """A view of leaf ``leaf`` of ``items`` (``captured(key)``); ``who`` names it in errors."""
        if not 0 <= leaf < len(items):
            raise ValueError(
                f"{who} has {len(items)} output tensor(s); leaf={leaf} is out of range"
            )
        item = items[leaf]
        meaning = self.meaning(key) if isinstance(key, str) else None
        if meaning is not None and kind in (None, meaning.kind):
            return meaning_view(meaning)
        if item.retained is None and item.summary.device == "meta":
            raise ValueError(f"{who} ran on the meta device: {META}")
        if item.retained is None:
            raise ValueError(f"{who}: no view was kept ({item.error})")
        return render_view(item.retained, kind, channel=channel, page=page, channels=channels)

    def views(self, key: Key, items: Sequence[Captured], leaf: int = 0) -> tuple[str, ...]:
        """The view kinds of leaf ``leaf`` of ``items`` (``captured(key)``), the default first."""
        kept = items[leaf].retained if leaf < len(items) else None
        meaning = self.meaning(key) if isinstance(key, str) and leaf == 0 else None
        first = (meaning.kind,) if meaning is not None else ()
        return first + (available_views(kept) if kept is not None else ())

    def attention_origins(self, calls: Collection[int]) -> list[tuple[int, int]]:
        """The attention maps made inside ``calls``: (module call, its n-th map), in call order."""
        return [(c, i) for c in sorted(self.maps) if c in calls for i in range(len(self.maps[c]))]

    def readout(self, key: Key, k: int, position: int | None = None) -> Readout | None:
        """The logit lens of a kept call's output (:mod:`.readout`), at every position or at
        one; None where there is none."""
        if self.readouts is None or isinstance(key, str):
            return None
        return self.readouts.readout(key, k, position)

    @property
    def read_calls(self) -> tuple[int, ...]:
        """The calls whose output was kept for readouts, in call order."""
        return tuple(sorted(self.readouts.kept)) if self.readouts is not None else ()

    def attention(self, calls: Collection[int]) -> list[AttentionMap]:
        """The attention maps made inside ``calls``, in the order of :meth:`attention_origins`."""
        return [self.maps[c][i].resolve() for c, i in self.attention_origins(calls)]
