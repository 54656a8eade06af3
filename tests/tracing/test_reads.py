"""A tensor a call was given and read only for its shape, dtype or device carries no data: no
data edge is drawn from it (graph/reads.py). Reads of its values, of any kind, still count.
Expected edges are read off each model's code."""

from __future__ import annotations

import torch
from fixture_models import whisper
from torch import nn
from zoo import hooks_left

import neural_flow_widget as nfw


def edges(flow: nfw.Flow) -> set[tuple[str, str, str]]:
    return {(e.src, e.dst, e.kind) for e in flow.edges}


class Rotary(nn.Module):
    """LLaMA's rotary embedding in small: ``x`` gives the output's dtype and device only."""

    def forward(self, x, positions):
        angles = positions[..., None].float() * torch.ones(4, device=x.device)
        return angles.cos().to(x.dtype)


class Peek(nn.Module):
    """Reads its input's value, but makes no tensor of it."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x, y):
        if self.how == "item":
            scale = 2.0 if x.sum().item() > -1e9 else 3.0  # (sum: an op; item: a value read)
        elif self.how == "bool":
            scale = 2.0 if bool(x[0, 0] > -100) else 3.0
        else:  # no op reads x: only the value read does
            scale = 2.0 if x.tolist()[0][0] > -100 else 3.0
        return y * scale


class Uses(nn.Module):
    def __init__(self, peek: str = "item") -> None:
        super().__init__()
        self.embed = nn.Linear(4, 4)
        self.rotary = Rotary()
        self.peek = Peek(peek)
        self.head = nn.Linear(4, 4)
        self.same = nn.Identity()

    def forward(self, x):
        h = self.embed(x)
        positions = torch.arange(x.shape[0])
        r = self.rotary(h, positions)
        zeros = torch.zeros_like(h)  # (h's shape only)
        p = self.peek(h, r)
        return self.head(self.same(p) + zeros)


def test_an_input_read_for_its_dtype_only_draws_no_data_edge():
    torch.manual_seed(0)
    model, x = Uses().eval(), torch.randn(2, 4)
    expected = model(x)
    flow = nfw.trace(model, x)
    found = edges(flow)
    # rotary reads h for its dtype and device, and positions come from torch.arange: no data
    # source; it runs after embed
    assert ("embed", "rotary", "order") in found
    assert not {e for e in found if e[1] == "rotary" and e[2] != "order"}
    # peek(h, r) reads h by value (its trunk: the first argument) and multiplies r
    assert {("embed", "peek", "flow"), ("rotary", "peek", "merge")} <= found
    # zeros_like(h) takes h's shape: embed reaches the head only through peek
    assert {e[:2] for e in found if e[1] in ("same", "head")} == {
        ("peek", "same"),
        ("same", "head"),
    }
    torch.testing.assert_close(model(x), expected)
    assert hooks_left(model) == 0


def test_every_kind_of_value_read_counts_as_a_read():
    torch.manual_seed(0)
    for how in ("item", "bool", "tolist"):
        flow = nfw.trace(Uses(how).eval(), torch.randn(2, 4))
        assert ("embed", "peek") in {(e.src, e.dst) for e in flow.edges}, how


def test_an_input_returned_unchanged_or_written_in_place_was_read():
    class Writes(nn.Module):
        def forward(self, x, y):
            y.add_(1.0)  # (writes into an input it was given; reads nothing else of x)
            return x.new_zeros(3) + y[0]

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)
            self.writes, self.same = Writes(), nn.Identity()

        def forward(self, x):
            return self.same(self.writes(self.a(x), self.b(x)))

    torch.manual_seed(0)
    found = {(e.src, e.dst) for e in nfw.trace(Model().eval(), torch.randn(1, 3)).edges}
    assert ("b", "writes") in found and ("a", "writes") not in found
    assert ("writes", "same") in found


def test_whisper_decoder_positions_read_no_token():
    """``WhisperPositionalEmbedding.forward(input_ids, cache_length, position_ids)`` returns
    ``self.weight[position_ids]``, and the decoder makes position_ids with ``torch.arange``:
    the token ids give the length only. The token embedding reads the ids."""
    model, inputs = whisper()
    flow = nfw.trace(model, kwargs=inputs)
    into = {e.src: e.kind for e in flow.edges if e.dst == "model.decoder.embed_positions"}
    assert into == {"model.decoder.embed_tokens": "order"}
    assert ("input:decoder_input_ids", "model.decoder.embed_tokens", "flow") in edges(flow)
