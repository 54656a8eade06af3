"""What ``nfw.compare`` adds to the two traces it needs (GPT-2 small, 128 tokens, a clean and
a changed input), and the bytes a Flow keeps for it (the fixed samples of the outputs).

    python benchmarks/bench_compare.py [--repeat 7] [--threads 2] [--tokens 128]

Prints the median and the range of the two traces (wall clock) and of compare, and compare's
share of the traces.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import models

import neural_flow_widget as nfw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = models.gpt2().eval()
    ids = torch.randint(0, 50_000, (1, args.tokens))
    changed = ids.clone()
    changed[0, args.tokens // 2] += 1  # one token changed: the runs part at that position
    nfw.compare(nfw.trace(model, ids), nfw.trace(model, changed))  # warm up
    traces, compares = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a, b = nfw.trace(model, ids), nfw.trace(model, changed)
        t1 = time.perf_counter()
        result = nfw.compare(a, b)
        t2 = time.perf_counter()
        traces.append(t1 - t0)
        compares.append(t2 - t1)
    kept = sum(
        item.pending.sample()[0].nbytes
        for items in a.capture.outputs.values()
        for item in items
        if item.error is None and item.pending.sample() is not None
    )

    def spread(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e3:.0f} ms ({min(xs) * 1e3:.0f}-{max(xs) * 1e3:.0f})"

    share = [c / t for c, t in zip(compares, traces)]
    print(f"GPT-2 small, {args.tokens} tokens, {args.threads} threads, {args.repeat} runs")
    print(f"two traces: {spread(traces)}")
    print(f"compare:    {spread(compares)}  = {statistics.median(share):.1%} of the traces")
    print(f"samples kept per flow: {kept / 2**20:.1f} MiB; stages compared: {len(result.stages)}")
    print(f"first divergent: {result.first_divergent().id}")


if __name__ == "__main__":
    main()
