"""Offline pages (notebook/export.py) keep what a lecture needs first, within the default 8 MB:
every attention stage's maps, then each block's view, then the leaves (shallowest first),
for GPT-2 small (128 tokens), ViT-base (224²) and a Whisper-tiny-sized model built from
their configs (random weights, no download). The maps a page stores as 16-bit codes equal
the run's own maps to one code step; a stage left out says so, why, and the budget that
keeps it, and that budget does keep every stage."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget.notebook import export

BUDGET = 8_000_000


def _part(page: str, name: str):
    return page.split(f'id="nfw-{name}">', 1)[1].split("</script>", 1)[0]


def _read(path):
    page = path.read_text()
    blob = base64.b64decode(_part(page, "blob").strip())
    return json.loads(_part(page, "graph")), json.loads(_part(page, "replies")), blob


def _values(entry: dict, spec: dict, blob: bytes) -> np.ndarray:
    """A "map" or "grid" of a baked reply, as the wire docstring says to read it."""
    at, n = entry["buffers"][spec["buffer"]]
    raw = blob[at : at + n]
    codes = spec.get("codes")
    if codes is None:
        return np.frombuffer(raw, "<f4").reshape(spec["shape"])
    top = (1 << codes["bits"]) - 1
    q = np.frombuffer(raw, "<u2" if codes["bits"] == 16 else "u1").astype(np.float64)
    return (codes["lo"] + (codes["hi"] - codes["lo"]) * q / top).reshape(spec["shape"])


def _attention_ids(flow) -> list[str]:
    return [flow.calls[i].id for i in sorted(flow.capture.maps) if i >= 0]


def _assert_every_map_is_there(flow, replies, blob):
    """Every attention stage's reply is baked, and its maps are the run's own (the mean over
    heads, every head pooled), to one 16-bit step."""
    stages = _attention_ids(flow)
    assert stages, "the model recorded no attention"
    for stage in stages:
        entry = replies.get(stage)
        assert entry is not None and entry["msg"]["ok"], f"{stage} is not in the page"
        maps = flow.attention(stage)
        assert len(entry["msg"]["attention"]) == len(maps) > 0
        for a, m in zip(entry["msg"]["attention"], maps):
            assert a["map"]["codes"]["bits"] == 16 and a["map"]["codes"]["lo"] == 0
            mean = m.shown(None).weights
            step = a["map"]["codes"]["hi"] / 65535
            np.testing.assert_allclose(_values(entry, a["map"], blob), mean, atol=step, rtol=0)
            grid = m.heads_grid()
            step = a["grid"]["codes"]["hi"] / 65535
            np.testing.assert_allclose(_values(entry, a["grid"], blob), grid, atol=step, rtol=0)


@pytest.fixture(scope="module")
def gpt2_page(tmp_path_factory):
    """GPT-2 small as GPT2Config() makes it (12 layers, 12 heads, 768 wide), 128 tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    widget = nfw.NeuralFlowWidget(model, torch.randint(0, 50257, (1, 128)))
    path = widget.to_html(tmp_path_factory.mktemp("gpt2") / "gpt2.html")
    return widget.flow, path


@pytest.mark.slow
def test_gpt2_small_at_128_tokens_keeps_every_attention_map_and_block_in_8_mb(gpt2_page):
    flow, path = gpt2_page
    assert path.stat().st_size <= BUDGET
    graph, replies, blob = _read(path)
    assert len(_attention_ids(flow)) == 12
    _assert_every_map_is_there(flow, replies, blob)
    blocks = [c.id for c in flow.calls if not c.leaf]
    assert [b for b in blocks if not replies.get(b, {}).get("msg", {}).get("ok")] == []
    assert [n for n in replies if not replies[n]["msg"]["ok"]] == []  # nothing left out
    assert not any("budget" in note for note in graph["notes"])


@pytest.mark.slow
def test_a_block_shares_its_attention_stage_s_maps_in_the_blob(gpt2_page):
    """transformer.h.0 carries the maps of its attention, and transformer all twelve: the
    page stores each map once."""
    _, path = gpt2_page
    _, replies, _ = _read(path)

    def spans(node):
        entry = replies[node]
        specs = [a[k] for a in entry["msg"]["attention"] for k in ("map", "grid")]
        return [entry["buffers"][s["buffer"]] for s in specs]

    assert spans("transformer.h.0") == spans("transformer.h.0.attn")
    every = [span for i in range(12) for span in spans(f"transformer.h.{i}.attn")]
    assert spans("transformer") == every


@pytest.mark.slow
def test_vit_base_keeps_its_12_maps_and_every_block_before_any_leaf(tmp_path):
    """ViT-base (ViTConfig() defaults: 197 tokens, 12 heads) does not fit in 8 MB whole: its
    12 attention maps and every block's view do, then the leaves (shallowest first) until
    the budget ends. Each leaf left out says so, and why; the graph's note counts them; the
    budget they name keeps every stage."""
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    model = ViTForImageClassification(ViTConfig()).eval()
    widget = nfw.NeuralFlowWidget(model, torch.randn(1, 3, 224, 224))
    flow = widget.flow
    path = widget.to_html(tmp_path / "vit.html")
    assert path.stat().st_size <= BUDGET
    graph, replies, blob = _read(path)
    assert len(_attention_ids(flow)) == 12
    _assert_every_map_is_there(flow, replies, blob)
    ok = {n for n, r in replies.items() if r["msg"]["ok"]}
    assert {*flow.inputs, *flow.outputs} <= ok
    assert {c.id for c in flow.calls if not c.leaf} <= ok  # every block
    leaves = [c.id for c in flow.calls if c.leaf]
    kept = [leaf for leaf in leaves if leaf in ok]
    left_out = [leaf for leaf in leaves if leaf not in ok]
    assert kept and left_out
    # in execution order: until the first leaf that does not fit, then only those that cost
    # no more than it needed and the room kept for the words of the leaves passed since (a
    # buffer the page holds already costs nothing: an MLP's output is its fc2's)
    first = leaves.index(left_out[0])
    assert leaves[:first] == kept[:first]
    needs = re.search(r"needs (\d+) kB", replies[left_out[0]]["msg"]["error"])
    words = max(len(json.dumps(replies[leaf]["msg"])) for leaf in left_out) + 200
    held = {tuple(b) for n, r in replies.items() if n not in kept[first:] for b in r["buffers"]}
    for leaf in kept[first:]:
        new = {tuple(b) for b in replies[leaf]["buffers"]} - held
        held |= new
        size = len(json.dumps(replies[leaf]["msg"])) + sum(n for _, n in new)
        passed = leaves.index(leaf) - first
        assert size <= int(needs.group(1)) * 1000 + 500 + passed * words, leaf
    suggested = set()
    for leaf in left_out:
        error = replies[leaf]["msg"]["error"]
        assert error.startswith("Not in this page: over its 8 MB budget (this stage needs"), error
        suggested.add(int(re.search(r"budget_bytes=([\d_]+)", error).group(1)))
    (budget,) = suggested
    (note,) = [n for n in graph["notes"] if "budget" in n]
    assert f"over its 8 MB budget: {len(left_out)} leaves" in note
    assert f"budget_bytes={budget:_}" in note
    # the budget named keeps every stage
    whole = widget.to_html(tmp_path / "whole.html", budget_bytes=budget)
    assert whole.stat().st_size <= budget
    graph, replies, _ = _read(whole)
    assert all(replies[n]["msg"]["ok"] for n in export.page_order(flow))
    assert not any("budget" in n for n in graph["notes"])


@pytest.mark.slow
def test_a_whisper_page_keeps_encoder_decoder_and_cross_attention(tmp_path):
    """A Whisper-tiny-sized model (4 + 4 layers, 6 heads, 1,500 encoder positions): the
    encoder's self-attention, the decoder's and its cross-attention, every layer."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(
        d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
    )  # fmt: skip
    model = WhisperForConditionalGeneration(config).eval()
    inputs = {
        "input_features": torch.randn(1, 80, 3000),
        "decoder_input_ids": torch.randint(0, 1000, (1, 16)),
    }
    widget = nfw.NeuralFlowWidget(model, inputs)
    path = widget.to_html(tmp_path / "whisper.html")
    assert path.stat().st_size <= BUDGET
    _, replies, blob = _read(path)
    stages = _attention_ids(widget.flow)
    for kind, stack in (("self_attn", "encoder"), ("self_attn", "decoder"), ("encoder_attn", "")):
        layers = [s for s in stages if s.endswith(kind) and f".{stack}" in s]
        assert len(layers) == 4, (kind, stack, stages)
    _assert_every_map_is_there(widget.flow, replies, blob)


def test_page_order_puts_attention_then_blocks_then_leaves_each_shallowest_first():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=32)
    flow = nfw.trace(GPT2LMHeadModel(config).eval(), torch.randint(0, 64, (1, 8)))
    order = export.page_order(flow)
    assert order[:2] == [*flow.inputs, *flow.outputs]
    assert order[2:4] == ["transformer.h.0.attn", "transformer.h.1.attn"]
    depth = {c.id: c.depth for c in flow.calls}
    leaf = {c.id: c.leaf for c in flow.calls}
    rest = order[4:]
    first_leaf = next(i for i, n in enumerate(rest) if leaf[n])
    assert not any(leaf[n] for n in rest[:first_leaf]) and all(leaf[n] for n in rest[first_leaf:])
    assert [depth[n] for n in rest[:first_leaf]] == sorted(depth[n] for n in rest[:first_leaf])
    # the leaves shallowest first: lm_head (the model's own) before the blocks' (GPT-2's ln_f
    # and wte are the transformer's; ln_1, ln_2 a block's), each depth in execution order
    leaves = sorted((c for c in flow.calls if c.leaf), key=lambda c: (c.depth, c.index))
    assert rest[first_leaf:] == [c.id for c in leaves]
    assert rest[first_leaf] == "lm_head" and rest.index("transformer.ln_f") < rest.index(
        "transformer.h.0.ln_1"
    )
    assert sorted(order) == sorted({*flow.inputs, *flow.outputs, *(c.id for c in flow.calls)})


def test_a_tight_budget_drops_leaves_before_blocks_and_says_so_on_each(tmp_path):
    """Stages beyond the budget carry a reply that says what and why; the blocks' views stay
    while the leaves go; the page stays within its budget."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=64, n_positions=64)
    widget = nfw.NeuralFlowWidget(GPT2LMHeadModel(config).eval(), torch.randint(0, 64, (1, 48)))
    whole = widget.to_html(tmp_path / "whole.html", budget_bytes=50_000_000)
    budget = whole.stat().st_size - 60_000
    path = widget.to_html(tmp_path / "tight.html", budget_bytes=budget)
    assert path.stat().st_size <= budget
    graph, replies, _ = _read(path)
    flow = widget.flow
    dropped = [n for n in export.page_order(flow) if not replies[n]["msg"]["ok"]]
    leaf = {c.id: c.leaf for c in flow.calls}
    assert dropped and all(leaf[n] for n in dropped)
    for node in dropped:
        assert replies[node]["msg"]["error"].startswith(
            f"Not in this page: over its {budget / 1e6:.1f}"
        )
    assert any("leaves" in note or "leaf" in note for note in graph["notes"])


def test_codes_leave_maps_with_nan_as_float32_and_keep_zero_exact():
    weights = np.array([0.0, 0.25, 1.0, 0.5], "<f4")
    bad = np.array([0.0, np.nan, 1.0, 0.5], "<f4")
    msg = {
        "ok": True,
        "attention": [
            {"map": {"shape": [2, 2], "buffer": 0}, "grid": {"shape": [1, 2, 2], "buffer": 1}}
        ],
    }
    buffers = export._attention_codes(msg, [weights.tobytes(), bad.tobytes()])
    a = msg["attention"][0]
    assert a["map"]["codes"] == {"bits": 16, "lo": 0.0, "hi": 1.0} and "codes" not in a["grid"]
    assert np.frombuffer(buffers[0], "<u2").tolist() == [0, 16384, 65535, 32768]
    assert buffers[1] == bad.tobytes()
