"""Time trace() against a plain forward pass of the same model, in the same run.

    python benchmarks/bench_trace.py [--repeat 7] [--only resnet50,gpt2] [--capture]

Prints, per model, the median wall time of a plain ``model(x)`` under ``torch.no_grad()`` in
eval mode and of ``trace()`` (topology only, and with capture unless ``--no-capture``), and their
ratios. Runs are interleaved so that a noisy neighbour slows both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402

import neural_flow_widget as nfw  # noqa: E402


def cases():
    torch.manual_seed(0)
    yield "resnet50", lambda: models.ResNet50Like().eval(), lambda: torch.randn(1, 3, 224, 224)
    yield "gpt2", lambda: models.gpt2(), lambda: torch.randint(0, 50257, (1, 128))


def median_times(fns, repeat):
    times = {name: [] for name in fns}
    for name, fn in fns.items():  # warm up
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-capture", action="store_true")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"median of {args.repeat} interleaved runs")
    print(f"{'model':<10} {'forward':>9} {'topology':>9} {'ratio':>6} {'+capture':>9} {'ratio':>6}")
    for name, make_model, make_input in cases():
        if only and name not in only:
            continue
        model, x = make_model(), make_input()

        def plain():
            with torch.no_grad():
                model(x)

        fns = {"plain": plain, "topology": lambda: nfw.trace(model, x, capture=False)}
        if not args.no_capture:
            fns["capture"] = lambda: nfw.trace(model, x)
        t = median_times(fns, args.repeat)
        row = f"{name:<10} {t['plain'] * 1e3:8.1f}ms {t['topology'] * 1e3:8.1f}ms " \
              f"{t['topology'] / t['plain']:5.2f}x"
        if "capture" in t:
            row += f" {t['capture'] * 1e3:8.1f}ms {t['capture'] / t['plain']:5.2f}x"
        print(row, flush=True)


if __name__ == "__main__":
    main()
