"""Time backward capture (``trace(loss=...)``) against a plain forward + backward of the same
model, and ``trace(replace=...)`` left unused against ``trace()``, in the same run.

    python benchmarks/bench_gradients.py [--repeat 7] [--only unet128,resnet50,gpt2] [--threads 1]

Rows, per model, each the median of its per-round ratio to the plain run of the same round
and the range over the rounds, by wall clock and by this process's CPU time (with
``--threads 1`` the one-thread figure):

- ``forward + backward``: the reference, ``loss(model(x))`` and ``torch.autograd.grad`` of it
  with respect to every parameter (what ``trace`` computes too: the parameters' ``.grad`` are
  left alone), with grad enabled;
- ``trace(loss=...)``: topology, the forward summaries, attention, and every stage's gradient
  summary and every parameter's, made inside the backward pass;
- ``trace()`` and ``trace(replace={})``: the forward trace, with the interventions argument
  given but empty, against a plain ``model(x)`` (no grad): the cost of ``replace=`` unused.

Models as in ``bench_trace.py``: unet128 (batch 1, 128²), resnet50 (224²), gpt2 (GPT-2 small,
128 tokens); the loss is the output's mean (the logits' for GPT-2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models
from bench_trace import ratio_text, timed_rounds

import neural_flow_widget as nfw


def loss(output):
    return (output.logits if hasattr(output, "logits") else output).float().mean()


def cases():
    torch.manual_seed(0)
    yield "unet128", lambda: models.UNet().eval(), lambda: torch.randn(1, 3, 128, 128)
    yield "resnet50", lambda: models.ResNet50Like().eval(), lambda: torch.randn(1, 3, 224, 224)
    yield "gpt2", lambda: models.gpt2(), lambda: torch.randint(0, 30000, (1, 128))


def report(name, times, reference, rows):
    wall, cpu = (statistics.median(t[i] for t in times[reference]) for i in (0, 1))
    print(f"{name:<10} {reference:<26} {wall * 1e3:7.1f}ms {'':>18} {cpu * 1e3:7.1f}ms")
    for row in rows:
        w, c = (statistics.median(t[i] for t in times[row]) for i in (0, 1))
        print(
            f"{'':<10} {row:<26} {w * 1e3:7.1f}ms {ratio_text(times, row, 0, reference):>18} "
            f"{c * 1e3:7.1f}ms {ratio_text(times, row, 1, reference):>18}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.repeat} "
        f"interleaved rounds; per row the median of its per-round ratio to its reference "
        f"(range), by wall clock and by this process's CPU time"
    )
    print(f"{'model':<10} {'row':<26} {'wall':>9} {'ratio':>18} {'CPU':>9} {'ratio':>18}")
    for name, make_model, make_input in cases():
        if only and name not in only:
            continue
        model, x = make_model(), make_input()
        params = [p for p in model.parameters() if p.requires_grad]

        def forward_backward():
            torch.autograd.grad(loss(model(x)), params, allow_unused=True)

        def forward():
            with torch.no_grad():
                model(x)

        times = timed_rounds(
            {
                "forward + backward": forward_backward,
                "trace(loss=...)": lambda: nfw.trace(model, x, loss=loss),
            },
            args.repeat,
        )
        report(name, times, "forward + backward", ["trace(loss=...)"])
        times = timed_rounds(
            {
                "forward": forward,
                "trace()": lambda: nfw.trace(model, x),
                "trace(replace={})": lambda: nfw.trace(model, x, replace={}),
            },
            args.repeat,
        )
        report("", times, "forward", ["trace()", "trace(replace={})"])


if __name__ == "__main__":
    main()
