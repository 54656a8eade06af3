"""Peak memory of trace() against a plain forward pass, each in a fresh process.

    python benchmarks/bench_memory.py [--size 512 --batch 8]

Each measurement runs in its own subprocess: build the benchmark U-Net and its input, note the
resident set size, run once (plain ``model(x)`` under ``no_grad``, or ``nfw.trace``), and report
the peak resident set size (``ru_maxrss``); with ``--device cuda``, the peak of torch's CUDA
allocator instead. Prints both peaks, the increments over the
baseline, and the ratio of the peaks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, resource, sys
import torch
sys.path.insert(0, {here!r})
import models
import neural_flow_widget as nfw
torch.manual_seed(0)
device = {device!r}
model = models.UNet().eval().to(device)
x = torch.randn({batch}, 3, {size}, {size}).to(device)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if device == "cpu":
    base = rss()
else:  # the device's own allocator: what the activations and the reductions take there
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
if {mode!r} == "plain":
    with torch.no_grad():
        y = model(x)
else:
    flow = nfw.trace(model, x)
if device == "cpu":
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
else:
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
print(json.dumps({{"base": base, "peak": peak}}))
"""


def measure(mode: str, size: int, batch: int, device: str) -> dict:
    here = os.path.dirname(os.path.abspath(__file__))
    code = CHILD.format(here=here, mode=mode, size=size, batch=batch, device=device)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu (peak resident set) or cuda (peak of torch's CUDA allocator)",
    )
    args = parser.parse_args()
    rows = {"plain": [], "trace": []}
    for _ in range(args.repeat):
        for mode in rows:
            rows[mode].append(measure(mode, args.size, args.batch, args.device))
    print(
        f"U-Net {args.size}x{args.size}, batch {args.batch}, {args.device}; "
        f"median of {args.repeat} fresh processes"
    )
    peaks = {}
    for mode, runs in rows.items():
        runs.sort(key=lambda r: r["peak"])
        mid = runs[len(runs) // 2]
        peaks[mode] = mid["peak"]
        print(
            f"  {mode:<6} peak {mid['peak'] / 2**20:8.0f} MiB   above baseline "
            f"{(mid['peak'] - mid['base']) / 2**20:8.0f} MiB"
        )
    print(f"  trace / plain peak: {peaks['trace'] / peaks['plain']:.3f}")


if __name__ == "__main__":
    main()
