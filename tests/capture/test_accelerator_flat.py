"""The compiled path's summary-only pass (``Reducer.flat``, ``nfw_flat_f32``: a parameter's
gradient) and the float16 scale guess (``hint``) against the torch path."""

import numpy as np
import pytest
import torch
from test_accelerator import fast, reduced, torch_path  # noqa: F401  (the fixture)

from neural_flow_widget.capture import accelerator
from neural_flow_widget.capture.host import to_host
from neural_flow_widget.capture.reduction import reduce_on_device
from neural_flow_widget.capture.retained import DEFAULT_BUDGET_BYTES

pytestmark = pytest.mark.skipif(
    accelerator.library() is None, reason="the compiled path is not available (no C compiler)"
)

FLAT = [(1,), (7,), (8191,), (8192,), (8193,), (64, 3, 3, 3), (768, 2304), (3, 5, 7, 11, 2)]


def _values(shape, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g) * 1e-3
    return torch.where(t.abs() < 2e-4, torch.zeros(()), t)  # some exact zeros


@pytest.mark.parametrize("shape", FLAT, ids=str)
def test_the_flat_summary_and_norm_equal_the_torch_path(fast, shape):  # noqa: F811
    x = _values(shape, seed=len(shape))
    made = fast.flat(x)
    assert made is not None
    summary, kept, error = made.result()
    assert kept is None and error is None and made.waiting() == [] and not made.nonfinite()
    slow = reduce_on_device(x, sample=0, budget=0, views=False)
    assert slow.retained is None
    to_host(slow.waiting())
    got, want = summary.resolve(), slow.summary.resolve()
    assert (got.min, got.max) == (want.min, want.max)
    assert got.mean == pytest.approx(want.mean, rel=1e-6, abs=1e-12)
    assert got.std == pytest.approx(want.std, rel=1e-5)
    assert (got.mean_abs, got.zero_fraction, got.sampled) == (
        want.mean_abs,
        want.zero_fraction,
        want.sampled,
    )
    np.testing.assert_array_equal(got.hist_counts, want.hist_counts)
    assert (got.shape, got.numel) == (want.shape, want.numel) == (shape, x.numel())
    assert made.norm == pytest.approx(torch.linalg.vector_norm(x.double()).item(), rel=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(8, 8, dtype=torch.float64),
        lambda: torch.randn(8, 8).t(),
        lambda: torch.zeros(0, 3),
        lambda: torch.tensor([1.0, float("nan"), 2.0]),
        lambda: torch.tensor([1.0, float("inf")]),
        lambda: torch.full((64,), 3e19),  # (squares overflow float32: torch scales the norm)
    ],
    ids=["float64", "transposed", "empty", "nan", "inf", "overflowing-norm"],
)
def test_what_the_flat_pass_cannot_read_exactly_takes_the_torch_path(fast, make):  # noqa: F811
    assert fast.flat(make()) is None


@pytest.mark.parametrize("shape", [(1, 16, 64, 64), (2, 128, 768)], ids=str)
@pytest.mark.parametrize("hint", [1.0, 2.0**-31, 2.0**-20, 2.0**7])
def test_a_wrong_scale_guess_costs_a_pass_not_a_value(fast, shape, hint):  # noqa: F811
    """Gradients pass the scale of the one before as the guess; right or wrong, the records
    are those made with no guess (1), bit for bit, and the torch path's within float16."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(5)) * 3e-6
    made = fast.reduce(x, 0, DEFAULT_BUDGET_BYTES, hint)
    assert made is not None and made.scale == 2.0**-31  # (peak |x| in [2**-17, 2**-16))
    (_, kept), (_, plain) = made.result()[:2], reduced(fast, x, 0, DEFAULT_BUDGET_BYTES)
    assert kept.scales == plain.scales and set(kept.scales.values()) == {2.0**-31}
    slow = torch_path(x, 0, DEFAULT_BUDGET_BYTES)[1]
    for name in kept.scales:
        np.testing.assert_array_equal(kept.parts[name], plain.parts[name])
        np.testing.assert_allclose(kept.values(name), slow.values(name), rtol=2e-3, atol=1e-9)
