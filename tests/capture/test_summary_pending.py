"""A pending summary (made in the call, finished on the host) resolves to exactly what
summarise() gives."""

import dataclasses
import math

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget.capture import summary as _summaries
from neural_flow_widget.capture.host import to_host


def _tensors():
    g = torch.Generator().manual_seed(0)
    yield torch.randn(3, 5, generator=g)  # exact (small)
    yield torch.randn(2, 64, 31, 17, generator=g)  # sampled
    yield torch.relu(torch.randn(1, 40000, generator=g)).half()  # float16, zeros
    yield torch.randn(4, 3000, generator=g).to(torch.bfloat16)
    yield torch.randn(50, 70, generator=g, dtype=torch.float64).t()  # non-contiguous
    yield torch.full((9000,), 2.5)  # constant
    yield torch.tensor([1.0, float("nan"), -float("inf"), 3.0])  # masked path
    yield torch.randn(100, generator=g, dtype=torch.complex64)
    yield torch.randint(-5, 5, (3, 4000), generator=g)  # int: eager
    yield torch.rand(7, 7, generator=g) > 0.5  # bool: eager
    yield torch.empty(0, 3)


def _same(a, b, summed=()):
    """Field by field equal; the fields in ``summed`` (a sum's order may differ) to 1e-6."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in summed:
            assert x == pytest.approx(y, rel=1e-6, abs=1e-7), f.name
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f.name


@pytest.mark.parametrize("t", list(_tensors()), ids=lambda t: f"{t.dtype}{tuple(t.shape)}")
def test_pending_resolves_to_summarise_exactly(t):
    pending = _summaries.summarise_pending(_summaries.read_dense(t))
    eager = _summaries.summarise(t)
    to_host([pending])
    lazy = pending.resolve()
    assert lazy is pending.resolve()  # cached
    _same(lazy, eager)


def test_pending_keeps_a_copy_not_a_view():
    t = torch.randn(40, 50)  # exact: the sample is the whole tensor
    before = _summaries.summarise(t)
    pending = _summaries.summarise_pending(_summaries.read_dense(t))
    t.mul_(3.0).add_(1.0)  # in place, after the hook
    to_host([pending])
    _same(pending.resolve(), before)


def test_flow_summary_matches_summarise():
    seen = {}

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 16)
            self.b = torch.nn.Conv2d(1, 4, 3)

        def forward(self, x):
            y = self.a(x)
            seen["a"] = y.detach().clone()
            z = self.b(y.reshape(2, 1, 4, 4))
            seen["b"] = z.detach().clone()
            return z

    flow = nfw.trace(Net(), torch.randn(2, 8))
    for name in ("a", "b"):
        (got,) = flow.summary(name)
        # the compiled path (capture/accelerator) sums in another order: mean and std to rounding
        _same(got, _summaries.summarise(seen[name]), summed=("mean", "std"))
