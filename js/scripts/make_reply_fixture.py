"""Write tests/fixtures/stage_replies.json: real `_stage_data` replies from the Python side,
so the JS decoder is tested against what the kernel really sends.

    .venv/bin/python js/scripts/make_reply_fixture.py

Buffers are stored base64 here only because a JSON fixture file cannot hold bytes; on the
wire they travel as binary buffers.
"""

from __future__ import annotations

import base64
import json
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import neural_flow_widget as nfw  # noqa: E402
from neural_flow_widget import wire  # noqa: E402
import zoo  # noqa: E402


def exchanges(flow, requests, tokens=None):
    out = []
    for request in requests:
        msg, buffers = wire.encode_stage_reply(flow, request, tokens)
        out.append({"request": request, "reply": msg,
                    "buffers": [base64.b64encode(bytes(b)).decode("ascii") for b in buffers]})
    return out


def main() -> None:
    torch.manual_seed(0)
    unet = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    first = unet.calls[0].id
    cases = exchanges(unet, [
        {"stage": first, "view": None, "channel": None, "head": None, "sample": None},
        {"stage": first, "view": "channel", "channel": 1, "head": None, "sample": None},
        {"stage": "no.such.stage", "view": None, "channel": None, "head": None, "sample": None},
    ])
    torch.manual_seed(0)
    att = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    stage = next(att.calls[i].id for i in sorted(att.capture.maps) if i >= 0)
    cases += exchanges(att, [
        {"stage": stage, "view": None, "channel": None, "head": None, "sample": None},
        {"stage": stage, "view": None, "channel": None, "head": 1, "sample": None},
    ], tokens=[f"t{i}" for i in range(5)])
    path = ROOT / "tests" / "fixtures" / "stage_replies.json"
    path.write_text(json.dumps({"schema": wire.SCHEMA, "cases": cases}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
