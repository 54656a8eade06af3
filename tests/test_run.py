"""trace(): its guarantees to the user's model and tensors, errors, fallbacks."""

import copy

import pytest
import torch
from zoo import Broken, InPlace, Multimodal, ResNet, UNet, hooks_left, mode_stack, seeded

import neural_flow_widget as nfw
from neural_flow_widget.tracing import dataflow


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize(
    "cls, inputs",
    [
        (UNet, lambda: torch.randn(2, 1, 16, 16)),
        (ResNet, lambda: torch.randn(2, 3, 8, 8)),
        (InPlace, lambda: torch.randn(2, 4)),
        (Multimodal, lambda: (torch.randn(2, 1, 8, 8), torch.randn(2, 6))),
    ],
)
def test_model_output_and_user_tensors_unchanged(cls, inputs):
    model = seeded(cls)
    x = inputs()
    before = copy.deepcopy(x)
    with torch.no_grad():
        expected = model(*x) if isinstance(x, tuple) else model(x)
    weights = state(model)
    flow = nfw.trace(model, x, capture=False)
    assert flow.stages
    with torch.no_grad():
        again = model(*x) if isinstance(x, tuple) else model(x)
    for a, b in zip(
        torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(again)
    ):
        assert torch.equal(a, b)
    for a, b in zip(torch.utils._pytree.tree_leaves(x), torch.utils._pytree.tree_leaves(before)):
        assert torch.equal(a, b) and getattr(a, "__dict__", {}) == {}
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())
    assert hooks_left(model) == 0 and not mode_stack()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_scripted_and_patched_forwards_are_traced_and_put_back():
    # a TorchScript submodule (which refuses hooks) and a module whose forward was replaced
    # on the instance (as accelerate does) are both traced, and left exactly as they were
    scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    model = seeded(
        lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), scripted, torch.nn.Linear(4, 2))
    )
    patched = model[2]
    plain_forward = patched.forward
    patched.forward = lambda x: plain_forward(x) * 2
    own = {id(m): vars(m).get("forward") for m in model.modules()}
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = model(x)
    flow = nfw.trace(model, x)
    assert [s.id for s in flow.stages] == ["0", "1", "2"]
    assert [(e.src, e.dst) for e in flow.edges] == [
        ("input:0", "0"),
        ("0", "1"),
        ("1", "2"),
        ("2", "output:0"),
    ]
    assert flow.summary("2")[0].max == pytest.approx(float(expected.max()))
    assert {id(m): vars(m).get("forward") for m in model.modules()} == own
    assert hooks_left(model) == 0
    with torch.no_grad():
        assert torch.equal(model(x), expected)


def test_train_mode_model_is_traced_in_eval_and_restored():
    model = seeded(ResNet).train()
    model.layer1.train(False)  # mixed flags come back exactly
    flags = [m.training for m in model.modules()]
    bn = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    stats = state(bn)
    nfw.trace(model, torch.randn(2, 3, 8, 8), capture=False)
    nfw.trace(bn, torch.randn(8, 4), capture=False)
    assert [m.training for m in model.modules()] == flags
    assert bn.training and all(torch.equal(stats[k], v) for k, v in bn.state_dict().items())


def test_model_error_names_stage_module_and_carries_partial_graph():
    model = seeded(Broken).train()
    x = torch.randn(3, 4)
    before = x.clone()
    with pytest.raises(nfw.TraceError) as info:
        nfw.trace(model, x, capture=False)
    err = info.value
    message = str(err)
    assert "stage 'bad.0'" in message and "Linear" in message and "err.partial" in message
    assert "[3, 4]" in message  # the shape it received, to fix the input
    assert err.stage == "bad.0" and err.module == "bad.0"
    assert isinstance(err.__cause__, RuntimeError)
    ids = [s.id for s in err.partial.stages]
    assert ids == ["ok", "norm", "bad.0"]
    assert err.partial.stage("bad.0").error.startswith("RuntimeError")
    assert [tuple(e)[:2] for e in err.partial.edges] == [
        ("input:0", "ok"),
        ("ok", "norm"),
        ("norm", "bad.0"),
    ]
    assert hooks_left(model) == 0 and not mode_stack()
    assert model.training and torch.equal(x, before)


def test_error_in_a_parent_body_names_the_enclosing_stage():
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = torch.nn.Sequential(torch.nn.Linear(4, 4))

        def forward(self, x):
            return self.block(x).view(7, -1)

    with pytest.raises(nfw.TraceError, match="model's own forward"):
        nfw.trace(Outer(), torch.randn(2, 4), capture=False)


class _NoStorage(torch.Tensor):
    """A tensor subclass whose storage cannot be read (as with some wrapper subclasses): the
    tracer cannot tell where an in-place op on it writes."""

    def untyped_storage(self):
        raise RuntimeError("this tensor shows no storage")


def test_tracer_failure_falls_back_to_execution_order():
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 4), torch.nn.ReLU(inplace=True), torch.nn.Linear(4, 2)
    )
    x = torch.randn(3, 4).as_subclass(_NoStorage)
    with pytest.warns(UserWarning, match="tracer failed.*shows no storage.*execution order"):
        flow = nfw.trace(model, x, capture=False)
    assert flow.topology == "sequential"
    assert [s.id for s in flow.stages] == ["0", "1", "2"]
    assert len(flow.edges) == len(flow.stages) + 1
    assert hooks_left(model) == 0 and not mode_stack()


def test_forward_that_fails_only_under_the_tracer_is_run_again_without_it(monkeypatch):
    original = dataflow.DataflowTracer.__torch_function__

    def refuse_cat(self, func, types, args=(), kwargs=None):
        if func is torch.cat:
            raise TypeError("this subclass refuses modes")
        return original(self, func, types, args, kwargs)

    monkeypatch.setattr(dataflow.DataflowTracer, "__torch_function__", refuse_cat)
    model = seeded(UNet)
    with pytest.warns(UserWarning, match="ran again"):
        flow = nfw.trace(model, torch.randn(1, 1, 16, 16), stages=1, capture=False)
    assert flow.topology == "sequential" and flow.stages[-1].id == "head"
    assert hooks_left(model) == 0


def test_bad_arguments_get_clear_errors():
    model = seeded(UNet)
    x = torch.randn(1, 1, 16, 16)
    with pytest.raises(ValueError, match="closest: enc1"):
        nfw.trace(model, x, stages=["enc_1"])
    with pytest.raises(ValueError, match="matches no module"):
        nfw.trace(model, x, stages=["dec*.nope"])
    with pytest.raises(ValueError, match="topology"):
        nfw.trace(model, x, topology="magic")
    with pytest.raises(TypeError, match="nn.Module"):
        nfw.trace(lambda t: t, x)
    assert hooks_left(model) == 0


def test_tensors_created_inside_forward_and_parameters_are_handled():
    class Maker(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(4))
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            offset = torch.zeros(4) + torch.arange(4.0)
            return self.lin(x * self.scale + offset)

    flow = nfw.trace(Maker(), torch.randn(2, 4), capture=False)
    assert [tuple(e) for e in flow.edges] == [
        ("input:0", "lin", "flow"),
        ("lin", "output:0", "flow"),
    ]


def test_to_text_shows_stages_shapes_and_skip_marks():
    text = nfw.trace(seeded(UNet), torch.randn(1, 1, 16, 16), stages=1, capture=False).to_text()
    lines = text.splitlines()
    assert lines[0] == "UNet — 10 stages, 13 edges, topology: dataflow"
    dec2 = next(line for line in lines if line.startswith("dec2"))
    assert "1x4x8x8" in dec2 and "up2" in dec2 and "enc2 (skip)" in dec2
    assert dec2.index("up2") < dec2.index("enc2 (skip)")  # the primary input first


def test_lint_catches_broken_graphs():
    from dataclasses import replace

    flow = nfw.trace(seeded(UNet), torch.randn(1, 1, 16, 16), stages=1, capture=False)
    flow.lint()
    bad = replace(
        flow,
        given_edges=(
            *flow.edges,
            nfw.Edge("head", "enc1", "flow"),
            nfw.Edge("ghost", "head", "merge"),
        ),
    )
    with pytest.raises(ValueError) as info:
        bad.lint()
    assert "goes backwards" in str(info.value) and "'ghost' is not a node" in str(info.value)


def test_parameter_counts_match_module_parameters_with_shared_weights():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pair = torch.nn.ModuleDict(
                {"a": torch.nn.Linear(3, 3), "b": torch.nn.Linear(3, 3)}
            )
            self.pair["b"].weight = self.pair["a"].weight  # shared inside one subtree
            self.head = torch.nn.Linear(3, 3)
            self.head.weight = self.pair["a"].weight  # and across subtrees

        def forward(self, x):
            return self.head(self.pair["b"](self.pair["a"](x)))

    model = Tied()
    flow = nfw.trace(model, torch.randn(1, 3), stages=1, capture=False)
    modules = dict(model.named_modules())
    for call in flow.calls:
        assert call.params == sum(p.numel() for p in modules[call.module].parameters())


def test_stage_structure_follows_changes_to_the_model_between_traces():
    """Parameter counts and structure signatures are cached per model: a change to its
    parameters or submodules shows in the next trace."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = torch.randn(1, 4)
    first = nfw.trace(model, x, capture=False)
    assert [s.params for s in first.stages] == [20, 0, 10]
    assert nfw.trace(model, x, capture=False).stages == first.stages  # cached: the same
    model[2].weight = torch.nn.Parameter(torch.randn(2, 4))  # same shape, new object
    model[2].bias = None
    again = nfw.trace(model, x, capture=False)
    assert [s.params for s in again.stages] == [20, 0, 8]
    assert again.stage("2").sig != first.stage("2").sig
    model[0] = torch.nn.Linear(4, 4, bias=False)  # a new submodule
    assert [s.params for s in nfw.trace(model, x, capture=False).stages] == [16, 0, 8]
    model[0].weight = model[2].weight = torch.nn.Parameter(torch.randn(4, 4))  # shared
    model[2].bias = torch.nn.Parameter(torch.randn(4))
    model.append(torch.nn.Linear(4, 2))
    shared = nfw.trace(model, x, capture=False)
    assert [s.params for s in shared.stages] == [16, 0, 20, 10]
    assert sum(s.params for s in shared.stages) > sum(p.numel() for p in model.parameters())


def test_a_forward_that_inspects_its_own_signature_sees_it_while_traced():
    import inspect

    class Introspective(torch.nn.Module):  # (as HF code does to pick the keyword arguments)
        def forward(self, x, scale: float = 2.0):
            assert list(inspect.signature(self.forward).parameters) == ["x", "scale"]
            return x * scale

    model = torch.nn.Sequential(Introspective(), torch.nn.ReLU()).eval()
    x = torch.randn(2, 3)
    flow = nfw.trace(model, x)
    assert [s.id for s in flow.stages] == ["0", "1"] and not any(s.error for s in flow.stages)
    assert hooks_left(model) == 0


class _ScriptedResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1, self.lin2 = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
        self.scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 4)))

    def forward(self, x):
        return self.lin2(self.scripted(self.lin1(x)) + x)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_a_torchscript_submodule_is_one_op_of_its_call_made_from_its_inputs():
    # its ops run in TorchScript, outside the mode: its output comes back untagged. By the
    # code: lin2 reads scripted(..) + x: scripted (deeper) flows in, x (an ancestor) skips
    flow = nfw.trace(seeded(_ScriptedResidual), torch.randn(3, 4), capture=False)
    assert {tuple(e) for e in flow.edges} == {
        ("input:0", "lin1", "flow"),
        ("lin1", "scripted", "flow"),
        ("scripted", "lin2", "flow"),
        ("input:0", "lin2", "skip"),
        ("lin2", "output:0", "flow"),
    }


@pytest.mark.slow
def test_tracing_a_plain_model_does_not_load_dynamo():
    """Only a model with torch.compile'd parts needs dynamo's stance: loading it for every trace
    cost some 75 MiB of the process's memory (the peak-memory benchmark caught it)."""
    import subprocess
    import sys

    code = (
        "import sys, torch, neural_flow_widget as nfw\n"
        "model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())\n"
        "nfw.trace(model, torch.randn(2, 3))\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
