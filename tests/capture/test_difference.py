"""A - B of two runs' views (capture/difference.py, capture/readings.py): the difference of
what capture kept, at run A's places, on a symmetric diverging range."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget.capture.attention.maps import AttentionMap
from neural_flow_widget.capture.difference import (
    attention_difference,
    difference_view,
)
from neural_flow_widget.capture.meaning import read_output
from neural_flow_widget.capture.readings import reading_difference
from neural_flow_widget.capture.retained import retain
from neural_flow_widget.compare import stage_difference


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _decode(view) -> np.ndarray:
    return view.vmin + view.data.astype(np.float64) / 255.0 * (view.vmax - view.vmin)


def test_grid_difference_is_a_minus_b_at_run_a_tiles():
    a = torch.randn(1, 24, 16, 16, generator=_gen(1))
    b = a.clone()
    b[0, 5] += 2.0  # one channel moved
    kept_a, kept_b = retain(a), retain(b)
    for page in (0, 1):
        d = difference_view(kept_a, kept_b, "grid", page=page)
        shown = d.channels
        assert (
            shown
            == (
                tuple(
                    int(c) for c in np.argsort(-kept_a.values("channel_mean_abs"), kind="stable")
                )[page * 16 : (page + 1) * 16]
            )
        )
        want = kept_a.values("grid")[list(shown)] - kept_b.values("grid")[list(shown)]
        assert d.signed and d.vmin == -d.vmax and d.page == page and d.pages == 2
        step = (d.vmax - d.vmin) / 255
        inside = np.abs(want) <= d.vmax
        assert np.abs(_decode(d) - want)[inside].max() <= step
        if 5 in shown:
            assert (_decode(d)[shown.index(5)] < -1.5).mean() > 0.9  # A - B = -2 there
        assert d.note.startswith("A - B; ")


def test_equal_runs_differ_by_zero_in_the_middle_colour():
    kept = retain(torch.randn(1, 4, 8, 8, generator=_gen(2)))
    d = difference_view(kept, kept, "mean")
    assert d.vmin == d.vmax == 0.0 and (d.data == 128).all()


def test_channel_difference_compares_at_one_resolution():
    a = torch.randn(1, 32, 96, 96, generator=_gen(3))
    a[0, 2] *= 5  # sharp in A
    b = torch.randn(1, 32, 96, 96, generator=_gen(4))
    kept_a, kept_b = retain(a), retain(b)
    assert 2 in kept_a.parts["top_channels"]
    d = difference_view(kept_a, kept_b, "channel", channel=2)
    sharp_in_b = 2 in kept_b.parts["top_channels"]
    side = kept_a.parts["top"].shape[-2:] if sharp_in_b else kept_a.parts["grid"].shape[-2:]
    assert d.data.shape == tuple(side) and d.channels == (2,)


def test_views_without_a_difference_say_why():
    a, b = retain(torch.randn(1, 300, generator=_gen(5))), retain(torch.randn(1, 300))
    with pytest.raises(ValueError, match="topk view is not defined"):
        difference_view(a, b, "topk")
    values = difference_view(a, b, "values")
    assert values.data.shape == (1, 300) and values.signed
    short = retain(torch.randn(1, 7, 16))
    with pytest.raises(ValueError, match="different sizes"):
        difference_view(retain(torch.randn(1, 9, 16)), short, "tokens")


def test_reading_differences():
    mask_a = read_output(torch.full((1, 1, 4, 4), 2.0), "output:0", 0).result()
    mask_b = read_output(torch.full((1, 1, 4, 4), -2.0), "output:0", 0).result()
    d = reading_difference(mask_a, mask_b)
    assert d.kind == "mask" and d.signed
    np.testing.assert_allclose(_decode(d), 0.8808 - 0.1192, atol=d.vmax / 100)
    seg_a = torch.zeros(1, 3, 4, 4)
    seg_a[0, 1] = 5.0
    seg_b = seg_a.clone()
    seg_b[0, 2, :2] = 9.0  # half the pixels change class
    seg = reading_difference(
        read_output(seg_a, "output:0", 0).result(), read_output(seg_b, "output:0", 0).result()
    )
    assert seg.kind == "segmentation" and (seg.data[:2] == 255).all() and (seg.data[2:] == 0).all()
    assert "8 of 16 (50.0%)" in seg.note
    pa = read_output(torch.tensor([[3.0, 1.0, 0.0]]), "logits", 0).result()
    pb = read_output(torch.tensor([[1.0, 3.0, 0.0]]), "logits", 0).result()
    top = reading_difference(pa, pb)
    assert top.kind == "probabilities" and top.channels[:2] in ((0, 1), (1, 0))
    assert top.labels[0].startswith(f"class {top.channels[0]}: ") and "→" in top.labels[0]


def test_attention_difference_is_the_difference_of_the_probabilities():
    wa = np.full((2, 3, 3), 1 / 3, np.float32)
    wb = np.eye(3, dtype=np.float32)[None].repeat(2, 0)
    (d,) = attention_difference(
        [AttentionMap(wa, 3, 3, (1, 1), "sdpa", False)],
        [AttentionMap(wb, 3, 3, (1, 1), "sdpa", False)],
    )
    np.testing.assert_allclose(d.weights, wa - wb)
    with pytest.raises(ValueError, match="2 attention maps here, run B 1"):
        attention_difference([d, d], [d])


def test_stage_difference_of_two_traced_runs():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.rand(1, 3, 16, 16)
    a, b = nfw.trace(model, x), nfw.trace(model, x.flip(-1))
    image = stage_difference(a, b, "input:0")  # the input's reading: its values, not colours
    assert image.kind == "image" and image.signed and "not their colours" in image.note
    grid = stage_difference(a, b, "0", "grid")
    assert grid.kind == "grid" and grid.channels == a.view("0", "grid").channels
    with pytest.raises(ValueError, match="did not run in run B"):
        stage_difference(a, nfw.trace(torch.nn.Sequential(torch.nn.Identity()), x), "1")
