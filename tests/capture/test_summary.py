"""summarise() against numpy oracles on known tensors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from neural_flow_widget.capture import host, sampling, statistics
from neural_flow_widget.capture.summary import (
    MAX_EXACT,
    Summary,
    summarise,
    summary_failed,
    tensor_kind,
)


def _oracle(values: np.ndarray, bins: int = 64) -> dict:
    """What a float summary must say, computed by numpy in float64 over the finite values."""
    flat = values.astype(np.float64).ravel()
    finite = flat[np.isfinite(flat)]
    out = dict(
        nan=int(np.isnan(flat).sum()),
        posinf=int(np.isposinf(flat).sum()),
        neginf=int(np.isneginf(flat).sum()),
    )
    if finite.size == 0:
        return out | dict(min=None, max=None, mean=None, std=None, mean_abs=None, zero=None)
    if finite.min() == finite.max():  # documented: a constant tensor fills the first bin
        counts = np.zeros(bins, np.int64)
        counts[0] = finite.size
    else:
        counts, _ = np.histogram(finite, bins=bins, range=(finite.min(), finite.max()))
    position = (finite - finite.min()) / max(finite.max() - finite.min(), 1e-300) * bins
    # float32 scaling may put an element within ~1e-5 bins of an edge into the next bin
    inner = (np.rint(position) > 0) & (np.rint(position) < bins)
    on_edge = int((inner & (np.abs(position - np.rint(position)) < 1e-4)).sum())
    return out | dict(
        min=finite.min(), max=finite.max(), mean=finite.mean(), std=finite.std(),
        mean_abs=np.abs(finite).mean(), zero=float(np.mean(finite == 0)), counts=counts,
        on_edge=on_edge,
    )  # fmt: skip


def _check_float(s: Summary, values: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6):
    want = _oracle(values, s.bins)
    assert (s.nan, s.posinf, s.neginf) == (want["nan"], want["posinf"], want["neginf"])
    if want["min"] is None:
        assert s.min is s.max is s.mean is s.std is s.mean_abs is s.zero_fraction is None
        assert s.hist_counts.sum() == 0
        return
    assert s.min == pytest.approx(want["min"], rel=rtol, abs=atol)
    assert s.max == pytest.approx(want["max"], rel=rtol, abs=atol)
    scale = max(abs(want["min"]), abs(want["max"]))  # float32 rounding grows with |x|
    assert s.mean == pytest.approx(want["mean"], rel=rtol, abs=atol + 1e-6 * scale)
    assert s.std == pytest.approx(want["std"], rel=rtol, abs=atol + 1e-6 * scale)
    assert s.mean_abs == pytest.approx(want["mean_abs"], rel=rtol, abs=atol)
    assert s.zero_fraction == pytest.approx(want["zero"], abs=1e-12)
    assert (s.hist_lo, s.hist_hi) == (s.min, s.max)
    assert s.hist_counts.dtype == np.int64
    assert s.hist_counts.sum() == want["counts"].sum()
    assert np.abs(s.hist_counts - want["counts"]).sum() <= 2 * want["on_edge"]


def test_random_floats_match_numpy():
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0)) * 3 + 1
    s = summarise(x)
    head = (s.kind, s.dtype, s.device, s.shape, s.numel)
    assert head == ("float", "float32", "cpu", (3, 5, 7), 105)
    assert s.sampled is None and s.values is None and s.error is None
    _check_float(s, x.numpy())


def test_nan_and_infinities_are_counted_and_excluded():
    x = torch.randn(40, 30, generator=torch.Generator().manual_seed(1))
    x[0, :3] = float("nan")
    x[1, :2] = float("inf")
    x[2, :5] = float("-inf")
    s = summarise(x)
    assert (s.nan, s.posinf, s.neginf) == (3, 2, 5)
    _check_float(s, x.numpy())
    assert s.hist_counts.sum() == x.numel() - 10


def test_all_nan_has_no_stats():
    s = summarise(torch.full((4, 4), float("nan")))
    assert s.nan == 16 and s.min is None and s.mean is None and s.hist_counts.sum() == 0


def test_all_zero_tensor():
    s = summarise(torch.zeros(2, 3, 4))
    assert (s.min, s.max, s.mean, s.std, s.mean_abs, s.zero_fraction) == (0, 0, 0, 0, 0, 1.0)
    assert s.hist_counts[0] == 24 and s.hist_counts.sum() == 24  # constant: all in bin 0
    assert s.hist_lo == s.hist_hi == 0.0


def test_relu_like_zero_fraction():
    x = torch.relu(torch.randn(1000, generator=torch.Generator().manual_seed(2)))
    s = summarise(x)
    _check_float(s, x.numpy())
    assert 0.4 < s.zero_fraction < 0.6


def test_int64_token_ids():
    ids = torch.randint(0, 50, (4, 33), generator=torch.Generator().manual_seed(3))
    ids[0, :10] = 50256  # a frequent large id
    s = summarise(ids)
    assert (s.kind, s.dtype) == ("int", "int64")
    arr = ids.numpy().ravel()
    assert (s.min, s.max) == (arr.min(), arr.max())
    assert s.mean == pytest.approx(arr.mean())
    assert s.std == pytest.approx(arr.std())
    uniq, counts = np.unique(arr, return_counts=True)
    order = sorted(zip(uniq.tolist(), counts.tolist()), key=lambda vc: (-vc[1], vc[0]))
    assert s.values == tuple(order[:32])
    assert all(type(v) is int and type(c) is int for v, c in s.values)
    assert s.hist_counts.sum() == arr.size


def test_bool_mask():
    mask = torch.zeros(3, 10, dtype=torch.bool)
    mask[:, :7] = True
    s = summarise(mask)
    assert s.kind == "bool"
    assert s.values == ((True, 21), (False, 9))
    assert s.zero_fraction == pytest.approx(9 / 30)
    assert s.mean == pytest.approx(21 / 30)
    assert s.std == pytest.approx(np.std(mask.numpy().astype(float)))
    assert (s.min, s.max) == (0.0, 1.0)
    assert (s.hist_counts[0], s.hist_counts[-1], s.hist_counts.sum()) == (9, 21, 30)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_empty_tensor(dtype):
    s = summarise(torch.empty(0, 5, dtype=dtype))
    assert s.numel == 0 and s.shape == (0, 5) and s.error is None
    assert s.min is None and s.mean is None and s.hist_counts.sum() == 0
    assert s.values == (None if dtype is torch.float32 else ())


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float64, torch.float8_e4m3fn]
)
def test_low_and_high_precision_floats(dtype):
    x = (torch.randn(17, 9, generator=torch.Generator().manual_seed(4)) * 5).to(dtype)
    s = summarise(x)
    assert s.dtype == str(dtype).removeprefix("torch.")
    _check_float(s, x.to(torch.float64).numpy())


def test_complex_is_summarised_by_magnitude():
    z = torch.complex(torch.tensor([3.0, 0.0]), torch.tensor([4.0, 1.0]))
    s = summarise(z)
    assert (s.kind, s.dtype, s.min, s.max, s.mean) == ("float", "complex64", 1.0, 5.0, 3.0)


def test_large_tensor_is_sampled_but_min_max_mean_exact():
    n = 4_000_003  # far over the default max_exact
    x = torch.randn(n, generator=torch.Generator().manual_seed(5))
    x[1] = 50.0  # never in the sample: its first chunk starts half a step in
    x[n - 2] = -60.0  # nor is the tail after the last whole chunk
    s = summarise(x)
    assert s.sampled is not None and s.sampled <= MAX_EXACT
    assert s.hist_counts.sum() == s.sampled
    arr = x.numpy().astype(np.float64)
    assert (s.min, s.max) == (-60.0, 50.0)
    assert s.mean == pytest.approx(arr.mean(), rel=1e-6, abs=1e-7)
    sampling = 5 / np.sqrt(s.sampled)  # the sampled fields: within ~5 standard errors
    assert s.std == pytest.approx(arr.std(), rel=sampling)
    assert s.mean_abs == pytest.approx(np.abs(arr).mean(), rel=sampling)


def test_sampling_threshold_and_plan_are_deterministic():
    x = torch.arange(10_000, dtype=torch.float32)
    a, b = summarise(x, max_exact=1000), summarise(x, max_exact=1000)
    assert a.sampled == b.sampled and 0 < a.sampled <= 1000
    assert np.array_equal(a.hist_counts, b.hist_counts)
    assert (a.min, a.max, a.mean) == (0.0, 9999.0, 4999.5)
    width, step, first, rows = sampling.sample_plan(10_000, 1000)
    assert sampling.is_prime(width) and sampling.is_prime(step)
    assert first == step // 2
    assert rows * width == a.sampled and (first + (rows - 1) * step + 1) * width <= 10_000
    assert summarise(x, max_exact=10_000).sampled is None


def test_chunk_sample_does_not_alias_with_a_power_of_two_period():
    # features 0..255 of each 768-wide token are small, the rest large: a sample of the
    # same chunk of every token would see only one kind
    x = torch.ones(512, 768)
    x[:, :256] = 0.0
    s = summarise(x, max_exact=16_384)
    assert s.sampled is not None
    assert s.zero_fraction == pytest.approx(1 / 3, abs=0.05)


def test_sample_spans_the_whole_tensor():
    halves = torch.cat([torch.zeros(50_000), torch.ones(50_000)])  # structure a prefix would miss
    s = summarise(halves, max_exact=5000)
    assert s.sampled is not None
    assert s.zero_fraction == pytest.approx(0.5, abs=0.01)
    assert s.hist_counts[0] == pytest.approx(s.sampled / 2, abs=s.sampled * 0.01)
    assert s.mean == 0.5  # exact, from the whole tensor


def test_huge_int_tensor_samples_value_counts():
    ids = torch.arange(20_000) % 7
    s = summarise(ids, max_exact=1000)
    assert s.sampled is not None
    assert sum(c for _, c in s.values) == s.sampled
    assert (s.min, s.max) == (0.0, 6.0)
    assert s.mean == pytest.approx((torch.arange(20_000) % 7).double().mean().item())


@pytest.mark.parametrize("make", [
    lambda x: x.t(),
    lambda x: x.reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
    lambda x: x[:, ::2],
    lambda x: x[:1].expand(6, 20),
])  # fmt: skip
def test_non_contiguous_matches_contiguous(make):
    x = make(torch.randn(6, 20, generator=torch.Generator().manual_seed(6)))
    a, b = summarise(x), summarise(x.contiguous())
    assert (a.min, a.max, a.nan, a.numel) == (b.min, b.max, b.nan, b.numel)
    assert a.mean == pytest.approx(b.mean, abs=1e-6)
    assert a.std == pytest.approx(b.std, rel=1e-5)
    assert np.array_equal(a.hist_counts, b.hist_counts)


def test_bins_parameter():
    centres = (torch.arange(100) % 10 + 0.5) / 10  # ten values in the middle of each bin
    s = summarise(torch.cat([centres, torch.tensor([0.0, 1.0])]), bins=10)
    assert s.bins == 10
    assert s.hist_counts.tolist() == [11] + [10] * 8 + [11]  # the ends join the end bins
    with pytest.raises(ValueError, match="bins"):
        summarise(torch.ones(3), bins=0)


def test_histogram_counts_equal_torch_histc():
    y = torch.rand(5000, generator=torch.Generator().manual_seed(7)) * 16
    y[:3] = 16.0  # the top edge joins the last bin
    y[3:5] = 17.0  # outside: left out
    ref = torch.histc(y, bins=16, min=0, max=16).double().numpy()
    assert np.array_equal(statistics.unit_counts(y.numpy(), 16), ref)


@pytest.mark.parametrize("make", [
    lambda: torch.randn(7, 9, generator=torch.Generator().manual_seed(8)) * 3 + 1,
    lambda: torch.randn(300_000, generator=torch.Generator().manual_seed(9)),  # sampled
    lambda: torch.relu(torch.randn(40_000, generator=torch.Generator().manual_seed(10))),
    lambda: torch.full((5,), 3.0),
    lambda: torch.randint(-9, 9, (3, 5000), generator=torch.Generator().manual_seed(11)),
    lambda: torch.rand(40, 40, generator=torch.Generator().manual_seed(12)) > 0.3,
])  # fmt: skip
def test_the_packed_transfer_of_a_gpu_gives_the_same_summary(make, monkeypatch):
    x = make()
    in_place = summarise(x)
    monkeypatch.setattr(host, "READ_IN_PLACE", frozenset())  # CPU tensors as a GPU's
    monkeypatch.setattr(statistics, "COUNT_IN_CALL", frozenset())
    packed = summarise(x)
    for field in dataclasses.fields(Summary):
        a, b = getattr(packed, field.name), getattr(in_place, field.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, field.name


@pytest.mark.parametrize("bad", [
    [1.0, float("nan"), -2.0, float("inf"), 0.0],
    [float("nan")] * 3 + [1.0] * 9000,  # NaN in the first elements only: not in the sample
    [float("inf"), 2.0, -float("inf")],
    [float("nan")] * 7,
    [3e38] * 50_000,  # finite, but the float32 sum overflows
])  # fmt: skip
def test_a_gpu_run_still_counts_what_its_min_max_and_sum_show(bad, monkeypatch):
    """NaN/Inf seen only after the pass (a GPU's case): the counts come from the sample, at
    least one of each kind the exact extremes and sum show; the CPU counts them exactly."""
    x = torch.tensor(bad)
    exact = summarise(x)
    monkeypatch.setattr(statistics, "COUNT_IN_CALL", frozenset())
    late = summarise(x, max_exact=1000)
    for kind in ("nan", "posinf", "neginf"):
        assert bool(getattr(late, kind)) == bool(getattr(exact, kind)) or (
            kind == "nan" and late.nan == 1 and not (exact.nan or exact.posinf or exact.neginf)
        )
        assert getattr(late, kind) <= max(getattr(exact, kind), 1)
    if exact.min is not None and late.min is not None:
        assert exact.min <= late.min <= late.max <= exact.max


@pytest.mark.filterwarnings("ignore:.*quantize_per_tensor:UserWarning")
def test_unreadable_tensors_raise_type_error_naming_the_fix():
    with pytest.raises(TypeError, match="to_dense"):
        summarise(torch.eye(3).to_sparse())
    q = torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8)
    with pytest.raises(TypeError, match="dequantize"):
        summarise(q)
    with pytest.raises(TypeError, match="meta"):
        summarise(torch.empty(3, device="meta"))
    with pytest.raises(TypeError, match="torch.Tensor"):
        summarise([1.0, 2.0])  # type: ignore[arg-type]


class _Refusing(torch.Tensor):
    """A tensor subclass whose ops all fail (like some wrapper tensors do)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "__get__":  # attribute reads still work
            return super().__torch_function__(func, types, args, kwargs or {})
        raise RuntimeError(f"{func} is not supported")


def test_a_subclass_that_refuses_ops_is_read_through_its_plain_values():
    values = torch.arange(6.0).reshape(2, 3)
    s = summarise(values.clone().as_subclass(_Refusing))
    assert (s.min, s.max, s.mean, s.error) == (0.0, 5.0, 2.5, None)


class _Pair(torch.Tensor):
    """A wrapper subclass around two tensors (as a quantised weight holds data and scales):
    no one tensor holds its values."""

    @staticmethod
    def __new__(cls, data, scale):
        return torch.Tensor._make_wrapper_subclass(cls, data.shape, dtype=torch.float32)

    def __init__(self, data, scale):
        self.data_, self.scale = data, scale

    def __tensor_flatten__(self):
        return ["data_", "scale"], None

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{func} on a _Pair")


def test_a_wrapper_of_several_tensors_names_them_and_the_fix():
    t = _Pair(torch.ones(2, 2, dtype=torch.int8), torch.ones(1))
    with pytest.raises(TypeError, match=r"holds 2 tensors \(data_, scale\).*dequantize"):
        summarise(t)


def test_summary_failed_keeps_what_it_can():
    s = summary_failed(torch.ones(2, 3, dtype=torch.int32), "boom")
    assert (s.shape, s.dtype, s.kind, s.numel, s.error) == ((2, 3), "int32", "int", 6, "boom")
    assert s.mean is None and s.hist_counts.sum() == 0
    n = summary_failed(None, "no tensor")
    assert (n.shape, n.dtype, n.error) == ((), "unknown", "no tensor")


def test_tensor_kind():
    assert [tensor_kind(d) for d in (torch.float16, torch.complex64, torch.uint8, torch.bool)] == [
        "float", "float", "int", "bool"]  # fmt: skip


def test_summary_is_frozen_and_read_only():
    s = summarise(torch.randn(10))
    with pytest.raises(AttributeError):
        s.mean = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        s.hist_counts[0] = 1


_float_arrays = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=1, max_dims=3, max_side=12),
    elements=st.one_of(
        st.floats(-1e4, 1e4, width=32),
        st.sampled_from([0.0, math.nan, math.inf, -math.inf]),
    ),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_float_arrays)
def test_property_float_stats_match_numpy(values):
    s = summarise(torch.from_numpy(values.copy()))
    _check_float(s, values, rtol=1e-4, atol=1e-3)
