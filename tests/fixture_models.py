"""The models behind the front end's graph fixtures (``tests/fixtures/wire_unet.json``,
``wire_transformer12.json``, written by ``scripts/make_fixtures.py``), and the tiny seeded
models of real libraries (transformers, diffusers) in ``edges_golden.json``.

The graph fixtures' module names, types and nesting are what the JS unit tests and the
browser tests expect (``js/test/*.test.ts``, ``tests/browser/*.test.mjs``); change them
together.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# ------------------------------------------------------------------------------- U-Net


class ConvBlock(nn.Module):
    """conv -> relu -> conv -> relu (3x3, same size)."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.act1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.act2 = nn.ReLU()

    def forward(self, x):
        return self.act2(self.conv2(self.act1(self.conv1(x))))


class ResBlock(nn.Module):
    """conv -> relu -> conv, plus the input: the residual add is in this block's forward."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.act(self.conv1(x))) + x


class FusionBlock(nn.Module):
    """DPT's feature fusion layer: the coarser map fused with this scale's (added), refined."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, h, feature=None):
        return self.act(self.conv(h if feature is None else h + feature))


class Fusion(nn.Module):
    """Four features of one input (four convolutions), fused from the last to the first by
    four identical blocks, each reading the one before it and its own feature: DPT's feature
    fusion stage (``DPTFeatureFusionStage``)."""

    def __init__(self, c: int = 4) -> None:
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(3, c, 3, padding=1) for _ in range(4))
        self.layers = nn.ModuleList(FusionBlock(c) for _ in range(4))

    def forward(self, x):
        features = [conv(x) for conv in self.convs][::-1]
        h = self.layers[0](features[0])
        for layer, feature in zip(self.layers[1:], features[1:]):
            h = layer(h, feature)
        return h


class UNet(nn.Module):
    """Two levels down (max-pool in this forward), a residual bottleneck, two levels up
    (transposed convs), each decoder reading ``torch.cat([up, skip])``."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = ConvBlock(1, 16)
        self.enc2 = ConvBlock(16, 32)
        self.bottleneck = ResBlock(32)
        self.up2 = nn.ConvTranspose2d(32, 32, 2, stride=2)
        self.dec2 = ConvBlock(64, 32)
        self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec1 = ConvBlock(32, 16)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bottleneck(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


# ------------------------------------------------------------------------- transformer


class MultiheadAttention(nn.Module):
    """Self-attention with separate q / k / v / out projections around
    ``F.scaled_dot_product_attention``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape

        def split(h):
            return h.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(a.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TransformerBlock(nn.Module):
    """Pre-norm: both residual adds are in this block's forward."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = MultiheadAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """embed -> 12 transformer blocks -> norm -> lm_head; called as ``model(input_ids=...)``,
    returns ``{"logits": ...}``."""

    def __init__(self, vocab: int = 1000, dim: int = 64, layers: int = 12, heads: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(TransformerBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h)
        return {"logits": self.lm_head(self.norm(h))}


TOKENS = 16
VOCAB = 1000


def unet():
    """The seeded U-Net and its input (1 x 1 x 64 x 64)."""
    torch.manual_seed(0)
    model = UNet().eval()
    return model, torch.randn(1, 1, 64, 64)


def transformer12():
    """The seeded 12-block TinyGPT and its keyword inputs (16 tokens)."""
    torch.manual_seed(0)
    model = TinyGPT(vocab=VOCAB).eval()
    return model, {"input_ids": torch.randint(0, VOCAB, (1, TOKENS))}


# ------------------------------------------- real libraries, tiny seeded configs (edges golden)
# Topology only (traced with capture=False): the weights are random.


def gpt2():
    """transformers' GPT-2: 4 layers of width 32, and 8 token ids."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=4, n_embd=32, n_head=4, vocab_size=64, n_positions=32,
                        bos_token_id=0, eos_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config).eval()
    return model, torch.randint(0, 64, (1, 8))


def bert():
    """transformers' BERT (eager attention): 3 layers of width 32, a batch of two whose second
    sentence is right-padded (``attention_mask`` zero on its last three tokens)."""
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=3, hidden_size=32, num_attention_heads=4,
                        intermediate_size=64, vocab_size=64, max_position_embeddings=32,
                        attn_implementation="eager")  # fmt: skip
    torch.manual_seed(0)
    model = BertModel(config).eval()
    ids = torch.randint(1, 64, (2, 8))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    return model, {"input_ids": ids, "attention_mask": mask}


def t5(layers: int = 2):
    """transformers' T5 encoder-decoder: 2 + 2 layers (or ``layers`` each) of width 32, a
    padded source batch. The first block of each stack holds the relative position bias
    (an Embedding the others lack) and hands the bias on to the others."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=layers,
                      num_decoder_layers=layers, num_heads=4, relative_attention_num_buckets=8,
                      relative_attention_max_distance=16, decoder_start_token_id=0,
                      pad_token_id=0, use_cache=False)  # fmt: skip
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config).eval()
    ids = torch.randint(1, 64, (2, 6))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    decoder = torch.randint(1, 64, (2, 5))
    return model, {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": decoder}


def whisper():
    """transformers' Whisper encoder-decoder: 3 + 3 layers of width 32, 16 mel bins of 64
    frames (32 after the strided conv) and 4 decoder tokens."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(d_model=32, encoder_layers=3, decoder_layers=3,
                           encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                           max_source_positions=32, max_target_positions=16, vocab_size=64,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2,
                           decoder_start_token_id=1)  # fmt: skip
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config).eval()
    inputs = {
        "input_features": torch.randn(1, 16, 64),
        "decoder_input_ids": torch.tensor([[1, 5, 6, 7]]),
    }
    return model, inputs


def bart(layers: int = 2):
    """transformers' BART, post-norm (`LayerNorm(x + f(x))`): 2 + 2 layers of width 32, 7
    source tokens and 5 target tokens."""
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(vocab_size=64, d_model=32, encoder_layers=layers, decoder_layers=layers,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=32)  # fmt: skip
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config).eval()
    inputs = {
        "input_ids": torch.tensor([[0, 5, 6, 7, 8, 9, 2]]),
        "decoder_input_ids": torch.tensor([[2, 0, 5, 6, 7]]),
    }
    return model, inputs


def mamba(layers: int = 3):
    """transformers' Mamba: ``layers`` blocks of width 32, each ``x + mixer(norm(x))`` in its
    own forward (one residual add a block: a stack of them hands its sum to the next block),
    on 6 tokens."""
    from transformers import MambaConfig, MambaForCausalLM

    config = MambaConfig(vocab_size=64, hidden_size=32, state_size=8, num_hidden_layers=layers,
                         expand=2, conv_kernel=4)  # fmt: skip
    torch.manual_seed(0)
    model = MambaForCausalLM(config).eval()
    return model, {"input_ids": torch.tensor([[0, 5, 6, 7, 8, 9]])}


def dit(layers: int = 2):
    """diffusers' DiT (``DiTTransformer2DModel``): ``layers`` blocks of width 32 whose norms are
    AdaLN-Zero (``norm(x) * (1 + scale) + shift``, scale and shift one chunk of the timestep
    and class embedding), on a 4 x 8 x 8 latent in 2 x 2 patches."""
    from diffusers import DiTTransformer2DModel

    torch.manual_seed(0)
    model = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4,
                                  out_channels=4, num_layers=layers, sample_size=8, patch_size=2,
                                  num_embeds_ada_norm=10, norm_num_groups=8).eval()  # fmt: skip
    inputs = {"hidden_states": torch.randn(1, 4, 8, 8), "timestep": torch.tensor([10]),
              "class_labels": torch.tensor([1])}  # fmt: skip
    return model, inputs


def unet2d(levels: int = 2, layers: int = 1, cross: bool = True):
    """diffusers' UNet2DConditionModel: two levels (32, 64 channels), one layer per block,
    cross-attention on 5 tokens of width 32, a 16 x 16 latent; or more levels (up to four)
    and layers per block (Stable Diffusion's has four levels of two); without ``cross``, the
    mid block alone attends to the text (its down and up blocks plain). Its blocks are called
    ``(hidden_states, temb, encoder_hidden_states)``."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    model = UNet2DConditionModel(
        sample_size=16,
        in_channels=4,
        out_channels=4,
        block_out_channels=(32, 64, 64, 64)[:levels],
        layers_per_block=layers,
        down_block_types=("CrossAttnDownBlock2D" if cross else "DownBlock2D",) * (levels - 1)
        + ("DownBlock2D",),
        up_block_types=("UpBlock2D",)
        + ("CrossAttnUpBlock2D" if cross else "UpBlock2D",) * (levels - 1),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=8,
    ).eval()
    inputs = {
        "sample": torch.randn(1, 4, 16, 16),
        "timestep": torch.tensor([10]),
        "encoder_hidden_states": torch.randn(1, 5, 32),
    }
    return model, inputs


def albert(layers: int = 4):
    """transformers' ALBERT: one layer (``albert_layer_groups.0``) called ``layers`` times, the
    same weights on each pass, width 32, on 6 tokens."""
    from transformers import AlbertConfig, AlbertModel

    config = AlbertConfig(vocab_size=64, embedding_size=16, hidden_size=32,
                          num_hidden_layers=layers, num_attention_heads=4,
                          intermediate_size=64)  # fmt: skip
    torch.manual_seed(0)
    model = AlbertModel(config).eval()
    return model, {"input_ids": torch.tensor([[0, 5, 6, 7, 8, 9]])}


def nn_transformer(layers: int = 3):
    """PyTorch's own ``nn.Transformer`` (post-norm): ``layers`` + ``layers`` layers of width 32,
    10 source and 7 target positions; its encoder's output (the memory) is no model output,
    the decoder's layers read it alone."""
    torch.manual_seed(0)
    model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=layers,
                           num_decoder_layers=layers, dim_feedforward=64,
                           batch_first=True).eval()  # fmt: skip
    return model, (torch.randn(1, 10, 32), torch.randn(1, 7, 32))


def phi(layers: int = 3):
    """transformers' Phi: each layer's attention and MLP read one norm and add to the residual
    in one sum (``x + attn(ln(x)) + mlp(ln(x))``), width 32, on 6 tokens."""
    from transformers import PhiConfig, PhiForCausalLM

    config = PhiConfig(vocab_size=64, hidden_size=32, num_hidden_layers=layers,
                       num_attention_heads=4, intermediate_size=64)  # fmt: skip
    torch.manual_seed(0)
    model = PhiForCausalLM(config).eval()
    return model, {"input_ids": torch.tensor([[0, 5, 6, 7, 8, 9]])}


def unet2d_added(kind: str, levels: int = 2):
    """diffusers' UNet2DConditionModel (two levels, 32 and 64 channels) with an added
    conditioning whose parts merge before the blocks read them: ``"text_time"`` (SDXL: text
    embeds and time ids concatenated, embedded, added to the time embedding) or ``"image"``
    (Kandinsky 2.2: image embeds into the added embedding, added to the time embedding, and
    into the projection the cross-attention reads). SDXL's own shape: three levels of two
    layers (``levels=3``)."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    config = dict(sample_size=16, in_channels=4, out_channels=4, block_out_channels=(32, 64),
                  layers_per_block=1, cross_attention_dim=32, attention_head_dim=8,
                  norm_num_groups=8)  # fmt: skip
    inputs = {"sample": torch.randn(1, 4, 16, 16), "timestep": torch.tensor([3])}
    if kind == "text_time":
        cross = ("CrossAttnDownBlock2D",) * (levels - 1)
        config.update(block_out_channels=(32, 64, 64)[:levels], layers_per_block=1 + (levels > 2),
                      down_block_types=("DownBlock2D", *cross),
                      up_block_types=(*(b.replace("Down", "Up") for b in cross), "UpBlock2D"),
                      addition_embed_type="text_time", addition_time_embed_dim=8,
                      projection_class_embeddings_input_dim=16 + 6 * 8)  # fmt: skip
        inputs["encoder_hidden_states"] = torch.randn(1, 6, 32)
        inputs["added_cond_kwargs"] = {
            "text_embeds": torch.randn(1, 16),
            "time_ids": torch.randn(1, 6),
        }
    else:
        config.update(down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
                      up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
                      mid_block_type="UNetMidBlock2DSimpleCrossAttn",
                      resnet_time_scale_shift="scale_shift", encoder_hid_dim=16,
                      encoder_hid_dim_type="image_proj", addition_embed_type="image")  # fmt: skip
        inputs["encoder_hidden_states"] = None
        inputs["added_cond_kwargs"] = {"image_embeds": torch.randn(1, 16)}
    return UNet2DConditionModel(**config).eval(), inputs


def fusion():
    """:class:`Fusion` on an 8 x 8 image."""
    torch.manual_seed(0)
    return Fusion().eval(), torch.randn(1, 3, 8, 8)


def clip_text():
    """transformers' CLIP text tower, width 32, two layers, on 5 tokens: its pooled output is
    the last hidden state at each text's end token, found from the ids (``input_ids.argmax``
    or ``input_ids == eos_token_id``)."""
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                            num_hidden_layers=2, num_attention_heads=4,
                            max_position_embeddings=16, eos_token_id=2)  # fmt: skip
    torch.manual_seed(0)
    return CLIPTextModel(config).eval(), {"input_ids": torch.tensor([[0, 5, 6, 7, 2]])}


def vit(layers: int = 2):
    """transformers' ViT: ``layers`` blocks of width 32 on a 16 x 16 image in 8 x 8 patches
    (4 patches and the [CLS] token). Its embeddings' own forward concatenates the
    ``cls_token`` parameter before the patches and adds the ``position_embeddings`` one."""
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                       intermediate_size=64, image_size=16, patch_size=8)  # fmt: skip
    torch.manual_seed(0)
    model = ViTModel(config, add_pooling_layer=False).eval()
    return model, torch.randn(1, 3, 16, 16)


def roberta(layers: int = 2):
    """transformers' RoBERTa: ``layers`` post-norm layers of width 32 on 6 tokens, the last
    two padding. Its embeddings count the positions from the input ids
    (``create_position_ids_from_input_ids``: padding_idx + cumsum of the non-padding mask)
    and add their embedding to the words': a sum of lookups, no residual."""
    from transformers import RobertaConfig, RobertaModel

    config = RobertaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=layers,
                           num_attention_heads=4, intermediate_size=64,
                           max_position_embeddings=40, pad_token_id=1)  # fmt: skip
    torch.manual_seed(0)
    model = RobertaModel(config, add_pooling_layer=False).eval()
    return model, torch.tensor([[0, 5, 6, 2, 1, 1]])
