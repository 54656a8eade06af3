"""Write the golden fixtures that pytest and the JS tests both read.

    python scripts/make_fixtures.py

- ``tests/fixtures/wire_golden.json``: the graph message of the test U-Net (capture on).
- ``tests/fixtures/edges_golden.json``: for several flows and expansion states, the edges of
  ``flow.select(<visible stages>)``; the front end must compute the same from the graph alone.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import neural_flow_widget as nfw  # noqa: E402
from neural_flow_widget import wire  # noqa: E402
import zoo  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def flows():
    torch.manual_seed(0)
    yield "unet", nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), capture=False)
    yield "resnet", nfw.trace(zoo.seeded(zoo.ResNet), torch.randn(1, 3, 8, 8), capture=False)
    yield "multimodal", nfw.trace(zoo.seeded(zoo.Multimodal),
                                  (torch.randn(2, 1, 8, 8), torch.randn(2, 6)), capture=False)
    yield "reused", nfw.trace(zoo.seeded(zoo.Reused), torch.randn(2, 4), capture=False)
    yield "attention", nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6),
                                 capture=False)
    yield "heads", nfw.trace(zoo.seeded(zoo.ThreeHeads), torch.randn(2, 4), capture=False)
    yield "prenorm", nfw.trace(zoo.seeded(zoo.PreNorm), torch.randn(2, 4), capture=False)
    yield "dense", nfw.trace(zoo.seeded(zoo.Dense), torch.randn(2, 4), capture=False)
    yield "unet_sequential", nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16),
                                       capture=False, topology="sequential")
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=32, n_head=4, vocab_size=64,
                                      n_positions=32, bos_token_id=0, eos_token_id=0)).eval()
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
            selections.append({"expanded": sorted(expanded), "selected": shown,
                               "edges": [[e.src, e.dst, e.kind] for e in edges]})
        cases.append({"name": name, "graph": wire.encode_graph(flow), "selections": selections})
    return {"schema": wire.SCHEMA, "cases": cases}


def wire_golden() -> dict:
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    return wire.encode_graph(flow)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, make in (("wire_golden.json", wire_golden), ("edges_golden.json", edges_golden)):
        path = FIXTURES / name
        path.write_text(json.dumps(make(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
