"""The corpus, transformers: real architectures from small configs (random weights, seeded, no
download), each with its stage edges derived by hand from the model's code and the rules of
``neural_flow_widget/graph/edges.py``, never copied from the tracer, and its attention maps
held to the model's own ``output_attentions``.

How an expected edge list is derived (the comments next to each list say which rule gave what):

* the walk starts at the tensors a stage's call receives and goes back through the model's own
  ops and the ops of unselected calls until a selected stage or a model input;
* ``flow`` comes from the path of the first tensor the call receives that leads to any source
  (positional arguments left to right, then keywords in the order the calling code wrote them,
  nested containers depth-first; a source reached only beyond a relay counts after all of
  them); of the sources on that path, the one with the most ancestors, then the earliest node.
  A stage reading one tensor (``x + f(x)``) therefore takes its deepest source. A source that
  is an ancestor of the flow source is a ``skip``, else a ``merge``;
* a source reached only through a *relay* (an op another selected stage also takes as input)
  that is an ancestor of another non-primary source gets no edge;
* a stage with no data source at all gets an ``order`` edge from the previous stage;
* ``x.device``, ``x.dtype``, ``x.shape`` read no data: a tensor used only for them is still a
  call input (an edge) but gives the ops that read it no parent.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from corpus import edge_list, seeded

import neural_flow_widget as nfw

transformers = pytest.importorskip("transformers")

V = 64  # vocabulary of every text model here


def same_output(model, inputs: dict, field: str, before: torch.Tensor) -> None:
    """The model's output after tracing equals the one before (tracing changes nothing)."""
    with torch.no_grad():
        after = getattr(model(**inputs), field)
    assert torch.equal(after, before)


# -- LLaMA: grouped-query attention, a padded batch, a KV-cache decode step ------------------


def llama(attn: str = "eager", layers: int = 2, **sizes) -> torch.nn.Module:
    options = dict(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention: 2 query heads per key/value head
        max_position_embeddings=64,
        use_cache=False,
    )
    options.update(sizes)
    config = transformers.LlamaConfig(**options)
    config._attn_implementation = attn
    return seeded(lambda: transformers.LlamaForCausalLM(config))


def llama_depth2_edges(layers: int) -> list[tuple[str, str, str]]:
    """LlamaForCausalLM at ``stages=2``, from LlamaModel.forward:

    - ``rotary_emb(hidden_states, position_ids)`` receives the embeddings but reads only their
      device and dtype (no data: graph/reads.py), and ``position_ids`` is ``torch.arange``: no
      source, an order edge from the stage before it, ``embed_tokens``;
    - each layer is called as ``decoder_layer(hidden_states, attention_mask=causal_mask,
      position_embeddings=(cos, sin), position_ids=...)``: the hidden states first, then the
      causal mask (made from ``attention_mask``: the padding is indexed into it), then
      ``(cos, sin)`` from ``rotary_emb``. Layer 0: its first tensor is ``embed_tokens``'s
      output -> flow; ``rotary_emb`` is no ancestor of ``embed_tokens`` (it is the other way
      round) -> merge; the mask -> merge. Later layers: the first tensor is the previous
      layer's output -> flow; ``rotary_emb`` and the mask are its ancestors but not on its
      chain of flow edges (layers.0 <- embed_tokens <- the ids) -> merges: conditioning, read
      directly by every layer;
    - ``slice_logits_to_keep`` and ``lm_head``: a chain to ``output:logits``.
    """
    e = [
        ("input:input_ids", "model.embed_tokens", "flow"),
        ("model.embed_tokens", "model.rotary_emb", "order"),
        ("model.embed_tokens", "model.layers.0", "flow"),  # hidden_states, the first argument
        ("model.rotary_emb", "model.layers.0", "merge"),  # position_embeddings=
        ("input:attention_mask", "model.layers.0", "merge"),
    ]
    for i in range(1, layers):
        e += [
            (f"model.layers.{i - 1}", f"model.layers.{i}", "flow"),
            ("model.rotary_emb", f"model.layers.{i}", "merge"),
            ("input:attention_mask", f"model.layers.{i}", "merge"),
        ]
    e += [
        (f"model.layers.{layers - 1}", "model.norm", "flow"),
        ("model.norm", "lm_head", "flow"),
        ("lm_head", "output:logits", "flow"),
    ]
    return sorted(e)


@pytest.fixture(scope="module")
def padded():
    """A batch of two, the second left-padded by three tokens (as for generation)."""
    torch.manual_seed(1)
    ids = torch.randint(1, V, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_llama_gqa_padded_batch_at_depth_2(padded):
    model = llama()
    with torch.no_grad():
        before = model(**padded).logits
    flow = nfw.trace(model, padded, stages=2)
    assert [s.id for s in flow.stages] == [
        "model.embed_tokens",
        "model.rotary_emb",
        "model.layers.0",
        "model.layers.1",
        "model.norm",
        "lm_head",
    ]
    assert edge_list(flow) == llama_depth2_edges(2)
    assert flow.stage("model.layers.0").shapes == ((2, 7, 32),)
    assert flow.stage("model.rotary_emb").shapes == ((1, 7, 8), (1, 7, 8))
    same_output(model, padded, "logits", before)


def test_llama_sublayers_get_their_predecessor_and_the_latest_residual(padded):
    """``model.layers.0.*``: the residual ``embeddings + attention`` is read by
    ``post_attention_layernorm`` and by the output's walk; the output's walk reaches the ids
    and the attention only through that relay (a stream: it carries two sources' data), and
    the ids are an ancestor of ``self_attn``: dropped. The causal mask, which ``self_attn``
    also reads, carries the mask's data alone: no stream, so the mask that layer 1 (walked
    through) reads is drawn entering the output -> merge (it lies on no primary path)."""
    flow = nfw.trace(llama(), padded, stages=["model.layers.0.*"], capture=False)
    assert edge_list(flow) == sorted(
        [
            # the embeddings (unselected) are walked through to the ids
            ("input:input_ids", "model.layers.0.input_layernorm", "flow"),
            ("model.layers.0.input_layernorm", "model.layers.0.self_attn", "flow"),
            ("input:attention_mask", "model.layers.0.self_attn", "merge"),  # cos/sin: arange
            ("model.layers.0.self_attn", "model.layers.0.post_attention_layernorm", "flow"),
            ("input:input_ids", "model.layers.0.post_attention_layernorm", "skip"),  # residual
            ("model.layers.0.post_attention_layernorm", "model.layers.0.mlp", "flow"),
            # layer 1 and the head are walked through
            ("model.layers.0.mlp", "output:logits", "flow"),
            ("model.layers.0.self_attn", "output:logits", "skip"),
            ("input:attention_mask", "output:logits", "merge"),  # layer 1's causal mask
        ]
    )


def fully_masked_rows(mask_row: torch.Tensor, q_len: int) -> np.ndarray:
    """Query rows of a causal, padded sample that see no key at all."""
    k = mask_row.numel()
    offset = k - q_len
    visible = np.array(
        [[bool(mask_row[j]) and j <= offset + i for j in range(k)] for i in range(q_len)]
    )
    return ~visible.any(-1)


@pytest.mark.parametrize("sample", [0, 1])
@pytest.mark.parametrize("pad", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_llama_attention_equals_output_attentions(padded, attn, pad, sample):
    """Each layer's map is ``output_attentions`` of the same weights in eager attention, for
    every head, including the padded sample. (sdpa without padding takes the
    ``enable_gqa=True`` path: 2 key heads for 4 query heads.) Rows that see no key at all
    (left padding under a causal mask) are uniform in eager attention (every score gets the
    same large negative bias), but scaled_dot_product_attention gives them no weight at all:
    there the sdpa map must be what sdpa computed, zeros."""
    inputs = dict(padded)
    if not pad:
        inputs["attention_mask"] = torch.ones_like(inputs["attention_mask"])
    with torch.no_grad():
        want = llama("eager")(**inputs, output_attentions=True).attentions
    flow = nfw.trace(llama(attn), inputs, stages=2, sample=sample)
    dead = fully_masked_rows(inputs["attention_mask"][sample], 7)
    assert dead.any() == (pad and sample == 1)
    for layer in range(2):
        (got,) = flow.attention(f"model.layers.{layer}")
        expected = want[layer][sample].numpy()
        assert got.weights.shape == (4, 7, 7) == expected.shape
        if attn == "sdpa":
            expected = expected.copy()
            expected[:, dead] = 0.0
        np.testing.assert_allclose(got.weights, expected, atol=1e-5)
    # eager always builds the mask from attention_mask (indexing it); sdpa needs none when
    # nothing is padded (``is_causal``), and then the mask reaches no stage
    edges = llama_depth2_edges(2)
    if attn == "sdpa" and not pad:
        edges = [e for e in edges if e[0] != "input:attention_mask"]
    assert edge_list(flow) == edges


@pytest.mark.parametrize("pad", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_llama_decode_step_with_a_kv_cache(padded, attn, pad):
    """One token after a prefill: maps are (heads, 1, past + 1) and equal the eager model's
    own ``output_attentions`` for the same step. With sdpa and a padding mask, transformers
    packs the grouped query heads (``pack_gqa``: the query becomes (batch, 2 kv heads, 2, dim)),
    which must still come back as 4 heads of one query row."""
    inputs = dict(padded)
    if not pad:
        inputs["attention_mask"] = torch.ones_like(inputs["attention_mask"])
    reference = llama("eager")
    with torch.no_grad():
        past = reference(**inputs, use_cache=True).past_key_values
    step = {
        "input_ids": torch.tensor([[5], [9]]),
        "attention_mask": torch.cat([inputs["attention_mask"], torch.ones(2, 1).long()], 1),
    }
    with torch.no_grad():
        want = reference(
            **step, past_key_values=copy.deepcopy(past), use_cache=True, output_attentions=True
        ).attentions
    model = llama(attn)
    for sample in (0, 1):
        flow = nfw.trace(
            model,
            {**step, "past_key_values": copy.deepcopy(past), "use_cache": True},
            stages=2,
            sample=sample,
        )
        for layer in range(2):
            (got,) = flow.attention(f"model.layers.{layer}")
            assert got.weights.shape == (4, 1, 8)
            np.testing.assert_allclose(got.weights, want[layer][sample].numpy(), atol=1e-5)
    # the cache is no model input; the step's graph is the prefill's
    expected = llama_depth2_edges(2)
    if not pad and attn == "sdpa":  # no padding: sdpa needs no mask, the mask reaches nothing
        expected = [e for e in expected if e[0] != "input:attention_mask"]
    assert edge_list(flow) == expected


# -- T5: encoder-decoder, cross-attention merging from the encoder -----------------------------


def t5(attn: str = "eager") -> torch.nn.Module:
    config = transformers.T5Config(
        vocab_size=V,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        decoder_start_token_id=0,
        pad_token_id=0,
        use_cache=False,
    )
    config._attn_implementation = attn
    return seeded(lambda: transformers.T5ForConditionalGeneration(config))


@pytest.fixture(scope="module")
def t5_inputs():
    torch.manual_seed(2)
    ids = torch.randint(1, V, (2, 6))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0  # the second source sentence is right-padded
    # the mask first: the flow must follow the call's arguments, not this order
    return {
        "attention_mask": mask,
        "input_ids": ids,
        "decoder_input_ids": torch.randint(1, V, (2, 5)),
    }


@pytest.mark.parametrize("use_cache", [False, True])
def test_t5_at_depth_1(t5_inputs, use_cache):
    """T5ForConditionalGeneration.forward: ``encoder(input_ids=, attention_mask=)``: the ids
    are the call's first tensor -> flow (although the mask was given to the model first), the
    mask -> merge; ``decoder(input_ids=decoder_input_ids, attention_mask=None, ...,
    encoder_hidden_states=encoder output, encoder_attention_mask=attention_mask)``: the
    decoder's own ids are its first argument with a source -> flow (the decoder continues its
    own tokens, as the paper's figure draws it); the encoder's output is not on that path
    (the decoder's path is its ids alone) -> merge (the cross-attention's keys and values);
    the mask -> merge. With a cache (an ``EncoderDecoderCache`` the decoder makes and returns:
    no tensor leaf) the same."""
    model = t5()
    kw = {"use_cache": use_cache}
    with torch.no_grad():
        before = model(**t5_inputs, **kw).logits
    flow = nfw.trace(model, t5_inputs, stages=1, kwargs=kw)
    assert flow.inputs == ("input:attention_mask", "input:input_ids", "input:decoder_input_ids")
    assert [s.id for s in flow.stages] == ["encoder", "decoder", "lm_head"]  # `shared`: not run
    assert edge_list(flow) == sorted(
        [
            ("input:input_ids", "encoder", "flow"),
            ("input:attention_mask", "encoder", "merge"),
            ("input:decoder_input_ids", "decoder", "flow"),  # input_ids=: its first argument
            ("encoder", "decoder", "merge"),  # encoder_hidden_states=: beside it
            ("input:attention_mask", "decoder", "merge"),  # encoder_attention_mask=
            ("decoder", "lm_head", "flow"),
            ("lm_head", "output:logits", "flow"),
            ("encoder", "output:encoder_last_hidden_state", "flow"),
        ]
    )
    same_output(model, {**t5_inputs, **kw}, "logits", before)


def test_nn_transformer_the_decoder_continues_the_target_and_the_memory_merges():
    """``nn.Transformer.forward(src, tgt)``: ``memory = self.encoder(src)``, then
    ``self.decoder(tgt, memory)``. The decoder's first argument, ``tgt``, is a model input ->
    flow; the memory is not on its path (the target alone) -> merge. Inside,
    ``TransformerDecoder.forward`` calls each layer ``mod(output, memory, ...)`` with
    ``output = tgt`` at first: ``layers.0`` continues the target, ``layers.k`` continues
    ``layers.k-1``; the encoder is on none of their paths (target, layers.0, ...) -> a merge
    into every layer (its cross-attention), never a skip."""
    from fixture_models import nn_transformer

    model, (src, tgt) = nn_transformer(layers=3)
    with torch.no_grad():
        before = model(src, tgt)
    flow = nfw.trace(model, (src, tgt), stages=1)
    assert edge_list(flow) == sorted(
        [
            ("input:0", "encoder", "flow"),
            ("input:1", "decoder", "flow"),  # tgt: the decoder's first argument
            ("encoder", "decoder", "merge"),  # memory
            ("decoder", "output:0", "flow"),
        ]
    )
    layers = [f"decoder.layers.{k}" for k in range(3)]
    flow = nfw.trace(model, (src, tgt), stages=["encoder", *layers, "decoder.norm"])
    expected = [("input:0", "encoder", "flow"), ("input:1", layers[0], "flow")]
    expected += [(a, b, "flow") for a, b in itertools.pairwise(layers)]
    expected += [("encoder", layer, "merge") for layer in layers]
    expected += [(layers[-1], "decoder.norm", "flow"), ("decoder.norm", "output:0", "flow")]
    assert edge_list(flow) == sorted(expected)
    with torch.no_grad():
        assert torch.equal(model(src, tgt), before)


def test_t5_cross_attention_merges_the_encoder_into_the_decoder(t5_inputs):
    """Inside the first decoder block (T5Block.forward, T5LayerCrossAttention.forward):

    - ``layer.0`` (self-attention) reads the embeddings (through the decoder's dropout); its
      causal mask is made of aranges (no decoder mask given): one source;
    - ``layer.1`` (cross-attention) gets ``hidden_states`` from ``layer.0`` first -> flow, then
      ``key_value_states`` from the encoder (no ancestor of ``layer.0``) -> merge, and the
      encoder mask (an ancestor of the encoder only) -> merge;
    - ``decoder.block.1`` gets the hidden states (``layer.2``), the self-attention position
      bias (made by ``layer.0``), the cross-attention position bias (the zeros made by
      ``layer.1``'s attention), the encoder output and its mask: all four are ancestors of
      ``layer.2``; the first two lie on its chain of flow edges (layer.2 <- layer.1 <-
      layer.0) -> skips; the encoder's output and the mask do not -> merges (the encoder
      merges into each decoder layer).
    """
    stages = [
        "encoder",
        "decoder.embed_tokens",
        "decoder.block.0.layer.*",
        "decoder.block.1",
        "decoder.final_layer_norm",
        "lm_head",
    ]
    flow = nfw.trace(t5(), t5_inputs, stages=stages, capture=False)
    assert edge_list(flow) == sorted(
        [
            ("input:input_ids", "encoder", "flow"),
            ("input:attention_mask", "encoder", "merge"),
            ("input:decoder_input_ids", "decoder.embed_tokens", "flow"),
            ("decoder.embed_tokens", "decoder.block.0.layer.0", "flow"),
            ("decoder.block.0.layer.0", "decoder.block.0.layer.1", "flow"),
            ("encoder", "decoder.block.0.layer.1", "merge"),
            ("input:attention_mask", "decoder.block.0.layer.1", "merge"),
            ("decoder.block.0.layer.1", "decoder.block.0.layer.2", "flow"),
            ("decoder.block.0.layer.2", "decoder.block.1", "flow"),
            ("decoder.block.0.layer.0", "decoder.block.1", "skip"),
            ("decoder.block.0.layer.1", "decoder.block.1", "skip"),
            ("encoder", "decoder.block.1", "merge"),
            ("input:attention_mask", "decoder.block.1", "merge"),
            ("decoder.block.1", "decoder.final_layer_norm", "flow"),
            ("decoder.final_layer_norm", "lm_head", "flow"),
            ("lm_head", "output:logits", "flow"),
            ("encoder", "output:encoder_last_hidden_state", "flow"),
        ]
    )


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_t5_cross_attention_opened_continues_the_decoder_not_the_encoder(t5_inputs, attn):
    """The encoder opened to its sublayers (some ten stages deep) and each decoder block's
    cross-attention to its projections (T5Attention.forward: ``scores = q @ k.T``, plus the
    position bias, softmax, ``@ v``; or ``F.scaled_dot_product_attention(q, k, v)``, then
    ``o``): the attention's output rows are the queries', so ``o`` continues ``q`` -> flow,
    and ``k`` and ``v`` (the encoder's output, far deeper than the decoder's short way to
    ``q``) -> merges. The block's feed-forward then reads the residual add of the
    cross-attention's input (``layer.0``) and its output (``layer.1.dropout``): the
    dropout -> flow, ``layer.0`` on its path (dropout <- o <- q <- layer_norm <- layer.0)
    -> skip. The encoder's mask, added to the scores with the position bias -> a merge into
    ``o``. By depth alone ``o`` continued ``k``, and ``layer.0`` was a merge."""
    stages = [
        "encoder.embed_tokens",
        "encoder.block.*.layer.*",
        "encoder.final_layer_norm",
        "encoder.dropout",
        "decoder.embed_tokens",
        "decoder.block.*.layer.0",
        "decoder.block.*.layer.1.layer_norm",
        "decoder.block.*.layer.1.EncDecAttention.*",
        "decoder.block.*.layer.1.dropout",
        "decoder.block.*.layer.2",
        "decoder.final_layer_norm",
        "lm_head",
    ]
    flow = nfw.trace(t5(attn), t5_inputs, stages=stages, capture=False)
    got = edge_list(flow)
    for b in range(2):
        cross = f"decoder.block.{b}.layer.1"
        into_o = sorted(
            (src, kind) for src, dst, kind in got if dst == f"{cross}.EncDecAttention.o"
        )
        assert into_o == [
            (f"{cross}.EncDecAttention.k", "merge"),
            (f"{cross}.EncDecAttention.q", "flow"),
            (f"{cross}.EncDecAttention.v", "merge"),
            ("input:attention_mask", "merge"),
        ]
        for p in "kv":  # the encoder's output, the projection's one input
            (src,) = [s for s, dst, _ in got if dst == f"{cross}.EncDecAttention.{p}"]
            assert src.startswith("encoder.dropout")
        into_ff = sorted(
            (src, kind) for src, dst, kind in got if dst == f"decoder.block.{b}.layer.2"
        )
        assert into_ff == [(f"decoder.block.{b}.layer.0", "skip"), (f"{cross}.dropout", "flow")]


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_t5_attention_equals_output_attentions(t5_inputs, attn):
    """Encoder self-attention, decoder self-attention and cross-attention, with the relative
    position bias added to the scores (sdpa: as a float mask), for the padded sample."""
    with torch.no_grad():
        out = t5("eager")(**t5_inputs, output_attentions=True)
    flow = nfw.trace(t5(attn), t5_inputs, stages=1, sample=1)
    encoder = flow.attention("encoder")
    assert len(encoder) == 2
    for got, want in zip(encoder, out.encoder_attentions):
        assert got.weights.shape == (4, 6, 6)
        np.testing.assert_allclose(got.weights, want[1].numpy(), atol=1e-5)
        assert np.all(got.weights[:, :, 4:] < 1e-6)  # the padded source tokens
    for layer in range(2):
        own, cross = flow.attention(f"decoder.block.{layer}")
        assert own.weights.shape == (4, 5, 5) and cross.weights.shape == (4, 5, 6)
        np.testing.assert_allclose(own.weights, out.decoder_attentions[layer][1], atol=1e-5)
        np.testing.assert_allclose(cross.weights, out.cross_attentions[layer][1], atol=1e-5)


# -- CLIP: a text and a vision tower, joined at the logits ------------------------------------


def clip(attn: str = "eager") -> torch.nn.Module:
    config = transformers.CLIPConfig(
        text_config=dict(
            vocab_size=V,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=16,
            bos_token_id=0,
            eos_token_id=2,  # the pooled token: the argmax of the ids
            pad_token_id=1,
        ),
        vision_config=dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=16,
            patch_size=4,
        ),
        projection_dim=16,
    )
    config._attn_implementation = attn
    config.text_config._attn_implementation = attn
    config.vision_config._attn_implementation = attn
    return seeded(lambda: transformers.CLIPModel(config))


@pytest.fixture(scope="module")
def clip_inputs():
    torch.manual_seed(3)
    ids = torch.randint(3, V, (2, 8))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # right padding: every query row still sees its first token
    return {"input_ids": ids, "attention_mask": mask, "pixel_values": torch.randn(2, 3, 16, 16)}


def test_clip_towers_join_at_the_logits(clip_inputs):
    """CLIPModel.forward runs the vision tower, then the text tower:

    - text: ``position_embedding`` reads the ``position_ids`` buffer: no data source -> an
      ``order`` edge from the previous stage (``token_embedding``), and no ancestry: in
      ``encoder.layers.0`` it merges beside the token embeddings (flow) and the causal+padding
      mask built from ``attention_mask``, which merges into ``layers.1`` too (it is never on
      the text's chain of flow edges);
    - the pooled text token is ``last_hidden_state[arange, input_ids.argmax(-1)]``: the ids
      reach ``text_projection`` (through the ids' view, which ``token_embedding`` also reads:
      a relay, but the ids are no ancestor of another non-primary source, so the edge stays)
      -> skip;
    - ``logits_per_text = text_embeds @ image_embeds.T * scale`` (and its transpose): one
      tensor, both projections on its path: the text path is the deeper one (7 ancestors
      against 6) -> flow; the image projection -> merge.
    """
    model = clip()
    with torch.no_grad():
        before = model(**clip_inputs).logits_per_image
    stages = [
        "vision_model.embeddings",
        "vision_model.pre_layrnorm",
        "vision_model.encoder.layers.*",
        "vision_model.post_layernorm",
        "visual_projection",
        "text_model.embeddings.*",
        "text_model.encoder.layers.*",
        "text_model.final_layer_norm",
        "text_projection",
    ]
    flow = nfw.trace(model, clip_inputs, stages=stages)
    tv, tt = "vision_model.encoder.layers", "text_model.encoder.layers"
    assert edge_list(flow) == sorted(
        [
            ("input:pixel_values", "vision_model.embeddings", "flow"),
            ("vision_model.embeddings", "vision_model.pre_layrnorm", "flow"),
            ("vision_model.pre_layrnorm", f"{tv}.0", "flow"),
            (f"{tv}.0", f"{tv}.1", "flow"),
            (f"{tv}.1", "vision_model.post_layernorm", "flow"),  # last_hidden_state[:, 0]
            ("vision_model.post_layernorm", "visual_projection", "flow"),
            ("input:input_ids", "text_model.embeddings.token_embedding", "flow"),
            (
                "text_model.embeddings.token_embedding",
                "text_model.embeddings.position_embedding",
                "order",
            ),
            ("text_model.embeddings.token_embedding", f"{tt}.0", "flow"),
            ("text_model.embeddings.position_embedding", f"{tt}.0", "merge"),
            ("input:attention_mask", f"{tt}.0", "merge"),
            (f"{tt}.0", f"{tt}.1", "flow"),
            ("input:attention_mask", f"{tt}.1", "merge"),
            (f"{tt}.1", "text_model.final_layer_norm", "flow"),
            ("text_model.final_layer_norm", "text_projection", "flow"),
            ("input:input_ids", "text_projection", "skip"),
            ("text_projection", "output:logits_per_image", "flow"),
            ("visual_projection", "output:logits_per_image", "merge"),
            ("text_projection", "output:logits_per_text", "flow"),
            ("visual_projection", "output:logits_per_text", "merge"),
            ("text_projection", "output:text_embeds", "flow"),
            ("visual_projection", "output:image_embeds", "flow"),
            ("text_model.final_layer_norm", "output:text_model_output.last_hidden_state", "flow"),
            ("text_projection", "output:text_model_output.pooler_output", "flow"),
            (f"{tv}.1", "output:vision_model_output.last_hidden_state", "flow"),
            ("visual_projection", "output:vision_model_output.pooler_output", "flow"),
        ]
    )
    same_output(model, clip_inputs, "logits_per_image", before)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_clip_attention_equals_output_attentions(clip_inputs, attn):
    with torch.no_grad():
        out = clip("eager")(**clip_inputs, output_attentions=True)
    flow = nfw.trace(clip(attn), clip_inputs, stages=2, sample=1)
    for tower, length, want in [
        ("text_model", 8, out.text_model_output.attentions),
        ("vision_model", 17, out.vision_model_output.attentions),
    ]:
        for layer in range(2):
            (got,) = flow.attention(f"{tower}.encoder.layers.{layer}")
            assert got.weights.shape == (4, length, length)
            np.testing.assert_allclose(got.weights, want[layer][1].numpy(), atol=1e-5)


# -- Whisper: an audio encoder, a decoder with cross-attention --------------------------------


def whisper(attn: str = "eager") -> torch.nn.Module:
    config = transformers.WhisperConfig(
        vocab_size=V,
        num_mel_bins=8,
        encoder_layers=2,
        decoder_layers=2,
        d_model=32,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=8,  # 16 mel frames, halved by conv2
        max_target_positions=16,
        decoder_start_token_id=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        use_cache=False,
    )
    config._attn_implementation = attn
    return seeded(lambda: transformers.WhisperForConditionalGeneration(config))


@pytest.fixture(scope="module")
def whisper_inputs():
    torch.manual_seed(4)
    return {
        "input_features": torch.randn(2, 8, 16),
        "decoder_input_ids": torch.randint(3, V, (2, 5)),
    }


def test_whisper_encoder_and_decoder(whisper_inputs):
    """WhisperEncoder.forward: gelu(conv1), gelu(conv2), + ``embed_positions(arange)`` (no data
    source -> order edge from conv2, no ancestry -> a merge into layer 0). WhisperDecoder:
    ``embed_positions(input_ids, position_ids=arange)`` receives the decoder ids but reads only
    their shape: no source, an order edge from the stage before it, ``embed_tokens``; decoder
    layer 0 is called as ``decoder_layer(hidden_states, causal_mask, encoder_hidden_states,
    ...)``: its first tensor is the summed embeddings ``embed_tokens + embed_positions``
    (``embed_tokens`` has an ancestor, the ids; ``embed_positions`` none, an order edge is no
    ancestry: ``embed_tokens`` -> flow; ``embed_positions`` -> merge), the causal mask is made of
    aranges (no source), and the encoder output (no ancestor of ``embed_tokens``) -> merge:
    the decoder's own stream is its trunk. Layer 1: the previous layer first -> flow; the
    encoder output is read directly and is an ancestor of layer 0, but not on the decoder's
    chain of flow edges (layers.0 <- embed_tokens <- the ids) -> merge, into every decoder
    layer."""
    model = whisper()
    with torch.no_grad():
        before = model(**whisper_inputs).logits
    stages = [
        "model.encoder.conv1",
        "model.encoder.conv2",
        "model.encoder.embed_positions",
        "model.encoder.layers.*",
        "model.encoder.layer_norm",
        "model.decoder.embed_tokens",
        "model.decoder.embed_positions",
        "model.decoder.layers.*",
        "model.decoder.layer_norm",
        "proj_out",
    ]
    flow = nfw.trace(model, whisper_inputs, stages=stages)
    enc, dec = "model.encoder", "model.decoder"
    assert edge_list(flow) == sorted(
        [
            ("input:input_features", f"{enc}.conv1", "flow"),
            (f"{enc}.conv1", f"{enc}.conv2", "flow"),
            (f"{enc}.conv2", f"{enc}.embed_positions", "order"),
            (f"{enc}.conv2", f"{enc}.layers.0", "flow"),
            (f"{enc}.embed_positions", f"{enc}.layers.0", "merge"),
            (f"{enc}.layers.0", f"{enc}.layers.1", "flow"),
            (f"{enc}.layers.1", f"{enc}.layer_norm", "flow"),
            ("input:decoder_input_ids", f"{dec}.embed_tokens", "flow"),
            (f"{dec}.embed_tokens", f"{dec}.embed_positions", "order"),
            (f"{dec}.embed_tokens", f"{dec}.layers.0", "flow"),  # hidden_states, first
            (f"{dec}.embed_positions", f"{dec}.layers.0", "merge"),  # the same tensor, later node
            (f"{enc}.layer_norm", f"{dec}.layers.0", "merge"),  # encoder_hidden_states
            (f"{dec}.layers.0", f"{dec}.layers.1", "flow"),
            (f"{enc}.layer_norm", f"{dec}.layers.1", "merge"),
            (f"{dec}.layers.1", f"{dec}.layer_norm", "flow"),
            (f"{dec}.layer_norm", "proj_out", "flow"),
            ("proj_out", "output:logits", "flow"),
            (f"{enc}.layer_norm", "output:encoder_last_hidden_state", "flow"),
        ]
    )
    same_output(model, whisper_inputs, "logits", before)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_whisper_attention_equals_output_attentions(whisper_inputs, attn):
    with torch.no_grad():
        out = whisper("eager")(**whisper_inputs, output_attentions=True)
    flow = nfw.trace(whisper(attn), whisper_inputs, stages=2, sample=1)
    encoder = flow.attention("model.encoder")
    assert [m.weights.shape for m in encoder] == [(4, 8, 8)] * 2
    for got, want in zip(encoder, out.encoder_attentions):
        np.testing.assert_allclose(got.weights, want[1].numpy(), atol=1e-5)
    for layer in range(2):
        own, cross = flow.attention(f"model.decoder.layers.{layer}")
        assert own.weights.shape == (4, 5, 5) and cross.weights.shape == (4, 5, 8)
        np.testing.assert_allclose(own.weights, out.decoder_attentions[layer][1], atol=1e-5)
        np.testing.assert_allclose(cross.weights, out.cross_attentions[layer][1], atol=1e-5)


def test_whisper_decode_step_reuses_the_cached_cross_attention(whisper_inputs):
    """A decode step as ``generate`` runs it: ``encoder_outputs`` given (a tuple: input node
    ``encoder_outputs.0``), one new token, the cache from the first step (the cross-attention
    keys and values come from it: no encoder ops run). ``model.decoder`` receives
    ``input_ids=`` first -> flow, then ``encoder_hidden_states=``, which no op reads (each
    cross-attention takes its keys and values from the cache): no edge (graph/reads.py);
    ``encoder_last_hidden_state`` is the given tensor itself: an edge from the input."""
    model = whisper()
    with torch.no_grad():
        first = model(**whisper_inputs, use_cache=True)
    step = {
        "encoder_outputs": (first.encoder_last_hidden_state,),
        "decoder_input_ids": torch.tensor([[7], [11]]),
        "use_cache": True,
    }
    with torch.no_grad():
        want = model(
            **step, past_key_values=copy.deepcopy(first.past_key_values), output_attentions=True
        )
    flow = nfw.trace(
        model, {**step, "past_key_values": copy.deepcopy(first.past_key_values)}, stages=2
    )
    assert flow.inputs == ("input:encoder_outputs.0", "input:decoder_input_ids")
    assert edge_list(flow) == sorted(
        [
            ("input:decoder_input_ids", "model.decoder", "flow"),
            ("model.decoder", "proj_out", "flow"),
            ("proj_out", "output:logits", "flow"),
            ("input:encoder_outputs.0", "output:encoder_last_hidden_state", "flow"),
        ]
    )
    maps = flow.attention("model.decoder")
    assert [m.weights.shape for m in maps] == [(4, 1, 6), (4, 1, 8)] * 2
    for layer in range(2):
        own, cross = maps[2 * layer : 2 * layer + 2]
        np.testing.assert_allclose(own.weights, want.decoder_attentions[layer][0], atol=1e-5)
        np.testing.assert_allclose(cross.weights, want.cross_attentions[layer][0], atol=1e-5)


# -- a mixture of experts: Qwen2-MoE (routed experts beside a gated shared expert) -------------


def qwen2_moe(attn: str = "eager") -> torch.nn.Module:
    config = transformers.Qwen2MoeConfig(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    config._attn_implementation = attn
    return seeded(lambda: transformers.Qwen2MoeForCausalLM(config))


def test_qwen2_moe_experts_and_the_shared_expert_merge(padded):
    """Qwen2MoeSparseMoeBlock.forward: the shared expert, the router (``gate``), the routed
    ``experts(hidden, selected_experts, routing_weights)`` and ``shared_expert_gate`` all read
    one view of the normed hidden states; the experts' first argument is that view -> flow
    from the norm, then the router's indices and weights (the gate is no ancestor of the norm)
    -> merge. The next layer receives
    ``residual + (experts + sigmoid(shared_expert_gate) * shared_expert)`` first (one tensor:
    its deepest source before any relay, the experts, 5 ancestors against 4 -> flow), the
    shared expert and its gate are no ancestors of the experts -> merges; the residual
    (read by ``post_attention_layernorm`` too: a relay) brings the attention and the ids, both
    ancestors of the shared expert -> no edge; the causal mask is read directly, an ancestor
    of the experts but not on their chain of flow edges -> merge.
    The inputs come mask first, but ``self_attn`` is called ``hidden_states=`` first (the ids,
    through the unselected embeddings and norm) -> flow, ``attention_mask=`` -> merge."""
    inputs = {"attention_mask": padded["attention_mask"], "input_ids": padded["input_ids"]}
    model = qwen2_moe()
    with torch.no_grad():
        before = model(**inputs).logits
    stages = [
        "model.layers.0.self_attn",
        "model.layers.0.post_attention_layernorm",
        "model.layers.0.mlp.*",
        "model.layers.1",
    ]
    flow = nfw.trace(model, inputs, stages=stages)
    p = "model.layers.0"
    assert [s.id for s in flow.stages] == [
        f"{p}.self_attn",
        f"{p}.post_attention_layernorm",
        f"{p}.mlp.shared_expert",
        f"{p}.mlp.gate",
        f"{p}.mlp.experts",
        f"{p}.mlp.shared_expert_gate",
        "model.layers.1",
    ]
    assert edge_list(flow) == sorted(
        [
            ("input:input_ids", f"{p}.self_attn", "flow"),
            ("input:attention_mask", f"{p}.self_attn", "merge"),
            (f"{p}.self_attn", f"{p}.post_attention_layernorm", "flow"),
            ("input:input_ids", f"{p}.post_attention_layernorm", "skip"),
            (f"{p}.post_attention_layernorm", f"{p}.mlp.shared_expert", "flow"),
            (f"{p}.post_attention_layernorm", f"{p}.mlp.gate", "flow"),
            (f"{p}.post_attention_layernorm", f"{p}.mlp.experts", "flow"),  # hidden_states
            (f"{p}.mlp.gate", f"{p}.mlp.experts", "merge"),  # top_k_index, top_k_weights
            (f"{p}.post_attention_layernorm", f"{p}.mlp.shared_expert_gate", "flow"),
            (f"{p}.mlp.experts", "model.layers.1", "flow"),
            (f"{p}.mlp.shared_expert", "model.layers.1", "merge"),
            (f"{p}.mlp.shared_expert_gate", "model.layers.1", "merge"),
            ("input:attention_mask", "model.layers.1", "merge"),
            ("model.layers.1", "output:logits", "flow"),
        ]
    )
    same_output(model, inputs, "logits", before)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_qwen2_moe_attention_equals_output_attentions(padded, attn):
    """As for LLaMA: the left-padded sample, grouped-query heads; the rows that see no key
    are zeros under sdpa."""
    with torch.no_grad():
        want = qwen2_moe("eager")(**padded, output_attentions=True).attentions
    flow = nfw.trace(qwen2_moe(attn), padded, stages=2, sample=1)
    dead = fully_masked_rows(padded["attention_mask"][1], 7)
    for layer in range(2):
        (got,) = flow.attention(f"model.layers.{layer}")
        expected = want[layer][1].numpy().copy()
        if attn == "sdpa":
            expected[:, dead] = 0.0
        assert got.weights.shape == (4, 7, 7)
        np.testing.assert_allclose(got.weights, expected, atol=1e-5)


# -- ViT -------------------------------------------------------------------------------------


def vit(attn: str = "eager") -> torch.nn.Module:
    config = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=16,
        patch_size=4,
        num_labels=3,
    )
    config._attn_implementation = attn
    return seeded(lambda: transformers.ViTForImageClassification(config))


def test_vit_sublayers_and_blocks():
    """ViTLayer.forward (pre-norm): the embeddings (``cat(cls, patches) + positions``, both
    parameters: one source, the patch embedding) are read by ``layernorm_before`` and reach
    ``layernorm_after`` as the residual (a relay, but the patches are no ancestor of another
    non-primary source) -> skip; ``layers.1`` gets the MLP and, through the relayed residual,
    the attention (kept) and the patches (an ancestor of the attention: dropped)."""
    model = vit()
    pixels = {"pixel_values": torch.randn(2, 3, 16, 16)}
    with torch.no_grad():
        before = model(**pixels).logits
    p = "vit.layers.0"
    stages = [
        "vit.embeddings.patch_embeddings",
        f"{p}.layernorm_before",
        f"{p}.attention",
        f"{p}.layernorm_after",
        f"{p}.mlp",
        "vit.layers.1",
        "vit.layernorm",
        "classifier",
    ]
    flow = nfw.trace(model, pixels, stages=stages)
    assert edge_list(flow) == sorted(
        [
            ("input:pixel_values", "vit.embeddings.patch_embeddings", "flow"),
            ("vit.embeddings.patch_embeddings", f"{p}.layernorm_before", "flow"),
            (f"{p}.layernorm_before", f"{p}.attention", "flow"),
            (f"{p}.attention", f"{p}.layernorm_after", "flow"),
            ("vit.embeddings.patch_embeddings", f"{p}.layernorm_after", "skip"),
            (f"{p}.layernorm_after", f"{p}.mlp", "flow"),
            (f"{p}.mlp", "vit.layers.1", "flow"),
            (f"{p}.attention", "vit.layers.1", "skip"),
            ("vit.layers.1", "vit.layernorm", "flow"),
            ("vit.layernorm", "classifier", "flow"),  # sequence_output[:, 0, :]
            ("classifier", "output:logits", "flow"),
        ]
    )
    same_output(model, pixels, "logits", before)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_vit_attention_equals_output_attentions(attn):
    pixels = {"pixel_values": torch.randn(2, 3, 16, 16)}
    with torch.no_grad():
        want = vit("eager")(**pixels, output_attentions=True).attentions
    flow = nfw.trace(vit(attn), pixels, stages=2, sample=1)
    for layer in range(2):
        (got,) = flow.attention(f"vit.layers.{layer}")
        assert got.weights.shape == (4, 17, 17)
        np.testing.assert_allclose(got.weights, want[layer][1].numpy(), atol=1e-5)


# -- Mamba (its CPU path: the selective scan in torch) ----------------------------------------


def test_mamba_mixer():
    """MambaMixer's torch path calls ``in_proj``, ``x_proj`` and ``out_proj`` as modules
    (``conv1d`` and ``dt_proj`` only lend their weights): ``x_proj`` reads the convolved half
    of ``in_proj``; the scan reads ``x_proj``'s time step, B and C and ``in_proj``'s gate (read
    directly, not through ``x_proj``'s input) -> flow from ``x_proj``, skip from ``in_proj``.
    The block's residual (the embeddings, read by ``layers.0.norm`` too: a relay, but no
    ancestor of another non-primary source) -> a skip into ``layers.1``."""
    config = transformers.MambaConfig(
        vocab_size=V, hidden_size=32, state_size=4, num_hidden_layers=2, expand=2, conv_kernel=3
    )
    model = seeded(lambda: transformers.MambaForCausalLM(config))
    inputs = {"input_ids": torch.randint(0, V, (2, 6))}
    kw = {"use_cache": False}
    with torch.no_grad():
        before = model(**inputs, **kw).logits
    m = "backbone.layers.0.mixer"
    stages = [
        "backbone.embeddings",
        "backbone.layers.0.norm",
        f"{m}.in_proj",
        f"{m}.x_proj",
        f"{m}.out_proj",
        "backbone.layers.1",
        "backbone.norm_f",
        "lm_head",
    ]
    flow = nfw.trace(model, inputs, kwargs=kw, stages=stages)
    assert edge_list(flow) == sorted(
        [
            ("input:input_ids", "backbone.embeddings", "flow"),
            ("backbone.embeddings", "backbone.layers.0.norm", "flow"),
            ("backbone.layers.0.norm", f"{m}.in_proj", "flow"),
            (f"{m}.in_proj", f"{m}.x_proj", "flow"),
            (f"{m}.x_proj", f"{m}.out_proj", "flow"),
            (f"{m}.in_proj", f"{m}.out_proj", "skip"),
            (f"{m}.out_proj", "backbone.layers.1", "flow"),
            ("backbone.embeddings", "backbone.layers.1", "skip"),
            ("backbone.layers.1", "backbone.norm_f", "flow"),
            ("backbone.norm_f", "lm_head", "flow"),
            ("lm_head", "output:logits", "flow"),
        ]
    )
    with torch.no_grad():
        assert torch.equal(model(**inputs, **kw).logits, before)


# -- the meta device: a LLaMA-7B-shaped model without memory ----------------------------------

LLAMA_7B = dict(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    max_position_embeddings=2048,
    use_cache=False,
)


@pytest.fixture(scope="module")
def llama_7b_on_meta():
    config = transformers.LlamaConfig(**LLAMA_7B)
    config._attn_implementation = "eager"
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).eval()
        inputs = {
            "input_ids": torch.zeros(1, 8, dtype=torch.long),
            "attention_mask": torch.ones(1, 8, dtype=torch.long),
        }
    return model, inputs


def llama_7b_params() -> dict[str, int]:
    """Parameter counts from the config, by hand."""
    h, i, v = 4096, 11008, 32000
    layer = 4 * h * h + 3 * h * i + 2 * h  # q, k, v, o; gate, up, down; two RMS norms
    return {"model.embed_tokens": v * h, "model.layers.0": layer, "model.norm": h, "lm_head": v * h}


def check_llama_7b(flow: nfw.Flow) -> None:
    assert edge_list(flow) == llama_depth2_edges(32)
    # the same structure on the CPU, tiny: the same edges
    small = llama(layers=32)
    ones = {"input_ids": torch.randint(0, V, (1, 8)), "attention_mask": torch.ones(1, 8).long()}
    assert edge_list(nfw.trace(small, ones, stages=2, capture=False)) == edge_list(flow)
    params = llama_7b_params()
    for stage_id, count in params.items():
        assert flow.stage(stage_id).params == count
    assert sum(s.params for s in flow.stages) == 6_738_415_616  # "7B"
    assert flow.stage("model.layers.31").shapes == ((1, 8, 4096),)
    assert flow.stage("model.rotary_emb").shapes == ((1, 8, 128), (1, 8, 128))
    assert flow.stage("lm_head").shapes == ((1, 8, 32000),)


@pytest.mark.slow
def test_llama_7b_on_the_meta_device_gives_the_topology(llama_7b_on_meta):
    """``trace()`` as a user calls it (capture on): no data, so nothing to summarise, but the
    topology, the shapes and the parameter counts."""
    model, inputs = llama_7b_on_meta
    check_llama_7b(nfw.trace(model, inputs, stages=2))


@pytest.mark.slow
def test_llama_7b_on_the_meta_device_without_capture(llama_7b_on_meta):
    model, inputs = llama_7b_on_meta
    check_llama_7b(nfw.trace(model, inputs, stages=2, capture=False))
