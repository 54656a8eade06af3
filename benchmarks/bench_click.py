"""Click-to-view round trip through a real JupyterLab: click a stage, the front end asks the
kernel for its data, the view is drawn. Also the widget's first paint in the notebook.

    python benchmarks/bench_click.py [--clicks 20]

The notebook shows a stack of 64-channel 56x56 conv stages; each click goes to a stage not yet
shown (nothing cached), and the time runs from the click to the frame where the new channel grid
is on the canvas. Prints the median and the spread.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
import chromium  # noqa: E402
from lab import jupyterlab, open_and_run_first_cell, write_notebook  # noqa: E402

CELL = """
import torch, neural_flow_widget as nfw
torch.manual_seed(0)
layers = [torch.nn.Conv2d(3, 64, 3, padding=1)]
layers += [torch.nn.Conv2d(64, 64, 3, padding=1) for _ in range({n} - 1)]
model = torch.nn.Sequential(*layers).eval()
widget = nfw.NeuralFlowWidget(model, torch.randn(1, 3, 56, 56))
widget
"""

CLICK = """async (id) => {
  const old = document.querySelector('canvas[data-view-kind]');
  const node = document.querySelector(`[data-stage-id="${id}"]`);
  const t0 = performance.now();
  node.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  for (;;) {
    await new Promise((r) => requestAnimationFrame(r));
    const c = document.querySelector('canvas[data-view-kind="grid"]');
    if (!c || c === old || !c.width) continue;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let lit = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) lit++;
    if (lit > 0.3 * c.width * c.height) return performance.now() - t0;
  }
}"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clicks", type=int, default=20)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = pathlib.Path(tempfile.mkdtemp(prefix="nfw-bench-"))
    write_notebook(folder, "bench.ipynb", [CELL.format(n=args.clicks)])
    with jupyterlab(folder, "bench.ipynb") as url, sync_playwright() as p:
        browser = chromium.launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        open_and_run_first_cell(page, url)
        page.wait_for_selector('[data-stage-id="0"]', timeout=90_000)
        times = [page.evaluate(CLICK, str(i)) for i in range(args.clicks)]
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    times.sort()
    print(
        f"click-to-view, 64x56x56 conv stage, JupyterLab, {len(times)} clicks: median "
        f"{statistics.median(times):.0f} ms (min {times[0]:.0f}, max {times[-1]:.0f})"
    )


if __name__ == "__main__":
    main()
