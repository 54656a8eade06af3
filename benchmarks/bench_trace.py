"""Time trace() against a plain forward pass of the same model, in the same run.

    python benchmarks/bench_trace.py [--repeat 7] [--only resnet50,gpt2] [--no-capture]

Prints, per model, the median wall time of a plain ``model(x)`` under ``torch.no_grad()`` in
eval mode, of ``trace(capture=False)`` (topology only) and of ``trace()`` (capture and attention
on), and their ratios. Runs are interleaved so that a noisy neighbour slows all alike.
Models: unet128 (batch 1), unet512 (512², batch 8), resnet50 (224²), gpt2 / gpt2-eager
(GPT-2 small, 128 tokens), bert (BERT-base, 128 tokens), vit (ViT-base, 224²), gpt2-48
(48 layers, 256 wide, 128 tokens). ``--retained`` prints the bytes kept per stage.
``--peers`` also times torchview (``draw_graph``, graph only, no rendering) and TorchLens
(``trace`` / ``log_forward_pass``, activations kept, no visualisation) when they are installed
(``pip install torchview torchlens``; not a dependency of this project).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models

import neural_flow_widget as nfw


def cases():
    torch.manual_seed(0)
    tokens = lambda: torch.randint(0, 30000, (1, 128))
    yield "unet128", lambda: models.UNet().eval(), lambda: torch.randn(1, 3, 128, 128)
    yield "resnet50", lambda: models.ResNet50Like().eval(), lambda: torch.randn(1, 3, 224, 224)
    yield "gpt2", lambda: models.gpt2(), tokens
    yield "gpt2-eager", lambda: models.gpt2(attn="eager"), tokens
    yield "bert", lambda: models.bert_base(), tokens
    yield "vit", lambda: models.vit_base(), lambda: torch.randn(1, 3, 224, 224)
    yield "gpt2-48", lambda: models.gpt2(n_layer=48, n_embd=256, n_head=8), tokens
    yield "unet512", lambda: models.UNet().eval(), lambda: torch.randn(8, 3, 512, 512)


def synchronised(fn):
    def run():
        fn()
        torch.cuda.synchronize()

    return run


def median_times(fns, repeat, clock=time.perf_counter):
    times = {name: [] for name in fns}
    for fn in fns.values():  # warm up
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            start = clock()
            fn()
            times[name].append(clock() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def peers(model, x) -> dict:
    """Timers for the peers that are installed and can handle this model."""
    found = {}
    try:
        import torchview

        def view():
            torchview.draw_graph(model, input_data=x, depth=3, device="cpu")

        view()
        found["torchview"] = view
    except Exception as error:  # not installed, or it cannot trace this model
        print(f"  (torchview: {type(error).__name__}: {str(error)[:80]})")
    try:
        import torchlens

        def lens():
            if hasattr(torchlens, "trace"):  # torchlens >= 2
                torchlens.trace(model, x)
            else:
                torchlens.log_forward_pass(model, x, vis_opt="none")

        lens()
        found["torchlens"] = lens
    except Exception as error:
        print(f"  (torchlens: {type(error).__name__}: {str(error)[:80]})")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-capture", action="store_true")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall time, or this process's CPU time (steadier on a busy machine)",
    )
    parser.add_argument("--device", default="cpu", help="run the models there (e.g. cuda)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument(
        "--peers", action="store_true", help="also time torchview and torchlens if installed"
    )
    parser.add_argument(
        "--retained", action="store_true", help="print the bytes retained per stage and in total"
    )
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    if args.threads:
        torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(
        f"torch {torch.__version__} on {args.device}, {torch.get_num_threads()} threads; "
        f"median of {args.repeat} interleaved runs, {args.clock} clock"
    )
    print(f"{'model':<10} {'forward':>9} {'topology':>9} {'ratio':>6} {'+capture':>9} {'ratio':>6}")
    retained = []
    for name, make_model, make_input in cases():
        if only and name not in only:
            continue
        model, x = make_model().to(args.device), make_input().to(args.device)

        def plain():
            with torch.no_grad():
                model(x)

        fns = {"plain": plain, "topology": lambda: nfw.trace(model, x, capture=False)}
        if not args.no_capture:
            fns["capture"] = lambda: nfw.trace(model, x)
        if args.peers:
            fns.update(peers(model, x))
        if args.device != "cpu":  # time what was queued too
            fns = {name: synchronised(fn) for name, fn in fns.items()}
        t = median_times(fns, args.repeat, clock)
        row = (
            f"{name:<10} {t['plain'] * 1e3:8.1f}ms {t['topology'] * 1e3:8.1f}ms "
            f"{t['topology'] / t['plain']:5.2f}x"
        )
        if "capture" in t:
            row += f" {t['capture'] * 1e3:8.1f}ms {t['capture'] / t['plain']:5.2f}x"
        for peer in ("torchview", "torchlens"):
            if peer in t:
                row += f"  {peer} {t[peer] / t['plain']:5.2f}x"
        print(row, flush=True)
        if args.retained:
            retained.append((name, nfw.trace(model, x)))
    for name, flow in retained:
        sizes = {
            c.id: sum(
                item.retained.nbytes
                for item in flow.capture.outputs.get(c.index, ())
                if item.retained is not None
            )
            for c in flow.calls
        }
        total = sum(sizes.values())
        print(
            f"{name}: retained {total / 1e6:.2f} MB over {len(sizes)} calls; largest "
            f"{max(sizes.values()) / 1e3:.0f} KB; "
            + ", ".join(f"{k} {v / 1e3:.0f} KB" for k, v in list(sizes.items())[:6])
            + " ..."
        )


if __name__ == "__main__":
    main()
