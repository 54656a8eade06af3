"""End to end through a real JupyterLab: open a notebook, run it, click a stage, see the
activation arrive from the kernel. Saves test-artifacts/jupyterlab.png."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian chromium "
                                "(scripts/install_browser.sh)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def lab(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import neural_flow_widget as nfw\n"
            "from neural_flow_widget import demos\n"
            "demo = demos.load('unet')\n"
            "widget = nfw.NeuralFlowWidget(demo.model, demo.inputs, stages=1)\n"
            "widget"),
        nbformat.v4.new_code_cell("print('SELECTED=' + str(widget.selected))"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, tmp_path / "flow.ipynb")
    port = free_port()
    token = "nfw-test-token"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", "--allow-root",
         f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if server.poll() is not None:
                raise RuntimeError("jupyter lab exited:\n" + server.stdout.read())
            time.sleep(0.5)
    else:
        server.kill()
        raise RuntimeError("jupyter lab did not start within 60 s")
    try:
        yield f"{base}/lab/tree/flow.ipynb?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def test_click_a_stage_in_jupyterlab_and_see_its_activation(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(lab)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'], "
                               ".jp-mod-idle, .jp-Toolbar-kernelStatus", timeout=60_000)
        page.wait_for_timeout(1000)
        dialog = page.locator(".jp-Dialog")
        if dialog.count():  # e.g. the kernel picker or a notice: accept the default
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-dialog.png"))
            page.locator(".jp-Dialog .jp-mod-accept").first.click()
        page.locator(".jp-Cell").first.click()
        page.keyboard.press("Shift+Enter")  # run the widget cell
        node = page.locator('[data-stage-id="enc1"]').first
        node.wait_for(timeout=90_000)
        assert page.locator('[data-edge-kind="skip"]').count() >= 2  # the U-Net's skips
        node.click()
        canvas = page.locator("canvas[data-view-kind]").first
        canvas.wait_for(timeout=30_000)
        page.wait_for_function(
            """(c) => { const g = c.getContext('2d'); if (!c.width || !c.height) return false;
                 const d = g.getImageData(0, 0, c.width, c.height).data;
                 let lit = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] || d[i + 1] || d[i + 2])) lit++;
                 return lit > 50; }""", arg=canvas.element_handle(), timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab.png"), full_page=False)
        # The click reached the kernel: the selection is now the clicked stage.
        page.locator(".jp-Cell").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=SELECTED=enc1", timeout=30_000)
        browser.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors
