"""The compiled parts under AddressSanitizer and UndefinedBehaviorSanitizer.

Builds ``reduce.c`` (both variants) with ``-fsanitize=address,undefined`` into a temporary
folder and runs, in a child process with the sanitizer runtimes preloaded, the compiled
capture path on tensors of many shapes, budgets and batch samples and whole traces of a
U-Net, a ResNet-like CNN and a small GPT-2.  Any out-of-bounds read or write, use after free or
undefined behaviour in the C code stops the child with the sanitizer's report.
"""

import os
import pathlib
import subprocess
import sys

import pytest

from neural_flow_widget.capture.accelerator import build as native_build

pytestmark = pytest.mark.slow  # compiles and runs the accelerator under sanitizers

CHILD = r"""
import pathlib, sys, torch
sys.path.insert(0, {benchmarks!r})
import models, neural_flow_widget as nfw
from neural_flow_widget.capture import accelerator

assert {folder!r} in accelerator.status(), accelerator.status()
torch.manual_seed(0)
builds = [accelerator.open_library(p) for p in sorted(pathlib.Path({folder!r}).glob("*.so"))]
assert len(builds) == {builds}
shapes = [(1, 1, 1, 1), (2, 3, 7, 5), (1, 2048, 7, 7), (3, 16, 33, 65), (1, 40, 66, 34),
          (1, 3000, 7, 5), (2, 5, 300, 9), (1, 1, 1), (3, 77, 300), (1, 5000, 64),
          (1, 128, 50257)]
for lib in builds:
    reducer = accelerator.Reducer(lib)
    for shape in shapes:
        for budget in (4096, 50_000, 262_144, 4_000_000):
            for sample in (0, shape[0] - 1, 7):
                for scale in (1.0, 1e30, 1e-30):
                    made = reducer.reduce(torch.randn(shape) * scale, sample, budget)
                    if made is not None:
                        made.result()[0].resolve()
                    hinted = reducer.reduce(torch.randn(shape) * 1e-6, sample, budget, 2.0**-40)
                    if hinted is not None:
                        hinted.result()[0].resolve()
    for n in (1, 7, 8, 31, 8191, 8192, 8193, 100_003):  # gradients of parameters
        flat = reducer.flat(torch.randn(n))
        flat.result()[0].resolve()


class Writes(torch.nn.Module):  # in-place writes, out=, views and splits
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(12, 3)
        self.register_buffer("acc", torch.zeros(2, 4))

    def forward(self, x):
        h = self.a(x)
        view = h[:, :2]
        h.add_(1)
        torch.mul(h, 2, out=self.acc)
        view.mul_(3)
        return self.b(torch.cat([h, self.acc, *torch.split(h, 2, dim=1)], 1))


for m, x in [(Writes().eval(), torch.randn(2, 4)),
             (models.UNet().eval(), torch.randn(2, 3, 96, 80)),
             (models.ResNet50Like().eval(), torch.randn(1, 3, 160, 128)),
             (models.gpt2(n_layer=2, n_embd=64, n_head=4), torch.randint(0, 30000, (2, 300)))]:
    for budget in (4096, 262_144):
        flow = nfw.trace(m, x, budget_bytes=budget, sample=1)
        assert not [s.error for s in flow.calls if s.error]
    if not isinstance(m, Writes):  # (out= has no autograd)
        out = lambda o: (o.logits if hasattr(o, "logits") else o).float().mean()
        flow = nfw.trace(m, x, loss=out)  # the backward pass: gradients and parameters' too
        assert flow.gradient_flow() is not None
print("clean")
"""


def _runtime(name: str) -> str | None:
    cc = native_build.compiler()
    if cc is None:
        return None
    found = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True)
    path = found.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def test_compiled_path_is_clean_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    runtimes = [_runtime("libasan.so"), _runtime("libubsan.so")]
    if None in runtimes:
        if os.environ.get("NFW_REQUIRE_ACCELERATOR") == "1":
            pytest.fail("NFW_REQUIRE_ACCELERATOR=1 but no C compiler with the ASan/UBSan runtimes")
        pytest.skip("no C compiler with the AddressSanitizer and UBSan runtimes")
    sanitize = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all")  # fmt: skip
    variants = tuple(dict.fromkeys(("base", native_build.native_variant())))
    built = native_build.build(variants, force=True, folder=tmp_path, extra=sanitize)
    assert len(built) == len(variants) and all(p.parent == tmp_path for p in built)
    benchmarks = str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks")
    env = dict(
        os.environ,
        NFW_ACCELERATOR="1",
        NFW_ACCELERATOR_DIR=str(tmp_path),
        LD_PRELOAD=" ".join(runtimes),
        ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        HF_HUB_OFFLINE="1",
    )
    code = CHILD.format(benchmarks=benchmarks, folder=str(tmp_path), builds=len(variants))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0 and "clean" in result.stdout, result.stderr[-4000:]
