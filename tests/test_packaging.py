"""The package installs anywhere pip runs: an sdist carries the built front end, and a wheel
built from it on a machine without Node.js and without a C compiler is pure Python
(``py3-none-any``), installs, traces (capture on its torch path) and draws its graph.

The wheel is built and installed with Node.js, npm and the C compilers off the PATH; the
page it writes is opened in headless Chromium.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

pytestmark = pytest.mark.slow  # builds an sdist and a wheel, installs it

ROOT = pathlib.Path(__file__).resolve().parent.parent
NEEDED = ("neural_flow_widget/static/widget.js", "neural_flow_widget/capture/colormaps.json",
          "neural_flow_widget/capture/accelerator/reduce.c",
          "neural_flow_widget/capture/accelerator/lanes.h",
          "neural_flow_widget/capture/accelerator/pool.h",
          "neural_flow_widget/demos/weights/unet.pt")  # fmt: skip
TOOLS = ("node", "npm", "npx", "cc", "gcc", "clang", "c++", "g++")


def bare_path(tmp: pathlib.Path) -> str:
    """A PATH with this Python and tar but none of :data:`TOOLS` (checked)."""
    folder = tmp / "bin"
    folder.mkdir()
    for tool in ("python", "python3"):
        (folder / tool).symlink_to(sys.executable)
    for tool in ("tar", "gzip", "sh", "uname"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    path = str(folder)
    assert all(shutil.which(tool, path=path) is None for tool in TOOLS)
    return path


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, **options)
    assert done.returncode == 0, (
        f"{' '.join(command)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    """sdist from the repository, then a wheel from that sdist with no Node and no compiler."""
    pytest.importorskip("build")
    tmp = tmp_path_factory.mktemp("packaging")
    run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp)], cwd=ROOT
    )  # (the bundle is built from js/ here, as `pip install .` does)
    (sdist,) = tmp.glob("neural_flow_widget-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {"/".join(n.split("/")[1:]) for n in archive.getnames()}
    assert set(NEEDED) <= names, set(NEEDED) - names
    env = dict(os.environ, PATH=bare_path(tmp))
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "wheels"),
            str(sdist),
        ],
        env=env,
        cwd=tmp,
    )
    (built,) = (tmp / "wheels").glob("*.whl")
    return built


def test_the_wheel_built_from_the_sdist_is_pure_python_and_complete(wheel):
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        tag = archive.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert set(NEEDED) <= names, set(NEEDED) - names
    assert "Root-Is-Purelib: true" in tag and "Tag: py3-none-any" in tag
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib"))]


SMOKE = r"""
import json, sys, torch
import neural_flow_widget as nfw
from neural_flow_widget import demos
from neural_flow_widget.capture import accelerator

assert nfw.__file__.startswith({site!r}), nfw.__file__
assert accelerator.reducer() is None and "no C compiler" in accelerator.status()
demo = demos.load("unet")
widget = nfw.NeuralFlowWidget(demo.model, demo.inputs)
assert "export" in widget._esm and len(widget._esm) > 50_000  # the bundled front end
flow = widget.flow
assert not [s.error for s in flow.calls if s.error]
assert {{e.kind for e in flow.edges}} >= {{"flow", "skip"}}
assert flow.view("enc1").data.size
widget.to_html({page!r})
print("ok", len(flow.stages))
"""


def test_the_wheel_installs_traces_and_draws_without_node_or_a_compiler(wheel, tmp_path, request):
    site = tmp_path / "site"
    env = dict(
        os.environ,
        PATH=bare_path(tmp_path),
        NFW_ACCELERATOR_DIR=str(tmp_path / "cache"),
        PYTHONPATH=str(site),
    )
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            str(site),
            str(wheel),
        ],
        env=env,
    )
    page = tmp_path / "unet.html"
    done = run(
        [sys.executable, "-c", SMOKE.format(site=str(site), page=str(page))], env=env, cwd=tmp_path
    )
    assert done.stdout.startswith("ok")
    assert not list((tmp_path / "cache").glob("*.so")) if (tmp_path / "cache").exists() else True
    browser = request.getfixturevalue("browser")  # (skips here where Chromium is missing)
    page_view = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    page_view.on("pageerror", lambda e: errors.append(str(e)))
    page_view.goto(page.as_uri())
    page_view.wait_for_selector('[data-stage-id="enc1"]', timeout=30_000)
    assert page_view.locator('[data-edge-kind="skip"]').count() >= 3
    page_view.close()
    assert errors == []
