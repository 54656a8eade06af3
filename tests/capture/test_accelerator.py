"""The compiled capture path (``_native``, ``reduce.c``) against the torch path it replaces.

Both builds (baseline and AVX2) are checked where the processor runs them.  Skipped when the
library is not built, unless ``NFW_REQUIRE_NATIVE=1`` (``scripts/test.sh`` sets it), which
turns a missing build into a failure.
"""

import ctypes
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import neural_flow_widget as nfw
from neural_flow_widget.capture import accelerator as _native
from neural_flow_widget.capture.retained import DEFAULT_BUDGET_BYTES, _rank_rows, retain_dense
from neural_flow_widget.capture.summary import read_dense, summarise_pending

if _native.LIB is None and os.environ.get("NFW_REQUIRE_NATIVE") == "1":
    raise RuntimeError("NFW_REQUIRE_NATIVE=1 but the compiled capture path is not built: run "
                       "python neural_flow_widget/_native/build.py (needs a C compiler)")
pytestmark = pytest.mark.skipif(_native.LIB is None, reason="the compiled path is not built")


def test_a_build_of_another_version_is_refused_not_called(tmp_path, monkeypatch):
    import shutil

    shutil.copy(_native.library_path("base"), tmp_path / "_reduce_base.so")
    monkeypatch.setenv("NFW_NATIVE_DIR", str(tmp_path))
    assert _native._load() is not None  # the same build, elsewhere: loaded
    monkeypatch.setattr(_native, "_VERSION", _native._VERSION + 1)
    with pytest.warns(UserWarning, match="stale"):
        assert _native._load() is None


def _variants():
    """The loaded library and, if another build runs here, that one too."""
    libs = {"loaded": _native.LIB}
    base = ctypes.CDLL(str(_native.library_path("base")))
    for name, argtypes in _native._SIGNATURES.items():
        fn = getattr(base, name)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int64
    libs["base"] = base
    return libs


@pytest.fixture(params=["loaded", "base"])
def lib(request, monkeypatch):
    monkeypatch.setattr(_native, "LIB", _variants()[request.param])
    return request.param


def torch_path(d, sample, budget):
    summary = summarise_pending(d)
    peak = max(-summary.min, summary.max)
    return summary, retain_dense(d, sample=sample, budget_bytes=budget, peak=peak)


def activation(shape, seed=0, spread=1.0):
    """Random values whose channels (axis 1) differ clearly in mean |x|, with some zeros."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g) * spread
    if len(shape) == 4:
        t *= torch.linspace(0.2, 3.0, shape[1])[torch.randperm(shape[1], generator=g)][:, None,
                                                                                         None]
    return torch.relu(t + 0.3 * spread) - 0.1 * spread


SHAPES = [
    (1, 64, 112, 112), (1, 256, 14, 14), (2, 512, 7, 7), (1, 2048, 7, 7),  # ResNet
    (3, 16, 128, 128), (1, 3, 37, 53), (1, 5, 9, 300), (1, 1, 1, 1), (1, 7, 1, 5),
    (2, 10, 8, 8), (1, 4, 61, 3), (1, 1501, 7, 7), (1, 3001, 5, 5),
    (1, 128, 768), (2, 77, 300), (1, 5000, 64), (1, 1, 1), (4, 3, 1000),  # sequences
    (1, 128, 1024), (2, 64, 520),  # columns pooled in fours and in pairs (and a tail)
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("budget", [DEFAULT_BUDGET_BYTES, 16_384])
def test_compiled_reduction_equals_the_torch_path(lib, shape, budget):
    x = activation(shape)
    d = read_dense(x)
    sample = shape[0] - 1
    fast = _native.reduce(x, sample, budget)
    if fast is None:  # too many channels for this budget: the torch path keeps a vector
        assert len(shape) == 4 and torch_path(d, sample, budget)[1].layout == "vector"
        return
    (pending, kept), (slow_pending, slow) = fast, torch_path(d, sample, budget)
    got, want = pending.resolve(), slow_pending.resolve()
    assert (got.min, got.max) == (want.min, want.max)
    assert got.mean == pytest.approx(want.mean, rel=1e-6, abs=1e-7)
    assert got.std == pytest.approx(want.std, rel=1e-5)
    # the same chunk sample: the sampled fields agree exactly
    assert (got.mean_abs, got.zero_fraction, got.sampled) == \
        (want.mean_abs, want.zero_fraction, want.sampled)
    np.testing.assert_array_equal(got.hist_counts, want.hist_counts)
    assert (got.shape, got.dtype, got.kind, got.numel) == (want.shape, want.dtype, want.kind,
                                                           want.numel)
    assert (kept.layout, kept.shape, kept.dtype, kept.sample, kept.note) == \
        (slow.layout, slow.shape, slow.dtype, slow.sample, slow.note)
    assert list(kept.parts) == list(slow.parts) and dict(kept.scales) == dict(slow.scales)
    assert kept.nbytes == slow.nbytes <= budget
    for name, part in kept.parts.items():
        other = slow.parts[name]
        assert (part.dtype, part.shape) == (other.dtype, other.shape), name
        assert not part.flags.writeable, name
        if name == "top_channels":
            np.testing.assert_array_equal(part, other)
        else:  # float16 parts: within one rounding step of float16
            np.testing.assert_allclose(kept.values(name), slow.values(name), rtol=2e-3,
                                       atol=1e-6, err_msg=name)


@pytest.mark.parametrize("shape", [(1, 6, 100, 90), (2, 40, 66, 34), (1, 2000, 8, 8),
                                   (1, 3000, 7, 5)], ids=str)
def test_pooled_parts_equal_adaptive_avg_pool(lib, shape):
    x = activation(shape, seed=3)
    _, kept = _native.reduce(x, 1 if shape[0] > 1 else 0, DEFAULT_BUDGET_BYTES)
    s = x[1 if shape[0] > 1 else 0]
    grid = F.adaptive_avg_pool2d(s, kept.parts["grid"].shape[1:])
    np.testing.assert_allclose(kept.values("grid"), grid.numpy(), rtol=2e-3, atol=1e-5)
    mean = F.adaptive_avg_pool2d(s.mean(0, keepdim=True), kept.parts["mean"].shape)[0]
    np.testing.assert_allclose(kept.values("mean"), mean.numpy(), rtol=2e-3, atol=1e-5)
    assert kept.parts["grid"][0].size < s[0].numel()  # pooled, not copied
    if "top" not in kept.parts:
        return
    channels = kept.parts["top_channels"]
    step = _rank_rows(*s.shape)  # ranked on these rows
    ranked = s[:, step // 2 :: step].abs().mean((1, 2)).argsort(descending=True)[: len(channels)]
    assert channels.tolist() == ranked.tolist()
    top = F.adaptive_avg_pool2d(s[channels.tolist()], kept.parts["top"].shape[1:])
    np.testing.assert_allclose(kept.values("top"), top.numpy(), rtol=2e-3, atol=1e-5)


def test_sequence_parts_equal_norms_and_pooling(lib):
    x = activation((2, 300, 700), seed=4)
    _, kept = _native.reduce(x, 1, DEFAULT_BUDGET_BYTES)
    tokens = F.adaptive_avg_pool2d(x[1][None], kept.parts["tokens"].shape)[0]
    np.testing.assert_allclose(kept.values("tokens"), tokens.numpy(), rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(kept.values("norms"), x[1].norm(dim=1).numpy(), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 8, 20, 20), (2, 300, 40), (1, 64, 14, 14)], ids=str)
@pytest.mark.parametrize("spread", [1e6, 1e-5])
def test_large_and_tiny_values_get_the_same_float16_scale(lib, shape, spread):
    x = activation(shape, spread=spread)
    (_, kept), (_, slow) = _native.reduce(x, 0, DEFAULT_BUDGET_BYTES), torch_path(
        read_dense(x), 0, DEFAULT_BUDGET_BYTES)
    assert dict(kept.scales) == dict(slow.scales) and kept.scales
    for name in kept.scales:
        np.testing.assert_allclose(kept.values(name), slow.values(name), rtol=2e-3,
                                   atol=1e-3 * spread)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_inf_fall_back_to_the_masked_torch_path(lib, bad):
    x = activation((1, 4, 10, 10))
    x[0, 2, 3, 3] = bad
    assert _native.reduce(x, 0, DEFAULT_BUDGET_BYTES) is None
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.ReLU())
    (summary,) = nfw.trace(model, x).summary("0")
    assert (summary.nan, summary.posinf, summary.neginf) == (
        int(math.isnan(bad)), int(bad == math.inf), int(bad == -math.inf))
    assert summary.max == x[torch.isfinite(x)].max().item()


@pytest.mark.parametrize("make", [
    lambda: torch.randn(1, 4, 8, 8, dtype=torch.float64),
    lambda: torch.randn(1, 4, 8, 8).half(),
    lambda: torch.randn(1, 4, 8, 8).to(memory_format=torch.channels_last),
    lambda: torch.randn(1, 8, 6).transpose(1, 2),
    lambda: torch.randn(4, 8), lambda: torch.randn(1, 2, 3, 4, 5), lambda: torch.zeros(0, 3, 4),
], ids=["float64", "float16", "channels-last", "transposed", "2-D", "5-D", "empty"])
def test_other_tensors_take_the_torch_path(make):
    assert _native.reduce(make(), 0, DEFAULT_BUDGET_BYTES) is None


def test_a_tensor_subclass_takes_the_torch_path():
    class Tagged(torch.Tensor):
        pass

    assert _native.reduce(torch.randn(1, 4, 8, 8).as_subclass(Tagged), 0, 4096 * 64) is None


@pytest.mark.parametrize("shape", [(1, 8, 20, 20), (1, 30, 16)], ids=str)
def test_a_batch_of_one_broadcasts_like_the_torch_path(shape):
    x = activation(shape)
    (_, kept), (_, slow) = _native.reduce(x, 3, DEFAULT_BUDGET_BYTES), torch_path(
        read_dense(x), 3, DEFAULT_BUDGET_BYTES)
    assert kept.sample == slow.sample == 0
    for name in kept.parts:
        np.testing.assert_allclose(kept.values(name), slow.values(name), rtol=2e-3, atol=1e-6)


def test_sample_out_of_range_takes_the_torch_path_and_its_error():
    assert _native.reduce(torch.randn(2, 3, 4, 4), 5, DEFAULT_BUDGET_BYTES) is None


def test_float16_conversion_rounds_like_numpy_in_both_builds():
    # every float16 value, the midpoints between neighbours (ties to even), the overflow edge,
    # subnormals and specials
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    midpoints = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    values = np.concatenate([finite, midpoints.astype(np.float32),
                             np.nextafter(midpoints.astype(np.float32), np.float32(np.inf)),
                             np.float32([65504, 65519.99, 65520, 1e9, -1e9, np.inf, -np.inf,
                                         np.nan, 1e-8, -1e-8, 2.0**-25, 2.0**-24 * 1.5])])
    values = values.astype(np.float32)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    for name, lib in _variants().items():
        got = np.empty(len(values), np.float16)
        lib.nfw_to_half(values.ctypes.data, len(values), 1.0, got.ctypes.data)
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
        np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16),
                                      err_msg=name)


def test_kept_arrays_do_not_see_later_in_place_writes():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            y = self.conv(x)
            expected.append(y.clone())
            y.mul_(-5.0).add_(100.0)  # in place, after the stage returned it
            return y

    expected = []
    torch.manual_seed(0)
    flow = nfw.trace(Net().eval(), torch.randn(1, 3, 20, 20))
    (summary,) = flow.summary("conv")
    y = expected[0]
    assert (summary.min, summary.max) == (y.min().item(), y.max().item())
    kept = flow.capture.outputs[flow.stage("conv").index][0].retained
    mean = F.adaptive_avg_pool2d(y[0].mean(0, keepdim=True), kept.parts["mean"].shape)[0]
    np.testing.assert_allclose(kept.values("mean"), mean.numpy(), rtol=2e-3, atol=1e-5)


def test_the_build_without_a_compiler_builds_nothing_and_a_failing_one_says_why(tmp_path,
                                                                              monkeypatch):
    from neural_flow_widget.capture.accelerator import build

    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert build.compiler() is None and build.build(force=True, folder=tmp_path) == []
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("CC")
    if build.compiler() is None:
        pytest.skip("no C compiler here")
    with pytest.raises(RuntimeError, match="failed"):
        build.build(force=True, folder=tmp_path, extra=("-fno-such-flag-at-all",))


def test_slabs_are_recycled_only_when_nothing_carved_from_them_lives(monkeypatch):
    import gc

    from neural_flow_widget.capture.accelerator import slabs

    monkeypatch.setattr(slabs, "_pool", [])
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 8, 3, padding=1)).eval()
    x = torch.randn(2, 3, 32, 32)
    first = nfw.trace(model, x)
    kept = {s.id: first.capture.outputs[s.index][0].retained.values("grid").copy()
            for s in first.stages}
    summary = first.summary("2")[0]
    assert not slabs._pool  # the live flow's slab is not free
    second = nfw.trace(model, -x)  # other values, into other memory
    for s in first.stages:  # the first flow's views still hold its own values
        np.testing.assert_array_equal(
            first.capture.outputs[s.index][0].retained.values("grid"), kept[s.id])
    assert first.summary("2")[0] == summary
    with torch.no_grad():
        assert second.summary("0")[0].max == float(model[0](-x).max())
    del first, kept, summary
    gc.collect()
    assert len(slabs._pool) == 1  # its slab went back to the pool ...
    third = nfw.trace(model, x)  # ... and is written again, not mapped anew
    assert not slabs._pool
    del second, third
    gc.collect()
    assert len(slabs._pool) == 2
    monkeypatch.setattr(slabs, "POOL_BYTES", slabs.SLAB_BYTES)  # keep one free slab at most
    flows = [nfw.trace(model, x) for _ in range(3)]
    del flows
    gc.collect()
    assert len(slabs._pool) == 1


@pytest.mark.parametrize("shape", [(1, 16, 128, 128), (2, 32, 64, 64), (1, 64, 112, 112),
                                   (1, 6, 100, 90), (1, 128, 1024), (2, 64, 520),
                                   (1, 128, 768), (1, 2048, 7, 7), (1, 1501, 7, 7)], ids=str)
def test_both_builds_give_the_same_bits(monkeypatch, shape):
    # the AVX2 build's own loops (horizontal adds, fused pooling) add in the same order
    x = activation(shape, seed=5)
    got = {}
    for name, lib in _variants().items():
        monkeypatch.setattr(_native, "LIB", lib)
        pending, kept = _native.reduce(x, shape[0] - 1, DEFAULT_BUDGET_BYTES)
        got[name] = (pending.resolve(), kept)
    (a, kept_a), (b, kept_b) = got["loaded"], got["base"]
    assert (a.min, a.max, a.mean, a.std) == (b.min, b.max, b.mean, b.std)
    assert kept_a.parts.keys() == kept_b.parts.keys()
    for name in kept_a.parts:
        np.testing.assert_array_equal(kept_a.parts[name], kept_b.parts[name], err_msg=name)


def test_requests_over_a_quarter_slab_get_memory_of_their_own():
    from neural_flow_widget.capture.accelerator import slabs as _slabs

    slabs = _slabs.Slabs()
    small, at, address = slabs.carve(100)
    big, big_at, big_address = slabs.carve(_slabs.SLAB_BYTES // 4 + 1)
    assert big.nbytes == _slabs.SLAB_BYTES // 4 + 1 and big_at == 0 and big is not small
    again, at2, address2 = slabs.carve(100)  # the slab goes on where it was
    assert again is small and at2 == 128 and address2 == address + 128
    x = activation((1, 64, 128, 128))  # a budget above a quarter slab: kept whole, own memory
    kept = _native.reduce(x, 0, 8 << 20)[1]
    assert kept.nbytes > _slabs.SLAB_BYTES // 4
    np.testing.assert_allclose(kept.values("mean"), x[0].mean(0).numpy(), rtol=2e-3, atol=1e-5)
