"""What the documentation's gallery shows: each entry a model, its inputs and the words beside
its page (what to look at). ``scripts/gallery.py`` builds the pages.

Every model is built here from a configuration with random weights (nothing is downloaded;
HF_HUB_OFFLINE=1), except the built-in demos, which carry their trained weights in the
package. Where a real model is too large to build on a laptop in seconds (LLaMA, Stable
Diffusion's U-Net) the entry keeps its architecture at a smaller width and says so.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # (no notes on random weights)
sys.path[:0] = [str(ROOT / "tests")]

#: a model, its inputs, and keyword arguments for NeuralFlowWidget (tokens=, sample=, ...)
Built = tuple[torch.nn.Module, Any, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Entry:
    name: str  # the page's file name
    title: str
    what: str  # one line under the title on the gallery's index
    build: Callable[[], Built]
    look: str  # markdown: what to look at on the page
    group: str = "architectures"  # or "demos": trained, shipped with the package
    options: dict[str, Any] = field(default_factory=dict)


# -------------------------------------------------------------------- token labels


def _sentence(text: str, vocab: int, seed: int = 0) -> tuple[torch.Tensor, list[str]]:
    """Ids for the words of ``text`` (arbitrary but fixed: the weights are random, so no id
    means anything) and the words as the attention maps' labels."""
    words = text.split()
    gen = torch.Generator().manual_seed(seed)
    table = torch.randperm(vocab - 10, generator=gen)[: len(set(words))] + 10
    index = {w: int(table[i]) for i, w in enumerate(dict.fromkeys(words))}
    return torch.tensor([[index[w] for w in words]]), words


SENTENCE = (
    "the lecturer drew the network on the board and every student could see where the "
    "skip connection carried the image past the bottleneck"
)


def _image(seed: int) -> torch.Tensor:
    """A 224 x 224 RGB scene of a few bright shapes (the demos' generator, scaled up): a
    picture a reader can recognise in the input's and the feature maps' views."""
    from neural_flow_widget.demos import data

    scene, _ = data.shapes_batch(1, seed=seed, size=64)
    scene = torch.nn.functional.interpolate(scene, size=224, mode="bilinear")
    return scene.expand(1, 3, 224, 224).contiguous()


# ------------------------------------------------------------------------- builders


def _demo(name: str) -> Callable[[], Built]:
    def build() -> Built:
        from neural_flow_widget import demos

        demo = demos.load(name)
        return demo.model, demo.inputs, {}

    return build


def _gpt2() -> Built:
    from transformers import GPT2Config, GPT2LMHeadModel

    ids, words = _sentence(SENTENCE, 50257)
    return GPT2LMHeadModel(GPT2Config()).eval(), ids, {"tokens": words}


def _bert() -> Built:
    from transformers import BertConfig, BertModel

    first, words = _sentence(SENTENCE, 30522)
    ids = torch.cat([first[:, :16], first[:, :16]])
    mask = torch.ones_like(ids)
    mask[0, 10:] = 0  # the first sentence (the one shown) is 10 tokens, right-padded to 16
    labels = [*words[:10], *["[PAD]"] * 6]
    model = BertModel(BertConfig(attn_implementation="eager")).eval()
    return model, {"input_ids": ids, "attention_mask": mask}, {"tokens": labels}


def _llama() -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=512, intermediate_size=1376, num_hidden_layers=8, num_attention_heads=8,
        num_key_value_heads=2, vocab_size=32000, max_position_embeddings=256,
    )  # fmt: skip
    ids, words = _sentence(SENTENCE, 32000)
    return LlamaForCausalLM(config).eval(), ids, {"tokens": words}


def _vit() -> Built:
    from transformers import ViTConfig, ViTForImageClassification

    return ViTForImageClassification(ViTConfig()).eval(), _image(seed=3), {}


def _whisper() -> Built:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(max_source_positions=250)  # 5 s of audio instead of 30
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 2 * config.max_source_positions)
    bands = torch.linspace(0, 1, config.num_mel_bins)[:, None]
    features = torch.sin(40 * t * (1 + bands)) * torch.exp(-((bands - 0.3) ** 2) * 20)
    inputs = {
        "input_features": features[None],
        "decoder_input_ids": torch.tensor([[50258, 50259, 50359, 50363, 1012, 2171]]),
    }
    return WhisperForConditionalGeneration(config).eval(), inputs, {}


def _t5() -> Built:
    from transformers import T5Config, T5ForConditionalGeneration

    ids = torch.randint(1, 32000, (2, 12), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": ids[:, :6]}
    return T5ForConditionalGeneration(T5Config()).eval(), inputs, {}


def _unet2d() -> Built:
    from fixture_models import unet2d

    model, inputs = unet2d(levels=4, layers=2)
    return model, inputs, {}


def _resnet50() -> Built:
    from written_out import resnet50

    return resnet50().eval(), _image(seed=5), {}


# --------------------------------------------------------------------------- entries

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "unet",
        "U-Net (demo)",
        "segments the shapes in a noisy image; skips across the U",
        _demo("unet"),
        """A small U-Net trained to outline the bright shapes in a noisy 64 × 64 image. It is
drawn as a U: the encoder down the left, the decoder up the right, and each **skip** (dashed)
straight across into the junction where the decoder concatenates it (`⧺`). Press **Data** to
put each stage's view on its node, from the input image through the feature maps to the
predicted mask; click `output:0` to read it as a mask (a sigmoid per pixel). **Play** walks
the forward pass stage by stage.""",
        group="demos",
    ),
    Entry(
        "transformer",
        "Digit-reversing transformer (demo)",
        "a tiny GPT that reverses 8 digits; its heads attend along the anti-diagonal",
        _demo("transformer"),
        """A 2-block, 4-head decoder-only transformer trained to read 8 digits and a
separator, then write the digits in reverse order. Click `blocks.1.attn` and open
**attention**: the map (the mean over heads) puts its weight on the anti-diagonal, each
output position reading the digit it must copy. **head view** draws one line per weight in
one colour per head; **model view** shows both layers × four heads at once. The residual
stream runs straight down the left with the sublayers beside it.""",
        group="demos",
    ),
    Entry(
        "vit-demo",
        "Vision transformer (demo)",
        "finds the cell of a 4 × 4 grid that holds a shape; attention rollout over the image",
        _demo("vit"),
        """A 3-block, 4-head vision transformer trained to tell in which cell of a 4 × 4
grid over a 32 × 32 scene a shape lies, from 8 × 8 patches and a CLS token. Click the last
block's `attn` and open **attention → on the image**: the CLS token's attention in this layer
and the rollout through the layers (Abnar & Zuidema), each over the input image. Point at a
patch to read its weight.""",
        group="demos",
    ),
    Entry(
        "fusion",
        "Multimodal fusion (demo)",
        "an image branch and a clinical-features branch merge into two heads",
        _demo("fusion"),
        """Two modalities, a 32 × 32 lesion image and 8 clinical features, go through their
own branches (`image_encoder`, `clinical_mlp`), are concatenated at a junction (`⧺`:
the clinical branch is a **merge**, purple) and feed two heads (a 4-way diagnosis and a
severity score): one graph with two inputs and two outputs. Click `output:diagnosis` for
the class probabilities (softmax) of this patient.""",
        group="demos",
    ),
    Entry(
        "resnet-demo",
        "Small ResNet (demo)",
        "classifies stripes by orientation; residual blocks",
        _demo("resnet"),
        """A small ResNet trained to classify 32 × 32 images of stripes by orientation. Each
residual block, even folded, shows a small ⊕ where its output leaves and an arc round the
card (dotted where the shortcut is projected, as the ResNet paper draws it); open one (its
`+`) to see the real junction. Click a convolution and look at **grid**: its most active
channels on this image.""",
        group="demos",
    ),
    Entry(
        "gpt2",
        "GPT-2 small",
        "124 M parameters, 12 blocks drawn as the paper's N× figure",
        _gpt2,
        """`GPT2LMHeadModel(GPT2Config())`: the real GPT-2 small, random weights, 23 tokens
(the labels are the words the arbitrary ids stand for). The twelve `GPT2Block`s are drawn as
one block opened (`ln_1`, `attn`, the residual ⊕, `ln_2`, `mlp`) with the others stacked
behind it; the stepper (◀ layer 1 of 12 ▶) shows another layer's data in the same drawing,
and `⋯` unfolds all twelve. The position embedding `wpe` reads no data (`torch.arange`): a
dotted "runs after" edge. Click any `attn`: the causal triangle, near uniform because the
weights are untrained.""",
    ),
    Entry(
        "bert",
        "BERT-base with a padding mask",
        "a padded sentence: the mask merges into every layer",
        _bert,
        """`BertModel(BertConfig())` on a batch of two; the sentence shown is 10 tokens
right-padded to 16 (`attention_mask` zero on the padding). The mask enters as a **merge**
(purple), beside the token stream. Open `encoder.layer.0.attention.self` → **attention**:
every query gives the six `[PAD]` keys exactly zero weight, the columns on the right. Step
through the layers with ◀ ▶ on `BertLayer × 12`.""",
    ),
    Entry(
        "llama",
        "LLaMA",
        "RMSNorm, rotary embeddings, grouped-query attention, SwiGLU",
        _llama,
        """`LlamaForCausalLM` at a smaller width (8 layers of 512, 8 query heads sharing 2
key/value heads; LLaMA-7B is 32 layers of 4,096, too large to build at random in seconds):
every part of LLaMA's architecture is there. `rotary_emb` computes the rotary position
tables once and each layer's attention reads them (a merge); the residual stream runs
through two ⊕ per layer. Attention maps are in the model's own (heads, queries, keys)
layout: 8 heads, although the key/value projections have 2.""",
    ),
    Entry(
        "vit",
        "ViT-base",
        "ViT-B/16 at 224²: CLS attention and rollout over the image",
        _vit,
        """`ViTForImageClassification(ViTConfig())`: ViT-B/16, 196 patches of 16 × 16 px and
a CLS token, on a picture of a few shapes. Click `vit.layers.11.attention` (the last layer)
and open **attention → on the image**: the CLS token's attention and the rollout through the
twelve layers, over the image; untrained, the rollout still follows the image's structure a
little (the patches carry their content through the residual path). This page is at its
8 MB budget: every attention map and block is in it, and a note says which leaves were left
out.""",
    ),
    Entry(
        "whisper",
        "Whisper",
        "encoder-decoder speech model: cross-attention from text to audio",
        _whisper,
        """`WhisperForConditionalGeneration` with whisper-tiny's configuration (4 + 4
layers of width 384) over 5 seconds of a synthetic log-mel spectrogram (250 encoder positions
instead of 30 s, 1,500). The decoder continues its own token ids (`decoder_input_ids`,
its first argument: its **flow** edge); the encoder's output **merges** in beside them, into
each layer's cross-attention. Open the decoder (its `+`) and a layer's `encoder_attn`:
6 decoder tokens × 250 audio positions, cross-attention, a rectangle rather than a square.
The encoder's self-attention maps are 250 × 250 per head.""",
    ),
    Entry(
        "t5",
        "T5-small",
        "encoder-decoder text model with a padded source",
        _t5,
        """`T5ForConditionalGeneration(T5Config())`: t5-small (6 + 6 blocks of width 512), a
batch of two source sentences (the second padded; the first, shown, complete). As in
Whisper, the decoder continues its own token ids (its **flow** edge) and the encoder's
output and the attention mask **merge** in. Open `decoder` (its `+`) and a block's
`EncDecAttention`: 6 target tokens × 12 source tokens. T5's relative position bias is
computed by the first block's attention and handed to the others.""",
    ),
    Entry(
        "unet2d",
        "Stable Diffusion's U-Net",
        "UNet2DConditionModel as a U, with its conditioning buses",
        _unet2d,
        """diffusers' `UNet2DConditionModel` with Stable Diffusion's layout (four levels,
two layers per block, cross-attention on three) at a smaller width (32 to 64 channels; SD's is
320 to 1,280, 860 M parameters). It is drawn as a U: several skips a level straight across,
and the timestep embedding and the text conditioning (`encoder_hidden_states`) as two
**buses** down the outside of the U, tapping every block. Open a `CrossAttn` block to find
its `attn2`: image positions × 5 text tokens.""",
    ),
    Entry(
        "resnet50",
        "ResNet-50",
        "torchvision's ResNet-50 written out: 16 bottlenecks in 4 stages",
        _resnet50,
        """ResNet-50 as torchvision writes it (`tests/written_out.py`: the same modules,
in-place ReLU and shortcut, 25.6 M parameters), random weights, on a 224 × 224 picture. The
four stages are open, and a run of identical bottlenecks folds ("Bottleneck × 5" in
`layer3`); each bottleneck, or fold of them, carries its residual mark (⊕ and an arc, dotted
on the first of each stage, whose shortcut is a projection). Press **Data** to see the
feature maps shrink from 112² to 7².""",
    ),
)
