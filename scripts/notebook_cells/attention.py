"""Notebook 03, attention maps."""

from __future__ import annotations

from . import SHOW_HELPER, code, md

CELLS = [
    md("""
    # Attention maps, per head

    An attention head decides, for every query position, how much to read from every key
    position: a `(queries × keys)` matrix of probabilities, one per head. `flow.attention(stage)`
    returns these maps for everything a stage computed, recorded during the one forward pass
    from `F.scaled_dot_product_attention`, `F.multi_head_attention_forward` or a hand-written
    `softmax(q @ kᵀ) @ v`.

    Two models:

    1. the demo transformer, trained to **reverse** a sequence of digits: its heads show the
       task as an anti-diagonal;
    2. a tiny **GPT-2** built from a `transformers` config with random weights, to check that the
       captured maps are exactly the model's own `output_attentions`.
    """),
    code("""
    import base64
    import io

    import numpy as np
    import torch
    from IPython.display import HTML, display
    from PIL import Image

    import neural_flow_widget as nfw
    from neural_flow_widget import demos
    from neural_flow_widget.demos import data
    """, SHOW_HELPER, '''
def heatmap(weights, scale=10):
    """A (queries, keys) map of probabilities as PNG bytes: white = 0, dark blue = 1."""
    w = np.clip(np.asarray(weights, np.float32), 0.0, 1.0)[..., None]
    white, blue = np.array([255.0, 255.0, 255.0]), np.array([8.0, 48.0, 107.0])
    rgb = (white + w * (blue - white)).astype(np.uint8)
    image = Image.fromarray(rgb).resize((rgb.shape[1] * scale, rgb.shape[0] * scale), Image.NEAREST)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
'''),
    md("""
    ## 1. A transformer that reverses digits

    A sequence reads `d1 ... d8 SEP d8 ... d2` (16 tokens; `d1` would come next). The model
    predicts each next token under a causal mask, so the query at position *i* decides token
    *i + 1*. From the separator on,
    the next token to write is the digit mirrored around the middle, so a head that does the
    job should read key `15 - i` from query `i`: the **anti-diagonal** of the map.
    """),
    code("""
    demo = demos.load("transformer")
    model, tokens = demo.model, demo.inputs
    labels = ["SEP" if t == data.SEP else str(t) for t in tokens[0].tolist()]
    print(demo.description)
    print(" ".join(labels))

    flow = nfw.trace(model, tokens)
    maps = {block: flow.attention(f"blocks.{block}.attn")[0] for block in (0, 1)}
    m = maps[1]
    print(f"blocks.1.attn: weights {m.weights.shape} (heads, queries, keys), source {m.source!r}")
    """),
    md("""
    Each map below is one head: rows are queries (top = first token), columns are keys, dark =
    high probability. The upper-right triangle is empty because of the causal mask.
    """),
    code("""
    for block, m in maps.items():
        show({f"block {block}, head {h}": heatmap(m.weights[h]) for h in range(m.weights.shape[0])},
             width=150)
    """),
    md("""
    In the lower half of the maps (queries from `SEP` on) the mass sits on a line running from
    the bottom-left corner up to the middle: query 8 (`SEP`) reads key 7, query 9 reads key 6,
    and so on. That is the anti-diagonal `i + j = 15`: each position looks up the digit it must
    write next. (The upper half, while the digits are still being read, has no such task and no
    such line.) Measured per head: the share of the reversed half whose strongest key is
    `15 - i`, and the mean probability placed there.
    """),
    code("""
    queries = np.arange(data.REVERSAL_DIGITS, 2 * data.REVERSAL_DIGITS)   # SEP and after
    mirror = 2 * data.REVERSAL_DIGITS - 1 - queries
    hits = {}
    for block, m in maps.items():
        for h, w in enumerate(m.weights):
            hits[block, h] = float(np.mean(w[queries].argmax(axis=1) == mirror))
            mass = float(w[queries, mirror].mean())
            print(f"block {block} head {h}: argmax on the anti-diagonal {hits[block, h]:4.0%}, "
                  f"mean probability there {mass:.2f}")

    predicted = demo.run().argmax(-1)[0, 8:15].tolist()   # run(): the model's output, no autograd
    print("reversed digits written:", predicted, " expected:", tokens[0, 9:16].tolist())
    """),
    md("""
    Every head of both blocks has learned the mirror lookup, and the model writes the reversed
    digits correctly.

    In the widget, click `blocks.1.attn` (inside `blocks.1`; use **+** to open it) and pick the
    **attention** tab: a head menu, the head-average map, and a grid of all heads. `tokens=`
    labels the positions with the digits instead of the raw token ids.
    """),
    code("""
    widget = nfw.NeuralFlowWidget(model, tokens, tokens=labels)
    widget.selected = "blocks.1.attn"
    widget
    """),
    md("""
    ## 2. GPT-2 from a `transformers` config

    A 2-layer, 4-head GPT-2 with a 100-token vocabulary, built from its config: the weights are
    **random**, nothing is downloaded. Its maps mean nothing linguistically; the point here is
    that the tool records exactly what the model computes. By default `transformers` runs
    attention through PyTorch's fused `scaled_dot_product_attention` (SDPA), which never forms
    the probability matrix; the tool recomputes it from the same queries, keys and mask. The
    model's own `output_attentions=True` needs the "eager" implementation, so the reference is
    an eager copy with the same weights.
    """),
    code("""
    from transformers import GPT2Config, GPT2LMHeadModel


    def tiny_gpt2(attn_implementation):
        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                            bos_token_id=0, eos_token_id=0,   # special tokens inside the vocabulary
                            attn_implementation=attn_implementation)
        return GPT2LMHeadModel(config).eval()


    torch.manual_seed(0)
    gpt2 = tiny_gpt2("sdpa")
    reference = tiny_gpt2("eager")
    reference.load_state_dict(gpt2.state_dict())

    ids = torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(0))
    gflow = nfw.trace(gpt2, ids)
    with torch.no_grad():
        expected = reference(ids, output_attentions=True).attentions   # one (1, heads, q, k) per layer

    same = []
    for layer in range(2):
        (got,) = gflow.attention(f"transformer.h.{layer}")
        same.append(np.allclose(got.weights, expected[layer][0].numpy(), atol=1e-6))
        print(f"transformer.h.{layer}: source {got.source!r}, weights {got.weights.shape}, "
              f"allclose to output_attentions: {same[-1]}")
    """),
    code("""
    (first,) = gflow.attention("transformer.h.0")
    show({f"layer 0, head {h}": heatmap(first.weights[h], scale=12) for h in range(4)}, width=150)
    """),
    md("""
    Random weights give diffuse maps; only the causal triangle is structure. The widget works
    the same on a Hugging Face model: `transformer.h.0` and `transformer.h.1` are `GPT2Block`
    groups, and their `attn` stages carry the maps.
    """),
    code("""
    gwidget = nfw.NeuralFlowWidget(gpt2, ids)
    gwidget.selected = "transformer.h.0.attn"
    gwidget
    """),
    md("""
    ## Checks
    """),
    code("""
    assert all(m.weights.shape == (4, 16, 16) for m in maps.values())
    assert min(hits.values()) >= 0.75          # every head reads the mirror position
    assert predicted == tokens[0, 9:16].tolist()
    assert all(same) and len(same) == 2
    assert widget.selected == "blocks.1.attn" and widget.flow.attention("blocks.1.attn")
    assert gwidget.selected == "transformer.h.0.attn"
    print("attention: all checks passed")
    """),
]
