"""``mo.ui.anywidget(NeuralFlowWidget(...))`` in a real ``marimo run`` server (the example app
``notebooks/marimo_app.py``) in headless Chromium: the graph draws, a click on a stage makes
the kernel answer over the widget's custom messages (marimo has no anywidget ``invoke``) and
the inspector shows that stage's statistics, the cell that reads ``flow.value["selected"]``
re-runs with the same numbers, closing the inspector clears it, and the toolbar keeps one row
in marimo's column (711 px at 1280 × 720) and in a 700 px window (556 px). Saves
test-artifacts/marimo_1280x720.png and marimo_700.png."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import subprocess
import sys
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from lab import free_port
from live import settle

import neural_flow_widget as nfw
from neural_flow_widget import demos

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
APP = ROOT / "notebooks" / "marimo_app.py"
pytest.importorskip("marimo")

#: the toolbar's visible items, each as its vertical middle
ROW = """(t) => [...t.children].filter((c) => c.offsetParent)
  .map((c) => { const r = c.getBoundingClientRect(); return r.top + r.height / 2; })"""


@contextlib.contextmanager
def marimo_run(app: pathlib.Path):
    """``marimo run app`` on a free port; yields its URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--no-token",
         f"--port={port}", "--host=127.0.0.1"],
        env=dict(os.environ, HF_HUB_OFFLINE="1", MARIMO_SKIP_UPDATE_CHECK="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError("marimo exited:\n" + server.stdout.read()) from None
                if time.time() > deadline:
                    raise RuntimeError("marimo did not start within 60 s") from None
                time.sleep(0.2)  # (a poll: the server answers when it is up)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def app_url():
    with marimo_run(APP) as url:
        yield url


def _summary(stage: str):
    """The stage's output summary, traced here as the app traces it: the oracle."""
    demo = demos.load("unet")
    return nfw.trace(demo.model, demo.inputs, stages=1).summary(stage)[0]


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def test_a_click_in_marimo_loads_the_stage_and_the_cell_reading_the_value_reacts(browser, app_url):
    expected = _summary("enc2")
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app_url)
    node = page.locator('[data-stage-id="enc2"]').first
    node.wait_for(timeout=90_000)
    assert page.locator('[data-edge-kind="skip"]').count() >= 2  # the U-Net's skips
    page.get_by_text("Click a stage in the graph.").wait_for(timeout=30_000)
    node.click()
    # the inspector: the kernel answered this stage, over custom messages
    # (Playwright's locators pierce marimo's shadow root; document.querySelector would not)
    page.locator(".nfw-ins-title b", has_text="enc2").wait_for(timeout=30_000)
    page.locator('canvas[data-view-kind="grid"]').first.wait_for(timeout=30_000)
    assert page.locator(".nfw-errorbox").count() == 0
    key = page.locator(".nfw-stat-k", has_text="min / max").first
    shown = key.locator("xpath=following-sibling::div[1]").text_content()
    lo, hi = _numbers(shown)[-2:]
    assert lo == pytest.approx(expected.min, abs=1e-3, rel=1e-3), shown
    assert hi == pytest.approx(expected.max, rel=1e-3), shown
    # the cell that reads flow.value["selected"] re-ran with the same stage and numbers
    cell = page.get_by_text("Selected:").first.locator("xpath=..")
    cell.filter(has_text="enc2").wait_for(timeout=30_000)
    text = cell.text_content()
    assert "1 × 16 × 32 × 32" in text, text
    mean = float(re.search(r"mean (-?[\d.e-]+)", text).group(1))
    assert mean == pytest.approx(expected.mean, rel=1e-3), text
    # one toolbar row in marimo's column
    toolbar = page.locator(".nfw-toolbar")
    width = page.locator(".nfw-root").evaluate("(r) => r.getBoundingClientRect().width")
    rows = toolbar.evaluate(ROW)
    assert max(rows) - min(rows) < 4, (width, rows)
    page.mouse.move(5, 5)
    settle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "marimo_1280x720.png"))
    # closing the inspector clears the selection: the cell says so
    page.locator(".nfw-close").first.click()
    page.get_by_text("Click a stage in the graph.").wait_for(timeout=30_000)
    page.close()
    assert not errors, errors


def test_the_toolbar_keeps_one_row_in_a_700_px_window(browser, app_url):
    page = browser.new_page(viewport={"width": 700, "height": 800})
    page.goto(app_url)
    page.locator('[data-stage-id="enc2"]').first.wait_for(timeout=90_000)
    settle(page)
    toolbar = page.locator(".nfw-toolbar")
    rows = toolbar.evaluate(ROW)
    width = page.locator(".nfw-root").evaluate("(r) => r.getBoundingClientRect().width")
    assert width < 700 and max(rows) - min(rows) < 4, (width, rows)
    # every control but the exports is still there (widget.save_svg / save_png remain)
    for name in ("Play", "Data", "Fit", "Reset", "Keyboard help"):
        assert page.get_by_role("button", name=name).first.is_visible(), name
    assert page.get_by_label("node colour").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "marimo_700.png"))
    page.close()
