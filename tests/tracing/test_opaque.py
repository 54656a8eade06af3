"""Opaque leaves: calls the tracer records as one op, with the same stage edges as followed."""

import pytest
import torch
from torch import nn
from zoo import (
    Attention,
    InPlace,
    Multimodal,
    PreNorm,
    ResNet,
    UNet,
    hooks_left,
    mode_stack,
    seeded,
)

import neural_flow_widget as nfw
from neural_flow_widget.tracing import calls as _calls
from neural_flow_widget.tracing import opaque as _opaque


class Gate(nn.Module):
    """A leaf of several torch calls (as a tanh GELU): opaque once registered."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return torch.tanh(x * self.w) * x + 1.0


@pytest.fixture
def registry(monkeypatch):
    """A scratch registry with Gate in it."""
    monkeypatch.setattr(_opaque, "_CLASSES", set(_opaque._CLASSES))
    monkeypatch.setattr(_opaque, "_UNLESS", dict(_opaque._UNLESS))
    monkeypatch.setattr(_opaque, "_BY_TYPE", {})
    _opaque.register(Gate)


def followed(monkeypatch, model, inputs, **options):
    """The flow with every opaque leaf followed op by op, as without the registry."""
    with monkeypatch.context() as m:
        m.setattr(_calls, "is_opaque", lambda module: False)
        return nfw.trace(model, inputs, **options)


class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(8, 4)
        self.g1, self.g2, self.g3 = Gate(), Gate(), Gate()

    def forward(self, x):
        h = self.g1(self.a(x))
        k = self.g2(self.b(h)) + h  # a skip around b, g2
        return self.c(torch.cat([self.g3(k), h], -1))


def counting(monkeypatch):
    """Counts the calls that ran with the tracer lifted, and names their modules."""
    counts = {"lifted": 0, "names": []}

    def spying(record):
        def spy(self, *args):
            counts["lifted"] += 1
            counts["names"].append(self.names[self.calls[-1].module])
            return record(self, *args)

        return spy

    for name in ("_record_lifted", "_lifted_end"):  # (any output; one tensor)
        monkeypatch.setattr(_calls.CallTracker, name, spying(getattr(_calls.CallTracker, name)))
    return counts


def test_lifted_calls_give_the_edges_of_followed_ones(registry, monkeypatch):
    counts = counting(monkeypatch)
    model, x = seeded(Chain), torch.randn(2, 4)
    flow = nfw.trace(model, x)
    assert sorted(counts["names"]) == ["a", "b", "c", "g1", "g2", "g3"]  # every opaque call
    reference = followed(monkeypatch, model, x)
    assert flow.edges == reference.edges
    for stages in (1, ["a", "g2", "c"]):
        assert flow.select(stages).edges == reference.select(stages).edges
    assert hooks_left(model) == 0 and not mode_stack()


@pytest.mark.parametrize(
    "cls,make",
    [
        (UNet, lambda: torch.randn(1, 1, 16, 16)),
        (ResNet, lambda: torch.randn(1, 3, 8, 8)),
        (Multimodal, lambda: (torch.randn(2, 1, 8, 8), torch.randn(2, 6))),
        (Attention, lambda: torch.randn(2, 5, 6)),
        (InPlace, lambda: torch.randn(2, 4)),
        (PreNorm, lambda: torch.randn(2, 4)),
    ],
    ids=lambda c: getattr(c, "__name__", ""),
)
def test_the_zoo_has_the_same_edges_at_every_depth(monkeypatch, cls, make):
    model, x = seeded(cls), make()
    flow, reference = (
        nfw.trace(model, x, capture=False),
        followed(monkeypatch, model, x, capture=False),
    )
    for stages in (None, 1, 2):
        assert flow.select(stages).edges == reference.select(stages).edges


def test_gpt2_runs_its_conv1d_and_gelu_calls_lifted_with_the_same_edges(monkeypatch):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=3, n_embd=32, n_head=4, vocab_size=64, n_positions=32, attn_implementation="eager"
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 64, (1, 10))
    counts = counting(monkeypatch)
    flow = nfw.trace(model, ids)
    opaque = [n for n, m in model.named_modules() if n and _opaque.is_opaque(m)]
    # each called once and lifted, but the attention dropouts: they carry the softmax that
    # the recorder follows to the matmul with the values (an eager attention's map)
    followed_ = [n for n in opaque if n.endswith("attn.attn_dropout")]
    assert len(followed_) == 3 and sorted(counts["names"]) == sorted(set(opaque) - set(followed_))
    assert {"transformer.h.0.attn.c_attn", "transformer.h.2.mlp.act"} <= set(opaque)
    reference = followed(monkeypatch, model, ids)
    for stages in (None, 1, 2, 3):
        assert flow.select(stages).edges == reference.select(stages).edges
    maps, expected = flow.attention("transformer"), reference.attention("transformer")
    assert len(maps) == 3 and all((a.weights == b.weights).all() for a, b in zip(maps, expected))


def test_what_was_changed_or_writes_into_its_weights_is_followed(registry):
    class Special(Gate):  # a forward of its own: not the registered one
        def forward(self, x):
            return x * 2

    class Same(Gate):  # the registered forward: opaque
        pass

    patched = Gate()
    patched.forward = lambda x: x  # an instance forward: followed
    parent = Gate()
    parent.child = nn.Linear(4, 4)  # a leaf no more
    assert _opaque.is_opaque(Gate()) and _opaque.is_opaque(Same())
    assert not any(_opaque.is_opaque(m) for m in (Special(), patched, parent))
    assert _opaque.is_opaque(nn.ReLU()) and _opaque.is_opaque(nn.ReLU(inplace=True))
    assert _opaque.is_opaque(nn.Embedding(5, 3))
    assert not _opaque.is_opaque(nn.Embedding(5, 3, max_norm=1.0))  # renorms its weight
    assert not _opaque.is_opaque(nn.Softmax(-1))  # (attention maps are softmax outputs)
    with pytest.raises(ValueError, match="registered already"):
        _opaque.register(Gate)


def test_attention_scores_passing_a_leaf_are_followed(registry, monkeypatch):
    class Scaled(nn.Module):  # hand-written attention whose scores pass an opaque leaf
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(4, 12)
            self.warm, self.shape = Gate(), Gate()

        def forward(self, x):
            x = self.warm(x)  # (lifted)
            q, k, v = self.qkv(x).chunk(3, -1)
            scores = self.shape(q @ k.transpose(-2, -1) / 2.0)
            return scores.softmax(-1) @ v

    counts = counting(monkeypatch)
    model, x = seeded(Scaled), torch.randn(1, 4, 4)
    flow = nfw.trace(model, x)
    assert counts["names"] == ["warm", "qkv"]  # the scores are followed through `shape`
    (found,) = [m.resolve() if hasattr(m, "resolve") else m for m in flow.capture.maps[-1]]
    with torch.no_grad():
        h = model.warm(x)
        q, k, _ = model.qkv(h).chunk(3, -1)
        expected = model.shape(q @ k.transpose(-2, -1) / 2.0).softmax(-1)
    torch.testing.assert_close(torch.tensor(found.weights), expected[0][None])


def test_a_mode_the_model_enters_is_never_lifted_off(registry, monkeypatch):
    class InDevice(nn.Module):
        def __init__(self):
            super().__init__()
            self.g1, self.g2 = Gate(), Gate()

        def forward(self, x):
            with torch.device("cpu"):  # a TorchFunctionMode above the tracer
                return self.g2(self.g1(x))

    counts = counting(monkeypatch)
    model, x = seeded(InDevice), torch.randn(2, 4)
    flow = nfw.trace(model, x)
    assert counts["lifted"] == 0 and not mode_stack()
    assert [tuple(e) for e in flow.edges] == [
        ("input:0", "g1", "flow"),
        ("g1", "g2", "flow"),
        ("g2", "output:0", "flow"),
    ]


def test_a_lifted_call_takes_every_tensor_it_was_given_however_nested(monkeypatch):
    class Mix(nn.Module):  # several torch calls over tensors inside a dict argument
        def forward(self, parts):
            return parts["a"] * torch.tanh(parts["b"]) + 1.0

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)
            self.m1, self.m2 = Mix(), Mix()

        def forward(self, x):
            h = self.m1({"a": self.a(x), "b": x})
            return self.m2({"a": h, "b": self.b(x)})

    monkeypatch.setattr(_opaque, "_CLASSES", {*_opaque._CLASSES, Mix})
    monkeypatch.setattr(_opaque, "_BY_TYPE", {})
    counts = counting(monkeypatch)
    model, x = seeded(Model), torch.randn(2, 4)
    flow = nfw.trace(model, x, capture=False)
    assert counts["names"] == ["a", "m1", "b", "m2"]
    assert ("b", "m2", "merge") in [tuple(e) for e in flow.edges]
    reference = followed(monkeypatch, model, x, capture=False)
    for stages in (None, ["a", "b"], ["a", "b", "m1"]):  # walks through m2's op too
        assert flow.select(stages).edges == reference.select(stages).edges
    assert ("b", "output:0", "merge") in [tuple(e) for e in flow.select(["a", "b"]).edges]


def test_an_in_place_leaf_is_lifted_and_its_write_recorded(monkeypatch):
    """nn.ReLU(inplace=True) runs lifted; a view taken before it still depends on it, and a
    later reader of the written tensor reads the relu's output (the same edges as followed)."""

    class Writes(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(2, 4), nn.Linear(4, 4)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            y = self.a(x)
            view = y[:, :2]  # taken before the write
            z = self.relu(y)  # writes into y
            return self.c(z) + self.b(view)

    counts = counting(monkeypatch)
    model, x = seeded(Writes), torch.randn(2, 4)
    flow = nfw.trace(model, x)
    assert "relu" in counts["names"]
    reference = followed(monkeypatch, model, x)
    for stages in (None, ["a", "b", "c"], ["relu", "b"]):
        assert flow.select(stages).edges == reference.select(stages).edges
    assert ("relu", "b", "flow") in [tuple(e) for e in flow.edges]  # the view saw the write
    out = model(x)
    torch.testing.assert_close(nfw.trace(model, x).summary("output:0")[0].mean, out.mean().item())


def test_every_registered_class_is_opaque_whatever_base_defines_its_forward():
    """BatchNorm2d runs _BatchNorm.forward, ZeroPad2d _ConstantPadNd.forward: registering the
    class reaches them; a subclass that overrides forward is followed."""
    made = [nn.BatchNorm2d(3), nn.InstanceNorm2d(3), nn.ZeroPad2d(1), nn.ReflectionPad1d(1)]
    assert all(_opaque.is_opaque(m) for m in made)

    class Own(nn.BatchNorm2d):
        def forward(self, x):
            return x * 2

    class Same(nn.BatchNorm2d):
        pass

    assert not _opaque.is_opaque(Own(3)) and _opaque.is_opaque(Same(3))
