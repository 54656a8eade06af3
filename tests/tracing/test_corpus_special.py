"""The corpus, special cases: recurrent cells in a loop, message passing with ``index_add_``,
a TorchScript submodule, a pre-activation residual stack, ``torch.compile``,
``nn.DataParallel``, tensor-subclass parameters, and dataclass / NamedTuple outputs. The
expected edges are derived by hand from each model's code and the rules of
``neural_flow_widget/graph/edges.py`` (see ``test_corpus_transformers.py`` for a summary)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import pytest
import torch
import torch.nn.functional as F
from corpus import edge_list, seeded
from torch import nn
from torch.utils._pytree import tree_map

import neural_flow_widget as nfw

# -- recurrent cells called T times ------------------------------------------------------------

T = 4


class CellLoop(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.cell = nn.GRUCell(3, 8) if kind == "gru" else nn.LSTMCell(3, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):  # x: (time, batch, features)
        state = None  # the cell makes its own zeros: no source
        for t in range(x.shape[0]):
            state = self.cell(x[t], state)
        h = state if self.kind == "gru" else state[0]
        return self.head(h)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_a_cell_in_a_loop_reads_its_previous_state_and_the_input_slice(kind):
    """``cell#t`` is called ``cell(x[t], state)``. It continues the state ``cell#t-1``
    returned (the same module, the shapes it returns), so that is its trunk, though ``x[t]``
    comes first (for the LSTM the tuple ``(h, c)``, both from ``cell#t-1``) -> flow;
    the input is an ancestor of ``cell#t-1`` (``cell#0`` read it) -> skip. ``cell#0`` gets
    ``state=None``: the input only. ``head`` reads ``cell#T-1``'s ``h``."""
    model = seeded(lambda: CellLoop(kind))
    x = torch.randn(T, 2, 3)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x)
    cells = [f"cell#{t}" for t in range(T)]
    assert [s.id for s in flow.stages] == [*cells, "head"]
    expected = [("input:0", "cell#0", "flow")]
    for t in range(1, T):
        expected += [("input:0", cells[t], "skip"), (cells[t - 1], cells[t], "flow")]
    expected += [(cells[-1], "head", "flow"), ("head", "output:0", "flow")]
    assert edge_list(flow) == sorted(expected)
    shapes = ((2, 8),) if kind == "gru" else ((2, 8), (2, 8))
    assert all(flow.stage(c).shapes == shapes for c in cells)
    with torch.no_grad():
        assert torch.equal(model(x), before)


# -- message passing with index_add_ -----------------------------------------------------------


class MessagePassing(nn.Module):
    """One GNN layer, PyG style: messages along the edges, summed at their targets."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.message = nn.Linear(3, 8), nn.Linear(8, 8)
        self.update, self.readout = nn.Linear(16, 8), nn.Linear(8, 1)

    def forward(self, x, edge_index):
        h = self.embed(x)
        src, dst = edge_index  # (iterating a tensor: unbind)
        m = self.message(h[src])
        agg = torch.zeros_like(h).index_add_(0, dst, m)
        return self.readout(self.update(torch.cat([h, agg], -1)))


def test_message_passing_with_index_add():
    """``message(h[src])``: the embeddings (1 ancestor) -> flow, the edge index -> merge.
    ``update(cat(h, zeros_like(h).index_add_(0, dst, m)))``: the in-place sum brings the
    messages (3 ancestors) -> flow; the embeddings lie on its primary path (message <- embed)
    -> skip; the edge index (``dst``) does not -> merge."""
    model = seeded(MessagePassing)
    x = torch.randn(5, 3)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 0, 2]])
    with torch.no_grad():
        before = model(x, edge_index)
    flow = nfw.trace(model, (x, edge_index))
    assert edge_list(flow) == sorted(
        [
            ("input:0", "embed", "flow"),
            ("embed", "message", "flow"),
            ("input:1", "message", "merge"),
            ("message", "update", "flow"),
            ("embed", "update", "skip"),
            ("input:1", "update", "merge"),
            ("update", "readout", "flow"),
            ("readout", "output:0", "flow"),
        ]
    )
    with torch.no_grad():
        assert torch.equal(model(x, edge_index), before)


# -- a TorchScript submodule inside a residual block ------------------------------------------


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.lin(x))


class ScriptedResidual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(4, 8)
        self.inner = torch.jit.script(Inner())
        self.post, self.head = nn.Linear(8, 8), nn.Linear(8, 2)

    def forward(self, x):
        h = self.pre(x)
        return self.head(self.post(h + self.inner(h)))


def test_a_torchscript_submodule_is_one_op_of_its_call():
    """``inner``'s ops run in TorchScript, outside the mode: its output is one op of the call,
    made from what it was given. ``inner.lin`` never runs as a Python call, so ``inner`` is a
    leaf stage. ``post`` reads ``h + inner(h)``: ``inner`` (2 ancestors) -> flow, ``pre`` ->
    skip: the next stage is wired to the scripted call, not to its input."""
    model = seeded(ScriptedResidual)
    x = torch.randn(2, 4)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(model, x)
    assert [s.id for s in flow.stages] == ["pre", "inner", "post", "head"]
    assert edge_list(flow) == sorted(
        [
            ("input:0", "pre", "flow"),
            ("pre", "inner", "flow"),
            ("inner", "post", "flow"),
            ("pre", "post", "skip"),
            ("post", "head", "flow"),
            ("head", "output:0", "flow"),
        ]
    )
    assert flow.stage("inner").shapes == ((2, 8),)
    with torch.no_grad():
        assert torch.equal(model(x), before)


@pytest.mark.parametrize("how", ["script", "trace"])
def test_a_whole_torchscript_model_is_one_step_from_its_inputs_with_a_note(how):
    """A model that is itself TorchScript runs every op out of the mode and no Python module
    call: no stages, and its outputs come from all its inputs (two here) -> both flow-joined
    into the output, the first argument as the trunk; a note says why and what to do."""
    eager = seeded(ScriptedResidual)

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = eager

        def forward(self, x, y):
            return self.body(x) + self.body(y)

    two = Two().eval()
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    model = torch.jit.script(two) if how == "script" else torch.jit.trace(two, (x, y))
    with torch.no_grad():
        before = model(x, y)
    flow = nfw.trace(model, (x, y))
    assert flow.stages == ()
    assert edge_list(flow) == [("input:0", "output:0", "flow"), ("input:1", "output:0", "merge")]
    assert any("TorchScript" in note and "trace the nn.Module" in note for note in flow.notes)
    with torch.no_grad():
        assert torch.equal(model(x, y), before)


# -- a pre-activation residual stack (HiFi-GAN's ResBlock pattern) -----------------------------


class ResStack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Conv1d(1, 8, 7, padding=3)
        self.res1 = nn.Conv1d(8, 8, 3, padding=1)
        self.res2 = nn.Conv1d(8, 8, 3, padding=1)
        self.post = nn.Conv1d(8, 1, 7, padding=3)

    def forward(self, x):
        pre = self.pre(x)
        h1 = pre + self.res1(F.leaky_relu(pre, 0.1))
        h2 = h1 + self.res2(F.leaky_relu(h1, 0.1))
        return torch.tanh(self.post(F.leaky_relu(h2, 0.1)))


RES_STACK = sorted(
    [
        ("input:0", "pre", "flow"),
        ("pre", "res1", "flow"),
        ("res1", "res2", "flow"),
        ("pre", "res2", "skip"),  # h1 = pre + res1(...)
        ("res2", "post", "flow"),
        ("res1", "post", "skip"),  # h2 = h1 + res2(...): both terms of h1 are read through it
        ("pre", "post", "skip"),
        ("post", "output:0", "flow"),
    ]
)


def prefixed(edges, prefix):
    def name(n):
        return n if n.startswith(("input:", "output:")) else prefix + n

    return sorted((name(a), name(b), k) for a, b, k in edges)


def test_a_pre_activation_residual_stack():
    """``post(leaky(h2))`` with ``h2 = h1 + res2(leaky(h1))``, ``h1 = pre + res1(leaky(pre))``:
    res2 -> flow, res1 and pre -> skips (no relay: no stage reads ``h1`` or ``h2`` itself)."""
    model = seeded(ResStack)
    x = torch.randn(2, 1, 32)
    with torch.no_grad():
        before = model(x)
    assert edge_list(nfw.trace(model, x)) == RES_STACK
    with torch.no_grad():
        assert torch.equal(model(x), before)


# -- wrappers: torch.compile, nn.DataParallel ------------------------------------------------


def test_a_compiled_module_is_traced_as_the_original():
    model = seeded(ResStack)
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(2, 1, 32)
    with torch.no_grad():
        before = model(x)
    flow = nfw.trace(compiled, x)
    assert [s.id for s in flow.stages] == ["pre", "res1", "res2", "post"]
    assert edge_list(flow) == RES_STACK
    with torch.no_grad():
        assert torch.equal(model(x), before)
    assert flow.stage("res1").params == 8 * 8 * 3 + 8


def test_data_parallel_on_the_cpu_names_stages_module_dot():
    """Without GPUs ``DataParallel.forward`` calls ``self.module`` directly."""
    model = seeded(ResStack)
    wrapped = nn.DataParallel(model)
    x = torch.randn(2, 1, 32)
    with torch.no_grad():
        before = model(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to execution order
        flow = nfw.trace(wrapped, x)
    assert [s.id for s in flow.stages] == [
        "module.pre",
        "module.res1",
        "module.res2",
        "module.post",
    ]
    assert edge_list(flow) == prefixed(RES_STACK, "module.")
    assert [s.id for s in flow.select(1).stages] == ["module"]
    with torch.no_grad():
        assert torch.equal(wrapped(x), before)


# -- tensor-subclass parameters ---------------------------------------------------------------


class Tagged(torch.Tensor):
    """A plain subclass: ops on it return it (``__torch_function__`` of torch.Tensor)."""


class Wrapped(torch.Tensor):
    """A wrapper subclass: holds an inner tensor, unwraps it for every aten op and wraps the
    results (the pattern of quantized and distributed tensors)."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(
            cls, inner.shape, dtype=inner.dtype, device=inner.device, strides=inner.stride()
        )

    def __init__(self, inner: torch.Tensor) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"Wrapped({self.inner!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.inner if isinstance(t, Wrapped) else t
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t, out)


def with_subclass_weight(kind: str) -> nn.Module:
    model = seeded(ResStack)
    weight = model.res1.weight.detach()
    weight = weight.as_subclass(Tagged) if kind == "as_subclass" else Wrapped(weight.clone())
    model.res1.weight = nn.Parameter(weight, requires_grad=False)
    assert type(model.res1.weight) is (Tagged if kind == "as_subclass" else Wrapped)
    return model


@pytest.mark.parametrize("kind", ["as_subclass", "wrapper"])
def test_a_tensor_subclass_parameter_gives_the_plain_edges(kind):
    """``res1``'s weight is a subclass, so res1's output and everything after it is one too
    (the model's output included); the edges are those of plain tensors."""
    model = with_subclass_weight(kind)
    x = torch.randn(2, 1, 32)
    with torch.no_grad():
        before = model(x)
        plain = seeded(ResStack)(x)
    assert isinstance(before, Tagged if kind == "as_subclass" else Wrapped)
    unwrapped = before.inner if kind == "wrapper" else before.as_subclass(torch.Tensor)
    torch.testing.assert_close(unwrapped, plain)
    flow = nfw.trace(model, x)
    assert edge_list(flow) == RES_STACK
    assert flow.stage("post").shapes == ((2, 1, 32),)
    with torch.no_grad():
        again = model(x)
    assert type(again) is type(before)
    assert torch.equal(
        again.inner if kind == "wrapper" else again.as_subclass(torch.Tensor), unwrapped
    )


# -- dataclass and NamedTuple outputs ---------------------------------------------------------


@dataclasses.dataclass
class Detections:
    logits: torch.Tensor
    boxes: torch.Tensor
    note: str = "two heads"


class Pair(NamedTuple):
    logits: torch.Tensor
    boxes: torch.Tensor


class TwoHeads(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.body, self.cls, self.box = nn.Linear(4, 8), nn.Linear(8, 3), nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.body(x))
        logits, boxes = self.cls(h), self.box(h)
        if self.kind == "dict":
            return {"logits": logits, "boxes": boxes}
        if self.kind == "tuple":
            return logits, boxes
        if self.kind == "namedtuple":
            return Pair(logits, boxes)
        return Detections(logits, boxes)


@pytest.mark.parametrize("kind", ["dict", "tuple", "namedtuple", "dataclass"])
def test_every_tensor_leaf_of_the_output_is_an_output_node(kind):
    """One output node per tensor leaf, by key, field or position (a NamedTuple may be named
    either way); the dataclass's string field is no tensor and gives no node."""
    model = seeded(lambda: TwoHeads(kind))
    flow = nfw.trace(model, torch.randn(2, 4))
    by_position = ("output:0", "output:1")
    by_name = ("output:logits", "output:boxes")
    allowed = {
        "dict": [by_name],
        "tuple": [by_position],
        "namedtuple": [by_position, by_name],
        "dataclass": [by_name],
    }[kind]
    assert flow.outputs in allowed
    first, second = flow.outputs
    assert edge_list(flow) == sorted(
        [
            ("input:0", "body", "flow"),
            ("body", "cls", "flow"),
            ("body", "box", "flow"),
            ("cls", first, "flow"),
            ("box", second, "flow"),
        ]
    )
