"""The optional compiled capture path (``capture/accelerator``, ``reduce.c``) against the torch
path it stands in for.

Both builds (baseline and AVX2) are checked where the processor runs them.  Skipped where no
C compiler is found, unless ``NFW_REQUIRE_ACCELERATOR=1`` (``scripts/test.sh`` sets it),
which turns a missing build into a failure.
"""

import ctypes
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import neural_flow_widget as nfw
from neural_flow_widget.capture import accelerator
from neural_flow_widget.capture.accelerator import build
from neural_flow_widget.capture.host import to_host
from neural_flow_widget.capture.plans import rank_rows
from neural_flow_widget.capture.retained import DEFAULT_BUDGET_BYTES, retain_pending
from neural_flow_widget.capture.summary import read_dense, summarise_pending

if accelerator.library() is None and os.environ.get("NFW_REQUIRE_ACCELERATOR") == "1":
    raise RuntimeError(
        f"NFW_REQUIRE_ACCELERATOR=1 but the compiled capture path is not "
        f"available: {accelerator.status()}"
    )
pytestmark = pytest.mark.skipif(
    accelerator.library() is None, reason="the compiled path is not available (no C compiler)"
)


def _builds() -> dict:
    """The build in use and, where the processor runs another one, that one too."""
    libs = {"loaded": accelerator.library()}
    libs["base"] = accelerator.open_library(build.build(("base",))[0])
    return libs


@pytest.fixture(params=["loaded", "base"])
def fast(request):
    """A reducer on one build."""
    return accelerator.Reducer(_builds()[request.param])


def reduced(reducer, x, sample, budget):
    made = reducer.reduce(x, sample, budget)
    return made.result()[:2] if made is not None else None


def torch_path(x, sample, budget):
    d = read_dense(x)
    summary, kept = summarise_pending(d), retain_pending(d, sample=sample, budget_bytes=budget)
    to_host([summary, kept])
    return summary, kept.result()


def test_a_build_of_another_version_is_refused_not_called(monkeypatch):
    path = build.build()[0]
    assert accelerator.open_library(path) is not None
    monkeypatch.setattr(accelerator, "_VERSION", accelerator._VERSION + 1)
    with pytest.raises(OSError, match="another version"):
        accelerator.open_library(path)


def test_a_build_whose_parameter_structs_differ_is_refused(monkeypatch):
    """The mirrors of reduce.c's ImageParams / SequenceParams are checked field for field
    by size: a mirror one field short (what a parameter added in C alone would leave) is
    refused at load, never called with a wrong layout."""
    path = build.build()[0]
    fields = accelerator.params.ImageParams._fields_[:-1]
    short = type("ImageParams", (ctypes.Structure,), {"_fields_": fields})
    monkeypatch.setattr(accelerator, "PARAMS", {short: 0, accelerator.params.SequenceParams: 1})
    with pytest.raises(OSError, match="lays out ImageParams otherwise"):
        accelerator.open_library(path)


def test_the_parameters_are_the_plan_of_the_torch_path():
    """The compiled path's sizes come from the same plan objects as the torch path's."""
    from neural_flow_widget.capture.plans import image_plan

    plan = accelerator.params.plan_of((2, 16, 128, 128), DEFAULT_BUDGET_BYTES)
    image = image_plan(16, 128, 128, DEFAULT_BUDGET_BYTES)
    p = plan.params
    assert (p.gh, p.gw, p.mh, p.mw, p.k) == (*image.grid, *image.mean, image.k)
    assert [name for name, *_ in plan.parts] == [name for name, *_ in image.parts()]


@pytest.mark.slow
def test_it_is_compiled_on_first_use_into_a_per_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NFW_ACCELERATOR_DIR", raising=False)
    monkeypatch.setattr(accelerator, "_state", dict(accelerator._state, loaded=False))
    assert not list(tmp_path.rglob("*.so"))
    assert accelerator.library() is not None
    (built,) = tmp_path.rglob("*.so")
    assert built.parent.parent == tmp_path / "neural_flow_widget" / "accelerator"
    assert "in use" in accelerator.status() and str(built) in accelerator.status()


def test_the_switch_turns_it_off_and_capture_still_works(monkeypatch):
    monkeypatch.setattr(accelerator, "_state", dict(accelerator._state))
    accelerator.enable(False)
    assert accelerator.reducer() is None and "off" in accelerator.status()
    x = torch.randn(1, 3, 9, 9)
    flow = nfw.trace(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)), x)
    (summary,) = flow.summary("0")
    assert summary.numel == 4 * 49 and flow.capture.outputs[0][0].retained.layout == "image"


def activation(shape, seed=0, spread=1.0):
    """Random values whose channels (axis 1) differ clearly in mean |x|, with some zeros."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g) * spread
    if len(shape) == 4:
        t *= torch.linspace(0.2, 3.0, shape[1])[torch.randperm(shape[1], generator=g)][
            :, None, None
        ]
    return torch.relu(t + 0.3 * spread) - 0.1 * spread


SHAPES = [
    (1, 64, 112, 112), (1, 256, 14, 14), (2, 512, 7, 7), (1, 2048, 7, 7),  # ResNet
    (3, 16, 128, 128), (1, 3, 37, 53), (1, 5, 9, 300), (1, 1, 1, 1), (1, 7, 1, 5),
    (2, 10, 8, 8), (1, 4, 61, 3), (1, 1501, 7, 7), (1, 3001, 5, 5),
    (1, 6, 1000, 3), (1, 2, 701, 11), (1, 9, 97, 89),  # bands of several windows, shared rows
    (1, 128, 768), (2, 77, 300), (1, 5000, 64), (1, 1, 1), (4, 3, 1000),  # sequences
    (1, 128, 1024), (2, 64, 520),  # columns pooled in fours and in pairs (and a tail)
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("budget", [DEFAULT_BUDGET_BYTES, 16_384])
def test_compiled_reduction_equals_the_torch_path(fast, shape, budget):
    x = activation(shape)
    sample = shape[0] - 1
    made = reduced(fast, x, sample, budget)
    if made is None:  # too many channels for this budget: the torch path keeps a vector
        assert len(shape) == 4 and torch_path(x, sample, budget)[1].layout == "vector"
        return
    (pending, kept), (slow_pending, slow) = made, torch_path(x, sample, budget)
    got, want = pending.resolve(), slow_pending.resolve()
    assert (got.min, got.max) == (want.min, want.max)
    assert got.mean == pytest.approx(want.mean, rel=1e-6, abs=1e-7)
    assert got.std == pytest.approx(want.std, rel=1e-5)
    # the same chunk sample: the sampled fields agree exactly
    assert (got.mean_abs, got.zero_fraction, got.sampled) == (
        want.mean_abs,
        want.zero_fraction,
        want.sampled,
    )
    np.testing.assert_array_equal(got.hist_counts, want.hist_counts)
    assert (got.shape, got.dtype, got.kind, got.numel) == (
        want.shape,
        want.dtype,
        want.kind,
        want.numel,
    )
    assert (kept.layout, kept.shape, kept.dtype, kept.sample, kept.note) == (
        slow.layout,
        slow.shape,
        slow.dtype,
        slow.sample,
        slow.note,
    )
    assert list(kept.parts) == list(slow.parts)
    assert kept.nbytes == slow.nbytes <= budget
    for name, part in kept.parts.items():
        other = slow.parts[name]
        assert (part.dtype, part.shape) == (other.dtype, other.shape), name
        assert not part.flags.writeable, name
        if name == "top_channels":
            np.testing.assert_array_equal(part, other)
        else:  # float16 maps (under other scales): within a rounding step of float16
            np.testing.assert_allclose(
                kept.values(name), slow.values(name), rtol=2e-3, atol=1e-6, err_msg=name
            )


@pytest.mark.parametrize(
    "shape", [(1, 6, 100, 90), (2, 40, 66, 34), (1, 2000, 8, 8), (1, 3000, 7, 5)], ids=str
)
def test_pooled_parts_equal_adaptive_avg_pool(fast, shape):
    x = activation(shape, seed=3)
    _, kept = reduced(fast, x, 1 if shape[0] > 1 else 0, DEFAULT_BUDGET_BYTES)
    s = x[1 if shape[0] > 1 else 0]
    grid = F.adaptive_avg_pool2d(s, kept.parts["grid"].shape[1:])
    np.testing.assert_allclose(kept.values("grid"), grid.numpy(), rtol=2e-3, atol=1e-5)
    mean = F.adaptive_avg_pool2d(s.mean(0, keepdim=True), kept.parts["mean"].shape)[0]
    np.testing.assert_allclose(kept.values("mean"), mean.numpy(), rtol=2e-3, atol=1e-5)
    assert kept.parts["grid"][0].size < s[0].numel()  # pooled, not copied
    if "top" not in kept.parts:
        return
    channels = kept.parts["top_channels"]
    step = rank_rows(*s.shape)  # ranked on these rows
    ranked = s[:, step // 2 :: step].abs().mean((1, 2)).argsort(descending=True)[: len(channels)]
    assert channels.tolist() == ranked.tolist()
    top = F.adaptive_avg_pool2d(s[channels.tolist()], kept.parts["top"].shape[1:])
    np.testing.assert_allclose(kept.values("top"), top.numpy(), rtol=2e-3, atol=1e-5)


def test_sequence_parts_equal_norms_and_pooling(fast):
    x = activation((2, 300, 700), seed=4)
    _, kept = reduced(fast, x, 1, DEFAULT_BUDGET_BYTES)
    tokens = F.adaptive_avg_pool2d(x[1][None], kept.parts["tokens"].shape)[0]
    np.testing.assert_allclose(kept.values("tokens"), tokens.numpy(), rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(kept.values("norms"), x[1].norm(dim=1).numpy(), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 8, 20, 20), (2, 300, 40), (1, 64, 14, 14)], ids=str)
@pytest.mark.parametrize("spread", [1e30, 1e6, 1e-5, 1e-30, 1e-40])
def test_large_and_tiny_values_keep_their_size_under_a_float16_scale(fast, shape, spread):
    x = activation(shape, spread=spread)
    (_, kept), (_, slow) = (
        reduced(fast, x, 0, DEFAULT_BUDGET_BYTES),
        torch_path(x, 0, DEFAULT_BUDGET_BYTES),
    )
    assert kept.scales and set(kept.scales) == {
        n for n, a in kept.parts.items() if a.dtype == np.float16
    }
    for name in kept.scales:
        np.testing.assert_allclose(
            kept.values(name), slow.values(name), rtol=2e-3, atol=1e-3 * spread
        )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_inf_fall_back_to_the_torch_path_that_counts_them(fast, bad):
    x = activation((1, 4, 10, 10))
    x[0, 2, 3, 3] = bad
    assert fast.reduce(x, 0, DEFAULT_BUDGET_BYTES) is None
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.ReLU())
    (summary,) = nfw.trace(model, x).summary("0")
    assert (summary.nan, summary.posinf, summary.neginf) == (
        int(math.isnan(bad)),
        int(bad == math.inf),
        int(bad == -math.inf),
    )
    assert summary.max == x[torch.isfinite(x)].max().item()


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(1, 4, 8, 8, dtype=torch.float64),
        lambda: torch.randn(1, 4, 8, 8).half(),
        lambda: torch.randn(1, 4, 8, 8).to(memory_format=torch.channels_last),
        lambda: torch.randn(1, 8, 6).transpose(1, 2),
        lambda: torch.randn(4, 8),
        lambda: torch.randn(1, 2, 3, 4, 5),
        lambda: torch.zeros(0, 3, 4),
    ],
    ids=["float64", "float16", "channels-last", "transposed", "2-D", "5-D", "empty"],
)
def test_other_tensors_take_the_torch_path(make):
    assert accelerator.reduce(make(), 0, DEFAULT_BUDGET_BYTES) is None


def test_a_tensor_subclass_takes_the_torch_path():
    class Tagged(torch.Tensor):
        pass

    assert accelerator.reduce(torch.randn(1, 4, 8, 8).as_subclass(Tagged), 0, 4096 * 64) is None


@pytest.mark.parametrize("shape", [(1, 8, 20, 20), (1, 30, 16)], ids=str)
def test_a_batch_of_one_broadcasts_like_the_torch_path(shape):
    x = activation(shape)
    (_, kept, _), (_, slow) = (
        accelerator.reduce(x, 3, DEFAULT_BUDGET_BYTES),
        torch_path(x, 3, DEFAULT_BUDGET_BYTES),
    )
    assert kept.sample == slow.sample == 0
    for name in kept.parts:
        np.testing.assert_allclose(kept.values(name), slow.values(name), rtol=2e-3, atol=1e-6)


def test_sample_out_of_range_takes_the_torch_path_and_its_error():
    assert accelerator.reduce(torch.randn(2, 3, 4, 4), 5, DEFAULT_BUDGET_BYTES) is None


def test_float16_conversion_rounds_like_numpy_in_both_builds():
    # every float16 value, the midpoints between neighbours (ties to even), the overflow edge,
    # subnormals and specials
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    midpoints = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    values = np.concatenate(
        [
            finite,
            midpoints.astype(np.float32),
            np.nextafter(midpoints.astype(np.float32), np.float32(np.inf)),
            np.float32(
                [
                    65504,
                    65519.99,
                    65520,
                    1e9,
                    -1e9,
                    np.inf,
                    -np.inf,
                    np.nan,
                    1e-8,
                    -1e-8,
                    2.0**-25,
                    2.0**-24 * 1.5,
                ]
            ),
        ]
    )
    values = values.astype(np.float32)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    for name, lib in _builds().items():
        got = np.empty(len(values), np.float16)
        lib.nfw_to_half(values.ctypes.data, len(values), 1.0, got.ctypes.data)
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
        np.testing.assert_array_equal(
            got[~nan].view(np.uint16), want[~nan].view(np.uint16), err_msg=name
        )


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


def test_the_build_without_a_compiler_builds_nothing_and_a_failing_one_says_why(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert build.compiler() is None and build.build(force=True, folder=tmp_path) == []
    monkeypatch.setattr(accelerator, "_state", dict(accelerator._state, loaded=False))
    assert accelerator.reducer() is None and "no C compiler" in accelerator.status()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("CC")
    if build.compiler() is None:
        pytest.skip("no C compiler here")
    with pytest.raises(RuntimeError, match="failed"):
        build.build(force=True, folder=tmp_path, extra=("-fno-such-flag-at-all",))


@pytest.mark.slow
def test_slabs_are_recycled_only_when_nothing_carved_from_them_lives(monkeypatch):
    import gc

    from neural_flow_widget.capture.accelerator import slabs

    monkeypatch.setattr(slabs, "_pool", [])
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 3, padding=1)
    ).eval()
    x = torch.randn(2, 3, 32, 32)
    first = nfw.trace(model, x)
    kept = {
        s.id: first.capture.outputs[s.index][0].retained.values("grid").copy() for s in first.stages
    }
    summary = first.summary("2")[0]
    assert not slabs._pool  # the live flow's slab is not free
    second = nfw.trace(model, -x)  # other values, into other memory
    for s in first.stages:  # the first flow's views still hold its own values
        np.testing.assert_array_equal(
            first.capture.outputs[s.index][0].retained.values("grid"), kept[s.id]
        )
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


@pytest.mark.parametrize(
    "shape",
    [
        (1, 16, 128, 128),
        (2, 32, 64, 64),
        (1, 64, 112, 112),
        (1, 6, 100, 90),
        (1, 128, 1024),
        (2, 64, 520),
        (1, 128, 768),
        (1, 2048, 7, 7),
        (1, 1501, 7, 7),
    ],
    ids=str,
)
def test_both_builds_give_the_same_bits(shape):
    # the AVX2 build's own loops (horizontal adds, fused pooling) add in the same order
    x = activation(shape, seed=5)
    got = {}
    for name, lib in _builds().items():
        pending, kept = reduced(accelerator.Reducer(lib), x, shape[0] - 1, DEFAULT_BUDGET_BYTES)
        got[name] = (pending.resolve(), kept)
    (a, kept_a), (b, kept_b) = got["loaded"], got["base"]
    assert (a.min, a.max, a.mean, a.std) == (b.min, b.max, b.mean, b.std)
    assert kept_a.parts.keys() == kept_b.parts.keys()
    for name in kept_a.parts:
        np.testing.assert_array_equal(kept_a.parts[name], kept_b.parts[name], err_msg=name)


def test_requests_over_a_quarter_slab_get_memory_of_their_own():
    from neural_flow_widget.capture.accelerator import slabs as _slabs

    slabs = _slabs.Slabs()
    small, _at, address = slabs.carve(100)
    big, big_at, _big_address = slabs.carve(_slabs.SLAB_BYTES // 4 + 1)
    assert big.nbytes == _slabs.SLAB_BYTES // 4 + 1 and big_at == 0 and big is not small
    again, at2, address2 = slabs.carve(100)  # the slab goes on where it was
    assert again is small and at2 == 128 and address2 == address + 128
    x = activation((1, 64, 128, 128))  # a budget above a quarter slab: kept whole, own memory
    kept = accelerator.reduce(x, 0, 8 << 20)[1]
    assert kept.nbytes > _slabs.SLAB_BYTES // 4
    np.testing.assert_allclose(kept.values("mean"), x[0].mean(0).numpy(), rtol=2e-3, atol=1e-5)
