"""The notebook shell: traitlets, selection, the data command, HTML export."""

import re

import numpy as np
import pytest
import torch
import traitlets
import zoo

import neural_flow_widget as nfw
from neural_flow_widget import wire


@pytest.fixture(scope="module")
def widget():
    torch.manual_seed(0)
    return nfw.NeuralFlowWidget(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), stages=1)


def test_graph_traitlet_is_the_wire_graph(widget):
    assert widget.graph == wire.encode_graph(widget.flow)
    assert widget.graph["selected"] == list(widget.flow.selected)
    assert re.search(r"export ?\{[^}]*as default", widget._esm)  # the bundled front end


def test_selection_is_two_way_and_validated(widget):
    seen = []
    unsubscribe = widget.on_select(seen.append)
    widget.selected = "dec1"
    widget.selected = None
    unsubscribe()
    widget.selected = "enc1"
    assert seen == ["dec1", None]
    with pytest.raises(traitlets.TraitError, match="closest"):
        widget.selected = "dec9"
    widget.selected = ""  # the view's "nothing selected"
    assert widget.selected is None


def test_stage_data_command_answers_and_never_raises(widget):
    msg, buffers = widget._stage_data({"stage": "enc2", "view": "grid"}, [])
    assert msg["ok"] and msg["view"]["kind"] == "grid" and buffers
    bad, _ = widget._stage_data({"stage": "enc2", "view": "channel", "channel": 10_000}, [])
    assert not bad["ok"] and "channel" in bad["error"]
    odd, _ = widget._stage_data(None, [])
    assert not odd["ok"]


def test_a_stage_request_message_is_answered_with_its_id_and_buffers():
    """The view's one channel, custom messages (every anywidget host carries them; marimo has
    no ``invoke``): ``{type: "stage", request, body}`` is answered with
    ``{type: "stage", request, reply}`` and the reply's binary buffers."""
    torch.manual_seed(0)
    w = nfw.NeuralFlowWidget(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), stages=1)
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    body = {"stage": "enc2", "view": "grid"}
    w._on_message(w, {"type": "stage", "request": "v1:7", "body": body}, [])
    w._on_message(w, {"type": "stage", "request": "v1:8", "body": {"stage": "nope"}}, [])
    w._on_message(w, {"type": "stage", "request": "v1:9"}, [])  # no body: an error reply
    (ok, ok_buffers), (bad, _), (empty, _) = sent
    expected, expected_buffers = w._stage_data(body, [])
    assert ok == {"type": "stage", "request": "v1:7", "reply": expected}
    assert ok_buffers and [bytes(b) for b in ok_buffers] == [bytes(b) for b in expected_buffers]
    assert bad["request"] == "v1:8" and not bad["reply"]["ok"] and "nope" in bad["reply"]["error"]
    assert empty["request"] == "v1:9" and not empty["reply"]["ok"]


def test_from_flow_and_token_labels():
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    assert nfw.NeuralFlowWidget.from_flow(flow).flow is flow
    ids = torch.tensor([[5, 7, 9]])
    emb = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 2))
    assert nfw.NeuralFlowWidget(emb, ids).tokens == ["5", "7", "9"]


def test_html_export_is_self_contained(widget, tmp_path):
    path = widget.to_html(tmp_path / "unet.html")
    page = path.read_text()
    assert page.startswith("<!doctype html>")
    assert not re.search(r"""(src|href)=["']?https?://""", page)  # no CDN, no network
    assert "renderStatic" in page and '"enc1"' in page
    assert "<script" not in page.split('id="nfw-bundle">', 1)[1].split("</script>", 1)[0]


def _baked(page: str) -> dict:
    import json

    return json.loads(page.split('id="nfw-replies">', 1)[1].split("</script>", 1)[0])


def test_html_export_stays_within_its_budget_and_offers_what_it_baked(tmp_path):
    """The whole page (front end, graph, replies, base64 data) stays within ``budget_bytes``;
    the model's input and output come first; each baked stage offers only the view it carries
    (the page has no kernel to make another)."""
    torch.manual_seed(0)
    model = zoo.seeded(zoo.UNet)
    w = nfw.NeuralFlowWidget(model, torch.randn(1, 1, 64, 64))
    full = w.to_html(tmp_path / "full.html", budget_bytes=50_000_000)
    everything = _baked(full.read_text())
    assert {"input:0", "output:0"} <= set(everything)
    assert all(r["msg"]["views"] == [r["msg"]["view"]["kind"]] for r in everything.values())
    size = full.stat().st_size
    budget = size - 20_000  # room for all but a few stages
    small = w.to_html(tmp_path / "small.html", budget_bytes=budget)
    assert small.stat().st_size <= budget
    baked = {n: r for n, r in _baked(small.read_text()).items() if r["msg"]["ok"]}
    assert {"input:0", "output:0"} <= set(baked) and len(baked) < len(everything)


def test_hostile_module_names_travel_as_text():
    class Hostile(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleDict(
                {"<img src=x onerror=alert(1)>": torch.nn.Linear(2, 2)}
            )

        def forward(self, x):
            return self.blocks["<img src=x onerror=alert(1)>"](x)

    w = nfw.NeuralFlowWidget(Hostile(), torch.randn(1, 2))
    assert w.graph["calls"][0]["id"] == "blocks.<img src=x onerror=alert(1)>"


def test_svg_and_png_exports_are_written_when_the_view_replies(widget, tmp_path):
    sent = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget.save_svg(tmp_path / "graph.svg")
    widget.save_png(tmp_path / "graph.png")
    assert [m["format"] for m in sent] == ["svg", "png"]
    svg, png = sent
    widget._on_message(
        widget, {"type": "export", "request": png["request"], "ok": True}, [b"\x89PNG..."]
    )
    widget._on_message(
        widget, {"type": "export", "request": svg["request"], "ok": True}, [b"<svg/>"]
    )
    assert (tmp_path / "graph.svg").read_bytes() == b"<svg/>"
    assert (tmp_path / "graph.png").read_bytes() == b"\x89PNG..."
    widget._on_message(widget, {"type": "export", "request": 999}, [b"x"])  # unknown: ignored
    sent.clear()
    widget.save_svg(tmp_path / "again.svg")
    with pytest.warns(UserWarning, match="could not export again.svg: no view"):
        widget._on_message(
            widget,
            {"type": "export", "request": sent[0]["request"], "ok": False, "error": "no view"},
            [],
        )


class _WordTokenizer:
    """A tokenizer made here (no download): ids are positions in a word list."""

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.words[i] for i in ids]


def test_a_tokenizer_names_the_token_ids_and_the_next_token():
    torch.manual_seed(0)
    words = [f"w{i}" for i in range(120)]  # (an unnamed output reads as logits from 100 ids)
    lm = torch.nn.Sequential(torch.nn.Embedding(120, 8), torch.nn.Linear(8, 120)).eval()
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    w = nfw.NeuralFlowWidget(lm, ids, tokenizer=_WordTokenizer(words))
    assert w.tokens == ["w3", "w1", "w4", "w1", "w5"]
    reply, _ = w._stage_data({"stage": "input:0"}, [])
    assert reply["view"]["kind"] == "ids" and reply["view"]["labels"] == w.tokens
    with torch.no_grad():
        p = torch.softmax(lm(ids)[0, -1], 0)
    reply, _ = w._stage_data({"stage": "output:0"}, [])
    best = int(p.argmax())
    assert reply["view"]["kind"] == "next token"
    assert reply["view"]["labels"][0] == f"w{best}: {float(p[best]):.1%}"


def test_update_shows_a_new_run_in_place_and_keeps_the_selection():
    torch.manual_seed(0)
    model = zoo.seeded(zoo.UNet)
    w = nfw.NeuralFlowWidget(model, torch.randn(1, 1, 16, 16), stages=1)
    w.selected = "dec1"
    before = w.flow.summary("enc1")[0].mean
    w.update(torch.randn(1, 1, 16, 16) * 3)
    assert w.selected == "dec1"
    assert w.graph == wire.encode_graph(w.flow)
    assert w.flow.summary("enc1")[0].mean != before


def test_compare_in_the_widget_flags_the_first_divergent_stage_and_serves_run_b():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(4))).eval()
    x = torch.randn(2, 8)
    other = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(4))).eval()
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        other[2].bias.add_(1.0)
    w = nfw.NeuralFlowWidget(model, x, compare=x)  # the same inputs: nothing diverges
    assert w.comparison["first"] is None
    assert all(row[1] == 0.0 and not row[-1] for row in w.comparison["stages"])
    result = w.compare(x, model=other)
    assert result.first_divergent().id == "2"
    assert w.comparison["first"] == w.flow.stage("2").index
    a, _ = w._stage_data({"stage": "2"}, [])
    b, _ = w._stage_data({"stage": "2", "run": "b"}, [])
    assert a["ok"] and b["ok"]
    assert b["summaries"][0]["stats"]["mean"] != a["summaries"][0]["stats"]["mean"]
    w.update(x + 1)  # the comparison is made again, against the same run B
    assert w.comparison["first"] is not None


def _compared() -> tuple[nfw.NeuralFlowWidget, torch.nn.Module, torch.nn.Module]:
    """A run A and a perturbed copy B: stage '2' is where they part (its bias moved by 1)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(4))).eval()
    other = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(4))).eval()
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        other[2].bias.add_(1.0)
    return nfw.NeuralFlowWidget(model, torch.randn(2, 8)), model, other


def test_the_widget_answers_a_minus_b_and_says_when_it_cannot():
    w, model, other = _compared()
    x = torch.randn(2, 8)
    assert w.comparison is None  # (no comparison: null on the wire)
    alone, _ = w._stage_data({"stage": "2", "run": "diff"}, [])
    assert not alone["ok"] and "compare first" in alone["error"]
    w = nfw.NeuralFlowWidget(model, x, compare=x)
    w.compare(x, model=other)
    same, _ = w._stage_data({"stage": "1", "run": "diff"}, [])
    assert same["ok"] and same["view"]["vmin"] == same["view"]["vmax"] == 0.0  # equal runs
    diff, buffers = w._stage_data({"stage": "2", "run": "diff", "view": "values"}, [])
    assert diff["ok"] and diff["run"] == "diff" and diff["view"]["signed"]
    view = diff["view"]
    codes = np.frombuffer(buffers[view["buffer"]], np.uint8).astype(float)
    got = view["vmin"] + codes / 255 * (view["vmax"] - view["vmin"])
    np.testing.assert_allclose(got[:8], -1.0, atol=0.02)  # A - B = -(the bias B added)
    bad, _ = w._stage_data({"stage": "2", "run": "c"}, [])
    assert not bad["ok"] and "run='c'" in bad["error"]


def test_compare_takes_another_model_on_the_same_inputs_or_a_model_and_its_inputs():
    _w, model, other = _compared()
    x = torch.randn(2, 8)
    w = nfw.NeuralFlowWidget(model, x, compare=other)  # two models, the same inputs
    assert w.error is None and w.comparison["failed"] == []
    assert w.comparison_result.first_divergent().id == "2"
    assert w.comparison["first"] == w.flow.stage("2").index
    with torch.no_grad():
        assert w.flow_b.summary("3")[0].mean == pytest.approx(float(other(x).mean()), rel=1e-5)
    w.update(x + 1)  # run B is model_b on the new inputs again
    assert w.comparison_result.stage("1").rel_l2 == 0.0
    assert w.comparison_result.first_divergent().id == "2"
    both = nfw.NeuralFlowWidget(model, x, compare=(other, x + 1))
    assert both.comparison_result.first_divergent().id == "0"  # other inputs too
    assert both.compare((model, x)).first_divergent() is None
    assert both.compare(x, model=other).first_divergent().id == "2"  # the keyword form
    with pytest.raises(TypeError, match="model twice"):
        both.compare(other, model=model)
    with pytest.raises(TypeError, match=r"\(model_b, \(x, mask\)\)"):
        both.compare((other, x, x))


def test_a_tuple_of_tensors_given_to_compare_is_inputs():
    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)

        def forward(self, x, y):
            return self.a(x) + self.b(y)

    torch.manual_seed(0)
    x, y = torch.randn(1, 3), torch.randn(1, 3)
    w = nfw.NeuralFlowWidget(Two(), (x, y), compare=(x, y * 2))
    c = w.comparison_result
    assert (c.stage("a").rel_l2, c.first_divergent().id) == (0.0, "b")


class Boom(torch.nn.Linear):
    def forward(self, x):
        raise ValueError("boom in run B")


def test_a_run_b_that_raises_is_shown_as_a_failure_never_as_agreement():
    """The issue's false all-clear: compare=model_b once ran model(model_b), every stage of run
    B raised and the view said "A = B"."""
    _w, model, other = _compared()
    x = torch.randn(2, 8)
    boom = Boom(8, 8)
    boom.load_state_dict(other[2].state_dict())
    broken = torch.nn.Sequential(model[0], model[1], boom, model[3]).eval()
    with pytest.warns(UserWarning, match=r"run B: stage '2' .*boom in run B.*widget\.error"):
        w = nfw.NeuralFlowWidget(model, x, compare=broken)
    assert isinstance(w.error, nfw.TraceError) and w.error.stage == "2"
    assert str(w.error).startswith("run B: stage '2' (module Boom) raised ValueError")
    c = w.comparison
    two = w.flow.stage("2").index
    assert c["first"] == two and (two, "b") in c["raised"]
    assert c["failed"] == [
        {"run": "b", "stage": "2", "call": two, "module": "2", "message": w.flow_b.failure.message}
    ]
    assert w.comparison_result.first_divergent().id == "2"
    assert [d.diverges() for d in w.comparison_result.stages] == [False, False, True]
    assert w.comparison_result.only_a == ("3",)
    ran, _ = w._stage_data({"stage": "1", "run": "b"}, [])  # run B's partial graph answers
    assert ran["ok"] and ran["summaries"][0]["shape"] == [2, 8]
    raised, _ = w._stage_data({"stage": "2", "run": "b"}, [])
    assert "boom in run B" in raised["error"] and raised["summaries"] == []
    with pytest.warns(UserWarning, match="run B"):  # model(model_b): every stage raised
        w.compare((model, other))
    assert w.comparison["first"] == w.flow.stage("0").index and w.comparison["failed"]
    w.compare(other)  # a run B that completes: no error left
    assert w.error is None and w.comparison["failed"] == [] and w.comparison["raised"] == []


def test_inputs_and_outputs_can_be_selected_like_stages(widget):
    widget.selected = "input:0"
    assert widget.selected == "input:0"
    widget.selected = "output:0"
    widget.selected = None


def _compare_json(page: str):
    import json

    return json.loads(page.split('id="nfw-compare">', 1)[1].split("</script>", 1)[0])


def test_a_page_of_a_comparison_carries_it_run_b_and_a_minus_b(tmp_path):
    _w, model, other = _compared()
    x = torch.randn(2, 8)
    w = nfw.NeuralFlowWidget(model, x)
    assert _compare_json(w.to_html(tmp_path / "plain.html").read_text()) is None
    w.compare(x, model=other)
    page = w.to_html(tmp_path / "compared.html").read_text()
    extra = _compare_json(page)
    assert extra["comparison"] == w.comparison and extra["comparison"]["first"] == 2
    a = _baked(page)
    assert set(extra["b"]) == set(extra["diff"]) == set(a)  # everything fits
    b_mean = extra["b"]["2"]["msg"]["summaries"][0]["stats"]["mean"]
    assert b_mean != a["2"]["msg"]["summaries"][0]["stats"]["mean"]
    assert extra["diff"]["2"]["msg"]["run"] == "diff"
    assert extra["diff"]["2"]["msg"]["views"] == [a["2"]["msg"]["view"]["kind"]]
    small = w.to_html(tmp_path / "small.html", budget_bytes=len(page) - 3000)
    assert small.stat().st_size <= len(page) - 3000
    first = _compare_json(small.read_text())
    assert "2" in first["b"] and "2" in first["diff"]  # the first divergent stage comes first


def test_a_page_tiles_run_b_like_run_a(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 20, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 1, 12, 12)
    w = nfw.NeuralFlowWidget(model, x, compare=-x)
    page = w.to_html(tmp_path / "conv.html").read_text()
    a, extra = _baked(page), _compare_json(page)
    assert a["0"]["msg"]["view"]["kind"] == "grid"
    channels = a["0"]["msg"]["view"]["channels"]
    assert extra["b"]["0"]["msg"]["view"]["channels"] == channels
    assert extra["diff"]["0"]["msg"]["view"]["channels"] == channels


def test_a_page_carries_the_error_replies_that_say_why_a_stage_has_no_data():
    from neural_flow_widget.notebook.export import bake_replies

    flow = nfw.trace(torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.randn(1, 2))
    replies, _ = bake_replies(
        flow, None, 10_000, make=lambda node: (wire.error_reply(node, f"no data for {node}"), [])
    )
    assert set(replies) == {"input:0", "output:0", "0"}
    assert replies["0"]["msg"] == {"ok": False, "stage": "0", "error": "no data for 0"}


def test_playback_from_python_steps_plays_pauses_and_stops():
    torch.manual_seed(0)
    w = nfw.NeuralFlowWidget(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    assert w.playback == {"at": -1, "playing": False, "speed": 1.0}  # off until asked
    w.step()
    assert (w.playback["at"], w.playback["playing"]) == (0, False)  # the input, paused
    w.step(3)
    w.step(-1)
    assert w.playback["at"] == 2
    w.playback = {**w.playback, "steps": 4, "stage": "enc1"}  # as the view reports it
    w.step(10)
    assert w.playback["at"] == 3  # not past the last step
    w.play(speed=2)
    assert (w.playback["playing"], w.playback["speed"]) == (True, 2.0)
    w.pause()
    assert w.playback["playing"] is False
    with pytest.raises(ValueError, match="positive"):
        w.play(speed=0)
    w.stop()
    assert (w.playback["at"], w.playback["playing"]) == (-1, False)
    w.step(-5)
    assert w.playback["at"] == 0  # from off, back is the start


def test_present_switches_presentation_mode(widget):
    assert widget.presenting is False
    widget.present()
    assert widget.presenting is True
    widget.present(False)
    assert widget.presenting is False
