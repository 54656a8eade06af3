"""Where the first NaN / Inf was made (``tracing/origin.py``, ``flow.nonfinite_origin``): made
between stages in a parent's forward, it is named by the op's line of code, the forward that ran
it and the stages around it; made inside a stage, that stage keeps the blame. The diagnosis runs
the model again, only for a run with NaN / Inf, and leaves the model as it found it."""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch
from torch import nn

import neural_flow_widget as nfw
from neural_flow_widget import wire
from neural_flow_widget.graph import NonfiniteOrigin
from neural_flow_widget.tracing import origin as origin_module


class ConvNet(nn.Module):
    """``x / (x - x)`` in its own forward, between ``block3`` and ``block4``: Inf where x > 0,
    NaN where the ReLU made 0. ``block4.0`` is the first stage to return it."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.block3 = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.block4 = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block3(self.stem(x))
        x = x / (x - x)
        x = self.block4(x)
        return self.head(x)


class Log(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)  # NaN where x < 0: this stage makes it


class LogNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.log = Log()
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.log(self.conv(x)))


class Block(nn.Module):
    """Makes +Inf (only: a sigmoid is never 0) between its own children."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)
        self.norm = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.sigmoid(self.conv(x))
        x = x / (x - x)
        return self.norm(x)


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.block = Block()
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.stem(x)))


class Noisy(nn.Module):
    """Draws noise in its forward (eval mode too) that overflows float32 to Inf."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        return self.b(h + torch.randn_like(h) * 1e39)


def line_of(cls: type, text: str) -> int:
    lines, first = inspect.getsourcelines(cls.forward)
    return first + next(i for i, line in enumerate(lines) if text in line)


def seeded(cls: type) -> nn.Module:
    torch.manual_seed(0)
    return cls()


def test_a_nan_made_in_a_parents_forward_is_named_by_its_line_and_the_stages_around_it():
    flow = nfw.trace(seeded(ConvNet), torch.randn(1, 3, 8, 8))
    assert flow.nonfinite[0] == "block4.0"  # the first stage to return it: it only received it
    origin = flow.nonfinite_origin
    assert origin is not None
    line = line_of(ConvNet, "x = x / (x - x)")
    assert (origin.before, origin.after) == ("block3", "block4")
    assert (origin.module, origin.type, origin.function) == ("", "ConvNet", "ConvNet.forward")
    assert (origin.file, origin.line, origin.text) == (__file__, line, "x / (x - x)")
    assert origin.op in ("torch.Tensor.div", "torch.Tensor.__truediv__")
    said = f"produced between block3 and block4, in ConvNet.forward (line {line}: x / (x - x))"
    assert origin.describe() == said
    assert f"first NaN/Inf in the input of block4.0: {said}" in flow.to_text()
    # the same record for another selection of the same run
    assert flow.select(1).nonfinite_origin == origin


def test_a_nan_made_inside_a_stage_still_blames_that_stage():
    flow = nfw.trace(seeded(LogNet), torch.randn(1, 3, 8, 8))
    assert flow.nonfinite[0] == "log" and flow.nonfinite_origin is None
    assert "first NaN/Inf at log" in flow.to_text()
    x = torch.randn(1, 3, 8, 8)
    x[0, 0, 0, 0] = float("nan")  # in the model's input: the first stage reads it
    flow = nfw.trace(seeded(LogNet), x)
    assert flow.nonfinite[0] == "conv" and flow.nonfinite_origin is None


def test_an_inf_made_between_a_blocks_own_children_names_that_blocks_forward():
    flow = nfw.trace(seeded(Nested), torch.randn(1, 3, 4, 4), stages=1)
    assert flow.nonfinite[0] == "block.norm"
    origin = flow.nonfinite_origin
    assert origin is not None
    assert (origin.module, origin.type, origin.function) == ("block", "Block", "Block.forward")
    assert (origin.before, origin.after) == ("block.conv", "block.norm")
    assert origin.line == line_of(Block, "x = x / (x - x)")
    # a selection that shows only the block: the same words
    assert "first NaN/Inf in the input of block.norm: produced between block.conv" in (
        flow.to_text()
    )


def test_the_diagnosis_leaves_the_model_as_it_found_it():
    """Weights, buffers (BatchNorm statistics in train mode: never updated, once or twice),
    training flags, forwards and hooks; the model's own output; the random generators."""
    model = seeded(ConvNet).train()
    x = torch.randn(2, 3, 8, 8)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    flow = nfw.trace(model, x)
    assert flow.nonfinite_origin is not None  # (the diagnosis ran)
    after = model.state_dict()
    assert all(torch.equal(state[k], after[k]) for k in state), "a weight or buffer changed"
    assert model.block3[1].num_batches_tracked.item() == 0
    assert [m.training for m in model.modules()] == flags
    for m in model.modules():
        assert "forward" not in m.__dict__, f"{type(m).__name__}'s forward is still wrapped"
        assert not (m._forward_hooks or m._forward_pre_hooks), "a hook was left behind"
    assert torch._C._len_torch_function_stack() == 0  # no mode left
    model.eval()
    with torch.no_grad():
        again = model(x)
    assert torch.equal(torch.isnan(again), torch.isnan(model(x).detach()))


def test_a_nan_from_random_draws_is_found_and_the_generators_are_as_after_one_forward():
    model = seeded(Noisy)
    x = torch.randn(2, 4)
    torch.manual_seed(7)
    with torch.no_grad():
        model.eval()(x)
    want = torch.rand(3)
    torch.manual_seed(7)
    flow = nfw.trace(model, x)
    assert torch.equal(torch.rand(3), want)  # the same draws a plain forward leaves
    assert flow.nonfinite[0] == "b"
    origin = flow.nonfinite_origin
    assert origin is not None and (origin.before, origin.after) == ("a", "b")
    assert origin.text == "torch.randn_like(h) * 1e39"


def test_a_run_without_nan_runs_no_diagnosis(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the model ran a second time")

    monkeypatch.setattr("neural_flow_widget.run.find_origin", fail)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 1))
    flow = nfw.trace(model, torch.randn(1, 3, 8, 8))
    assert flow.nonfinite == () and flow.nonfinite_origin is None


def test_the_origin_is_on_the_wire_with_call_indices_and_no_folders():
    flow = nfw.trace(seeded(ConvNet), torch.randn(1, 3, 8, 8))
    graph = wire.encode_graph(flow)
    index = {c.id: c.index for c in flow.calls}
    got = graph["nonfinite_origin"]
    assert got is not None
    assert (got["before"], got["after"]) == (index["block3"], index["block4"])
    assert got["file"] == "test_origin.py" and got["function"] == "ConvNet.forward"
    assert got["text"] == "x / (x - x)" and got["line"] == flow.nonfinite_origin.line
    assert (
        wire.encode_graph(nfw.trace(seeded(LogNet), torch.randn(1, 3, 8, 8)))["nonfinite_origin"]
        is None
    )


def test_the_words_say_what_is_known():
    known = dict(op="torch.log", module="enc", type="Encoder", file="m.py", before=None)
    o = NonfiniteOrigin(function="helper", line=0, text="", after="enc.out", **known)
    said = "produced by torch.log before enc.out, in helper, run by enc (Encoder)'s forward"
    assert o.describe() == said
    o = NonfiniteOrigin(function="Encoder.forward", line=3, text="", after=None, **known)
    assert o.describe() == "produced by torch.log, in Encoder.forward (line 3)"


def test_without_co_qualname_the_class_comes_from_the_module_that_ran_it():
    """Python 3.10 has no ``co_qualname``: the class of the module whose forward ran the op
    that defines the function's code."""

    class Code:  # a code object as Python 3.10 has it: no co_qualname
        co_name = "forward"

    code = Code()

    class Base(nn.Module):
        forward = type("F", (), {"__code__": code})()

    class Child(Base):
        pass

    assert origin_module._function(code, Child()) == "Base.forward"  # where it is defined
    assert origin_module._function(Code(), Child()) == "forward"  # not a method of it


def test_a_nan_page_leaks_no_numpy_warning(tmp_path):
    """The NaN model's page, every baked view included, with warnings as errors; and the
    readings of a mask and of class probabilities that hold NaN."""
    pytest.importorskip("anywidget")
    from neural_flow_widget.capture.meaning import read_output
    from neural_flow_widget.capture.readings import meaning_view

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        widget = nfw.NeuralFlowWidget(seeded(ConvNet), torch.randn(1, 3, 8, 8))
        widget.to_html(tmp_path / "nan.html")
        flow = widget.flow
        for stage in [*flow.outputs, *(s.id for s in flow.stages)]:
            for kind in flow.views(stage):
                flow.view(stage, kind)
        mask = torch.randn(1, 1, 8, 8)
        mask[0, 0, :2] = float("nan")
        view = meaning_view(read_output(mask, "output:0", 0).result())
        assert view.kind == "mask" and (view.nonfinite == 1).sum() == 16
        logits = torch.tensor([[float("nan"), 1.0, 2.0]])
        view = meaning_view(read_output(logits, "output:0", 0).result())
        assert view.kind == "probabilities" and view.nonfinite is not None


def test_inputs_a_second_run_would_change_are_not_given_again():
    """A cache object that the forward appends to (an HF ``DynamicCache``): no second run."""

    class Cache:
        def __init__(self) -> None:
            self.seen = 0

    class WithCache(ConvNet):
        def forward(self, x: torch.Tensor, cache: Cache) -> torch.Tensor:
            cache.seen += 1
            return super().forward(x)

    cache = Cache()
    flow = nfw.trace(seeded(WithCache), (torch.randn(1, 3, 8, 8), cache))
    assert flow.nonfinite[0] == "block4.0" and flow.nonfinite_origin is None
    assert cache.seen == 1
