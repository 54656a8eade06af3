"""Encoder-decoders built from their configs (no download), in real Chromium at a lecture
hall's sizes, drawn like the figure in the Transformer paper: the encoder in one column on the
left, the decoder in another on the right, both from the top, and the encoder's output entering
the decoder's layers from the side as one line labelled "cross-attention", passing behind no
node (decoder_input_ids no longer loops round the encoder). Whisper and T5 first paint so at
1280 x 720 and 1024 x 768 with names legible from the back row; opened, each stack is the
paper's N× block, the line entering the decoder's cross-attention stage. Screenshots in
test-artifacts/encdec_*.png."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from fixture_models import bart, t5, whisper
from live import open_offline, settle, shoot, tap
from test_unet_u import SEEN, crosses
from test_view_whole import COVERED, check_view

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

#: the model, the encoder's output (the bus' source), the decoder's run and its cross-attention
MODELS = {
    "whisper": (whisper, "model.encoder.layer_norm", "model.decoder.layers.0", "encoder_attn"),
    "t5": (lambda: t5(layers=3), "encoder.dropout#1", "decoder.block.0", "layer.1"),
}

#: the bus labels on screen: [text, px, inside the canvas]
LABELS = """() => {
  const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  return [...document.querySelectorAll(".nfw-bus-label")].map((t) => {
    const r = t.getBoundingClientRect(); const m = t.getScreenCTM();
    return [t.textContent, Math.hypot(m.a, m.b) * parseFloat(getComputedStyle(t).fontSize),
      r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom];
  });
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("encdec")
    for name, (build, *_) in MODELS.items():
        model, inputs = build()
        nfw.NeuralFlowWidget(model, inputs).to_html(out / f"{name}.html")
    return out


def _check(seen, source: str, reader: str | tuple[str, ...]):
    """Two columns, the cross-attention bus between them into `reader`, behind no node."""
    nodes = {n[0]: n for n in seen["nodes"] if n[0]}
    boxes = {sid: (n[2], n[3], n[4], n[5]) for sid, n in nodes.items()}
    encoder = [
        b
        for sid, b in boxes.items()
        if sid.startswith(("encoder", "model.encoder")) or sid == "input:input_features"
    ]
    decoder = [b for sid, b in boxes.items() if sid.startswith(("decoder", "model.decoder"))]
    assert encoder and decoder
    assert max(b[2] for b in encoder) < min(b[0] for b in decoder), "the columns overlap"
    [bus] = [line for line in seen["lines"] if line[0] == "bus" and line[1] == source]
    taps = [line for line in seen["lines"] if line[0] == "merge" and line[2].endswith(reader)]
    assert taps, reader
    for sid, box in boxes.items():
        if sid in (source,) or sid.endswith(reader):
            continue
        assert not crosses(bus[3], box), f"the cross-attention line passes behind {sid}"
        for t in taps:
            assert not crosses(t[3], box), f"its tap passes behind {sid}"
    # decoder_input_ids goes down its own column: no line from it crosses the encoder
    lines = [line for line in seen["lines"] if line[1] == "input:decoder_input_ids"]
    assert lines
    for line in lines:
        for box in encoder:
            assert not crosses(line[3], box), "decoder_input_ids loops round the encoder"


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_first_paint_two_columns_and_one_cross_attention_bus(browser, pages, name, width, height):
    _, source, run, cross = MODELS[name]
    context, page, errors = open_offline(browser, pages / f"{name}.html", width, height)
    page.wait_for_selector(".nfw-bus-label", timeout=15_000)
    seen = page.evaluate(SEEN)
    labels = page.evaluate(LABELS)
    shoot(page, f"encdec_{name}_{width}x{height}")
    # into the folded run, or where the stacks open one level (T5: its columns wrapped into
    # bands), into the first layer's cross-attention
    _check(seen, source, (run, f"{run}.{cross}"))
    assert [t for t, _, _ in labels] == ["cross-attention"], labels
    assert all(inside and px >= 9 for _, px, inside in labels), labels
    for sid, kind, *_, px, inside in seen["nodes"]:
        assert inside, sid
        assert px >= (12 if kind in ("stage", "fold") else 11), (sid, px)
    context.close()
    assert errors == []


@pytest.mark.parametrize("name", list(MODELS))
def test_opened_each_stack_is_the_n_times_block_and_the_bus_enters_the_cross_attention(
    browser, pages, name
):
    _, source, run, cross = MODELS[name]
    context, page, errors = open_offline(browser, pages / f"{name}.html", 1920, 1080)
    page.wait_for_selector(".nfw-bus-label", timeout=15_000)
    encoder_run = run.replace("decoder", "encoder")
    for key in (run, encoder_run):
        if page.locator(f'.nfw-stacked[data-key="k:{key}"]').count() == 0:
            tap(page, f'[data-action][data-key="f:{key}"]')
            page.wait_for_selector(f'.nfw-stacked[data-key="k:{key}"]', timeout=10_000)
    settle(page)
    seen = page.evaluate(SEEN)
    shoot(page, f"encdec_{name}_stacks_1920x1080")
    assert page.locator(".nfw-stacked").count() == 2
    _check(seen, source, f"{run}.{cross}")
    context.close()
    assert errors == []


#: Whisper's sublayers, each one node on first paint (by the stage of its output)
SUBLAYERS = [
    "model.encoder.layers.0.self_attn",
    "model.encoder.layers.0.fc2",
    "model.decoder.layers.0.self_attn",
    "model.decoder.layers.0.encoder_attn",
    "model.decoder.layers.0.fc2",
]


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_whisper_first_paints_both_stacks_open_each_sublayer_one_node(
    browser, pages, width, height
):
    """Whisper's layers hold their norms and their MLP (fc1, activation_fn, fc2) as children of
    the layer itself: opened one level, a decoder layer is eleven rows, too tall for the canvas
    at 12 px (the stacks stayed folded). The first view draws each sublayer (the children before
    a residual add) as one node beside the stream's (+): self-attention, cross-attention, MLP,
    as the paper's figure; a click on one inspects its output's stage (the attention's maps), its
    (+) draws its members."""
    context, page, errors = open_offline(browser, pages / "whisper.html", width, height)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    settle(page)
    assert page.locator(".nfw-stacked").count() == 2
    seen = page.evaluate(SEEN)
    nodes = {n[0]: n for n in seen["nodes"] if n[0]}
    shoot(page, f"encdec_whisper_sublayers_{width}x{height}", pointer_away=True)
    for sid in SUBLAYERS:
        assert sid in nodes, sorted(nodes)
    assert "model.decoder.layers.0.fc1" not in nodes
    words = page.text_content('[data-stage-id="model.decoder.layers.0.fc2"]')
    assert "fc1 → activation_fn → fc2" in words and "Linear → GELUActivation → Linear" in words
    # the residual stream's (+): two a layer in the encoder, three in the decoder, and the
    # embeddings' sums
    assert page.locator(".nfw-junction").count() >= 2 + 3 + 2
    for sid, kind, *_, px, inside in seen["nodes"]:
        assert inside, sid
        assert px >= (12 if kind in ("stage", "fold") else 11), (sid, px)
    # a click: the attention's own data (its maps), the sublayer still one node
    attention = "model.decoder.layers.0.encoder_attn"
    tap(page, f'.nfw-node[data-stage-id="{attention}"]')
    page.wait_for_function(
        f"() => document.querySelector('.nfw-ins-title b')?.textContent === {attention!r}"
    )
    page.click('.nfw-tab[data-view="attention"]')
    page.wait_for_selector('canvas[data-view-kind="attention"]', timeout=15_000)
    assert page.locator(f'.nfw-node[data-kind="fold"][data-stage-id="{attention}"]').count() == 1
    # its (+): the norm before it drawn, the attention a stage of its own
    tap(page, f'[data-action][data-key="f:{attention}"]')
    page.wait_for_selector(
        '.nfw-node[data-stage-id="model.decoder.layers.0.encoder_attn_layer_norm"]', timeout=10_000
    )
    assert page.locator(f'.nfw-node[data-kind="stage"][data-stage-id="{attention}"]').count() == 1
    context.close()
    assert errors == []


def test_whisper_playback_steps_each_sublayer_with_its_data_in_the_inspector(browser, pages):
    """Play walks the encoder's stack layer by layer; a sublayer drawn as one node is one
    step, its output's stage (the attention) in the inspector (a fold's step showed none: the
    inspector kept the step before)."""
    context, page, errors = open_offline(browser, pages / "whisper.html", 1280, 720)
    page.wait_for_selector(".nfw-stacked", timeout=15_000)
    page.click(".nfw-play")
    where = ""
    for _ in range(12):
        page.keyboard.press("ArrowRight")
        settle(page)
        where = page.locator(".nfw-where").text_content() or ""
        if where.endswith("model.encoder.layers.0.self_attn"):
            break
    assert where.endswith("model.encoder.layers.0.self_attn"), where
    page.wait_for_function(
        "() => document.querySelector('.nfw-ins-title b')?.textContent"
        " === 'model.encoder.layers.0.self_attn'"
    )
    current = '.nfw-node[data-stage-id="model.encoder.layers.0.self_attn"][data-kind="fold"]'
    assert page.locator(current).count() == 1
    context.close()
    assert errors == []


@pytest.fixture(scope="module")
def bart_page(tmp_path_factory):
    """BART given input_ids alone (as a user calls it): the decoder reads them shifted right
    (shift_tokens_right), so the one input feeds both the encoder and the decoder."""
    pytest.importorskip("transformers")
    model, inputs = bart(layers=3)
    path = tmp_path_factory.mktemp("encdec_bart") / "bart.html"
    nfw.NeuralFlowWidget(model, {"input_ids": inputs["input_ids"]}).to_html(path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_one_input_feeding_encoder_and_decoder(browser, bart_page, width, height):
    """At 1280 x 720 BART stands in two columns, its decoder's embeddings in the decoder's
    (they stood above the encoder, the lines to the decoder crossing it). Either way the whole
    model in view, no name cut, no label under a node, and no line from the input behind a
    node."""
    shot = f"encdec_bart_one_input_{width}x{height}"
    context, page, errors, seen, boxes = _first_view(browser, bart_page, width, height, shot)
    encoder = [b for sid, b in boxes.items() if sid.startswith("model.encoder")]
    decoder = [b for sid, b in boxes.items() if sid.startswith("model.decoder")]
    assert len(encoder) >= 3 and len(decoder) >= 3, boxes.keys()
    if width == 1280:
        assert max(b[2] for b in encoder) < min(b[0] for b in decoder), "not two columns"
        # into the decoder across the top, not down round the encoder
        stack = boxes["model.encoder.layers.0"]
        for _, src, dst, pts in seen["lines"]:
            if src == "input:input_ids" and dst.startswith("model.decoder"):
                assert max(pts[1::2]) < stack[1], f"input_ids' line to {dst} goes round the encoder"
    _labels_clear(page, boxes)  # (at 1024 its "cross-attention" in two lines: "cross-")
    lines = [(dst, pts) for _, src, dst, pts in seen["lines"] if src == "input:input_ids"]
    assert len(lines) >= 2, seen["lines"]  # into the encoder and the decoder
    for dst, pts in lines:
        for sid, box in boxes.items():
            if sid != "input:input_ids" and not dst.endswith(sid):
                assert not crosses(pts, box), f"input_ids' line to {dst} passes behind {sid}"
    context.close()
    assert errors == []


#: the bus labels' boxes on screen: [text, left, top, right, bottom]
LABEL_BOXES = """() => [...document.querySelectorAll(".nfw-bus-label")].map((t) => {
  const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom];
})"""


def _first_view(browser, path, width: int, height: int, shot: str):
    """The page's first view, whole and legible: (context, page, errors, seen, boxes by id)."""
    context, page, errors = open_offline(browser, path, width, height)
    seen = page.evaluate(SEEN)
    shoot(page, shot)
    check_view(page.evaluate(COVERED), "first", whole=True)
    boxes = {n[0]: (n[2], n[3], n[4], n[5]) for n in seen["nodes"] if n[0]}
    return context, page, errors, seen, boxes


def _no_line_behind(seen, boxes) -> None:
    """No drawn line passes behind a node other than its ends."""
    for _, src, dst, pts in seen["lines"]:
        for sid, box in boxes.items():
            if sid != src and not dst.endswith(sid) and not src.endswith(sid):
                assert not crosses(pts, box), f"{src} -> {dst} passes behind {sid}"


def _labels_clear(page, boxes) -> None:
    """Every bus label on screen runs under no node (its real text, as drawn)."""
    for text, *r in page.evaluate(LABEL_BOXES):
        for sid, b in boxes.items():
            clear = r[2] <= b[0] or r[0] >= b[2] or r[3] <= b[1] or r[1] >= b[3]
            assert clear, f"the label {text!r} runs under {sid}"


@pytest.mark.parametrize(
    ("name", "width", "height"), [("nn_transformer", 1024, 768), ("t5", 860, 520)]
)
def test_folded_stacks_stand_as_two_columns(browser, tmp_path, name, width, height):
    """Where the stacks stay folded (nn.Transformer at 1024 x 768; T5 in a notebook's cell),
    the decoder continues its own target (its flow edge, from the top of its column) and the
    encoder's output enters it from the side: the encoder's column left, the decoder's right,
    no line behind a node, and a "cross-attention" label (nn.Transformer's memory, read by each
    folded layer) clear of every node: a label longer than its line's stretch ran under the
    encoder's norm ("ross-attention")."""
    pytest.importorskip("transformers")
    from fixture_models import nn_transformer

    model, inputs = nn_transformer(layers=6) if name == "nn_transformer" else t5(layers=3)
    nfw.NeuralFlowWidget(model, inputs).to_html(tmp_path / "page.html")
    shot = f"encdec_{name}_folded_{width}x{height}"
    context, page, errors, seen, boxes = _first_view(
        browser, tmp_path / "page.html", width, height, shot
    )
    encoder = [b for sid, b in boxes.items() if sid.startswith("encoder")]
    decoder = [b for sid, b in boxes.items() if sid.startswith("decoder")]
    assert encoder and decoder, sorted(boxes)
    assert max(b[2] for b in encoder) < min(b[0] for b in decoder), "not two columns"
    target = "input:1" if name == "nn_transformer" else "input:decoder_input_ids"
    assert boxes[target][0] > max(b[2] for b in encoder), f"{target} not in the decoder's column"
    _no_line_behind(seen, boxes)
    _labels_clear(page, boxes)
    if name == "nn_transformer":
        assert [t for t, *_ in page.evaluate(LABEL_BOXES)] == ["cross-attention"]
    context.close()
    assert errors == []


def test_one_column_where_two_do_not_fit_the_target_enters_above_its_decoder(browser, tmp_path):
    """nn.Transformer in a narrow notebook cell (600 x 520): its two columns do not fit, so
    they stand as one. The decoder's target (its flow edge) stands just above the decoder,
    under the encoder's column, not at the top beside the source with its line run down round
    the encoder; the cross-attention label covers no node (it lay over the encoder's norm)."""
    from fixture_models import nn_transformer

    model, inputs = nn_transformer(layers=6)
    nfw.NeuralFlowWidget(model, inputs).to_html(tmp_path / "page.html")
    shot = "encdec_nn_transformer_one_column_600x520"
    context, page, errors, seen, boxes = _first_view(
        browser, tmp_path / "page.html", 600, 520, shot
    )
    assert boxes["input:1"][1] > boxes["encoder.norm"][3], "the target not under the encoder"
    _no_line_behind(seen, boxes)
    _labels_clear(page, boxes)
    context.close()
    assert errors == []


#: per model: the decoder's first cross-attention, and its projections (query, key, value)
OPENED = {
    "whisper": ("model.decoder.layers.0.encoder_attn", "q_proj", "k_proj", "v_proj"),
    "t5": ("decoder.block.0.layer.1.EncDecAttention", "q", "k", "v"),
}

#: click the toggle of the deepest node drawn that holds `target` (or is it); its stage id
OPEN_TOWARDS = """(target) => {
  const toggles = [...document.querySelectorAll(
    ".nfw-node[data-kind='stage'] [data-action], .nfw-node[data-kind='fold'] [data-action]")]
    .map((t) => [t, t.closest(".nfw-node").dataset.stageId || ""])
    .filter(([, id]) => id && (id === target || target.startsWith(id + ".")))
    .sort((a, b) => b[1].length - a[1].length);
  if (!toggles.length) return null;
  toggles[0][0].dispatchEvent(new MouseEvent("click", { bubbles: true }));
  return toggles[0][1];
}"""


@pytest.mark.parametrize("name", list(OPENED))
@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_cross_attention_opened_to_its_projections_keeps_the_two_columns(
    browser, pages, name, width, height
):
    """The decoder's cross-attention opened to its projections (WhisperAttention, T5Attention:
    ``q`` of the decoder's stream, ``k`` and ``v`` of the encoder's output): the keys and
    values read the encoder alone, yet the encoder stays the column on the left and its output
    enters them from the side as the one "cross-attention" line, passing behind no node; the
    queries come down the decoder's own stream."""
    _, source, *_ = MODELS[name]
    attn, q, k, v = OPENED[name]
    context, page, errors = open_offline(browser, pages / f"{name}.html", width, height)
    for _ in range(4):  # (the sublayer, its part, the attention)
        if page.locator(f'.nfw-node[data-stage-id="{attn}.{k}"]').count():
            break
        assert page.evaluate(OPEN_TOWARDS, attn), f"no toggle towards {attn}"
        settle(page)
    seen = page.evaluate(SEEN)
    labels = page.evaluate(LABELS)
    shoot(page, f"encdec_{name}_cross_opened_{width}x{height}")
    boxes = {n[0]: (n[2], n[3], n[4], n[5]) for n in seen["nodes"] if n[0]}
    assert {f"{attn}.{p}" for p in (q, k, v)} <= set(boxes), sorted(boxes)
    assert "cross-attention" in [t for t, _, _ in labels], labels
    # (from the encoder's last stage, or the encoder drawn as one node to fit: Whisper at 1024)
    drawn = next(s for s in boxes if s == source or source.startswith(s + "."))
    [bus] = [line for line in seen["lines"] if line[0] == "bus" and line[1] == drawn]
    taps = {line[2]: line for line in seen["lines"] if line[0] != "bus" and line[1] == drawn}
    readers = {f"{attn}.{k}", f"{attn}.{v}"}
    assert readers <= set(taps), sorted(taps)
    for sid, box in boxes.items():
        if sid == drawn:
            continue
        assert not crosses(bus[3], box), f"the cross-attention line passes behind {sid}"
        for reader in readers - {sid}:
            assert not crosses(taps[reader][3], box), f"its tap into {reader} passes behind {sid}"
    encoder = [b for sid, b in boxes.items() if sid.startswith(("encoder", "model.encoder"))]
    decoder = [b for sid, b in boxes.items() if sid.startswith(("decoder", "model.decoder"))]
    assert encoder and decoder
    assert max(b[2] for b in encoder) < min(b[0] for b in decoder), "the columns overlap"
    context.close()
    assert errors == []


def _vision_encoder_decoder():
    """transformers' VisionEncoderDecoderModel from its configs: ViT (3 layers of width 64 on
    a 32 x 32 image) and GPT-2 (3 layers, ``add_cross_attention``) reading its output."""
    transformers = pytest.importorskip("transformers")
    import torch

    encoder = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=64,
                                     num_hidden_layers=3, num_attention_heads=4,
                                     intermediate_size=128)  # fmt: skip
    decoder = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=3, n_head=4,
                                      add_cross_attention=True, is_decoder=True)  # fmt: skip
    config = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    torch.manual_seed(0)
    model = transformers.VisionEncoderDecoderModel(config).eval()
    return model, {"pixel_values": torch.randn(1, 3, 32, 32),
                   "decoder_input_ids": torch.randint(0, 100, (1, 5))}  # fmt: skip


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_an_image_encoder_s_output_rises_to_the_decoder_s_cross_attention_labelled(
    browser, tmp_path, width, height
):
    """VisionEncoderDecoderModel: ViT's final layernorm, at the bottom of the left column,
    feeds GPT-2's cross-attention (GPT2Block: `crossattention(ln_cross_attn(h),
    encoder_hidden_states)`) higher up the right one. The line rises through the gap between
    the columns, labelled on the canvas, behind no node (it left the layernorm's far side for
    the canvas's edge, its label off the canvas, its tap along the layernorm's top)."""
    model, inputs = _vision_encoder_decoder()
    path = tmp_path / "ved.html"
    nfw.NeuralFlowWidget(model, inputs).to_html(path)
    context, page, errors = open_offline(browser, path, width, height)
    page.wait_for_selector(".nfw-bus-label", timeout=15_000)
    seen = page.evaluate(SEEN)
    labels = page.evaluate(LABELS)
    shoot(page, f"encdec_ved_{width}x{height}")
    check_view(page.evaluate(COVERED), "first", whole=True)
    _check(seen, "encoder.layernorm", ("decoder.transformer.h.0", "h.0.crossattention"))
    assert [t for t, _, _ in labels] == ["cross-attention"], labels
    assert all(inside and px >= 9 for _, px, inside in labels), labels
    context.close()
    assert errors == []
