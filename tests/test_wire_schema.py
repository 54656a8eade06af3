"""One schema source for the wire: js/src/wire_schema.ts is what scripts/make_wire_schema.py
makes of the graph message's TypedDicts (wire/schema.py), and the encoder sends exactly those
fields."""

import pathlib
import sys
from typing import Annotated, TypedDict, get_type_hints

import pytest
import torch
import zoo

import neural_flow_widget as nfw
from neural_flow_widget import wire
from neural_flow_widget.wire import schema

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "scripts"))
import make_wire_schema


def test_the_committed_typescript_is_what_the_python_definitions_make():
    stale = make_wire_schema.OUT.read_text() != make_wire_schema.render()
    assert not stale, "js/src/wire_schema.ts is stale: run scripts/make_wire_schema.py"


def test_a_field_added_in_python_appears_in_the_typescript_types_and_table(monkeypatch):
    class Extra(TypedDict):
        """A record with one field."""

        width: Annotated[int | None, "how wide, or null"]

    monkeypatch.setattr(schema, "MESSAGES", (*schema.MESSAGES, Extra))
    text = make_wire_schema.render()
    assert "export interface Extra {\n  width: number | null; // how wide, or null\n}" in text
    assert '  Extra: {\n    width: "int|null",\n  },' in text
    assert text != make_wire_schema.OUT.read_text()


def test_a_field_without_its_comment_is_refused(monkeypatch):
    class Bare(TypedDict):
        width: int

    monkeypatch.setattr(schema, "MESSAGES", (Bare,))
    with pytest.raises(TypeError, match=r"Bare\.width has no comment"):
        make_wire_schema.render()


def test_the_encoder_sends_exactly_the_fields_of_the_schema():
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    graph = wire.encode_graph(flow)
    assert list(graph) == list(get_type_hints(schema.Graph))
    for call in graph["calls"]:
        assert list(call) == list(get_type_hints(schema.WireCall))
    for end in graph["ends"].values():
        assert list(end) == list(get_type_hints(schema.WireEnd))
