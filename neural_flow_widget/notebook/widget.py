"""``NeuralFlowWidget``: the notebook shell around a Flow. The only module that imports anywidget.

The graph travels once as the ``graph`` traitlet (no images); a click in the view sends a
request as a custom message, ``{"type": "stage", "request": id, "body": request}``, which
:meth:`NeuralFlowWidget._stage_data` answers from the run's captured reductions:
``{"type": "stage", "request": id, "reply": reply}`` with the reply's binary buffers. Custom
messages are the one channel every anywidget host carries (JupyterLab, Notebook 7, VS Code,
Colab and marimo, which has no ``invoke``).
"""

from __future__ import annotations

import itertools
import pathlib
import warnings
from collections.abc import Callable
from typing import Any

import anywidget
import torch
import traitlets

from .. import wire
from ..capture.attention.maps import AttentionMap
from ..compare import Comparison
from ..compare import compare as compare_runs
from ..graph import Flow, TraceError
from ..run import attention_window, trace
from . import export as _export
from . import replies
from .experiments import Experiments

#: the front end, bundled into the package (``js/`` -> ``static/widget.js``)
BUNDLE = pathlib.Path(__file__).parent.parent / "static" / "widget.js"


def _bundle() -> pathlib.Path:
    if not BUNDLE.is_file():
        raise RuntimeError(
            f"the front-end bundle {BUNDLE} is missing: build it with "
            f"`cd js && npm install && npm run build`, or reinstall the "
            f"package from a wheel or sdist (they carry it)"
        )
    return BUNDLE


class NeuralFlowWidget(Experiments, anywidget.AnyWidget):
    """A live, zoomable flow graph of a model; click a stage to see what flowed through it.

    >>> import torch, neural_flow_widget as nfw
    >>> model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU())
    >>> widget = nfw.NeuralFlowWidget(model, torch.randn(1, 1, 8, 8))
    >>> widget.selected = "0"   # selects the conv in the view; clicks set it too

    ``trace_options`` go to :func:`neural_flow_widget.trace` (``stages``, ``topology``,
    ``kwargs``, ``sample``, ...). ``tokens`` labels the positions of attention maps; by default
    they are the token ids when the first input is an integer tensor, decoded by ``tokenizer``
    (any object with ``convert_ids_to_tokens``, e.g. a Hugging Face tokenizer) when given.
    ``compare=`` compares this run with a run B (see :meth:`compare`): ``compare=inputs_b``
    the same model on other inputs, ``compare=model_b`` another model on the same inputs,
    ``compare=(model_b, inputs_b)`` both. :meth:`update` shows a run on new inputs in place.

    A forward that raises is shown, not raised: the graph of what ran before, the failing
    stage marked, a banner saying where and what; ``widget.error`` keeps the
    :class:`~neural_flow_widget.TraceError` (run A's, else run B's).
    """

    _esm = BUNDLE  # anywidget reads the file (and watches it with ANYWIDGET_HMR=1)
    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    direction = traitlets.Enum(["TB", "LR"], "TB").tag(sync=True)
    height = traitlets.Int(640).tag(sync=True)
    #: run A against run B, stage by stage (:func:`wire.encode_comparison`); None: no comparison
    comparison = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    #: step-by-step playback of the forward pass (:meth:`step`, :meth:`play`): the step shown
    #: (``at``; -1: playback is off), whether it plays, its ``speed`` (1: a step every 1.4 s);
    #: the view adds the ``stage`` it shows and how many ``steps`` the walk has
    playback = traitlets.Dict({"at": -1, "playing": False, "speed": 1.0}).tag(sync=True)
    #: presentation mode (:meth:`present`): the view fills the window, larger type, more contrast
    presenting = traitlets.Bool(False).tag(sync=True)
    #: run B is this run with an intervention (:meth:`intervene`): {"stage": call index,
    #: "spec": in words}; None: run B (if any) is another run
    intervention = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    #: activation patching of this run (:meth:`patch`, :func:`wire.encode_patching`); None
    patching = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)

    def __init__(
        self,
        model: Any = None,
        inputs: Any = (),
        *,
        flow: Flow | None = None,
        tokens: list[str] | None = None,
        tokenizer: Any = None,
        compare: Any = None,
        **trace_options: Any,
    ) -> None:
        #: the TraceErrors of run A's and run B's forwards that raised (see ``error``)
        self._error_a: TraceError | None = None
        self._error_b: TraceError | None = None
        #: the run compared with (see :meth:`compare`), and the comparison
        self.flow_b: Flow | None = None
        self.comparison_result: Comparison | None = None
        self._model, self._options, self._tokenizer = model, trace_options, tokenizer
        self._given_tokens = tokens
        self._compare_with: tuple[Any, Any, float] | None = None  # compare()'s arguments
        if flow is None:
            if model is None:
                raise TypeError(
                    "NeuralFlowWidget(model, inputs) or NeuralFlowWidget.from_flow(flow)"
                )
            flow, self._error_a = self._trace(model, inputs)
        self.flow = flow
        self._inputs = inputs  # (run A's: a zoom into attention may run them again)
        self.tokens = self._labels(inputs) if tokens is None and model is not None else tokens
        self._exports: dict[int, pathlib.Path] = {}
        self._requests = itertools.count(1)
        _bundle()  # (a clear error before anywidget would send the path as the module)
        super().__init__(graph=wire.encode_graph(flow, self._names()))
        self.on_msg(self._on_message)
        if compare is not None:
            self._compare(compare, None, 1e-3, stacklevel=4)

    @property
    def error(self) -> TraceError | None:
        """The TraceError of a forward that raised, shown in the view as a failure (the graph
        of what ran before it): run A's, else run B's (a comparison whose run B raised; its
        message starts with "run B"); None when both ran to the end."""
        return self._error_a or self._error_b

    def _trace(
        self, model: Any, inputs: Any, *, run: str = "", stacklevel: int = 3, replace: Any = None
    ) -> tuple[Flow, TraceError | None]:
        options = {**self._options, "replace": replace} if replace else self._options
        try:
            return trace(model, inputs, **options), None
        except TraceError as error:  # shown, not raised: the partial graph says where
            if run:
                error = _of_run(error, run)
            warnings.warn(
                f"{error} The widget shows it; the error is in widget.error.",
                stacklevel=stacklevel + 1,
            )
            return error.partial, error

    def _labels(self, inputs: Any) -> list[str] | None:
        """Position labels: the given tokens, else the token ids of the first input (named by
        the tokenizer when there is one)."""
        if self._given_tokens is not None:
            return self._given_tokens
        ids = _export.token_labels(inputs, self.flow)
        if ids is None or self._tokenizer is None:
            return ids
        return [str(t) for t in self._vocab([int(i) for i in ids])]

    def _names(self) -> Callable[[list[int]], list[str]] | None:
        return self._vocab if self._tokenizer is not None else None

    def _vocab(self, ids: list[int]) -> list[str]:
        return [str(t) for t in self._tokenizer.convert_ids_to_tokens(ids)]

    def update(self, inputs: Any, *, model: Any = None) -> None:
        """Trace again with new ``inputs`` (and ``model``, if given) and show the new run in
        place: the view keeps its open groups, its selection and its zoom. A comparison is made
        again against the same run B."""
        model = model if model is not None else self._model
        if model is None:
            raise TypeError("this widget was made from a Flow: pass model= to update it")
        self._model = model
        flow, self._error_a = self._trace(model, inputs)
        self.flow, self._inputs = flow, inputs
        self.tokens = self._labels(inputs)
        if self.selected is not None and self.selected not in {c.id for c in flow.calls}:
            self.selected = None
        self.graph = dict(wire.encode_graph(flow, self._names()))
        if self._compare_with is not None:
            self._compare(*self._compare_with, stacklevel=3)

    def compare(self, run_b: Any, *, model: Any = None, rtol: float = 1e-3) -> Comparison:
        """Trace a run B and compare this run with it stage by stage
        (:func:`neural_flow_widget.compare`): the view colours the graph by divergence (the
        stages equal within ``rtol`` in a pale "same"), flags the first divergent stage, and
        a stage's inspector shows A, B and A - B. Returns the :class:`Comparison`.

        ``run_b`` is inputs (this model on them; ``model=`` another model of the same
        structure), another ``nn.Module`` (it runs on this run's inputs) or a tuple
        ``(model_b, inputs_b)``; a tuple of tensors is inputs, as in :func:`trace`:

        >>> import copy, torch, neural_flow_widget as nfw
        >>> _ = torch.manual_seed(0)
        >>> nn = torch.nn
        >>> model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
        >>> x = torch.randn(3, 4)
        >>> widget = nfw.NeuralFlowWidget(model, x)
        >>> tuned = copy.deepcopy(model)
        >>> _ = tuned[2].bias.data.add_(0.5)
        >>> widget.compare(tuned).first_divergent().id  # two models, the same inputs
        '2'
        >>> widget.compare(x + 1).first_divergent().id  # the same model, other inputs
        '0'
        >>> widget.compare((tuned, x)).first_divergent().id  # both given
        '2'

        A run B whose forward raises is shown as a failure ("run B failed at <stage>: ..."),
        never as agreement; its partial graph answers the inspector, ``widget.error`` keeps
        its TraceError, and the stage that raised is the first divergent one:

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     widget.compare(torch.randn(3, 5)).first_divergent().id
        '0'
        >>> str(widget.error)[:52]
        "run B: stage '0' (module Linear) raised RuntimeError"
        """
        return self._compare(run_b, model, rtol, stacklevel=3)

    def _compare(
        self, run_b: Any, model: Any, rtol: float, *, stacklevel: int, replace: Any = None
    ) -> Comparison:
        model_b, inputs_b = _run_b(run_b, model, self._model, self._inputs)
        flow_b, self._error_b = self._trace(
            model_b, inputs_b, run="B", stacklevel=stacklevel, replace=replace
        )
        self.flow_b, self._compare_with = flow_b, (run_b, model, rtol)
        self.set_trait("intervention", None)
        self.comparison_result = compare_runs(self.flow, flow_b)
        self.comparison = dict(wire.encode_comparison(self.comparison_result, self.flow, rtol))
        return self.comparison_result

    def end_comparison(self) -> None:
        """Drop run B (a comparison, an intervention): the view shows this run alone again.
        The view's "End comparison" button does the same."""
        self.flow_b = self.comparison_result = self._compare_with = self._error_b = None
        self.set_trait("intervention", None)
        self.set_trait("comparison", None)

    def step(self, n: int = 1) -> None:
        """Playback, one step on (``n`` steps; negative: back), paused: the view walks the
        stages in execution order, opening the groups it passes through, and shows the
        stage's data. The first call starts at the model's input."""
        at = int(self.playback.get("at", -1))
        at = max(0, at + n) if at >= 0 else max(0, n - 1)
        steps = self.playback.get("steps")
        if isinstance(steps, int) and steps > 0:
            at = min(at, steps - 1)
        self.playback = {**self.playback, "at": at, "playing": False}

    def play(self, speed: float | None = None) -> None:
        """Play the forward pass step by step (from the step shown, else from the input);
        ``speed`` 2 is twice as fast."""
        if speed is not None and speed <= 0:
            raise ValueError(f"speed={speed!r}: use a positive number (1 is a step every 1.4 s)")
        change = {"playing": True} if speed is None else {"playing": True, "speed": float(speed)}
        self.playback = {**self.playback, **change}

    def pause(self) -> None:
        """Pause playback on the step shown."""
        self.playback = {**self.playback, "playing": False}

    def stop(self) -> None:
        """End playback: the view as it was before it began."""
        self.playback = {**self.playback, "at": -1, "playing": False}

    def present(self, on: bool = True) -> None:
        """Presentation mode for a lecture hall: the view fills the browser window, its type
        is larger (names at 1.5 times their size at 1:1, 21 px; the graph is framed for that),
        its colours have more contrast, the inspector beside the graph; ``?`` shows the keys,
        Esc ends it. The view's Present button does the same and can also take the whole
        screen (browsers allow that only from a click)."""
        self.presenting = bool(on)

    @classmethod
    def from_flow(cls, flow: Flow, *, tokens: list[str] | None = None) -> NeuralFlowWidget:
        """A widget for a Flow you traced already."""
        return cls(flow=flow, tokens=tokens)

    def on_select(self, callback: Callable[[str | None], Any]) -> Callable[[], None]:
        """Call ``callback(stage_id)`` whenever the selection changes; returns an unsubscribe."""

        def handler(change: dict) -> None:
            callback(change["new"])

        self.observe(handler, names="selected")
        return lambda: self.unobserve(handler, names="selected")

    @traitlets.validate("selected")
    def _valid_selected(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value in (None, ""):
            return None
        if value in self.flow.inputs or value in self.flow.outputs:  # they open like stages
            return value
        try:
            self.flow.stage(value)
        except KeyError as error:
            raise traitlets.TraitError(error.args[0]) from None
        return value

    def _stage_data(self, msg: Any, buffers: list) -> tuple[wire.Reply, list[bytes]]:
        """The reply to a view's stage request ``msg`` (``wire.StageRequest``) and its buffers;
        a bad request gets an error reply, never an exception."""
        vocab = self._vocab if self._tokenizer is not None else None
        return replies.answer(self.flow, self.flow_b, msg, self.tokens, vocab, self._refine)

    def _refine(
        self, stage: str, index: int, window: tuple[int, int, int, int]
    ) -> AttentionMap | str:
        """Attention map ``index`` of ``stage`` over ``window`` at full resolution, the model
        run again on run A's inputs (a zoom beyond the block means the run kept)."""
        if self._model is None:
            return "this widget was made from a Flow: there is no model to run again"
        options = {k: v for k, v in self._options.items() if k in ("kwargs", "sample")}
        return attention_window(
            self._model, self._inputs, self.flow, stage, index, window, **options
        )

    def to_html(
        self, path: str | pathlib.Path, *, budget_bytes: int = 8_000_000, title: str | None = None
    ) -> pathlib.Path:
        """Write a self-contained, offline HTML page of this graph, with each stage's default
        view baked in (within ``budget_bytes`` in all). With a comparison (:meth:`compare`)
        the page carries it too: the divergence colouring, and run B's view and A - B of as
        many stages as the budget allows (half of it goes to run A), named by its intervention;
        with activation patching (:meth:`patch`), the patched stages' colours and heat map."""
        return _export.write_html(
            self.flow,
            path,
            bundle=_bundle().read_text(encoding="utf-8"),
            tokens=self.tokens,
            vocab=self._vocab if self._tokenizer is not None else None,
            budget_bytes=budget_bytes,
            title=title,
            flow_b=self.flow_b if self.comparison is not None else None,
            comparison=self.comparison,
            intervention=self.intervention,
            patching=self.patching,
        )

    def save_svg(self, path: str | pathlib.Path) -> None:
        """Ask the view for an SVG of what it shows; written when the view replies (after the
        cell has run)."""
        self._request_export(path, "svg")

    def save_png(self, path: str | pathlib.Path) -> None:
        """Ask the view for a PNG of what it shows; written when the view replies."""
        self._request_export(path, "png")

    def _request_export(self, path: str | pathlib.Path, fmt: str) -> None:
        request = next(self._requests)
        self._exports[request] = pathlib.Path(path)
        self.send({"type": "export", "format": fmt, "request": request})

    def _stage_message(self, content: dict) -> tuple[dict[str, Any], list[bytes]]:
        """The answer to a view's ``{"type": "stage", "request": id, "body": request}``."""
        reply, buffers = self._stage_data(content.get("body"), [])
        return {"type": "stage", "request": content.get("request"), "reply": reply}, buffers

    def _on_message(self, _widget: Any, content: Any, buffers: list) -> None:
        if isinstance(content, dict) and content.get("type") == "stage":
            self.send(*self._stage_message(content))
            return
        if isinstance(content, dict) and self._experiment_message(content):
            return
        if not isinstance(content, dict) or content.get("type") != "export":
            return
        request = content.get("request")
        path = self._exports.pop(request, None) if isinstance(request, int) else None
        if path is None:
            return
        if content.get("ok") is False:
            warnings.warn(
                f"the view could not export {path.name}: {content.get('error')}", stacklevel=2
            )
            return
        if buffers:
            path.write_bytes(bytes(buffers[0]))
        elif isinstance(content.get("data"), str):
            path.write_text(content["data"], encoding="utf-8")


def _run_b(run_b: Any, model: Any, model_a: Any, inputs_a: Any) -> tuple[Any, Any]:
    """What :meth:`NeuralFlowWidget.compare` runs as run B: (model, inputs)."""
    pair = isinstance(run_b, tuple) and bool(run_b) and isinstance(run_b[0], torch.nn.Module)
    if pair and len(run_b) != 2:
        raise TypeError(
            f"compare=(model_b, inputs_b): got a tuple of {len(run_b)} items starting with a "
            f"module; pass several inputs as one tuple, (model_b, (x, mask))"
        )
    if (pair or isinstance(run_b, torch.nn.Module)) and model is not None:
        raise TypeError(
            "compare() got run B's model twice (a module and model=): pass "
            "compare(model_b), compare((model_b, inputs_b)) or compare(inputs_b, model=model_b)"
        )
    if isinstance(run_b, torch.nn.Module):
        if model_a is None:
            raise TypeError(
                "this widget was made from a Flow: it has no inputs to run model_b on; "
                "pass compare=(model_b, inputs_b)"
            )
        return run_b, inputs_a
    if pair:
        return run_b[0], run_b[1]
    model_b = model if model is not None else model_a
    if model_b is None:
        raise TypeError(
            "this widget was made from a Flow: pass compare(inputs_b, model=model_b) or "
            "compare((model_b, inputs_b))"
        )
    return model_b, run_b


def _of_run(error: TraceError, run: str) -> TraceError:
    """``error`` as run ``run``'s (its message says which run raised)."""
    named = TraceError(
        f"run {run}: {error}", partial=error.partial, stage=error.stage, module=error.module
    )
    named.__cause__ = error
    return named
