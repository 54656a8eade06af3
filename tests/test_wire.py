"""The wire format: golden fixtures shared with the JS tests, stage replies, payload size."""

import json
import pathlib
import sys

import numpy as np
import pytest
import torch

import neural_flow_widget as nfw
from neural_flow_widget import wire
import zoo

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "scripts"))
import make_fixtures  # noqa: E402


def close(a, b):
    """Equal JSON, floats within 1e-5 relative (stats differ in the last bits across CPUs)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-5, abs=1e-7)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def test_wire_golden_fixture_is_what_python_writes():
    on_disk = json.loads((FIXTURES / "wire_golden.json").read_text())
    assert on_disk["schema"] == wire.SCHEMA
    assert close(make_fixtures.wire_golden(), on_disk), \
        "run `python scripts/make_fixtures.py` and check the JS tests"


def test_edges_golden_fixture_is_what_select_gives():
    on_disk = json.loads((FIXTURES / "edges_golden.json").read_text())
    assert close(make_fixtures.edges_golden(), on_disk), \
        "run `python scripts/make_fixtures.py` and check the JS tests"
    # The fixture really exercises collapsing: a residual block collapsed has no skip edge out.
    resnet = next(c for c in on_disk["cases"] if c["name"] == "resnet")
    collapsed = resnet["selections"][0]
    assert {kind for *_, kind in collapsed["edges"]} == {"flow"}
    assert any(kind == "skip" for *_, kind in resnet["selections"][1]["edges"])


def test_graph_message_fields_and_size():
    torch.manual_seed(0)
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=32, n_head=4, vocab_size=64,
                                       bos_token_id=0, eos_token_id=0)).eval()
    flow = nfw.trace(model, torch.randint(0, 64, (1, 16)))
    graph = wire.encode_graph(flow)
    text = json.dumps(graph)
    assert len(text) / len(graph["calls"]) <= 2048  # initial payload per stage
    assert "base64" not in text and len(graph["calls"]) == len(flow.calls)
    assert graph["attention"], "attention calls are announced"
    call = graph["calls"][graph["selected"][0]]
    assert set(call) == {"id", "module", "type", "call", "parent", "depth", "leaf", "params",
                         "shapes", "dtypes", "sig", "error", "in"}
    blocks = [c for c in graph["calls"] if c["type"] == "GPT2Block"]
    assert len({c["sig"] for c in blocks}) == 1  # repeated blocks share a signature


@pytest.fixture(scope="module")
def unet_flow():
    torch.manual_seed(0)
    return nfw.trace(zoo.seeded(zoo.UNet), torch.randn(2, 1, 16, 16))


def test_stage_reply_carries_summary_view_and_binary_buffers(unet_flow):
    msg, buffers = wire.encode_stage_reply(unet_flow, {"stage": "enc1.conv", "view": "grid"})
    assert msg["ok"] and msg["stage"] == "enc1.conv" and msg["views"][0] == "grid"
    (summary,) = msg["summaries"]
    assert summary["shape"] == [2, 4, 16, 16] and summary["kind"] == "float"
    counts = np.frombuffer(buffers[summary["hist"]["buffer"]], dtype="<f8")
    assert counts.sum() == 2 * 4 * 16 * 16
    view = msg["view"]
    data = np.frombuffer(buffers[view["buffer"]], dtype=np.uint8)
    assert data.size == np.prod(view["shape"]) and view["signed"]
    assert all(isinstance(b, bytes) for b in buffers)
    json.dumps(msg)  # plain JSON besides the buffers


@pytest.mark.parametrize("request_, needle", [
    ({"stage": "nope"}, "no stage 'nope'"),
    ({"stage": "enc1", "view": "bogus"}, "bogus"),
    ({"stage": "enc1", "view": "channel", "channel": 99}, "99"),
    ({"stage": "enc1", "view": "channel", "channel": "3"}, "wrong type"),
    ({"stage": "enc1", "sample": 1}, "sample 1 was not captured"),
    ({}, "needs a stage id"),
    ("garbage", "needs a stage id"),
])
def test_bad_requests_get_error_replies(unet_flow, request_, needle):
    msg, buffers = wire.encode_stage_reply(unet_flow, request_)
    assert msg["ok"] is False and needle in msg["error"] and buffers == []


def test_attention_reply_and_head_validation():
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    msg, buffers = wire.encode_stage_reply(flow, {"stage": "attn", "head": 2})
    (att,) = msg["attention"]
    assert (att["heads"], att["q_len"], att["k_len"], att["head"]) == (4, 5, 5, 2)
    chosen = np.frombuffer(buffers[att["map"]["buffer"]], dtype="<f4").reshape(5, 5)
    np.testing.assert_allclose(chosen, flow.attention("attn")[0].weights[2], rtol=1e-6)
    grid = np.frombuffer(buffers[att["grid"]["buffer"]], dtype="<f4").reshape(4, 5, 5)
    np.testing.assert_allclose(grid.sum(-1), 1, rtol=1e-5)
    bad, _ = wire.encode_stage_reply(flow, {"stage": "attn", "head": 4})
    assert not bad["ok"] and "0..3" in bad["error"]
