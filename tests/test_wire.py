"""The wire format: golden fixtures shared with the JS tests, stage replies, payload size."""

import base64
import json
import pathlib
import sys

import numpy as np
import pytest
import torch
import zoo

import neural_flow_widget as nfw
from neural_flow_widget import wire
from neural_flow_widget.notebook import replies

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "scripts"))
import fixture_models  # noqa: E402
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


def _buffers(reply: dict, encoded: list[str]) -> list[tuple[str, np.ndarray]]:
    """A stage reply's base64 buffers decoded by what the reply says each one holds."""
    kinds = {}
    for s in reply.get("summaries") or []:
        if s["hist"]:
            kinds[s["hist"]["buffer"]] = ("counts", "<f8")
    if reply.get("view"):
        kinds[reply["view"]["buffer"]] = ("codes", "u1")
    for a in reply.get("attention") or []:
        kinds[a["map"]["buffer"]] = kinds[a["grid"]["buffer"]] = ("float", "<f4")
    assert sorted(kinds) == list(range(len(encoded))), "every buffer is referenced once"
    return [
        (kinds[i][0], np.frombuffer(base64.b64decode(b), dtype=kinds[i][1]))
        for i, b in enumerate(encoded)
    ]


def close_buffers(a: dict, b: dict) -> bool:
    """Two exchanges' buffers: floats within 1e-5 relative; histogram counts and uint8 view
    codes within 1 (a value a last bit from a bin edge or a code boundary may cross it)."""
    left, right = _buffers(a["reply"], a["buffers"]), _buffers(b["reply"], b["buffers"])
    if [k for k, _ in left] != [k for k, _ in right]:
        return False
    for (kind, x), (_, y) in zip(left, right):
        if x.shape != y.shape:
            return False
        if kind == "float" and not np.allclose(x, y, rtol=1e-5, atol=1e-7):
            return False
        gap = np.abs(x.astype(np.float64) - y.astype(np.float64)).max(initial=0)
        if kind != "float" and gap > 1:
            return False
        if kind == "counts" and x.sum() != y.sum():
            return False
    return True


def _same_stage_replies(made: dict, on_disk: dict) -> bool:
    strip = lambda d: {**d, "cases": [{**c, "buffers": len(c["buffers"])} for c in d["cases"]]}
    return close(strip(made), strip(on_disk)) and all(
        close_buffers(x, y) for x, y in zip(made["cases"], on_disk["cases"])
    )


def _same_colors(made: dict, on_disk: dict) -> bool:
    """Same views; codes within 1 (see close_buffers), and where a code is the same, the same
    RGB. The RGB on disk is checked against the table separately."""
    if made.keys() != on_disk.keys() or len(made["views"]) != len(on_disk["views"]):
        return False
    for x, y in zip(made["views"], on_disk["views"]):
        plain = ("codes", "rgb")
        if not close(
            {k: v for k, v in x.items() if k not in plain},
            {k: v for k, v in y.items() if k not in plain},
        ):
            return False
        cx, cy = np.array(x["codes"]), np.array(y["codes"])
        if cx.shape != cy.shape or np.abs(cx - cy).max() > 1:
            return False
        if np.array(x["rgb"])[cx == cy].tolist() != np.array(y["rgb"])[cx == cy].tolist():
            return False
    return True


def _same_experiments(made: dict, on_disk: dict) -> bool:
    """As close, but a patching's restored fractions within 5e-5 of the effect: each is
    (patched - corrupted) / (clean - corrupted), a difference of near metrics that turns the
    last bits of a CPU's sums into 1e-5 of the fraction (9e-6 seen on an AMD EPYC against
    the machine that wrote the fixture); a colour step of the drawn map is 1/255."""

    def strip(d):
        if isinstance(d, dict):
            return {k: (None if k == "restored" else strip(v)) for k, v in d.items()}
        return d

    def restored(d, out):
        if isinstance(d, dict):
            for k, v in d.items():
                out.append(v) if k == "restored" else restored(v, out)
        return out

    x, y = restored(made, []), restored(on_disk, [])
    return (
        close(strip(made), strip(on_disk))
        and len(x) == len(y)
        and all(
            np.array(a, dtype=float).shape == np.array(b, dtype=float).shape
            and np.allclose(np.array(a, dtype=float), np.array(b, dtype=float), rtol=0, atol=5e-5)
            for a, b in zip(x, y)
        )
    )


SAME = {
    "stage_replies.json": _same_stage_replies,
    "colors.json": _same_colors,
    "wire_experiments.json": _same_experiments,
}


#: fixtures whose making takes seconds (edges_golden.json traces some forty models)
SLOW_FIXTURES = {"edges_golden.json", "wire_transformer12.json"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SLOW_FIXTURES else n
        for n in make_fixtures.FILES
    ],
)
def test_fixture_on_disk_is_what_make_fixtures_writes(name):
    """Every golden fixture is what ``scripts/make_fixtures.py`` makes now, written as it
    writes it (one record per line)."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    on_disk = json.loads(text)
    assert on_disk["schema"] == wire.SCHEMA
    assert text == make_fixtures.text(name, on_disk), f"{name} is not in the generator's layout"
    made = json.loads(make_fixtures.text(name))  # through the writer: tuples become lists
    assert SAME.get(name, close)(made, on_disk), (
        f"{name} is stale: run `.venv/bin/python scripts/make_fixtures.py` and the JS tests"
    )


def test_writer_is_plain_json_one_record_per_line():
    value = {
        "schema": 1,
        "calls": [{"id": "a", "in": [0]}, {"id": "b", "in": []}],
        "ops": [],
        "stats": [[0.5, None], None],
        "x": {"calls": [1, 2]},
        "s": "</\u00e9",
    }
    text = make_fixtures.dumps(value)
    assert json.loads(text) == value and text.endswith("}\n") and text.count("\n") == 10
    lines = text.splitlines()
    assert lines[0] == '{"schema": 1, "calls": ['
    assert lines[1:3] == [' {"id": "a", "in": [0]},', ' {"id": "b", "in": []}']
    assert lines[3] == '], "ops": [], "stats": ['  # an empty list stays inline
    assert lines[4:6] == [" [0.5, null],", " null"]
    assert lines[6:] == ['], "x": {"calls": [', " 1,", " 2", ']}, "s": "</\\u00e9"}']
    with pytest.raises(ValueError):
        make_fixtures.dumps({"stats": [float("nan")]})


def test_graph_fixtures_are_real_traces_of_the_fixture_models():
    """wire_unet / wire_transformer12 are the traces the front end's tests describe."""
    unet = json.loads((FIXTURES / "wire_unet.json").read_text())
    model, _ = fixture_models.unet()
    by_id = {c["id"]: c for c in unet["calls"]}
    assert [c["id"] for c in unet["calls"] if c["parent"] == -1] == [
        "enc1",
        "enc2",
        "bottleneck",
        "up2",
        "dec2",
        "up1",
        "dec1",
        "head",
    ]
    for name, module in model.named_modules():
        if name:
            assert by_id[name]["params"] == sum(p.numel() for p in module.parameters()), name
    assert by_id["bottleneck"]["type"] == "ResBlock" and by_id["head"]["shapes"] == [[1, 2, 64, 64]]
    assert all(s is not None for s in unet["stats"])
    gpt = json.loads((FIXTURES / "wire_transformer12.json").read_text())
    assert (gpt["inputs"], gpt["outputs"]) == (["input:input_ids"], ["output:logits"])
    attn = [i for i, c in enumerate(gpt["calls"]) if c["type"] == "MultiheadAttention"]
    assert gpt["attention"] == attn and len(attn) == 12
    assert all(s is not None for s in gpt["stats"])


def test_colors_fixture_is_the_shared_table_at_the_codes():
    """What View.to_png() gave each code (colors.json) is the shared table's entry for it,
    and the fixture has a signed (diverging) and an unsigned (viridis) view."""
    from neural_flow_widget.capture.image import DIVERGING, VIRIDIS

    views = json.loads((FIXTURES / "colors.json").read_text())["views"]
    assert {v["signed"] for v in views} == {True, False}
    for v in views:
        table = DIVERGING if v["signed"] else VIRIDIS
        assert len(v["codes"]) == np.prod(v["shape"]) >= 24 and len(set(v["codes"])) > 20
        assert v["rgb"] == table[v["codes"]].tolist(), v["name"]
        if v["signed"]:
            assert v["vmin"] == -v["vmax"] < 0


def test_edges_golden_exercises_collapsing():
    on_disk = json.loads((FIXTURES / "edges_golden.json").read_text())
    # The fixture really exercises collapsing: a residual block collapsed has no skip edge out.
    resnet = next(c for c in on_disk["cases"] if c["name"] == "resnet")
    collapsed = resnet["selections"][0]
    assert {kind for *_, kind in collapsed["edges"]} == {"flow"}
    assert any(kind == "skip" for *_, kind in resnet["selections"][1]["edges"])


def test_graph_message_fields_and_size():
    torch.manual_seed(0)
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(
        GPT2Config(n_layer=4, n_embd=32, n_head=4, vocab_size=64, bos_token_id=0, eos_token_id=0)
    ).eval()
    flow = nfw.trace(model, torch.randint(0, 64, (1, 16)))
    graph = wire.encode_graph(flow)
    text = json.dumps(graph)
    assert len(text) / len(graph["calls"]) <= 2048  # initial payload per stage
    assert "base64" not in text and len(graph["calls"]) == len(flow.calls)
    assert graph["attention"], "attention calls are announced"
    call = graph["calls"][graph["selected"][0]]
    assert set(call) == {
        "id",
        "module",
        "type",
        "call",
        "parent",
        "depth",
        "leaf",
        "params",
        "shapes",
        "dtypes",
        "sig",
        "error",
        "in",
        "args",
        "state",
    }
    assert len(call["args"]) == len(call["in"]) and call["state"] == -1
    blocks = [c for c in graph["calls"] if c["type"] == "GPT2Block"]
    assert len({c["sig"] for c in blocks}) == 1  # repeated blocks share a signature


class _Block(torch.nn.Module):
    """Calls its first Linear twice; the second Linear gets the wrong width and raises."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.b(self.a(self.a(x)))


def test_a_failure_sends_the_call_indices_of_the_stage_and_of_the_innermost_call_that_raised():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), _Block())
    with pytest.raises(nfw.TraceError) as info:
        nfw.trace(model, torch.randn(2, 4), capture=False, stages=1)  # the block is the stage
    graph = wire.encode_graph(info.value.partial)
    failure = graph["failure"]
    assert failure is not None and set(failure) == {"message", "stage", "call"}
    calls = graph["calls"]
    assert calls[failure["stage"]]["id"] == "1"  # the selected stage that was running
    assert calls[failure["call"]]["id"] == "1.b"  # the call that raised, no name to search for
    assert failure["message"] == info.value.partial.failure.message

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).view(7, -1)  # raises in the model's own forward

    with pytest.raises(nfw.TraceError) as info:
        nfw.trace(Outer(), torch.randn(2, 4), capture=False)
    failure = wire.encode_graph(info.value.partial)["failure"]
    assert failure is not None and failure["stage"] is None and failure["call"] is None


@pytest.fixture(scope="module")
def unet_flow():
    torch.manual_seed(0)
    return nfw.trace(zoo.seeded(zoo.UNet), torch.randn(2, 1, 16, 16))


def test_stage_reply_carries_summary_view_and_binary_buffers(unet_flow):
    msg, buffers = replies.stage_reply(unet_flow, {"stage": "enc1.conv", "view": "grid"})
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


def test_the_graph_of_a_backward_pass_that_made_nan_is_still_json():
    import grad_models

    model, x, loss = grad_models.nan_chain()
    graph = wire.encode_graph(nfw.trace(model, x, loss=loss))
    json.dumps(graph, allow_nan=False)  # a NaN norm goes as null, never as NaN
    index = {c["id"]: i for i, c in enumerate(graph["calls"])}
    assert graph["nonfinite_grad"] == [index["b"], index["a"]]  # where it entered, first
    assert graph["grad"][index["b"]] is None and graph["grad"][index["c"]] > 0
    flow = graph["gradient_flow"]
    assert flow is not None and None in flow["norms"]


def test_a_gradient_reply_carries_each_leafs_exact_norm_and_an_output_reply_none():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    x = torch.randn(4, 6)
    flow = nfw.trace(model, x, loss=lambda out: out.pow(2).sum())
    msg, _ = replies.stage_reply(flow, {"stage": "1", "of": "grad"})
    assert msg["ok"] and msg["of"] == "grad"
    (summary,) = msg["summaries"]
    # the oracle: d loss / d tanh's output, by hand (loss = sum(out^2), out = h @ W2.T + b2)
    with torch.no_grad():
        out = model(x)
        by_hand = (2 * out) @ model[2].weight  # (4, 5)
    assert summary["norm"] == pytest.approx(float(by_hand.norm()), rel=1e-5)
    assert summary["norm"] == pytest.approx(wire.encode_graph(flow)["grad"][1], rel=1e-12)
    plain, _ = replies.stage_reply(flow, {"stage": "1"})
    assert "of" not in plain and plain["summaries"][0]["norm"] is None
    json.dumps(msg)


@pytest.mark.parametrize(
    "request_, needle",
    [
        ({"stage": "nope"}, "no stage 'nope'"),
        ({"stage": "enc1", "view": "bogus"}, "bogus"),
        ({"stage": "enc1", "view": "channel", "channel": 99}, "99"),
        ({"stage": "enc1", "view": "channel", "channel": "3"}, "wrong type"),
        ({"stage": "enc1", "sample": 1}, "sample 1 was not captured"),
        ({}, "needs a stage id"),
        ("garbage", "needs a stage id"),
    ],
)
def test_bad_requests_get_error_replies(unet_flow, request_, needle):
    msg, buffers = replies.stage_reply(unet_flow, request_)
    assert msg["ok"] is False and needle in msg["error"] and buffers == []


def test_attention_reply_and_head_validation():
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    msg, buffers = replies.stage_reply(flow, {"stage": "attn", "head": 2})
    (att,) = msg["attention"]
    assert (att["heads"], att["q_len"], att["k_len"], att["head"]) == (4, 5, 5, 2)
    chosen = np.frombuffer(buffers[att["map"]["buffer"]], dtype="<f4").reshape(5, 5)
    np.testing.assert_allclose(chosen, flow.attention("attn")[0].weights[2], rtol=1e-6)
    grid = np.frombuffer(buffers[att["grid"]["buffer"]], dtype="<f4").reshape(4, 5, 5)
    np.testing.assert_allclose(grid.sum(-1), 1, rtol=1e-5)
    bad, _ = replies.stage_reply(flow, {"stage": "attn", "head": 4})
    assert not bad["ok"] and "0..3" in bad["error"]


def test_grid_pages_and_channels_travel_in_requests_and_views():
    torch.manual_seed(0)
    flow = nfw.trace(torch.nn.Sequential(torch.nn.Conv2d(1, 40, 3)), torch.randn(1, 1, 12, 12))
    msg, _ = replies.stage_reply(flow, {"stage": "0", "view": "first", "page": 2})
    view = msg["view"]
    assert (view["page"], view["pages"], view["channels"]) == (2, 3, list(range(32, 40)))
    assert view["clipped"] is not None and len(view["clipped"]) == 2
    pinned, _ = replies.stage_reply(flow, {"stage": "0", "view": "grid", "channels": [4, 1]})
    assert pinned["view"]["channels"] == [4, 1] and pinned["view"]["page"] is None
    for bad, needle in [
        ({"page": "1"}, "page='1' has the wrong type"),
        ({"page": 3}, "page=3 is out of range"),
        ({"channels": "4"}, "expected a list of channel indices"),
    ]:
        msg, _ = replies.stage_reply(flow, {"stage": "0", "view": "grid", **bad})
        assert msg["ok"] is False and needle in msg["error"]


def test_difference_reply_is_signed_a_minus_b_and_names_why_there_is_none():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 300)).eval()
    x = torch.randn(1, 8)
    a, b = nfw.trace(model, x), nfw.trace(model, x + 0.5)
    msg, buffers = replies.difference_reply(a, b, {"stage": "0", "view": "values"})
    assert msg["ok"] and msg["run"] == "diff" and msg["summaries"] == []
    view = msg["view"]
    assert view["signed"] and view["vmin"] == -view["vmax"] and msg["views"] == ["values", "topk"]
    codes = np.frombuffer(buffers[view["buffer"]], np.uint8).astype(float)
    got = view["vmin"] + codes / 255 * (view["vmax"] - view["vmin"])
    with torch.no_grad():
        want = (model[0](x) - model[0](x + 0.5))[0].numpy()
    np.testing.assert_allclose(got, want, atol=view["vmax"] / 100)
    msg, _ = replies.difference_reply(a, b, {"stage": "1", "view": "topk"})
    assert msg["ok"] is False and "topk view is not defined" in msg["error"]
    msg, _ = replies.difference_reply(a, b, {"stage": "nope"})
    assert msg["ok"] is False and "no stage 'nope'" in msg["error"]


def _block_means(full: np.ndarray, f: int) -> np.ndarray:
    q, k = full.shape
    return full.reshape(q // f, f, k // f, f).mean(axis=(1, 3))


def test_a_long_sequence_s_map_comes_as_an_overview_and_zooms_into_the_kept_blocks():
    """1,024 positions: the run keeps 2x2 block means (512 a side); the reply's overview is at
    most 256 a side (4x4 blocks), a zoom answers its window from the kept blocks (2x2), and
    every entry is the exact block mean of the model's own attention (its need_weights)."""
    torch.manual_seed(0)
    model = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = model

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

    x = torch.randn(1, 1024, 16)
    flow = nfw.trace(Wrap().eval(), x)
    with torch.no_grad():
        own = model(x, x, x, need_weights=True, average_attn_weights=True)[1][0].numpy()
    msg, buffers = replies.stage_reply(flow, {"stage": "attn"})
    (att,) = msg["attention"]
    assert (att["pool"], att["window"], att["map"]["shape"]) == (
        [4, 4],
        [0, 1024, 0, 1024],
        [256, 256],
    )
    overview = np.frombuffer(buffers[att["map"]["buffer"]], "<f4").reshape(256, 256)
    np.testing.assert_allclose(overview, _block_means(own, 4), rtol=1e-4, atol=1e-7)
    msg, buffers = replies.stage_reply(flow, {"stage": "attn", "window": [257, 512, 0, 255]})
    (att,) = msg["attention"]
    assert att["pool"] == [2, 2] and att["window"] == [256, 512, 0, 256]  # whole kept blocks
    zoom = np.frombuffer(buffers[att["map"]["buffer"]], "<f4").reshape(att["map"]["shape"])
    np.testing.assert_allclose(zoom, _block_means(own[256:512, 0:256], 2), rtol=1e-4, atol=1e-7)
    for bad in ([0, 2000, 0, 10], [5, 5, 0, 10], "all", [0, 1, 2]):
        reply, _ = replies.stage_reply(flow, {"stage": "attn", "window": bad})
        assert not reply["ok"] and "window=" in reply["error"], bad
