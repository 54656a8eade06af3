"""Long sequences: how fast the overview of a 4,096-token attention stage reaches the view, and
what a run keeps for its attention maps against a plain forward's peak memory.

    python benchmarks/bench_attention.py [--tokens 4096] [--layers 2] [--repeat 5] [--lab]

Builds GPT-2 small's width (768, 12 heads) from a config with ``--layers`` layers and
``--tokens`` positions (random weights, no download), traces it, and prints
  * the kernel's answer for the stage (``_stage_data``: the pooled overview and every head),
  * the time from selecting the stage in a live widget in headless Chromium to the attention
    map painted on its canvas (the kernel's answer, the bytes across, the drawing),
  * the bytes the Flow keeps for attention and in all, against the forward's own peak (the
    resident set of a fresh process running the plain forward, above its baseline),
  * a zoom beyond the kept block means: a 256 x 256 window answered at full resolution (the
    kernel runs the model again), against a plain forward of the same model,
  * with ``--lab``, the same select -> painted time through a real JupyterLab, for a model of
    ``--repeat`` + 1 layers (search + Enter opens the next layer, its attention tab kept; the
    data crosses as the comm's binary frames, as in a user's notebook).
Medians over ``--repeat`` stages not asked for before (each layer's first look counts once).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))

PEAK = r"""
import json, os, resource, sys, torch, transformers
torch.manual_seed(0)
cfg = transformers.GPT2Config(
    n_layer={layers}, n_head=12, n_embd=768, n_positions={tokens}, vocab_size=1000
)
model = transformers.GPT2LMHeadModel(cfg).eval()
ids = torch.randint(0, 1000, (1, {tokens}))
with open("/proc/self/statm") as f:
    base = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
with torch.no_grad():
    model(ids)
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base))
"""


def model_and_ids(tokens: int, layers: int):
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=layers,
        n_head=12,
        n_embd=768,
        n_positions=tokens,
        vocab_size=1000,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(cfg).eval(), torch.randint(0, 1000, (1, tokens))


def forward_peak(tokens: int, layers: int) -> int:
    code = PEAK.format(tokens=tokens, layers=layers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lab", action="store_true", help="also through a real JupyterLab")
    args = parser.parse_args()
    import torch

    import neural_flow_widget as nfw

    torch.set_num_threads(2)
    model, ids = model_and_ids(args.tokens, args.layers)
    t0 = time.perf_counter()
    widget = nfw.NeuralFlowWidget(model, ids)
    traced = time.perf_counter() - t0
    stages = [widget.flow.calls[i].id for i in widget.graph["attention"]]
    request = {"view": None, "channel": None, "head": None, "sample": None}
    kernel = []
    for stage in stages:
        t0 = time.perf_counter()
        widget._stage_data({**request, "stage": stage}, [])
        kernel.append(time.perf_counter() - t0)
    m = widget.flow.attention(stages[0])[0]
    print(
        f"GPT-2 width 768, 12 heads, {args.layers} layers, {args.tokens} tokens on 2 threads: "
        f"trace {traced:.1f} s; maps pooled {m.pool[0]}x{m.pool[1]} -> {tuple(m.weights.shape)}"
    )
    print(f"kernel's answer per stage: median {statistics.median(kernel) * 1e3:.0f} ms "
          f"({min(kernel) * 1e3:.0f}-{max(kernel) * 1e3:.0f})")  # fmt: skip
    zoom, plain = [], []
    window = [
        args.tokens // 2,
        args.tokens // 2 + 256,
        args.tokens // 2 - 128,
        args.tokens // 2 + 128,
    ]
    for stage in stages[: args.repeat]:
        t0 = time.perf_counter()
        reply, _ = widget._stage_data({**request, "stage": stage, "window": window}, [])
        zoom.append(time.perf_counter() - t0)
        assert reply["attention"][0]["pool"] == [1, 1], reply["attention"][0]["pool"]
        t0 = time.perf_counter()
        with torch.no_grad():
            model(ids)
        plain.append(time.perf_counter() - t0)
    print(f"zoom to a 256x256 window at full resolution (the model run again): median "
          f"{statistics.median(zoom) * 1e3:.0f} ms ({min(zoom) * 1e3:.0f}-{max(zoom) * 1e3:.0f}); "
          f"a plain forward {statistics.median(plain) * 1e3:.0f} ms")  # fmt: skip
    import chromium  # tests/browser, on the path above

    if chromium.installed():
        print(f"select -> map painted: {view_times(widget, stages, args.repeat)}")
        if args.lab:
            got = lab_times(args.tokens, args.repeat)
            print(f"the same in JupyterLab (search + Enter, the attention tab kept): {got}")
    maps = sum(a.weights.nbytes for s in stages for a in widget.flow.attention(s))
    capture = widget.flow.capture
    items = [i for kept in (*capture.outputs.values(), *capture.ends.values()) for i in kept]
    held = maps + sum(i.retained.nbytes for i in items if i.retained is not None)
    peak = forward_peak(args.tokens, args.layers)
    print(f"attention maps kept: {maps / 2**20:.1f} MiB = {100 * maps / peak:.1f} % of the "
          f"plain forward's peak ({peak / 2**20:.0f} MiB above its baseline)")  # fmt: skip
    print(f"all the Flow keeps (maps and every stage's kept copy): {held / 2**20:.1f} MiB = "
          f"{100 * held / peak:.1f} % of that peak")  # fmt: skip


LAB_CELL = """
import torch, transformers, neural_flow_widget as nfw
torch.manual_seed(0)
cfg = transformers.GPT2Config(n_layer={layers}, n_head=12, n_embd=768, n_positions={tokens},
                              vocab_size=1000, bos_token_id=0, eos_token_id=0)
model = transformers.GPT2LMHeadModel(cfg).eval()
w = nfw.NeuralFlowWidget(model, torch.randint(0, 1000, (1, {tokens})))
w
"""

#: search a stage, Enter (it opens in the inspector), its attention tab: ms to the painted map
SEARCH = """async (stage) => {
  const box = document.querySelector('.nfw-search');
  box.value = stage; box.dispatchEvent(new Event('input', { bubbles: true }));
  while (!document.querySelector('.nfw-search-count')?.textContent.includes('match'))
    await new Promise((r) => setTimeout(r, 20));
  const old = document.querySelector('canvas[data-view-kind="attention"]');
  const t0 = performance.now();
  box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
  for (;;) {
    await new Promise((r) => requestAnimationFrame(r));
    const tab = document.querySelector('.nfw-tab[data-view=attention]');
    if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
    const c = document.querySelector('canvas[data-view-kind="attention"]');
    if (c && c !== old && c.width > 0) return performance.now() - t0;
    if (performance.now() - t0 > 60000) return -1;
  }
}"""


def lab_times(tokens: int, repeat: int) -> str:
    """Select -> painted through a real JupyterLab, for a model of ``repeat + 1`` layers: the
    first layer opens the attention tab; each next layer's first look is timed."""
    import tempfile

    import chromium
    from lab import jupyterlab, open_and_run_first_cell, write_notebook
    from playwright.sync_api import sync_playwright

    layers = repeat + 1
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nfw-bench-"))
    write_notebook(folder, "attention.ipynb", [LAB_CELL.format(tokens=tokens, layers=layers)])
    stages = [f"transformer.h.{i}.attn" for i in range(layers)]
    with jupyterlab(folder, "attention.ipynb") as url, sync_playwright() as p:
        browser = chromium.launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        open_and_run_first_cell(page, url)
        page.wait_for_selector("[data-stage-id]", timeout=300_000)
        page.evaluate(SEARCH, stages[0])
        times = [page.evaluate(SEARCH, stage) for stage in stages[1:]]
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    med = statistics.median
    return f"median {med(times):.0f} ms ({min(times):.0f}-{max(times):.0f}), {layers} layers"


def view_times(widget, stages, repeat) -> str:
    """Select a stage in a fresh page, open its attention: the time to the painted map, and
    the part of it the test bridge to the kernel took (the kernel's work and the reply's bytes
    crossing as base64 through Playwright; a notebook's comm sends them as binary frames)."""
    import chromium
    from live import open_live
    from playwright.sync_api import sync_playwright

    totals, bridges, nexts = [], [], []
    with sync_playwright() as p:
        browser = chromium.launch(p)
        for r in range(repeat):
            context, page, _ = open_live(browser, widget, width=1280, height=800)
            page.wait_for_selector("[data-stage-id]")
            first, following = stages[r % len(stages)], stages[(r + 1) % len(stages)]
            for stage, into in ((first, totals), (following, nexts)):
                total, bridge = page.evaluate(SELECT, stage)
                into.append(total)
                if into is totals:
                    bridges.append(bridge)
            context.close()
        browser.close()
    med = statistics.median
    return (
        f"median {med(totals):.0f} ms ({min(totals):.0f}-{max(totals):.0f}), of which the "
        f"test bridge {med(bridges):.0f} ms; the next layer's (its attention tab kept): "
        f"{med(nexts):.0f} ms"
    )


#: select a stage, open its attention (when the inspector has not kept that tab): the ms to the
#: painted map, and those between asking the kernel and having its answer
SELECT = """async (stage) => {
  const ask = window.nfwKernel; let asked = 0, answered = 0;
  window.nfwKernel = async (...a) => { asked = performance.now(); const r = await ask(...a);
    answered = performance.now(); return r; };
  const old = document.querySelector('canvas[data-view-kind="attention"]');
  const t0 = performance.now();
  window.__t.model.set("selected", stage);
  try {
    for (;;) {
      await new Promise((r) => requestAnimationFrame(r));
      const tab = document.querySelector(".nfw-tab[data-view=attention]");
      if (tab && tab.getAttribute("aria-selected") !== "true") tab.click();
      const c = document.querySelector('canvas[data-view-kind="attention"]');
      const done = c && c !== old && c.width > 0 && answered;
      if (done) return [performance.now() - t0, answered - asked];
      if (performance.now() - t0 > 30000) return [-1, -1];
    }
  } finally { window.nfwKernel = ask; }
}"""


if __name__ == "__main__":
    main()
