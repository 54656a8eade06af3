"""The widget's side of acting on the model from the graph: the view's ``intervene`` message
makes run B (the comparison and intervention traitlets, then ``intervened``), a bad one is
answered with an error, never a traceback, and ``end_comparison`` drops run B."""

from __future__ import annotations

import torch

import neural_flow_widget as nfw


def _widget():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    widget = nfw.NeuralFlowWidget(model, torch.randn(3, 4))
    sent: list = []
    widget.send = lambda content, buffers=None: sent.append(content)  # (no comm here)
    return widget, sent


def test_the_views_intervene_message_makes_run_b_and_says_so():
    widget, sent = _widget()
    widget._on_message(widget, {"type": "intervene", "stage": "1", "spec": "zero"}, [])
    assert sent == [{"type": "intervened", "ok": True}]
    index = {c["id"]: i for i, c in enumerate(widget.graph["calls"])}
    assert widget.intervention == {"stage": index["1"], "spec": "zero"}
    comparison = widget.comparison
    assert comparison is not None and comparison["first"] == index["1"]  # the runs part there
    (row,) = [r for r in comparison["stages"] if r[0] == index["0"]]
    assert row[-1] is False  # the stage before it did not move
    # run B's ReLU output is zero: its relative L2 against A is 1 (the oracle: ||a - 0|| / ||a||)
    (relu,) = [r for r in comparison["stages"] if r[0] == index["1"]]
    assert abs(relu[1] - 1.0) < 1e-6


def test_a_bad_intervention_is_answered_with_its_error():
    widget, sent = _widget()
    widget._on_message(widget, {"type": "intervene", "stage": "1", "spec": "halve"}, [])
    assert sent and sent[0]["ok"] is False and "'halve'" in sent[0]["error"]
    widget._on_message(widget, {"type": "intervene", "stage": "nope", "spec": "zero"}, [])
    assert sent[1]["ok"] is False and "nope" in sent[1]["error"]
    assert widget.comparison is None and widget.intervention is None


def test_end_comparison_drops_run_b():
    widget, _ = _widget()
    widget.intervene("2", "mean")
    assert widget.comparison is not None and widget.flow_b is not None
    widget._on_message(widget, {"type": "end_comparison"}, [])
    assert widget.comparison is None and widget.intervention is None and widget.flow_b is None
    widget.update(torch.randn(3, 4))  # a new run: no comparison comes back
    assert widget.comparison is None
