"""The widget's keys in a real JupyterLab: a widget that appears while another cell is being
edited leaves the keys to that cell; one shown from command mode takes them (Space plays,
the arrows step playback and do not move the notebook's cursor). Saves
test-artifacts/jupyterlab_keys.png."""

from __future__ import annotations

import os
import pathlib
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lab import jupyterlab, open_and_run_first_cell, write_notebook
from live import settle

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SETUP = (
    "import pathlib, time\n"
    "import neural_flow_widget as nfw\n"
    "from neural_flow_widget import demos\n"
    "demo = demos.load('unet')\n"
)


def test_the_widget_takes_the_keys_when_shown_but_not_from_a_cell_being_edited(browser, tmp_path):
    write_notebook(
        tmp_path,
        "keys.ipynb",
        [
            SETUP
            + "w1 = nfw.NeuralFlowWidget(demo.model, demo.inputs)\n"
            + "w1.height = 300\n"
            # the cell runs until the test has put the cursor in the next one (at most 60 s)
            + "for _ in range(1200):\n"
            + "    if pathlib.Path('edited').exists(): break\n"
            + "    time.sleep(0.05)\n"
            + "w1",
            "x = 1",
            "w2 = nfw.NeuralFlowWidget(demo.model, demo.inputs)\nw2.height = 300\nw2",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    in_cell = """(i) => { const a = document.activeElement;
      return [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
        .findIndex((c) => c.contains(a)) === i
        ? (a.closest('.nfw-canvas') ? 'graph' : a.isContentEditable ? 'editor' : a.className)
        : null; }"""
    with jupyterlab(tmp_path, "keys.ipynb") as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        cell = lambda i: page.locator(".jp-Notebook .jp-Cell").nth(i)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_and_run_first_cell(page, url, ARTIFACTS)
        # while the first cell runs, the second is edited; the widget appears meanwhile
        cell(1).locator(".cm-content").click()
        page.keyboard.press("End")
        assert cell(0).locator("[data-test-painted]").count() == 0  # the first cell still runs
        (tmp_path / "edited").touch()
        cell(0).locator("[data-test-painted]").wait_for(timeout=120_000)
        settle(page)  # (the widget takes the keys once painted, unless an editor has them)
        assert page.evaluate(in_cell, 1) == "editor"
        page.keyboard.type(" + 2")
        assert "x = 1 + 2" in cell(1).locator(".cm-content").text_content()
        assert cell(0).locator(".nfw-play").get_attribute("aria-pressed") == "false"
        # command mode, the third cell run in place: its widget takes the keys
        page.keyboard.press("Escape")
        page.keyboard.press("j")
        page.keyboard.press("Control+Enter")
        cell(2).locator("[data-test-painted]").wait_for(timeout=60_000)
        settle(page)
        assert page.evaluate(in_cell, 2) == "graph"
        page.keyboard.press(" ")
        play = cell(2).locator(".nfw-play")
        page.wait_for_function(
            "(b) => b.getAttribute('aria-pressed') === 'true'",
            arg=play.element_handle(),
            timeout=5000,
        )
        page.keyboard.press("ArrowRight")
        where = cell(2).locator(".nfw-where")
        page.wait_for_function(
            "(w) => w.textContent.startsWith('2 /')", arg=where.element_handle(), timeout=5000
        )
        page.keyboard.press("ArrowDown")  # the graph's (along an edge), not the notebook's
        active = (
            "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]"
            ".findIndex((c) => c.classList.contains('jp-mod-active'))"
        )
        assert page.evaluate(active) == 2
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_keys.png"))
        page.keyboard.press("Escape")
        assert cell(2).locator(".nfw-transport").is_hidden()
        page.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors
