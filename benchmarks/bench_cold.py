"""How much a hook's work costs right after a model op, against the same work repeated.

    python benchmarks/bench_cold.py [--repeat 41]

Capture runs inside forward hooks, between the model's own kernels. This prints, for a few
probes, the median time when the probe runs right after a 3x3 convolution (256 channels,
28x28: what a ResNet stage does before the hook) and when it runs again at once (warm), and
their ratio. The probes: a tiny torch op, a tiny numpy op, the first and second of two
different torch ops, and capture's whole reduction (summary and retained views) of
activations of several shapes, by the torch path and by the compiled path. The gap is a
fixed cost per distinct code path run after the model's kernel, which is why capture costs
more per call in a traced run than in a microbenchmark (see the README's benchmarks and
limitations).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from neural_flow_widget.capture import accelerator
from neural_flow_widget.capture.reduction import reduce_on_device


def median_us(probe, before=None, repeat: int = 41) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        probe()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(256, 256, 3, padding=1).eval()
    feature = torch.randn(1, 256, 28, 28)
    small = torch.randn(64)
    values = small.numpy()
    fast = accelerator.reducer()
    probes = {
        "torch sum, 64 floats": lambda: small.sum(),
        "numpy sum, 64 floats": lambda: values.sum(),
        "torch sum then max": lambda: (small.sum(), small.max()),
    }
    for shape in [(1, 256, 14, 14), (1, 64, 56, 56), (1, 128, 256)]:
        activation = torch.randn(shape)
        label = "x".join(map(str, shape))
        probes[f"torch path {label}"] = lambda a=activation: reduce_on_device(
            a, sample=0, budget=1 << 18
        )
        if fast is not None:
            probes[f"compiled path {label}"] = lambda a=activation: fast.reduce(a, 0, 1 << 18)
    print(f"torch {torch.__version__}, 1 thread; medians of {args.repeat} runs, microseconds")
    print(f"{'probe':40s} {'after conv':>10s} {'warm':>8s} {'ratio':>6s}")
    with torch.no_grad():
        for name, probe in probes.items():
            probe()
            cold = median_us(probe, lambda: conv(feature), args.repeat)
            warm = median_us(probe, None, args.repeat)
            print(f"{name:40s} {cold:10.1f} {warm:8.1f} {cold / warm:5.1f}x")


if __name__ == "__main__":
    main()
