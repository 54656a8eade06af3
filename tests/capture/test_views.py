"""render_view() quantises retained reductions faithfully (retain() itself: test_retain.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from neural_flow_widget.capture.image import DIVERGING, VIRIDIS, View
from neural_flow_widget.capture.retained import retain
from neural_flow_widget.capture.views import available_views, render_view


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _decode(view: View) -> np.ndarray:
    """The values a view's codes stand for."""
    return view.vmin + view.data.astype(np.float64) / 255.0 * (view.vmax - view.vmin)


def _within_quantisation(view: View, want: np.ndarray, extra: float = 0.0) -> None:
    """Values inside [vmin, vmax] come back within one code step (plus ``extra``)."""
    step = (view.vmax - view.vmin) / 255.0
    inside = (want >= view.vmin) & (want <= view.vmax)
    assert inside.mean() > 0.9
    err = np.abs(_decode(view) - want)[inside]
    assert err.max() <= step + extra


# -- image views ----------------------------------------------------------------------------


def _two_loud_channels() -> torch.Tensor:
    x = torch.randn(2, 32, 24, 24, generator=_gen(4)) * 0.1
    x[0, 5] += 3.0
    x[0, 9] -= 5.0  # louder, and negative
    x[1, 0] += 100.0  # the other sample must not matter
    return x


def test_grid_picks_the_most_active_channels():
    view = render_view(retain(_two_loud_channels()), "grid")
    assert view.channels[:2] == (9, 5)
    assert view.labels[:2] == ("ch 9", "ch 5")
    assert view.data.shape[0] == 16 and view.data.ndim == 3
    assert view.signed and view.vmin == -view.vmax


def test_first_view_shows_the_first_sixteen_channels_in_order():
    view = render_view(retain(_two_loud_channels()), "first")
    assert view.channels == tuple(range(16))


def test_channel_view_values_and_resolution():
    x = torch.randn(1, 64, 128, 128, generator=_gen(5))
    x[0, 7] *= 4  # the most active channel: kept sharp
    kept = retain(x)
    assert 7 in kept.parts["top_channels"]
    sharp = render_view(kept, "channel", channel=7)
    h, w = sharp.data.shape
    assert h > kept.parts["grid"].shape[1]
    assert "most active" in sharp.note and f"{h}x{w}" in sharp.note
    want = F.adaptive_avg_pool2d(x[0, 7][None], (h, w))[0].numpy()
    _within_quantisation(sharp, want, extra=2e-3 * np.abs(want).max())  # + float16 rounding
    quiet = int(np.argmin(kept.parts["channel_mean_abs"]))
    coarse = render_view(kept, "channel", channel=quiet)
    assert coarse.data.shape == kept.parts["grid"].shape[1:]
    assert "grid resolution" in coarse.note
    assert render_view(kept, "channel").channels == (7,)  # default: the most active


def test_channel_out_of_range_names_the_valid_range():
    kept = retain(torch.randn(1, 12, 8, 8, generator=_gen(6)))
    message = r"channel=12 is out of range for 12 channels; use 0\.\.11"
    with pytest.raises(ValueError, match=message):
        render_view(kept, "channel", channel=12)
    with pytest.raises(ValueError, match="out of range"):
        render_view(kept, "channel", channel=-1)


def test_mean_view_is_the_mean_over_channels():
    x = torch.rand(1, 6, 16, 16, generator=_gen(7)) + 1.0
    view = render_view(retain(x), "mean")
    assert not view.signed and view.data.shape == (16, 16)
    _within_quantisation(view, x[0].mean(0).numpy(), extra=1e-3)


# -- sequence and vector views --------------------------------------------------------------


def test_tokens_and_norms_of_a_short_sequence():
    x = torch.randn(2, 5, 8, generator=_gen(9))
    kept = retain(x)
    assert available_views(kept) == ("tokens", "norms")
    tokens = render_view(kept)
    assert tokens.kind == "tokens" and tokens.axes == ("token", "feature")
    assert tokens.data.shape == (5, 8) and "full resolution" in tokens.note
    _within_quantisation(tokens, x[0].numpy(), extra=5e-3)
    norms = render_view(kept, "norms")
    assert norms.data.shape == (1, 5) and not norms.signed
    _within_quantisation(norms, x[0].norm(dim=1).numpy()[None])


def test_vector_values_and_topk():
    x = torch.randn(2, 300, generator=_gen(10))
    kept = retain(x)
    assert available_views(kept) == ("values", "topk")
    top = render_view(kept, "topk")
    want = np.argsort(-np.abs(x[0].numpy()), kind="stable")[:16]
    assert [int(label[1:]) for label in top.labels] == want.tolist()
    _within_quantisation(top, x[0].numpy()[want][None])
    values = render_view(kept)
    assert values.data.shape == (1, 300) and "first 300 of 300" in values.note


def test_empty_tensor_has_no_views():
    kept = retain(torch.empty(0, 3))
    assert kept.layout == "empty" and available_views(kept) == () and kept.nbytes == 0
    with pytest.raises(ValueError, match="empty"):
        render_view(kept)


def test_unknown_kind_lists_the_available_ones():
    kept = retain(torch.randn(1, 2, 4, 4, generator=_gen(11)))
    with pytest.raises(ValueError, match="available: grid, first, channel, mean"):
        render_view(kept, "tokens")


# -- quantisation and PNG -------------------------------------------------------------------


def test_ramp_round_trips_within_one_code():
    ramp = torch.linspace(0.0, 1.0, 1000)
    view = render_view(retain(ramp), "values")
    assert not view.signed
    assert view.vmin == pytest.approx(0.005, abs=1e-3)
    assert view.vmax == pytest.approx(0.995, abs=1e-3)
    _within_quantisation(view, ramp.numpy()[None])
    assert (view.data[0, :4] == 0).all() and (view.data[0, -4:] == 255).all()  # clipped ends


def test_signed_data_get_a_symmetric_range():
    signed = render_view(retain(torch.linspace(-1.0, 3.0, 500)), "values")
    assert signed.signed and signed.vmin == -signed.vmax
    assert signed.vmax == pytest.approx(3.0, abs=0.05)
    zero_code = (0.0 - signed.vmin) / (signed.vmax - signed.vmin) * 255
    assert zero_code == pytest.approx(127.5)
    positive = render_view(retain(torch.linspace(0.5, 3.0, 500)), "values")
    assert not positive.signed and positive.vmin > 0
    negative = render_view(retain(torch.linspace(-3.0, -0.5, 500)), "values")
    assert not negative.signed and negative.vmin < negative.vmax < 0


def test_nan_and_constant_views_do_not_crash():
    x = torch.full((1, 1, 4, 4), float("nan"))
    view = render_view(retain(x), "mean")
    assert (view.data == 0).all() and view.vmin == view.vmax == 0.0
    const = render_view(retain(torch.ones(1, 1, 4, 4)), "mean")
    assert (const.data == 0).all() and const.vmin == const.vmax == 1.0


def test_to_png_decodes_to_the_right_size():
    kept = retain(_two_loud_channels())
    grid = render_view(kept, "grid")
    _n, h, w = grid.data.shape
    image = Image.open(io.BytesIO(grid.to_png()))
    assert image.format == "PNG" and image.mode == "RGBA"
    assert image.size == (4 * w + 3, 4 * h + 3)  # 16 tiles: 4 x 4 with 1-px gaps
    pixels = np.asarray(image)
    assert (pixels[h, :, 3] == 0).all()  # the gap row is transparent
    tile = pixels[:h, :w, :3]
    np.testing.assert_array_equal(tile, DIVERGING[grid.data[0]])
    mean = render_view(kept, "mean")
    gray = Image.open(io.BytesIO(mean.to_png(colormap=False)))
    assert gray.mode == "LA" and gray.size == mean.data.shape[::-1]
    np.testing.assert_array_equal(np.asarray(gray)[..., 0], mean.data)


def test_colormaps():
    assert VIRIDIS.shape == DIVERGING.shape == (256, 3) and VIRIDIS.dtype == np.uint8
    assert VIRIDIS[0].tolist() == [68, 1, 84] and VIRIDIS[-1].tolist() == [253, 231, 37]
    assert (np.diff(VIRIDIS.astype(int).sum(1)) >= -2).all()  # brightens along the map
    centre = DIVERGING[127:129].astype(int)
    assert (centre > 235).all()  # near white at 0
    assert DIVERGING[0, 2] > DIVERGING[0, 0] and DIVERGING[-1, 0] > DIVERGING[-1, 2]


# -- pages of every channel, channels by hand, clipping -------------------------------------


def test_grid_pages_hold_every_channel_ranked_and_in_order():
    signs = torch.randn(1, 40, 12, 12, generator=_gen(12)).sign()
    x = signs * torch.arange(1, 41, dtype=torch.float32)[:, None, None]  # mean |x| = c + 1
    kept = retain(x)
    pages = [render_view(kept, "grid", page=p) for p in range(3)]
    assert [v.page for v in pages] == [0, 1, 2] and {v.pages for v in pages} == {3}
    ranked = [c for v in pages for c in v.channels]
    assert sorted(ranked) == list(range(40))  # every channel, each once
    assert ranked == list(range(39, -1, -1))  # by mean |x|, largest first
    assert "ranks 17-32 by mean |x| of 40 channels" in pages[1].note
    assert render_view(kept, "grid").channels == pages[0].channels  # page 0 is the default
    first = render_view(kept, "first", page=2)
    assert first.channels == tuple(range(32, 40)) and "channels 32-39 of 40" in first.note
    with pytest.raises(ValueError, match=r"page=3 is out of range: 40 channels make 3 page"):
        render_view(kept, "grid", page=3)


def test_grid_tiles_can_be_named_by_hand():
    kept = retain(torch.randn(1, 20, 8, 8, generator=_gen(13)))
    view = render_view(kept, "grid", channels=[7, 3, 19])
    assert view.channels == (7, 3, 19) and view.page is None and view.data.shape[0] == 3
    np.testing.assert_allclose(_decode(view)[1], kept.values("grid")[3], atol=view.vmax / 100)
    with pytest.raises(ValueError, match="name 1 to 16 channels in 0..19"):
        render_view(kept, "grid", channels=[20])


def test_views_count_the_values_their_colour_range_clips():
    x = torch.linspace(0.0, 1.0, 1000)
    x[:3] = -50.0  # three outliers below: beyond the 0.5 percentile, drawn at the end colour
    view = render_view(retain(x), "values")
    assert view.vmin > -1 and view.clipped is not None and 3 <= view.clipped[0] <= 6
    flat = render_view(retain(torch.ones(20)), "values")
    assert flat.clipped == (0, 0)
