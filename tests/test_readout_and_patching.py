"""The logit lens (``flow.readout``) against the model's own logits, and activation patching
(``nfw.patch``) against a hand-written loop of forward hooks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import zoo
from torch import nn

import neural_flow_widget as nfw

transformers = pytest.importorskip("transformers")


def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=3, n_embd=32, n_head=4, vocab_size=64, n_positions=32, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config).eval()


def llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=64, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize(
    "make, first, last",
    [(gpt2, "transformer.h.0", "transformer.h.2"), (llama, "model.layers.0", "model.layers.1")],
)
def test_the_last_blocks_readout_is_the_models_own_prediction(make, first, last):
    model = make()
    ids = torch.randint(0, 64, (2, 9))
    flow = nfw.trace(model, ids, sample=1)
    found = flow.readout(last, k=5)
    with torch.no_grad():
        probs = torch.softmax(model(ids).logits[1], dim=-1)
    top = torch.topk(probs, 5)
    assert found.ids.shape == (9, 5)
    np.testing.assert_array_equal(found.ids, top.indices.numpy())
    np.testing.assert_allclose(found.probs, top.values.numpy(), atol=1e-5, rtol=0)
    early = flow.readout(first)
    assert early.probs.shape == (9, 5) and (early.probs[:, 0] >= early.probs[:, 1]).all()


def test_readouts_are_refused_where_there_are_none():
    model = gpt2()
    ids = torch.randint(0, 64, (1, 6))
    flow = nfw.trace(model, ids)
    with pytest.raises(ValueError, match="has no readout"):
        flow.readout("transformer.h.0.ln_1")  # a leaf: not kept
    off = nfw.trace(model, ids, readout=False)
    with pytest.raises(ValueError, match="has no readout"):
        off.readout("transformer.h.0")
    with pytest.raises(ValueError, match="no get_output_embeddings"):
        nfw.trace(zoo.seeded(zoo.PreNorm), torch.randn(1, 3, 4), readout=True)
    plain = zoo.seeded(zoo.PreNorm)
    given = nfw.trace(plain, torch.randn(1, 3, 4), readout=(plain.ln_f, plain.head))
    assert given.readout("blocks.2", k=1).ids.shape == (3, 1)


def t5():
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        decoder_start_token_id=0,
    )  # fmt: skip
    return transformers.T5ForConditionalGeneration(config).eval(), "encoder.block", "decoder.block"


def bart():
    torch.manual_seed(0)
    config = transformers.BartConfig(
        vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
    )  # fmt: skip
    model = transformers.BartForConditionalGeneration(config).eval()
    return model, "model.encoder.layers", "model.decoder.layers"


@pytest.mark.parametrize("make", [t5, bart])
def test_an_encoder_decoders_encoder_has_no_readout(make):
    """Its encoder's stream (as wide as the decoder's) reaches the decoder only as the
    cross-attention's keys and values: read through the decoder's unembedding it predicts no
    token. The decoder's blocks, and the sublayers that write its stream, have readouts."""
    model, encoder, decoder = make()
    ids = torch.randint(0, 64, (1, 6))
    flow = nfw.trace(model, {"input_ids": ids, "decoder_input_ids": ids[:, :4]})
    read = {flow.calls[i].id for i in flow.capture.read_calls}
    assert {f"{decoder}.0", f"{decoder}.1"} <= read
    assert not [c for c in read if c.startswith(encoder.split(".")[0] + ".encoder")]
    assert not [c for c in read if c.startswith(encoder)]
    with pytest.raises(ValueError, match="has no readout"):
        flow.readout(f"{encoder}.1")
    with torch.no_grad():  # the decoder's last block still reads as the model's own logits
        logits = model(input_ids=ids, decoder_input_ids=ids[:, :4]).logits[0]
    top = torch.topk(torch.softmax(logits, dim=-1), 5)
    np.testing.assert_array_equal(flow.readout(f"{decoder}.1", k=5).ids, top.indices.numpy())


class Tiny(nn.Module):
    """Three sequence stages and a readout of the last position."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)
        self.mix = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids):
        h = self.embed(ids)
        h = torch.tanh(self.a(h)) + h
        h = h + torch.cumsum(self.mix(h), dim=1) / 4  # (later positions read earlier ones)
        return self.head(torch.tanh(self.b(h)))[:, -1]


def hooked(model, x, module, make):
    handle = module.register_forward_hook(lambda _m, _a, out: make(out))
    try:
        with torch.no_grad():
            return model(x)
    finally:
        handle.remove()


def test_patching_equals_a_loop_of_forward_hooks():
    model = zoo.seeded(Tiny)
    clean = torch.tensor([[1, 2, 3, 4, 5]])
    corrupted = torch.tensor([[1, 9, 3, 4, 5]])
    metric = lambda out: out[0, 2] - out[0, 0]
    stages = ["embed", "a", "mix", "b"]
    found = nfw.patch(model, clean, corrupted, stages, metric)
    kept = {}
    for name in stages:  # the clean outputs
        hooked(model, clean, getattr(model, name), lambda out, n=name: kept.__setitem__(n, out))
    for i, name in enumerate(stages):
        module = getattr(model, name)
        whole = float(metric(hooked(model, corrupted, module, lambda _o, n=name: kept[n])))
        assert found.scores[i] == pytest.approx(whole, rel=1e-6, abs=1e-7)
        for p in range(5):

            def at(out, n=name, p=p):
                out = out.clone()
                out[:, p] = kept[n][:, p]
                return out

            value = float(metric(hooked(model, corrupted, module, at)))
            assert found.by_position[i, p] == pytest.approx(value, rel=1e-6, abs=1e-7)
    with torch.no_grad():
        assert found.clean == pytest.approx(float(metric(model(clean))))
        assert found.corrupted == pytest.approx(float(metric(model(corrupted))))
    restored = found.restored()
    assert restored.shape == (4, 5) and restored[0, 1] == pytest.approx(1.0)  # the changed token
    assert zoo.hooks_left(model) == 0 and not zoo.mode_stack()
