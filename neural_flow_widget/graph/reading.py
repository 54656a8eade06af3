"""What a Flow reads of its run's capture: summaries, views, attention maps and, for a run
with ``loss=``, gradients. The capture record is keyed by call index (or a model input /
output node); :class:`Readings` (the Flow's base) resolves stage ids and says why a stage has
nothing to show. No torch here: the records passed on are capture's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .gradients import GradientFlow, gradient_flow

if TYPE_CHECKING:
    from .records import Edge, Stage

__all__ = ["CaptureRecord", "GradientRecord", "Key", "Readings"]

#: what a Flow asks its capture record with: a module call's index, or a model end's node id
Key = int | str


class GradientRecord(Protocol):
    """What a Flow reads of a run's backward pass (``capture/record.py``'s ``Gradients``)."""

    @property
    def order(self) -> tuple[Key, ...]:
        """The calls (and ends) in the order their gradient came (the first: the loss's end)."""
        ...

    def captured(self, key: Key) -> Sequence[Any] | None: ...
    def norm(self, key: Key) -> float | None: ...
    def nonfinite(self) -> list[Key]: ...
    def param_summaries(self, prefix: str) -> dict[str, Any]: ...


class CaptureRecord(Protocol):
    """What a Flow reads of its run's capture (``capture/record.py``'s ``Capture``), asked by
    key: the Flow resolves stage ids. The records it gives (summaries, views, attention maps)
    are capture's; the graph layer passes them on without reading them."""

    @property
    def sample(self) -> int:
        """The batch sample that views and attention maps show."""
        ...

    @property
    def maps(self) -> Mapping[int, Sequence[Any]]:
        """Call index -> the attention maps made in that call (-1: the model's own body)."""
        ...

    @property
    def end_failures(self) -> Mapping[str, str]:
        """Model input / output node -> why its capture failed."""
        ...

    @property
    def grads(self) -> GradientRecord | None:
        """What the backward pass left (a run with ``loss=``), else None."""
        ...

    def captured(self, key: Key) -> Sequence[Any] | None: ...
    def meaning(self, node: str) -> Any: ...
    def readout(self, key: Key, k: int, position: int | None = None) -> Any: ...
    @property
    def read_calls(self) -> tuple[int, ...]:
        """The calls that have a readout."""
        ...

    def view(
        self,
        key: Key,
        items: Sequence[Any],
        kind: str | None,
        *,
        who: str,
        channel: int | None = None,
        leaf: int = 0,
        page: int | None = None,
        channels: Sequence[int] | None = None,
    ) -> Any: ...
    def views(self, key: Key, items: Sequence[Any], leaf: int = 0) -> tuple[str, ...]: ...
    def attention(self, calls: Collection[int]) -> list[Any]: ...
    def attention_origins(self, calls: Collection[int]) -> list[tuple[int, int]]: ...


class Readings:
    """The Flow's methods that read its capture record (the Flow's fields they use are
    declared here for the type checker)."""

    __slots__ = ()

    if TYPE_CHECKING:
        calls: tuple[Stage, ...]
        inputs: tuple[str, ...]
        outputs: tuple[str, ...]
        capture: CaptureRecord | None

        @property
        def edges(self) -> tuple[Edge, ...]: ...
        def stage(self, stage_id: str) -> Stage: ...
        def calls_within(self, stage_id: str) -> frozenset[int]: ...

    # -- capture (filled by trace(capture=True)) ---------------------------------------------

    def key(self, stage_id: str) -> Key:
        """What the capture record is asked with for ``stage_id``: its call index, or the node
        id of a model input or output; ``KeyError`` for an unknown id."""
        if stage_id in self.inputs or stage_id in self.outputs:
            return stage_id
        return self.stage(stage_id).index

    def captured(self, stage_id: str) -> tuple[Key, Sequence[Any]]:
        """The key of ``stage_id`` and the captured leaves of its output; ``ValueError``
        saying why when there are none."""
        capture = self._record()
        key = self.key(stage_id)
        items = capture.captured(key)
        if items is not None:
            return key, items
        if isinstance(key, str):
            why = capture.end_failures.get(key, "it is not a tensor")
            raise ValueError(f"{stage_id!r} has no captured data: {why}")
        stage = self.calls[key]
        why = stage.error or "it returned no tensor"
        raise ValueError(f"stage {stage_id!r} ({stage.type}) has no captured output: {why}")

    def reading(self, stage_id: str) -> Any:
        """What a model input or output means (the picture, the mask, the classes: a
        ``Meaning`` of :mod:`neural_flow_widget.capture.meaning`), or None."""
        if stage_id not in self.inputs and stage_id not in self.outputs:
            return None
        return self._record().meaning(stage_id)

    def summary(self, stage_id: str) -> list[Any]:
        """Summaries of a stage's output, one per tensor leaf (see
        :mod:`neural_flow_widget.capture.summary`)."""
        return [item.summary for item in self.captured(stage_id)[1]]

    def view(
        self,
        stage_id: str,
        kind: str | None = None,
        *,
        channel: int | None = None,
        leaf: int = 0,
        page: int | None = None,
        channels: Sequence[int] | None = None,
    ) -> Any:
        """A rendered view of a stage's output (a channel grid, a token map, values...);
        ``channel`` picks the channel view's channel, ``page`` the page of 16 channels of a
        grid view (or ``channels`` its channels by hand)."""
        key, items = self.captured(stage_id)
        who = f"stage {stage_id!r}"
        return self._record().view(
            key, items, kind, who=who, channel=channel, leaf=leaf, page=page, channels=channels
        )

    def views(self, stage_id: str, leaf: int = 0) -> tuple[str, ...]:
        """The view kinds a stage's output offers, the default first."""
        key, items = self.captured(stage_id)
        return self._record().views(key, items, leaf)

    def attention(self, stage_id: str) -> list[Any]:
        """Attention maps recorded inside a stage call: a list of ``AttentionMap``."""
        return self._record().attention(self._attention_calls(stage_id))

    def attention_origins(self, stage_id: str) -> list[tuple[int, int]]:
        """Where each of :meth:`attention`'s maps was made: (module call, its n-th map)."""
        return self._record().attention_origins(self._attention_calls(stage_id))

    def _attention_calls(self, stage_id: str) -> frozenset[int]:
        if stage_id in self.inputs or stage_id in self.outputs:
            return frozenset()
        return self.calls_within(stage_id)

    def readout(self, stage_id: str, k: int = 5, position: int | None = None) -> Any:
        """The logit lens: a stage's output (the residual stream, or what a sublayer writes
        into it) read through the model's own final norm and unembedding, the top ``k`` next
        tokens and their probabilities at every position, or at ``position`` alone (a
        ``Readout``); for a causal language model's blocks (``trace(readout=...)``)."""
        found = self._record().readout(self.key(stage_id), k, position)
        if found is None:
            raise ValueError(
                f"stage {stage_id!r} has no readout: readouts are kept for the blocks of a model "
                f"with an unembedding (a language model's get_output_embeddings(), or "
                f"trace(readout=(final_norm, unembedding))) whose output is its hidden size"
            )
        return found

    # -- the backward pass (filled by trace(loss=...)) ----------------------------------------

    def grad(self, stage_id: str) -> list[Any]:
        """Summaries of the gradient of the loss with respect to a stage's output (or a model
        input / output), one per tensor leaf, each with its L2 ``norm``."""
        return [item.summary for item in self._grad_items(stage_id)]

    def grad_view(
        self,
        stage_id: str,
        kind: str | None = None,
        *,
        channel: int | None = None,
        leaf: int = 0,
        page: int | None = None,
        channels: Sequence[int] | None = None,
    ) -> Any:
        """A rendered view of the gradient of a stage's output (the views of its output)."""
        items = self._grad_items(stage_id)
        return self._record().view(
            -1,  # (a call's key, never a model end's: a gradient has no reading of its own)
            items,
            kind,
            who=f"the gradient of {stage_id!r}",
            channel=channel,
            leaf=leaf,
            page=page,
            channels=channels,
        )

    def grad_views(self, stage_id: str, leaf: int = 0) -> tuple[str, ...]:
        """The view kinds the gradient of a stage's output offers, the default first."""
        return self._record().views(-1, self._grad_items(stage_id), leaf)

    def param_grads(self, stage_id: str) -> dict[str, Any]:
        """Summaries of the gradients of a stage's parameters (its module's, recursive), by
        qualified name."""
        module = self.stage(stage_id).module
        return self._grads().param_summaries(module + ".")

    @property
    def nonfinite_grad(self) -> tuple[str, ...]:
        """The stages (and model inputs / outputs) whose gradient held NaN or Inf, in the
        backward pass's order: the first is where it entered. Empty without ``loss=``."""
        grads = self.capture.grads if self.capture is not None else None
        if grads is None:
            return ()
        return tuple(self._name(key) for key in grads.nonfinite())

    def gradient_flow(self) -> GradientFlow | None:
        """How the gradient's norm changes along the trunk, and where it vanishes or
        explodes (:mod:`.gradients`); None when fewer than two trunk stages have one."""
        grads = self._grads()
        return gradient_flow(self.edges, self.outputs, lambda node: grads.norm(self.key(node)))

    def _grad_items(self, stage_id: str) -> Sequence[Any]:
        items = self._grads().captured(self.key(stage_id))
        if items is None:
            raise ValueError(
                f"no gradient reached {stage_id!r}: its output does not lead to the loss (or "
                f"was not a floating-point tensor)"
            )
        return items

    def _grads(self) -> GradientRecord:
        grads = self._record().grads
        if grads is None:
            raise ValueError(
                "this flow was traced without loss=: trace with loss=lambda out: ... (a scalar "
                "of the output) to see gradients"
            )
        return grads

    def _name(self, key: Key) -> str:
        return key if isinstance(key, str) else self.calls[key].id

    def _record(self) -> CaptureRecord:
        if self.capture is None:
            raise ValueError(
                "this flow was traced with capture=False; trace again with "
                "capture=True to get summaries, views and attention maps"
            )
        return self.capture
