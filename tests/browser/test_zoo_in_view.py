"""The models people bring (GPT-2, BERT with a mask, Whisper, diffusers' UNet2DConditionModel
small and as Stable Diffusion 1.5 has it, a ResNet-50 written out as torchvision does, ViT,
LLaMA, T5; built from configs, random weights, no download) in Chromium at a lecture hall's
sizes: at first open, after Play, with a block opened, with data on the graph and in Present.
The first view shows every node inside the canvas; after each action no node inside the
canvas is under an overlay, every name is at least 12 px high on screen (long columns wrap
into bands rather than shrink: layout/bands.ts, layout/wrapping.ts), and where the whole
does not fit at that scale, the note beside the minimap counts the nodes out of view. Screenshots in
test-artifacts/zoo_<model>_<size>_<step>.png."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch
from live import STEPPED, open_offline, settle, walk, write_pages

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import fixture_models
import written_out
from test_view_whole import COVERED, check_view

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def _vit():
    transformers = pytest.importorskip("transformers")
    config = transformers.ViTConfig(
        image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=4,
        num_attention_heads=4, intermediate_size=128,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.ViTForImageClassification(config).eval(), torch.randn(1, 3, 32, 32)


def _llama():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=4, intermediate_size=128,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval(), torch.randint(0, 100, (1, 8))


def _resnet50():
    torch.manual_seed(0)
    return written_out.resnet50(classes=10).eval(), torch.randn(1, 3, 64, 64)


def _sd15():
    """Stable Diffusion 1.5's UNet (UNet2DConditionModel's own defaults, text of width 768:
    860 M parameters) on a 32 x 32 latent."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(cross_attention_dim=768).eval()
    inputs = {"sample": torch.randn(1, 4, 32, 32), "timestep": torch.tensor([10]),
              "encoder_hidden_states": torch.randn(1, 8, 768)}  # fmt: skip
    return model, inputs


def _mobilenet_v2():
    torch.manual_seed(0)
    return written_out.MobileNetV2(classes=10).eval(), torch.randn(1, 3, 64, 64)


#: per model: its builder and the block a lecturer opens (a stage id's start; the first block
#: that can open where none matches)
MODELS = {
    "gpt2": (fixture_models.gpt2, "transformer.h.0.attn"),
    "bert": (fixture_models.bert, "encoder.layer.0.attention"),
    "whisper": (fixture_models.whisper, "model.decoder.layers"),
    "unet2d": (lambda: fixture_models.unet2d(levels=4, layers=2), "down_blocks.1"),
    "sd15": (_sd15, "down_blocks.1"),
    "resnet50": (_resnet50, "layer2"),
    "vit": (_vit, "vit.encoder.layer.0.attention"),
    "llama": (_llama, "model.layers.0.self_attn"),
    "t5": (lambda: fixture_models.t5(layers=4), "decoder.block"),
    "mobilenetv2": (_mobilenet_v2, "features.2"),
}

#: the steps after which the whole model must be in view besides the first (Data and Present
#: fit it with pictures or at their larger type, folding what the user opened where needed;
#: diffusers' U, too tall with its pictures under the words, with them beside the words)
WHOLE_AFTER: dict[str, set] = {
    "data": set(MODELS),
    "present": set(MODELS),
    "esc": set(MODELS),
}
#: ... and after Play, where the model fits beside the inspector at 12 px (a model, or a model
#: at a width): the transport on the inspector's top (the graph keeps the canvas's height), the
#: inspector narrowed for the graph laid out beside it (diffusers' U at 1280, its conditioning
#: beside the encoder; at 1024 above it, layout/ushape.ts; SD 1.5's at its real widths too:
#: "CrossAttnDownBlock2D 1×1280×4×4", the skips' gap U_GAP), the walk from the view with its
#: sublayers folded where that fits or shows more (GPT-2 and ViT at 1024: "ln_1 → attn" one
#: node), the groups and stacks away from the step folded where the step does not fit
#: (Whisper's and T5's decoder one node while the walk is in the encoder; BERT's three
#: embeddings one under the other, where beside each other they do not fit: layout/spine.ts
#: sourcesInline, its mask beside the trunk at 1024); the others show the step and what feeds
#: it, the note the rest
#: (MobileNetV2's seventeen blocks beside the inspector: two columns of nine, the last 1 or 2
#: out of view, the note counting them)
WHOLE_AFTER["play"] = {
    "resnet50",
    "llama",
    "gpt2",
    "vit",
    "whisper",
    "t5",
    "unet2d",
    "sd15",
    "bert",
}
#: ... and after opening a block, where it fits with the other open blocks, stacks and
#: sublayers folded (the accordion, its tries wrapped: ViT's layer opened with its attention,
#: two bands beside each other once the embeddings fold; LLaMA's attention opened at both
#: sizes, its rotary embedding no row of its own between the embedding and the stack: it reads
#: no data of the embedding, graph/reads.py), as its last resort the units of a block
#: (model/units.ts: ResNet-50's Bottleneck as conv1 -> bn1 -> relu, ...); a sublayer opened
#: counts (Whisper's decoder self-attention at 1024, the encoder one node)
#: (diffusers' U with a block open is taller than the canvas at 12 px in every arrangement)
WHOLE_AFTER["open"] = set(MODELS) - {"unet2d", "sd15"}

#: the models whose block opened (MODELS) shows an attention's own forward: q, k and v meet
#: in one "attention" pill the output projection reads (GPT-2's fused c_attn through it too;
#: at 1024 its block draws "ln_1 -> attn" as one node, and the click opens that into two)
ATTENTION_OPENED = {("gpt2", 1280), "llama"}

#: the stacks of layers a transformer's first view draws (one "N x" block each)
STACKS = {"gpt2": 1, "bert": 1, "whisper": 2, "vit": 1, "llama": 1, "t5": 2}
#: ... of which open one level (the paper's figure: its sublayers and the residual stream's
#: (+) drawn): an encoder-decoder's columns wrap into bands for it (layout/bands.ts
#: wrapColumns); Whisper's decoder layer (eleven rows open) with each sublayer one node
#: (model/parts.ts)
OPEN_STACKS = {"gpt2": 1, "bert": 1, "whisper": 2, "vit": 1, "llama": 1, "t5": 2}

#: the models with a cross-attention (from their code: the decoder's layers read the encoder's
#: output): only they may draw a bus labelled so (ResNet-50's shortcut from layer3.0 into
#: "Bottleneck × 5" was labelled "cross-attention")
CROSS_ATTENTION = {"whisper", "t5"}

#: the toggle of the block to open: the first whose stage id starts with the prefix, else the
#: first toggle of a stage
TOGGLE = """(prefix) => {
  const toggles = [...document.querySelectorAll(
    ".nfw-node[data-kind='stage'] [data-action], .nfw-node[data-kind='fold'] [data-action]")];
  const t = toggles.find((t) => (t.closest(".nfw-node").dataset.stageId || "").startsWith(prefix))
    ?? toggles[0];
  if (!t) return null;
  t.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  return t.closest(".nfw-node").dataset.stageId;
}"""


def play_three_steps(page):
    """Play, then three steps on with the right arrow, each waited for."""
    page.click(".nfw-play")
    for _ in range(3):
        at = (page.locator(".nfw-where").text_content() or "").split(" /")[0]
        page.keyboard.press("ArrowRight")
        page.wait_for_function(STEPPED, arg=at)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    pytest.importorskip("transformers")
    pytest.importorskip("diffusers")
    builders = {name: build for name, (build, _) in MODELS.items()}
    return write_pages(tmp_path_factory.mktemp("zoo"), builders)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("model", list(MODELS))
def test_every_node_in_view_and_legible_after_each_action(browser, pages, model, width, height):
    context, page, errors = open_offline(browser, pages / f"{model}.html", width, height)
    ARTIFACTS.mkdir(exist_ok=True)
    problems: list[str] = []

    def check(step: str):
        settle(page)
        page.mouse.move(2, 2)
        got = page.evaluate(COVERED)
        page.screenshot(path=str(ARTIFACTS / f"zoo_{model}_{width}x{height}_{step}.png"))
        sizes = f"names {got['px']:.2f}, type {got['small']:.2f}, groups {got['group']:.2f} px"
        print(model, width, step, len(got["out"]), "out,", sizes, "cut:", got["cut"])
        wanted = WHOLE_AFTER.get(step, set())
        whole = step == "first" or model in wanted or (model, width) in wanted
        try:
            check_view(got, step, whole=whole)
        except AssertionError as e:
            problems.append(str(e))
        labels = page.locator(".nfw-bus-label").all_text_contents()
        if "cross-attention" in labels and model not in CROSS_ATTENTION:
            problems.append(f"{step}: a bus labelled cross-attention in {model}")

    check("first")
    first = sorted(
        page.evaluate("() => [...document.querySelectorAll('.nfw-node')].map((n) => n.dataset.key)")
    )
    # a transformer's first view draws its blocks as the paper's "N x" figure: one stack (or
    # fold) per stack of layers, an encoder-decoder's two side by side
    stacks = page.locator(".nfw-stacked, .nfw-node[data-kind='fold']").count()
    assert stacks >= STACKS.get(model, 0), f"{stacks} stacks on first paint"
    open_stacks = page.locator(".nfw-stacked").count()
    assert open_stacks >= OPEN_STACKS.get(model, 0), f"{open_stacks} stacks open on first paint"
    if open_stacks:
        plus = page.locator(".nfw-junction, .nfw-residual").count()
        assert plus > 0, "no (+) of the residual stream (a junction, a residual block's mark)"
    play_three_steps(page)
    check("play")
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")  # the inspector playback opened
    settle(page)  # (the view playback began from, laid out again: what a user sees and clicks)
    # Esc gives back the first view as it was, not a level chosen for the canvas beside the
    # inspector playback had open
    after = page.evaluate(
        "() => [...document.querySelectorAll('.nfw-node')].map((n) => n.dataset.key)"
    )
    assert sorted(after) == first, "playback's end did not give the first view back"
    check("esc")  # ... laid out for the canvas grown back (the inspector closed meanwhile)
    opened = page.evaluate(TOGGLE, MODELS[model][1])
    assert opened, "no block to open"
    check("open")
    if model in ATTENTION_OPENED or (model, width) in ATTENTION_OPENED:
        pill = page.locator(".nfw-junction[data-glyph='attention']")
        assert pill.count() == 1, f"{pill.count()} attention junctions in {opened} opened"
        # a click on it shows the attention's maps: the stage whose forward ran it
        assert pill.get_attribute("data-stage") == opened
        pill.click()
        page.wait_for_selector(".nfw-inspector:not([hidden]) .nfw-tab[data-view=attention]")
        assert opened in (page.text_content(".nfw-inspector") or "")
        # ... and marks the pill as what the inspector shows (the group stays open: no node is)
        page.wait_for_selector(".nfw-junction[data-glyph='attention'].nfw-selected")
        # the inspector beside the opened block: names still 12 px high (a block wider than the
        # canvas is shown in part, not whole and smaller)
        check("pill")
        page.keyboard.press("Escape")
    page.click("button[aria-label='Data on the graph']")
    check("data")
    page.click("button[aria-label='Data on the graph']")
    page.click("button[aria-label='Present']")
    check("present")
    context.close()
    assert errors == []
    assert problems == [], problems


def test_a_model_too_large_for_a_notebook_s_cell_comes_back_as_it_opened(browser, pages):
    """diffusers' U in a JupyterLab cell's canvas (1100x640: it fits at 12 px in neither
    arrangement): after Play, Esc and the inspector closed, the camera shows as much as the
    first view showed (not the part round the last step moved by the inspector's width), and
    Present shows the same at 12 px, not a corner of it at its larger type."""
    context, page, errors = open_offline(browser, pages / "unet2d.html", 1100, 640)
    settle(page)
    first = page.evaluate(COVERED)
    assert 0 < len(first["out"]) <= 2, first["out"]  # the first view: the U but its end
    play_three_steps(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")  # the inspector playback opened
    settle(page)
    page.mouse.move(2, 2)
    ended = page.evaluate(COVERED)
    page.screenshot(path=str(ARTIFACTS / "zoo_unet2d_1100x640_esc.png"))
    assert len(ended["out"]) <= 2, ended["out"]  # as first (the U whole but an end of it)
    page.click("button[aria-label='Present']")
    settle(page)
    page.mouse.move(2, 2)
    presented = page.evaluate(COVERED)
    page.screenshot(path=str(ARTIFACTS / "zoo_unet2d_1100x640_present.png"))
    assert len(presented["out"]) <= 2, presented["out"]
    assert presented["px"] >= 12 - 0.05
    context.close()
    assert errors == []


@pytest.mark.parametrize(
    ("model", "width", "height"),
    [(m, w, h) for m in ("whisper", "t5", "resnet50") for w, h in ((1280, 720), (1024, 768))]
    + [("resnet50", 860, 520)],  # a notebook's cell
)
def test_every_step_of_playback_keeps_the_whole_model_in_view(browser, pages, model, width, height):
    """The whole walk, not its first steps: beside the inspector each step shows the whole
    model at 12 px. A step in a block that does not fit open is drawn on that block folded,
    the others folded as the walk's start folds them (Whisper's layers: 3 or 4 nodes out of
    view on 9 and 15 of its 27 steps before); a model input is drawn with the first stage
    that reads it open (T5's attention mask, read by both stacks, opened both: 2 and 3 out).
    In a notebook's cell ResNet-50's blocks are drawn on their layer folded, its stem one node
    as the walk's start drew it (37 of 42 steps had up to 12 nodes out of view)."""
    context, page, errors = open_offline(browser, pages / f"{model}.html", width, height)
    problems, steps = [], 0
    for where in walk(page):
        try:
            check_view(page.evaluate(COVERED), f"step {where}", whole=True)
        except AssertionError as e:
            problems.append(str(e))
        steps += 1
    context.close()
    assert steps > 20
    assert errors == []
    assert problems == [], problems
