"""Profile one model's trace() with cProfile: where the time of a traced run goes.

    python benchmarks/profile_trace.py resnet50 [--device cuda] [--no-capture] [--top 30]

Prints the functions with the most time of their own and, for this package's functions, the
most cumulative time, over ``--runs`` traces after a warm-up.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import bench_trace

import neural_flow_widget as nfw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", help="a model name of bench_trace.py")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-capture", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    found = {name: (m, x) for name, m, x in bench_trace.cases()}
    make_model, make_input = found[args.model]
    model, x = make_model().to(args.device), make_input().to(args.device)
    capture = not args.no_capture
    for _ in range(2):
        nfw.trace(model, x, capture=capture)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.runs):
        nfw.trace(model, x, capture=capture)
        if args.device != "cpu":
            torch.cuda.synchronize()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumtime").print_stats("neural_flow_widget", args.top)


if __name__ == "__main__":
    main()
