"""The two ends of a model open like stages: a model input's and output's summary and views,
and what they mean (capture/meaning.py), checked against values computed here by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import neural_flow_widget as nfw
from neural_flow_widget import wire
from neural_flow_widget.capture.image import CATEGORICAL
from neural_flow_widget.capture.meaning import read_input, read_output
from neural_flow_widget.capture.readings import meaning_view
from neural_flow_widget.notebook import replies


def seeded(make):
    torch.manual_seed(0)
    return make().eval()


def test_an_image_input_and_a_mask_output_open_like_stages():
    """``input:0`` summarises the tensor the model received; its reading is the picture (each
    channel scaled from its own percentile range); ``output:0`` of a one-channel map is the
    sigmoid of the logits."""
    model = seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 1, 1)))
    x = torch.rand(2, 3, 32, 40)
    x[:, 1] *= 10  # a channel on another scale: scaled on its own
    flow = nfw.trace(model, x)
    (summary,) = flow.summary("input:0")
    assert summary.shape == (2, 3, 32, 40) and summary.max == pytest.approx(float(x.max()))
    assert flow.views("input:0")[0] == "image"
    image = flow.view("input:0")
    assert (image.kind, image.palette, image.data.shape) == ("image", "rgb", (32, 40, 3))
    sample = x[0].numpy()
    for c in range(3):
        lo, hi = np.quantile(sample[c], [0.005, 0.995])
        want = np.clip((sample[c] - lo) / (hi - lo), 0, 1) * 255
        assert np.abs(image.data[..., c].astype(float) - want).max() <= 1.0
    with torch.no_grad():
        logits = model(x)[0, 0].numpy()
    mask = flow.view("output:0")
    assert (mask.kind, mask.vmin, mask.vmax) == ("mask", 0.0, 1.0)
    want = np.rint(255 / (1 + np.exp(-logits)))
    assert np.abs(mask.data.astype(float) - want).max() <= 1.0
    assert "grid" in flow.views("output:0")  # the plain views stay beside the reading
    assert flow.view("output:0", "grid").kind == "grid"


def test_a_mask_already_in_0_1_is_taken_as_given():
    model = nn.Sequential(nn.Conv2d(3, 1, 1), nn.Sigmoid()).eval()
    flow = nfw.trace(model, torch.rand(1, 3, 16, 16))
    assert "as given" in flow.view("output:0").note


def test_class_logits_read_as_probabilities_top_k():
    logits = torch.tensor([[0.0, 3.0, 1.0, -2.0, 2.0], [9.0, 0.0, 0.0, 0.0, 0.0]])
    m = read_output(logits, "output:logits", sample=0).result()
    p = torch.softmax(logits[0], 0)
    order = torch.argsort(p, descending=True)
    assert m.kind == "probabilities"
    assert list(m.indices) == order.tolist()
    np.testing.assert_allclose(m.data, p[order].numpy(), rtol=1e-6)
    view = meaning_view(m)
    assert view.labels[0] == f"class 1: {float(p[1]):.1%}"
    assert view.channels == tuple(order.tolist())
    given = read_output(torch.softmax(logits, 1), "output:0", sample=1).result()
    assert "as given" in given.note and int(given.indices[0]) == 0


def test_a_segmentation_output_reads_the_winning_class_per_pixel():
    logits = torch.zeros(1, 3, 8, 8)
    logits[0, 2, :4] = 5.0  # top half: class 2
    logits[0, 1, 4:] = 5.0  # bottom half: class 1
    view = meaning_view(read_output(logits, "output:0", sample=0).result())
    assert (view.kind, view.palette) == ("segmentation", "categorical")
    assert (view.data[:4] == 2).all() and (view.data[4:] == 1).all()
    assert "2 classes present" in view.note
    png = view.to_png()
    from io import BytesIO

    from PIL import Image

    rgba = np.asarray(Image.open(BytesIO(png)))
    assert tuple(rgba[0, 0, :3]) == tuple(CATEGORICAL[2])


def test_token_ids_and_a_language_models_next_token():
    """GPT-2 from a small config: ``input:input_ids`` reads as its ids, ``output:logits`` as the
    softmax at the last position (the model's own logits, computed here again)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=120)
    config.bos_token_id = config.eos_token_id = 0
    model = seeded(lambda: transformers.GPT2LMHeadModel(config))
    ids = torch.randint(0, 120, (2, 9), generator=torch.Generator().manual_seed(1))
    flow = nfw.trace(model, {"input_ids": ids}, sample=1)
    shown = flow.view("input:input_ids")
    assert shown.kind == "ids" and shown.labels == tuple(str(int(i)) for i in ids[1])
    with torch.no_grad():
        p = torch.softmax(model(input_ids=ids).logits[1, -1], 0)
    nxt = flow.view("output:logits")
    assert nxt.kind == "next token"
    assert nxt.channels == tuple(torch.topk(p, 10).indices.tolist())
    assert nxt.labels[0] == f"id {int(p.argmax())}: {float(p.max()):.1%}"


def test_hidden_states_and_small_inputs_get_no_reading():
    assert read_output(torch.randn(1, 5, 768), "output:last_hidden_state", 0) is None
    assert read_input(torch.randn(4, 7), "input:0", 0) is None  # tabular: the plain views
    assert read_input(torch.randn(1, 3, 4, 4), "input:0", 0) is None  # too small for a picture
    assert read_output(torch.zeros(2, 3, dtype=torch.long), "output:0", 0) is None


def test_the_wire_lists_the_ends_and_answers_clicks_on_them():
    model = seeded(lambda: nn.Sequential(nn.Conv2d(3, 2, 1), nn.Flatten(), nn.Linear(2 * 64, 4)))
    flow = nfw.trace(model, torch.rand(1, 3, 8, 8))
    ends = wire.encode_graph(flow)["ends"]
    assert ends == {
        "input:0": {"shape": [1, 3, 8, 8], "dtype": "float32", "reading": "image"},
        "output:0": {"shape": [1, 4], "dtype": "float32", "reading": "probabilities"},
    }
    reply, buffers = replies.stage_reply(flow, {"stage": "input:0"})
    assert reply["ok"] and reply["view"]["palette"] == "rgb" and reply["view"]["shape"] == [8, 8, 3]
    assert len(buffers[reply["view"]["buffer"]]) == 8 * 8 * 3
    reply, _ = replies.stage_reply(flow, {"stage": "output:0", "view": "values"})
    assert reply["ok"] and reply["view"]["kind"] == "values" and reply["attention"] == []
    reply, _ = replies.stage_reply(flow, {"stage": "output:7"})
    assert not reply["ok"]


def test_a_model_that_changes_its_input_in_place_shows_what_it_was_given():
    class Scale(nn.Module):
        def forward(self, x):
            x.mul_(0)  # (a model may do this; the caller's tensor changes too, as without us)
            return x + 1

    x = torch.full((1, 3, 8, 8), 2.0)
    flow = nfw.trace(Scale(), x.clone())
    assert flow.summary("input:0")[0].max == 2.0


def test_no_tensor_input_and_capture_off_have_no_ends():
    flow = nfw.trace(nn.Linear(2, 2), torch.ones(1, 2), capture=False)
    assert wire.encode_graph(flow)["ends"] == {}
