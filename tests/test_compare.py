"""``nfw.compare``: where two runs part. Oracles: a copy of the model with the k-th stage's
weights perturbed diverges first at that stage and not at all before it; identical runs give
zero everywhere; float32 against bfloat16 diverges more with depth; the figures equal numpy's
on the outputs themselves where the outputs are small enough to be compared exactly."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

import neural_flow_widget as nfw


def mlp(depth: int = 6, width: int = 32) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*layers).eval()


@pytest.mark.parametrize("k", [0, 4, 8])
def test_perturbing_stage_k_makes_it_the_first_divergent_and_nothing_before_it_differs(k):
    model = mlp()
    other = copy.deepcopy(model)
    with torch.no_grad():
        other[k].weight.add_(0.05 * torch.randn_like(other[k].weight))
    x = torch.randn(4, 32)
    c = nfw.compare(nfw.trace(model, x), nfw.trace(other, x))
    first = c.first_divergent()
    assert first is not None and first.id == str(k)
    ids = [d.id for d in c.stages]
    assert ids == [str(i) for i in range(12)]  # leaves return in order
    for d in c.stages[: ids.index(str(k))]:
        assert (d.rel_l2, d.max_abs, d.cosine) == (0.0, 0.0, pytest.approx(1.0))
    assert all(d.diverges() for d in c.stages[ids.index(str(k)) :])
    assert c.only_a == c.only_b == ()


def test_identical_runs_give_zero_everywhere_and_the_inputs_match():
    model = mlp()
    x = torch.randn(4, 32)
    c = nfw.compare(nfw.trace(model, x), nfw.trace(model, x))
    assert c.first_divergent() is None
    assert all(d.rel_l2 == 0.0 and d.max_abs == 0.0 for d in (*c.stages, *c.ends))
    assert [d.id for d in c.ends] == ["input:0", "output:0"]


def test_small_outputs_are_compared_exactly_as_numpy_would():
    model = mlp(depth=2, width=16)
    x = torch.randn(3, 16)
    y = x + 0.01 * torch.randn(3, 16)
    c = nfw.compare(nfw.trace(model, x), nfw.trace(model, y))
    with torch.no_grad():
        a = model[:3](x).double().numpy().ravel()
        b = model[:3](y).double().numpy().ravel()
    d = c.stage("2")
    assert d.exact and d.elements == d.numel == 48
    assert d.rel_l2 == pytest.approx(np.linalg.norm(a - b) / np.linalg.norm(a), rel=1e-6)
    assert d.cosine == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), rel=1e-9)
    assert d.max_abs == pytest.approx(np.abs(a - b).max(), rel=1e-6)


def test_big_outputs_are_estimated_from_the_fixed_sample_and_say_so():
    conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(1, 3, 64, 64)
    c = nfw.compare(nfw.trace(conv, x), nfw.trace(conv, x * 1.01))
    d = c.stage("0")
    assert not d.exact and d.elements < d.numel == 16 * 64 * 64
    with torch.no_grad():
        a, b = conv[0](x), conv[0](x * 1.01)
    truth = float((a - b).norm() / a.norm())
    assert d.rel_l2 == pytest.approx(truth, rel=0.1)  # (a linear map: 1 % everywhere)
    assert "of" in c.to_text()


def test_float32_against_bfloat16_of_a_small_transformer_diverges_more_with_depth():
    """GPT-2's residual stream carries every block's rounding on: the relative difference of
    the blocks' outputs grows from the first block to the last."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=8, n_embd=64, n_head=4, vocab_size=100, n_positions=32, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).eval()
    half = copy.deepcopy(model).to(torch.bfloat16)
    ids = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    blocks = ["h.*"]
    c = nfw.compare(nfw.trace(model, ids, stages=blocks), nfw.trace(half, ids, stages=blocks))
    growth = [c.stage(f"h.{i}").rel_l2 for i in range(8)]
    assert all(r > 1e-3 for r in growth)  # bfloat16 keeps 8 bits: every block diverges
    assert growth[-1] > 1.5 * growth[0]
    assert sum(b > a for a, b in itertools.pairwise(growth)) >= 6  # (nearly) monotone
    assert c.first_divergent().id == "wte"  # the embedding rounds first


def test_stages_present_in_one_run_only_are_listed():
    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            return self.b(h) if float(x.sum()) > 0 else self.c(h)

    model = Branchy().eval()
    c = nfw.compare(nfw.trace(model, torch.ones(1, 4)), nfw.trace(model, -torch.ones(1, 4)))
    assert [d.id for d in c.stages] == ["a"]
    assert (c.only_a, c.only_b) == (("b",), ("c",))
    assert "only in run A: b" in c.to_text()


def test_a_shape_change_and_a_nan_are_divergent_and_say_why():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    c = nfw.compare(nfw.trace(model, torch.ones(1, 4)), nfw.trace(model, torch.ones(2, 4)))
    assert c.first_divergent().id == "0" and "shapes differ" in c.stage("0").note
    assert math.isinf(c.stage("0").rel_l2)
    x = torch.ones(1, 4)
    x_nan = x.clone()
    x_nan[0, 0] = float("nan")
    c = nfw.compare(nfw.trace(model, x), nfw.trace(model, x_nan))
    assert c.first_divergent().id == "0" and math.isnan(c.stage("0").rel_l2)


def test_flows_without_capture_are_refused_with_the_fix():
    model = nn.Linear(2, 2)
    flow = nfw.trace(model, torch.ones(1, 2), capture=False)
    with pytest.raises(ValueError, match="capture=True"):
        nfw.compare(flow, flow)


class Boom(nn.Linear):
    """A Linear whose forward raises: run B of a model with it in place of a stage."""

    def forward(self, x):
        raise ValueError("boom: run B cannot go on")


def _failing(model: nn.Sequential, at: int) -> nn.Sequential:
    """A copy of ``model`` whose stage ``at`` raises (ids and weights as before)."""
    other = copy.deepcopy(model)
    boom = Boom(32, 32)
    boom.load_state_dict(other[at].state_dict())
    other[at] = boom
    return other


def _partial(model, x) -> nfw.Flow:
    with pytest.raises(nfw.TraceError) as caught:
        nfw.trace(model, x)
    return caught.value.partial


def test_a_run_b_that_raises_diverges_at_the_stage_that_raised_never_equal():
    model = mlp()
    x = torch.randn(4, 32)
    c = nfw.compare(nfw.trace(model, x), _partial(_failing(model, 4), x))
    first = c.first_divergent()
    assert first is not None and first.id == "4" and first.raised == "b"
    assert "run B raised here: ValueError: boom" in first.note
    assert [d.id for d in c.stages] == ["0", "1", "2", "3", "4"]
    assert all(d.rel_l2 == 0.0 and not d.diverges() for d in c.stages[:4])  # ran equal before
    assert c.stage("4").diverges(rtol=math.inf)  # whatever the tolerance
    assert c.failed and c.failure_a is None and c.failure_b.stage == "4"
    assert c.only_a == tuple(str(i) for i in range(5, 12))
    text = c.to_text()
    assert "4  " in text and "<- first divergent" in text.splitlines()[6]
    assert "run B raised at stage '4': ValueError: boom: run B cannot go on" in text


def test_run_a_raising_counts_the_same_way_and_so_does_both():
    model = mlp()
    x = torch.randn(4, 32)
    broken = _partial(_failing(model, 2), x)
    c = nfw.compare(broken, nfw.trace(model, x))
    assert (c.first_divergent().id, c.first_divergent().raised) == ("2", "a")
    both = nfw.compare(broken, broken)
    assert (both.first_divergent().id, both.first_divergent().raised) == ("2", "both")


def test_the_model_given_as_the_inputs_of_run_b_is_a_failure_not_an_all_clear():
    """The issue's case: ``compare=model_b`` once ran ``model(model_b)``; every stage of run B
    raised, and the comparison said the runs agree everywhere."""
    model, other = mlp(), mlp()
    c = nfw.compare(nfw.trace(model, torch.randn(4, 32)), _partial(model, other))
    assert c.first_divergent() is not None and c.first_divergent().id == "0"
    assert "must be Tensor, not Sequential" in c.first_divergent().note


class GivesUp(nn.Module):
    """Raises in its own forward, outside every stage, after ``a`` (or, ``late``, after ``b``)."""

    def __init__(self, fail: bool = False, late: bool = False) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)
        self.fail, self.late = fail, late

    def forward(self, x):
        h = self.a(x)
        if self.fail and not self.late:
            raise RuntimeError("the forward gave up")
        h = self.b(h)
        if self.fail:
            raise RuntimeError("the forward gave up late")
        return h


def test_a_forward_that_raises_outside_every_stage_stops_the_comparison_where_it_raised():
    torch.manual_seed(0)
    model = GivesUp().eval()
    x = torch.ones(1, 4)
    failing = copy.deepcopy(model)
    failing.fail = True
    c = nfw.compare(nfw.trace(model, x), _partial(failing, x))
    assert c.failure_b is not None and c.failure_b.stage is None
    assert [(d.id, d.rel_l2) for d in c.stages] == [("a", 0.0)] and c.only_a == ("b",)
    first = c.first_divergent()
    assert first is c.stopped and (first.id, first.raised) == ("b", "b")
    assert first.note == (
        "run B raised in the model's own forward before it: RuntimeError: the forward gave up"
    )
    failing.late = True  # every stage ran, and equal: the output is where run B stopped
    late = nfw.compare(nfw.trace(model, x), _partial(failing, x))
    assert all(not d.diverges() for d in late.stages) and late.only_a == ()
    assert late.first_divergent().id == "output:0"
    assert "run B raised in the model's own forward: RuntimeError: the forward gave up late" in (
        late.to_text()
    )
