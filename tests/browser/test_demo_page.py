"""The README's first command ends with an HTML page: headless Chromium opens it offline and
shows the U-Net with its skip edges and a stage's channels. Saves test-artifacts/demo_unet.png."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian chromium")

LIT = """(c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let lit = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) lit++;
  return lit > 0.3 * c.width * c.height; }"""


def test_demo_page_opens_offline_with_skips_and_channels(tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "unet.html"
    done = subprocess.run(
        [sys.executable, "-m", "neural_flow_widget.cli", "demo", "unet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        outside: list[str] = []

        def block(route):
            outside.append(route.request.url)
            route.abort()

        context.route("http*://**", block)  # offline: any network request is a failure
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(out.as_uri())
        page.wait_for_selector('[data-stage-id="enc1"]', timeout=30_000)
        assert page.locator('[data-edge-kind="skip"]').count() >= 3  # enc1/2/3 -> dec3/2/1
        page.locator('[data-stage-id="enc1"]').first.click()
        canvas = page.locator('canvas[data-view-kind="grid"]').first
        canvas.wait_for(timeout=30_000)
        page.wait_for_function(LIT, arg=canvas.element_handle(), timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "demo_unet.png"))
        browser.close()
    assert outside == [] and errors == []
