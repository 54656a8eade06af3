"""What an offline page keeps: size, export time, attention maps, blocks and leaves baked.

    HF_HUB_OFFLINE=1 python benchmarks/bench_export.py [--only gpt2,vit,whisper] [--budget-mb 8]

Models from transformers configs, random weights, no download: gpt2 (GPT2Config() defaults,
GPT2LMHeadModel, 128 tokens), vit (ViTConfig() defaults, ViTForImageClassification, 224²: 197
tokens, 12 heads), whisper (a Whisper-tiny-sized WhisperForConditionalGeneration: 4 + 4
layers, 384 wide, 6 heads; 30 s of features, 16 decoder tokens). Prints, per model, the trace
and export times, the page's size, and how many attention stages, blocks (stages with
children) and leaves carry their data, and the graph note of a page that left some out.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

import torch

import neural_flow_widget as nfw
from neural_flow_widget.notebook import export


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config()).eval(), torch.randint(0, 50257, (1, 128))


def vit():
    from transformers import ViTConfig, ViTForImageClassification

    return ViTForImageClassification(ViTConfig()).eval(), torch.randn(1, 3, 224, 224)


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
    )  # fmt: skip
    inputs = {
        "input_features": torch.randn(1, 80, 3000),
        "decoder_input_ids": torch.randint(0, 1000, (1, 16)),
    }
    return WhisperForConditionalGeneration(config).eval(), inputs


MODELS = {"gpt2": gpt2, "vit": vit, "whisper": whisper}


def baked(page: str, name: str) -> object:
    return json.loads(page.split(f'id="nfw-{name}">', 1)[1].split("</script>", 1)[0])


def measure(name: str, budget: int, out: pathlib.Path) -> None:
    torch.manual_seed(0)
    model, x = MODELS[name]()
    started = time.perf_counter()
    flow = nfw.trace(model, x)
    traced = time.perf_counter() - started
    bundle = (pathlib.Path(nfw.__file__).parent / "static" / "widget.js").read_text()
    started = time.perf_counter()
    path = export.write_html(
        flow, out / f"{name}.html", bundle=bundle, tokens=export.token_labels(x, flow),
        budget_bytes=budget,
    )  # fmt: skip
    exported = time.perf_counter() - started
    page = path.read_text()
    replies = baked(page, "replies")
    assert isinstance(replies, dict)
    ok = {node for node, r in replies.items() if r["msg"].get("ok")}
    maps = {flow.calls[i].id for i in flow.capture.maps if i >= 0}
    with_maps = {n for n in ok & maps if replies[n]["msg"]["attention"]}
    blocks = [c.id for c in flow.calls if not c.leaf and c.id not in maps]
    leaves = [c.id for c in flow.calls if c.leaf]
    print(
        f"{name:8} trace {traced:5.1f} s  export {exported:4.1f} s  page "
        f"{path.stat().st_size / 1e6:5.2f} MB (budget {budget / 1e6:g} MB)  attention "
        f"{len(with_maps)}/{len(maps)}  blocks {len(ok & set(blocks))}/{len(blocks)}  leaves "
        f"{len(ok & set(leaves))}/{len(leaves)}"
    )
    graph = baked(page, "graph")
    assert isinstance(graph, dict)
    for note in graph["notes"]:
        print(f"         note: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--budget-mb", type=float, default=export.DEFAULT_BUDGET / 1e6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only.split(","):
            measure(name, int(args.budget_mb * 1e6), pathlib.Path(folder))


if __name__ == "__main__":
    main()
