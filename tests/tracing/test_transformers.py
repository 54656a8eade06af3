"""transformers GPT-2 and BERT built from small configs (random weights, no download)."""

import pytest
import torch

import neural_flow_widget as nfw

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=3,
        n_embd=32,
        n_head=4,
        vocab_size=64,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        intermediate_size=64,
        vocab_size=64,
        max_position_embeddings=32,
    )
    return transformers.BertModel(config).eval()


def test_gpt2_blocks_form_a_chain_with_embeddings_merging(gpt2):
    ids = torch.randint(0, 64, (1, 10))
    with torch.no_grad():
        expected = gpt2(ids).logits
    flow = nfw.trace(
        gpt2,
        ids,
        capture=False,
        stages=[
            "transformer.wte",
            "transformer.wpe",
            "transformer.drop",
            "transformer.h.*",
            "transformer.ln_f",
            "lm_head",
        ],
    )
    flow.lint()
    assert [tuple(e) for e in flow.edges] == [
        ("input:0", "transformer.wte", "flow"),
        ("transformer.wte", "transformer.wpe", "order"),  # positions come from arange: attached
        ("transformer.wte", "transformer.drop", "flow"),
        ("transformer.wpe", "transformer.drop", "merge"),
        ("transformer.drop", "transformer.h.0", "flow"),
        ("transformer.h.0", "transformer.h.1", "flow"),
        ("transformer.h.1", "transformer.h.2", "flow"),
        ("transformer.h.2", "transformer.ln_f", "flow"),
        ("transformer.ln_f", "lm_head", "flow"),
        ("lm_head", "output:logits", "flow"),
    ]
    with torch.no_grad():
        assert torch.equal(gpt2(ids).logits, expected)


def test_gpt2_residuals_inside_a_block_are_skips(gpt2):
    ids = torch.randint(0, 64, (1, 8))
    flow = nfw.trace(gpt2, ids, capture=False, stages=["transformer.h.0.*"])
    got = {(e.src, e.dst): e.kind for e in flow.edges}
    assert got[("transformer.h.0.attn", "transformer.h.0.ln_2")] == "flow"
    # The residual stream enters the block from the (unselected) embeddings, i.e. the input.
    assert got[("input:0", "transformer.h.0.ln_2")] == "skip"
    assert got[("transformer.h.0.mlp", "output:logits")] == "flow"
    assert got[("transformer.h.0.attn", "output:logits")] == "skip"
    # Blocks inside a collapsed selection do not leak their residuals out.
    assert {e.kind for e in flow.select(["transformer.h.*"]).edges} == {"flow"}


def test_gpt2_leaves_get_the_latest_residual_not_every_earlier_sublayer(gpt2):
    ids = torch.randint(0, 64, (1, 8))
    flow = nfw.trace(gpt2, ids, capture=False)
    into = {}
    for src, dst, kind in flow.edges:
        into.setdefault(dst, []).append((src, kind))
    assert into["transformer.h.2.ln_2"] == [
        ("transformer.h.1.mlp.dropout", "skip"),
        ("transformer.h.2.attn.resid_dropout", "flow"),
    ]
    assert into["transformer.ln_f"] == [
        ("transformer.h.2.attn.resid_dropout", "skip"),
        ("transformer.h.2.mlp.dropout", "flow"),
    ]
    assert max(len(v) for k, v in into.items() if k.startswith("transformer.h.")) == 2


def test_bert_with_batch_encoding_like_dict_and_embeddings_merging(bert):
    ids = torch.randint(0, 64, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    inputs = transformers.BatchEncoding(
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    )
    flow = nfw.trace(
        bert,
        inputs,
        capture=False,
        stages=["embeddings.*_embeddings", "embeddings.LayerNorm", "encoder.layer.*", "pooler"],
    )
    flow.lint()
    assert flow.inputs == ("input:input_ids", "input:attention_mask", "input:token_type_ids")
    got = [tuple(e) for e in flow.edges]
    assert ("embeddings.word_embeddings", "embeddings.LayerNorm", "flow") in got
    assert ("embeddings.token_type_embeddings", "embeddings.LayerNorm", "merge") in got
    assert ("embeddings.position_embeddings", "embeddings.LayerNorm", "merge") in got
    assert ("embeddings.LayerNorm", "encoder.layer.0", "flow") in got
    assert ("encoder.layer.0", "encoder.layer.1", "flow") in got
    # The padding mask really reaches every layer, and merges into each: it is an ancestor of
    # layer 0 but never on the hidden states' chain of flow edges (conditioning, not a skip).
    assert ("input:attention_mask", "encoder.layer.0", "merge") in got
    assert ("input:attention_mask", "encoder.layer.1", "merge") in got
    assert ("pooler", "output:pooler_output", "flow") in got
    assert ("encoder.layer.1", "output:last_hidden_state", "flow") in got
