"""A throwaway JupyterLab (or Notebook 7) server for browser tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import nbformat
from live import COUNT_PAINTS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(folder: pathlib.Path, name: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, folder / name)


#: the front ends a test can open a notebook in: module to run, the URL path of a notebook
APPS = {"jupyterlab": ("jupyterlab", "lab/tree"), "notebook": ("notebook", "notebooks")}


@contextlib.contextmanager
def jupyterlab(folder: pathlib.Path, notebook: str, app: str = "jupyterlab") -> Iterator[str]:
    """Serve ``folder`` with JupyterLab (or ``app="notebook"``: Jupyter Notebook 7); yields
    the URL that opens ``notebook``."""
    module, path = APPS[app]
    port, token = free_port(), "nfw-test-token"
    settings = folder / ".settings"
    news = settings / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(folder / ".cfg"),
        JUPYTER_RUNTIME_DIR=str(folder / ".rt"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            "--allow-root",
            f"--ServerApp.root_dir={folder}",
            *(
                [
                    "--LabApp.news_url=None",
                    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                ]
                if app == "jupyterlab"
                else []
            ),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError(f"{app} exited:\n" + server.stdout.read()) from None
                if time.time() > deadline:
                    raise RuntimeError(f"{app} did not start within 60 s") from None
                time.sleep(0.2)  # (a poll: the server answers when it is up)
        yield f"{base}/{path}/{notebook}?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


#: the notebook's kernel is connected and idle: in the notebook's toolbar (JupyterLab's and
#: Notebook 7's) the kernel is named (not "No Kernel", as while its session starts, when the
#: execution indicator already says idle) and the execution indicator says idle. A cell run
#: before that is dropped on a busy machine: it never runs.
KERNEL_READY = """() => {
  const idle = document.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]');
  const name = document.querySelector(".jp-KernelName")?.textContent.trim() ?? "";
  return !!idle && name !== "" && name !== "No Kernel"; }"""

#: a start-up dialog is up (the kernel picker, a notice), or none will come: the kernel is ready
DIALOG_OR_READY = f"""() => !!document.querySelector(".jp-Dialog") || ({KERNEL_READY})()"""


def open_and_run_first_cell(page, url: str, artifacts: pathlib.Path | None = None) -> None:
    """Open the notebook, dismiss start-up dialogs, wait for the kernel, run the first cell.
    The widgets' paints are counted from the start (``data-test-painted`` on a widget once it
    painted: live.py)."""
    page.add_init_script(COUNT_PAINTS)
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(DIALOG_OR_READY, timeout=90_000)
    dialog = page.locator(".jp-Dialog")
    if dialog.count():  # e.g. the kernel picker or a notice: accept the default
        if artifacts is not None:
            page.screenshot(path=str(artifacts / "jupyterlab-dialog.png"))
        page.locator(".jp-Dialog .jp-mod-accept").first.click()
    page.wait_for_function(KERNEL_READY, timeout=90_000)
    page.locator(".jp-Cell").first.click()
    page.keyboard.press("Shift+Enter")
