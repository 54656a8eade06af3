"""Time trace() against a plain forward pass of the same model, in the same run.

    python benchmarks/bench_trace.py [--repeat 7] [--only resnet50,gpt2] [--threads 1]
        [--no-capture] [--torch-path] [--peers]

Prints, per model, the median time of a plain ``model(x)`` under ``torch.no_grad()`` in eval
mode, and for ``trace(capture=False)`` (topology only), ``trace()`` (capture and attention on)
and, with ``--torch-path``, ``trace()`` with the compiled capture path off (what a machine
without a C compiler gets): the median of its ratio to the plain forward of the same round
and the range over the rounds, by wall clock and by this process's CPU time (steadier on a
busy machine; with ``--threads 1`` it is the one-thread figure). Rounds are interleaved so
that a noisy neighbour slows all alike.
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
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models

import neural_flow_widget as nfw
from neural_flow_widget.capture import accelerator


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


def timed_rounds(fns, repeat):
    """Per function, ``repeat`` (wall, CPU) times in seconds, interleaved: each round runs
    every function once, so that a noisy neighbour slows them alike."""
    times = {name: [] for name in fns}
    for fn in fns.values():  # warm up
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def ratio_text(times, name, clock, reference="plain"):
    """The median of ``name``'s per-round ratio to the reference (the plain forward) of the
    same round, and the range over the rounds."""
    ratios = [t[clock] / p[clock] for t, p in zip(times[name], times[reference])]
    return f"{statistics.median(ratios):5.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


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
            # its warnings (on GPT-2: "re-ran the forward pass") would bury the table
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if hasattr(torchlens, "trace"):  # torchlens >= 2
                    torchlens.trace(model, x)
                else:
                    torchlens.log_forward_pass(model, x, vis_opt="none")

        lens()
        found["torchlens"] = lens
    except Exception as error:
        print(f"  (torchlens: {type(error).__name__}: {str(error)[:80]})")
    return found


ROWS = {
    "topology": "trace(capture=False)",
    "capture": "trace()",
    "torch path": "trace(), accelerator off",
    "torchview": "torchview draw_graph",
    "torchlens": "torchlens trace",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-capture", action="store_true")
    parser.add_argument(
        "--torch-path", action="store_true", help="also time trace() with the accelerator off"
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
    print(
        f"torch {torch.__version__} on {args.device}, {torch.get_num_threads()} threads; "
        f"{args.repeat} interleaved rounds; per row the median of its per-round ratio to the "
        f"plain forward (range), by wall clock and by this process's CPU time"
    )
    print(f"{'model':<10} {'row':<26} {'wall':>9} {'ratio':>18} {'CPU':>9} {'ratio':>18}")
    retained = []
    for name, make_model, make_input in cases():
        if only and name not in only:
            continue
        model, x = make_model().to(args.device), make_input().to(args.device)

        def plain():
            with torch.no_grad():
                model(x)

        def torch_path():
            accelerator.enable(False)
            try:
                nfw.trace(model, x)
            finally:
                accelerator.enable(True)

        fns = {"plain": plain, "topology": lambda: nfw.trace(model, x, capture=False)}
        if not args.no_capture:
            fns["capture"] = lambda: nfw.trace(model, x)
            if args.torch_path and args.device == "cpu":
                fns["torch path"] = torch_path
        if args.peers:
            fns.update(peers(model, x))
        if args.device != "cpu":  # time what was queued too
            fns = {name: synchronised(fn) for name, fn in fns.items()}
        times = timed_rounds(fns, args.repeat)
        wall, cpu = (statistics.median(t[i] for t in times["plain"]) for i in (0, 1))
        print(f"{name:<10} {'forward':<26} {wall * 1e3:7.1f}ms {'':>18} {cpu * 1e3:7.1f}ms")
        for row in fns:
            if row == "plain":
                continue
            w, c = (statistics.median(t[i] for t in times[row]) for i in (0, 1))
            print(
                f"{'':<10} {ROWS[row]:<26} {w * 1e3:7.1f}ms {ratio_text(times, row, 0):>18} "
                f"{c * 1e3:7.1f}ms {ratio_text(times, row, 1):>18}",
                flush=True,
            )
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
