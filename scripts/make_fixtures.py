"""Write every golden fixture under ``tests/fixtures/`` (pytest and the JS tests read them).

    .venv/bin/python scripts/make_fixtures.py

- ``wire_golden.json``: the graph message of ``tests/zoo.py``'s U-Net (capture on).
- ``edges_golden.json``: for several flows and expansion states, the edges of
  ``flow.select(<visible stages>)``; the front end must compute the same from the graph alone.
- ``wire_unet.json``, ``wire_transformer12.json``: graph messages of real traces of the
  models in ``tests/fixture_models.py`` (a U-Net with a residual bottleneck, a 12-block
  TinyGPT), which the JS unit tests and the browser tests draw.
- ``stage_replies.json``: real ``_stage_data`` replies of ``wire.encode_stage_reply``
  (buffers base64 here only because a JSON file cannot hold bytes; on the wire they are binary).
- ``colors.json``: views rendered by Python, their uint8 codes and the RGB ``View.to_png()``
  gives each code; the front end's lookup tables must colour them the same.

Files are written one record per line (a call, an op, a selection, an exchange, a view) by
:func:`dumps`; the output is deterministic. ``tests/test_wire.py`` checks that the files on
disk are what this script makes now.
"""

from __future__ import annotations

import base64
import io
import json
import pathlib
import random
import sys
from collections.abc import Callable, Iterable

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import fixture_models  # noqa: E402
import zoo  # noqa: E402

import neural_flow_widget as nfw  # noqa: E402
from neural_flow_widget import wire  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"

# Lists written one item per line, under these keys (everything else stays inline).
GRAPH_LINES = frozenset({"calls", "ops", "stats"})


# ------------------------------------------------------------------------------ writer


def dumps(value, lines: Iterable[str] = GRAPH_LINES) -> str:
    """JSON text, inline except the non-empty lists under a key in ``lines``: those have one
    item per line (indented one space per level). Ends with a newline.

    >>> print(dumps({"a": 1, "calls": [{"id": "x"}, {"id": "y"}], "b": [1, 2]}), end="")
    {"a": 1, "calls": [
     {"id": "x"},
     {"id": "y"}
    ], "b": [1, 2]}
    """
    return _dumps(value, frozenset(lines), 0) + "\n"


def _dumps(value, lines: frozenset, level: int) -> str:
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON keys are strings, got {key!r}")
            head = json.dumps(key) + ": "
            if key in lines and isinstance(item, list) and item:
                pad = " " * (level + 1)
                body = ",\n".join(pad + _dumps(x, lines, level + 1) for x in item)
                parts.append(f"{head}[\n{body}\n{' ' * level}]")
            else:
                parts.append(head + _dumps(item, lines, level))
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_dumps(x, lines, level) for x in value) + "]"
    return json.dumps(value, allow_nan=False)


# ------------------------------------------------------------------------ edges golden


def flows():
    torch.manual_seed(0)
    yield "unet", nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False)
    yield "resnet", nfw.trace(zoo.seeded(zoo.ResNet), torch.randn(1, 3, 8, 8), capture=False)
    yield (
        "multimodal",
        nfw.trace(
            zoo.seeded(zoo.Multimodal), (torch.randn(2, 1, 8, 8), torch.randn(2, 6)), capture=False
        ),
    )
    yield "reused", nfw.trace(zoo.seeded(zoo.Reused), torch.randn(2, 4), capture=False)
    yield "attention", nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6), capture=False)
    yield "heads", nfw.trace(zoo.seeded(zoo.ThreeHeads), torch.randn(2, 4), capture=False)
    yield "prenorm", nfw.trace(zoo.seeded(zoo.PreNorm), torch.randn(2, 4), capture=False)
    yield "dense", nfw.trace(zoo.seeded(zoo.Dense), torch.randn(2, 4), capture=False)
    yield (
        "unet_sequential",
        nfw.trace(
            zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False, topology="sequential"
        ),
    )
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(
        GPT2Config(
            n_layer=4,
            n_embd=32,
            n_head=4,
            vocab_size=64,
            n_positions=32,
            bos_token_id=0,
            eos_token_id=0,
        )
    ).eval()
    yield "gpt2", nfw.trace(gpt2, torch.randint(0, 64, (1, 8)), capture=False)


def visible(flow, expanded: set[int]) -> list[int]:
    """Calls shown when ``expanded`` calls are open: all ancestors open, itself closed."""
    parents = flow.graph.call_parents
    shown = []
    for call in flow.calls:
        if call.index in expanded:
            continue
        p = parents[call.index]
        while p >= 0 and p in expanded:
            p = parents[p]
        if p < 0:
            shown.append(call.index)
    return shown


def expansion_states(flow, rng: random.Random) -> list[set[int]]:
    groups = [c.index for c in flow.calls if any(p == c.index for p in flow.graph.call_parents)]
    states = [set(), set(groups)]
    states += [{g} for g in groups[:6]]
    for _ in range(4):
        states.append({g for g in groups if rng.random() < 0.5})
    return states


def edges_golden() -> dict:
    rng = random.Random(0)
    cases = []
    for name, flow in flows():
        selections = []
        for expanded in expansion_states(flow, rng):
            shown = visible(flow, expanded)
            ids = [flow.calls[i].id for i in shown]
            edges = flow.select(ids).edges
            selections.append(
                {
                    "expanded": sorted(expanded),
                    "selected": shown,
                    "edges": [[e.src, e.dst, e.kind] for e in edges],
                }
            )
        cases.append({"name": name, "graph": wire.encode_graph(flow), "selections": selections})
    return {"schema": wire.SCHEMA, "cases": cases}


# ---------------------------------------------------------------------- graph messages


def wire_golden() -> dict:
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    return wire.encode_graph(flow)


def wire_unet() -> dict:
    model, x = fixture_models.unet()
    return wire.encode_graph(nfw.trace(model, x))


def wire_transformer12() -> dict:
    model, inputs = fixture_models.transformer12()
    return wire.encode_graph(nfw.trace(model, inputs))  # a dict: model(input_ids=...)


# ----------------------------------------------------------------------- stage replies


def _exchanges(flow, requests: list[dict], tokens: list[str] | None = None) -> list[dict]:
    out = []
    for request in requests:
        msg, buffers = wire.encode_stage_reply(flow, request, tokens)
        out.append(
            {
                "request": request,
                "reply": msg,
                "buffers": [base64.b64encode(bytes(b)).decode("ascii") for b in buffers],
            }
        )
    return out


def _request(stage: str, **fields) -> dict:
    return {"stage": stage, "view": None, "channel": None, "head": None, "sample": None, **fields}


def stage_replies() -> dict:
    torch.manual_seed(0)
    unet = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    first = unet.calls[0].id
    cases = _exchanges(
        unet,
        [_request(first), _request(first, view="channel", channel=1), _request("no.such.stage")],
    )
    torch.manual_seed(0)
    att = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    stage = next(att.calls[i].id for i in sorted(att.capture.maps) if i >= 0)
    cases += _exchanges(
        att, [_request(stage), _request(stage, head=1)], tokens=[f"t{i}" for i in range(5)]
    )
    return {"schema": wire.SCHEMA, "cases": cases}


# ----------------------------------------------------------------------------- colours


def _png_rgb(png: bytes) -> np.ndarray:
    """The (h * w, 3) RGB of a one-tile view's PNG, row-major (every pixel opaque)."""
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    if not (pixels[..., 3] == 255).all():
        raise ValueError("a one-tile view's PNG has transparent pixels")
    return pixels[..., :3].reshape(-1, 3)


def colors() -> dict:
    from neural_flow_widget.capture.retained import retain
    from neural_flow_widget.capture.views import render_view

    g = torch.Generator().manual_seed(0)
    cases = [  # (name, tensor, view kind): one tile each, a few dozen codes
        ("image mean, signed", torch.randn(1, 3, 6, 8, generator=g), "mean"),
        ("vector values, unsigned from 0", torch.rand(1, 40, generator=g), "values"),
        ("sequence tokens, unsigned above 0", torch.rand(1, 6, 8, generator=g) + 0.5, "tokens"),
    ]
    views = []
    for name, tensor, kind in cases:
        view = render_view(retain(tensor), kind)
        codes = np.asarray(view.data, np.uint8)
        rgb = _png_rgb(view.to_png())
        if rgb.shape[0] != codes.size:
            raise ValueError(f"{name}: {rgb.shape[0]} pixels for {codes.size} codes")
        views.append(
            {
                "name": name,
                "kind": view.kind,
                "shape": list(codes.shape),
                "vmin": float(view.vmin),
                "vmax": float(view.vmax),
                "signed": bool(view.signed),
                "codes": codes.ravel().tolist(),
                "rgb": rgb.tolist(),
            }
        )
    return {"schema": wire.SCHEMA, "views": views}


# -------------------------------------------------------------------------------- main

#: file name -> (maker, the keys whose lists are written one item per line)
FILES: dict[str, tuple[Callable[[], dict], frozenset]] = {
    "wire_golden.json": (wire_golden, GRAPH_LINES),
    "edges_golden.json": (edges_golden, frozenset({"cases", "calls", "ops", "selections"})),
    "wire_unet.json": (wire_unet, GRAPH_LINES),
    "wire_transformer12.json": (wire_transformer12, GRAPH_LINES),
    "stage_replies.json": (stage_replies, frozenset({"cases"})),
    "colors.json": (colors, frozenset({"views"})),
}


def text(name: str, value: dict | None = None) -> str:
    """The text of fixture ``name``: of ``value``, or of what its maker makes now."""
    make, lines = FILES[name]
    return dumps(make() if value is None else value, lines)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        path = FIXTURES / name
        path.write_text(text(name), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
