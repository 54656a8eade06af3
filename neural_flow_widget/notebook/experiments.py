"""What a user asks of the model from the graph (the widget's part): an intervention, shown
as a comparison against the clean run, and activation patching, shown on the graph.

:class:`Experiments` is a base of :class:`~.widget.NeuralFlowWidget`; its methods run the
model through :func:`~neural_flow_widget.trace` (``replace=``) and
:func:`~neural_flow_widget.patch`, and the view reads their results from the ``comparison``,
``intervention`` and ``patching`` traitlets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import wire
from ..compare import Comparison
from ..patching import Patching, patch
from ..tracing.interventions import Heads, heads
from ..tracing.ranks import alone

if TYPE_CHECKING:
    from ..graph import Flow

__all__ = ["Experiments", "spec_of_message"]


class Experiments:
    """The widget's interventions and patching (see the module docstring)."""

    if TYPE_CHECKING:
        flow: Flow
        _model: Any
        _inputs: Any
        intervention: dict[str, Any] | None
        patching: dict[str, Any] | None

        def _compare(
            self, run_b: Any, model: Any, rtol: float, *, stacklevel: int, replace: Any = None
        ) -> Comparison: ...
        def send(self, content: dict[str, Any], buffers: Any = None) -> None: ...
        def end_comparison(self) -> None: ...

    def _experiment_message(self, content: dict[str, Any]) -> bool:
        """The view's own asks: ``intervene`` (its context menu on a node; answered
        ``intervened``, never on one rank of several) and ``end_comparison`` (its button);
        False for any other message."""
        if content.get("type") == "end_comparison":
            self.end_comparison()
            return True
        if content.get("type") != "intervene":
            return False
        try:
            if (why := alone()) is not None:
                raise RuntimeError(why)
            self.intervene(str(content.get("stage")), spec_of_message(content.get("spec")))
            self.send({"type": "intervened", "ok": True})
        except Exception as error:  # said in the view, never a kernel traceback
            self.send({"type": "intervened", "ok": False, "error": f"{error}"})
        return True

    def intervene(self, stage_id: str, spec: Any = "zero", *, rtol: float = 1e-3) -> Comparison:
        """Run the model again on the same inputs with ``stage_id``'s output replaced
        (``"zero"``, ``"mean"``, a tensor, a function ``out -> out``, ``nfw.heads(zero=[2,
        5])``: see ``trace(replace=...)``) and show that run as run B: the stages downstream
        coloured by how far they moved, the inspector's A | B | A - B, the output node what
        changed (the predicted mask, the class probabilities, the next token). Returns the
        :class:`~neural_flow_widget.Comparison`; the view's context menu on a node does the
        same."""
        if self._model is None:
            raise TypeError("this widget was made from a Flow: there is no model to run again")
        self.flow.stage(stage_id)  # (an unknown stage fails here, by name)
        comparison = self._compare(self._inputs, None, rtol, stacklevel=3, replace={stage_id: spec})
        self.intervention = {"stage": self.flow.stage(stage_id).index, "spec": _words(spec)}
        return comparison

    def patch(
        self,
        corrupted: Any,
        metric: Callable[[Any], Any],
        stages: Sequence[str] | None = None,
        *,
        positions: bool | None = None,
    ) -> Patching:
        """Activation patching (:func:`neural_flow_widget.patch`) of this run (the clean one)
        against ``corrupted`` inputs: each of ``stages`` (default: the blocks of a language
        model's residual stream, else the model's children) restored from this run, and
        ``metric(output)`` measured; the view colours those stages by how much of the gap
        each closes and shows the stage x position heat map in the inspector."""
        if self._model is None:
            raise TypeError("this widget was made from a Flow: there is no model to run again")
        chosen = list(stages) if stages is not None else _default_stages(self.flow)
        found = patch(self._model, self._inputs, corrupted, chosen, metric, positions=positions)
        self.patching = dict(wire.encode_patching(found, self.flow))
        return found


def _default_stages(flow: Flow) -> list[str]:
    calls = flow.capture.read_calls if flow.capture is not None else ()
    if calls:
        return [flow.calls[c].id for c in calls if flow.calls[c].parent is not None]
    return [s.id for s in flow.select(1).stages if len(s.shapes) == 1]


def spec_of_message(given: Any) -> Any:
    """A ``replace=`` spec from the view's context menu: "zero", "mean", {"heads": [2, 5]}."""
    if given in ("zero", "mean"):
        return given
    if isinstance(given, dict) and isinstance(given.get("heads"), list):
        return heads(zero=given["heads"])
    raise ValueError(f"intervention {given!r}: expected 'zero', 'mean' or {{'heads': [...]}}")


def _words(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Heads):
        return f"heads {', '.join(map(str, spec.zero))} off"
    return getattr(spec, "__name__", type(spec).__name__)
