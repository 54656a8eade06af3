"""retain() keeps bounded reductions of an activation, as copies, within the budget."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from neural_flow_widget.capture.dense import read_dense
from neural_flow_widget.capture.host import to_host
from neural_flow_widget.capture.plans import RANK_SAMPLE, rank_rows
from neural_flow_widget.capture.retained import DEFAULT_BUDGET_BYTES, retain, retain_pending
from neural_flow_widget.capture.views import available_views, render_view


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_image_budget_for_64_channels_of_512x512():
    x = torch.randn(1, 64, 512, 512, generator=_gen(0))
    kept = retain(x)
    assert kept.layout == "image" and kept.shape == (1, 64, 512, 512) and kept.sample == 0
    assert kept.nbytes <= DEFAULT_BUDGET_BYTES
    parts = kept.parts
    assert parts["channel_mean_abs"].shape == (64,)
    assert parts["grid"].shape[0] == 64 and max(parts["grid"].shape[1:]) <= 64
    assert parts["grid"].dtype == np.float16
    assert 1 <= parts["top"].shape[0] <= 8 and max(parts["top"].shape[1:]) <= 256
    assert parts["top"].shape[1] > parts["grid"].shape[1]  # sharper than the grid
    assert max(parts["mean"].shape) <= 256
    # mean |x| per channel over the documented rows (every s-th, s prime, centred) ...
    step = rank_rows(64, 512, 512)
    assert step > 1 and 64 * (512 // step) * 512 <= 2 * RANK_SAMPLE
    rows = x[0, :, step // 2 :: step].abs().double().mean((1, 2)).numpy()
    np.testing.assert_allclose(parts["channel_mean_abs"], rows, rtol=1e-5)
    # ... which estimates the exact one
    want = x[0].abs().double().mean((1, 2)).numpy()
    np.testing.assert_allclose(parts["channel_mean_abs"], want, rtol=0.15)


def test_sequence_budget_for_4096_tokens_of_768():
    x = torch.randn(1, 4096, 768, generator=_gen(1))
    kept = retain(x)
    assert kept.layout == "sequence" and kept.nbytes <= DEFAULT_BUDGET_BYTES
    assert max(kept.parts["tokens"].shape) <= 256
    assert kept.parts["norms"].shape == (4096,)
    np.testing.assert_allclose(kept.values("norms"), x[0].norm(dim=1).numpy(), rtol=1e-5)


def test_token_axis_is_not_pooled_when_only_features_are_too_many():
    kept = retain(torch.randn(1, 128, 768, generator=_gen(12)))
    assert kept.parts["tokens"].shape == (128, 256)
    assert render_view(kept).note == "pooled 128x768 -> 128x256"


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 40), min_size=0, max_size=5).map(tuple),
    budget=st.sampled_from([4096, 10_000, 65_536, DEFAULT_BUDGET_BYTES]),
)
def test_budget_is_respected_for_any_shape(shape, budget):
    x = torch.randn(*shape, generator=_gen(2)) if shape else torch.tensor(1.5)
    kept = retain(x, budget_bytes=budget)
    assert kept.nbytes <= budget
    for kind in available_views(kept):
        view = render_view(kept, kind)
        assert view.data.dtype == np.uint8 and view.data.ndim in (2, 3)


def test_too_many_channels_for_the_budget_fall_back_to_values():
    kept = retain(torch.randn(1, 20_000, 2, 2, generator=_gen(3)), budget_bytes=65_536)
    assert kept.layout == "vector" and "too many channels" in kept.note
    assert kept.nbytes <= 65_536


def test_five_d_is_averaged_over_depth():
    x = torch.randn(1, 3, 4, 8, 8, generator=_gen(8))
    kept = retain(x)
    assert kept.layout == "image" and "averaged over axes [2]" in kept.note
    np.testing.assert_allclose(kept.values("mean"), x[0].mean(1).mean(0).numpy(), atol=2e-3)


@pytest.mark.parametrize("size", [1e35, 1e6, 1e-6, 1e-35])
def test_large_and_tiny_values_survive_float16_storage(size):
    x = torch.full((1, 2, 4, 4), size)
    x[0, 1] = -30 * size
    kept = retain(x)
    assert kept.parts["grid"].dtype == np.float16 and kept.scales["grid"] > 0
    np.testing.assert_allclose(kept.values("grid")[:, 0, 0], [size, -30 * size], rtol=1e-3)


@pytest.mark.parametrize("size", [1e-40, 1e-44])
@pytest.mark.parametrize("on_device", [False, True], ids=["host peak", "device peak"])
def test_values_below_float32_normals_beside_an_inf_keep_their_size(size, on_device):
    """A scale of 2**-161 was 0 in float32 and its inverse Inf: every kept value came back
    Inf or NaN, and reading them warned. EfficientNet from a config with random weights."""
    x = torch.full((1, 2, 4, 4), size)
    x[0, 1] = torch.inf
    finite = x[torch.isfinite(x)].abs().max()
    pending = retain_pending(read_dense(x), peak=finite if on_device else float(finite.item()))
    to_host([pending])
    kept = pending.result()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid = kept.values("grid")[:, 0, 0]
    assert np.isinf(grid[1])
    np.testing.assert_allclose(grid[0], size, rtol=0.1)


def test_sample_selects_the_batch_element():
    x = torch.zeros(3, 4, 5)
    x[2] = 7.0
    kept = retain(x, sample=2)
    assert kept.sample == 2 and float(kept.values("tokens").max()) == 7.0
    with pytest.raises(ValueError, match=r"use sample=0\.\.2"):
        retain(x, sample=3)
    shared = retain(x[2:], sample=2)  # a batch of one (a position embedding) broadcasts
    assert shared.sample == 0 and float(shared.values("tokens").max()) == 7.0


def test_bool_masks_are_kept_as_fractions():
    mask = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    mask[..., :2] = True
    kept = retain(mask)
    assert kept.layout == "image"
    assert float(kept.values("channel_mean_abs")[0]) == 0.5


def test_int_token_ids_stay_exact():
    ids = torch.tensor([[50256, 3, 16_777_217]])
    kept = retain(ids)
    assert kept.values("first").tolist() == [50256, 3, 16_777_217]


def test_scalar_and_1d_have_no_batch_axis():
    assert retain(torch.tensor(2.0)).sample is None
    kept = retain(torch.arange(10.0))
    assert kept.sample is None and kept.parts["first"].shape == (10,)


def test_unreadable_tensor_raises_type_error():
    with pytest.raises(TypeError, match="to_dense"):
        retain(torch.eye(3).to_sparse())
    with pytest.raises(ValueError, match="at least"):
        retain(torch.ones(3), budget_bytes=100)


def test_pooled_sizes_prefer_windows_that_divide():
    x = torch.randn(1, 64, 112, 112, generator=_gen(14))
    kept = retain(x)
    assert kept.parts["grid"].shape == (64, 28, 28)  # 112 = 28 windows of 4
    want = F.avg_pool2d(x[0], 4).numpy()
    np.testing.assert_allclose(kept.values("grid"), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "shape",
    [(1, 4, 8, 8), (2, 4, 8, 8), (1, 3, 200, 40), (1, 6, 10), (2, 50), (30,), (1, 2, 3, 8, 8)],
)
def test_kept_parts_are_copies_not_views_of_the_activation(shape):
    x = torch.randn(*shape, generator=_gen(15))
    kept = retain(x)
    before = {name: kept.values(name).copy() for name in kept.parts}
    x.mul_(0).add_(7.0)  # a later in-place op (ReLU(inplace=True), +=) on the activation
    for name, values in before.items():
        np.testing.assert_array_equal(kept.values(name), values)
        assert not kept.parts[name].flags.writeable


@pytest.mark.parametrize("shape", [(1, 16, 64, 64), (2, 30, 50), (3, 7), (1, 2, 3, 8, 8)])
def test_parts_moved_in_one_packed_transfer_are_the_same(monkeypatch, shape):
    """A GPU's path to the host (every part packed into one byte buffer), on CPU tensors."""
    from neural_flow_widget.capture import host

    x = torch.randn(*shape, generator=_gen(16)) * 1e5
    in_place = retain(x)
    monkeypatch.setattr(host, "READ_IN_PLACE", frozenset())
    packed = retain(x)
    assert list(packed.parts) == list(in_place.parts)
    assert dict(packed.scales) == dict(in_place.scales)
    for name in in_place.parts:
        assert packed.parts[name].dtype == in_place.parts[name].dtype, name
        assert not packed.parts[name].flags.writeable, name
        np.testing.assert_array_equal(packed.parts[name], in_place.parts[name], err_msg=name)
