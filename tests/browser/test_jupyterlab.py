"""End to end through a real JupyterLab and a real Jupyter Notebook 7: open a notebook, run it,
click a stage, see the activation arrive from the kernel. Saves test-artifacts/<app>.png."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from lab import jupyterlab, open_and_run_first_cell, write_notebook
from live import settle

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


PAINTED = """(c) => { const g = c.getContext('2d'); if (!c.width || !c.height) return false;
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let lit = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] || d[i + 1] || d[i + 2])) lit++;
  return lit > 50; }"""


@pytest.mark.parametrize("app", ["jupyterlab", "notebook"])
def test_click_a_stage_in_jupyterlab_and_see_its_activation(browser, tmp_path, app):
    write_notebook(
        tmp_path,
        "flow.ipynb",
        [
            "import neural_flow_widget as nfw\n"
            "from neural_flow_widget import demos\n"
            "demo = demos.load('unet')\n"
            "widget = nfw.NeuralFlowWidget(demo.model, demo.inputs, stages=1)\n"
            "widget",
            "print('SELECTED=' + str(widget.selected))",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with jupyterlab(tmp_path, "flow.ipynb", app) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_and_run_first_cell(page, url, ARTIFACTS)
        node = page.locator('[data-stage-id="enc1"]').first
        node.wait_for(timeout=90_000)
        assert page.locator('[data-edge-kind="skip"]').count() >= 2  # the U-Net's skips
        node.click()
        canvas = page.locator("canvas[data-view-kind]").first
        canvas.wait_for(timeout=30_000)
        page.wait_for_function(PAINTED, arg=canvas.element_handle(), timeout=30_000)
        page.mouse.move(5, 5)  # out of the graph: no hover highlight in the screenshot
        # JupyterLab's global CSS (e.g. `.jp-OutputArea-output dt { float: left }`) must not
        # scatter the inspector: each key sits on one row with its value, to its right.
        rows = page.evaluate("""() => [...document.querySelectorAll('.nfw-meta-k')].map((k) => {
            const a = k.getBoundingClientRect(), b = k.nextElementSibling.getBoundingClientRect();
            return [k.textContent, Math.abs(a.top - b.top), b.left - a.right, a.width]; })""")
        assert [r[0] for r in rows][:4] == ["stage", "output", "dtype", "params"], rows
        assert all(dy < 2 and gap >= 0 and width < 120 for _, dy, gap, width in rows), rows
        page.mouse.move(5, 500)  # no hover highlight in the screenshot
        settle(page)
        page.screenshot(path=str(ARTIFACTS / f"{app}.png"), full_page=False)
        # The click reached the kernel: the selection is now the clicked stage.
        page.locator(".jp-Cell").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=SELECTED=enc1", timeout=30_000)
        # Closing the inspector clears it to None (null on the wire, not "").
        page.locator(".nfw-close").click()
        page.locator(".jp-Cell").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=SELECTED=None", timeout=30_000)
        page.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors


def test_a_forward_that_raises_shows_its_partial_graph_in_jupyterlab(browser, tmp_path):
    """``NeuralFlowWidget(model, x)`` on a model that raises: the cell shows the partial graph
    with the failing stage marked and the failure banner (no traceback), the inspector shows
    the message, and the kernel keeps the TraceError in ``widget.error``."""
    here = os.path.dirname(os.path.abspath(__file__))
    write_notebook(
        tmp_path,
        "raises.ipynb",
        [
            f"import sys; sys.path.insert(0, {here!r})\n"
            "import neural_flow_widget as nfw, problem_models\n"
            "w = nfw.NeuralFlowWidget(*problem_models.shape_bug())\n"
            "w",
            "print('ERROR=' + type(w.error).__name__, isinstance(w.error, nfw.TraceError))",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with jupyterlab(tmp_path, "raises.ipynb") as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_and_run_first_cell(page, url, ARTIFACTS)
        banner = page.locator('[data-banner="failure"]')
        banner.wait_for(timeout=90_000)
        assert "The forward raised at classifier.0" in banner.text_content()
        failed = page.locator(".nfw-node[data-failed]")
        failed.first.wait_for(
            timeout=30_000
        )  # (the banner comes with the graph, before its layout)
        assert failed.count() == 1 and failed.get_attribute("data-stage-id") == "classifier.0"
        assert page.locator('[data-stage-id="features.0"]').count() == 1  # what ran before
        assert page.locator(".jp-OutputArea-output[data-mime-type*='error']").count() == 0
        page.get_by_role("button", name="Show the failing stage classifier.0").click()
        trace = page.locator(".nfw-trace")
        trace.wait_for(timeout=30_000)
        assert "mat1 and mat2 shapes cannot be multiplied" in trace.text_content()
        page.mouse.move(5, 5)
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_failure.png"))
        page.locator(".jp-Cell").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=ERROR=TraceError True", timeout=30_000)
        page.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors


def test_playback_from_python_and_a_selection_made_before_display_in_jupyterlab(browser, tmp_path):
    """``w.selected = "dec1"; w``: the first view shows dec1 selected, in view, its inspector
    open. Then ``w.step()`` in Python walks the forward pass in the view (``data-current``
    moves, the block being executed opens where it fits beside the inspector, else is marked
    current folded, its part line naming the layer) and the view reports where it is back to
    Python."""
    write_notebook(
        tmp_path,
        "playback.ipynb",
        [
            "import neural_flow_widget as nfw\n"
            "from neural_flow_widget import demos\n"
            "demo = demos.load('unet')\n"
            "w = nfw.NeuralFlowWidget(demo.model, demo.inputs)\n"
            "w.selected = 'dec1'\n"
            "w",
            "w.step(3)",
            "print('AT=%d STAGE=%s STEPS=%d' % (w.playback['at'], w.playback['stage'], "
            "w.playback['steps']))",
            "w.stop()",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    current = "() => [...document.querySelectorAll('[data-current]')].map(e => e.dataset.stageId)"
    with jupyterlab(tmp_path, "playback.ipynb") as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_and_run_first_cell(page, url, ARTIFACTS)
        selected = page.locator('.nfw-node.nfw-selected[data-stage-id="dec1"]')
        selected.wait_for(timeout=90_000)
        settle(page)
        box, canvas = selected.bounding_box(), page.locator(".nfw-canvas").bounding_box()
        assert canvas["x"] <= box["x"] and box["x"] + box["width"] <= canvas["x"] + canvas["width"]
        assert (
            canvas["y"] <= box["y"] and box["y"] + box["height"] <= canvas["y"] + canvas["height"]
        )
        assert page.locator(".nfw-ins-title b").text_content() == "dec1"
        for cell in (1, 2):  # w.step(3), then what the view says
            page.locator(".jp-Cell").nth(cell).click()
            page.keyboard.press("Shift+Enter")
            if cell == 1:
                page.wait_for_function(
                    "() => document.querySelector('.nfw-where')?.textContent.endsWith('enc1.bn1')",
                    timeout=30_000,
                )
                settle(page)
                [at] = page.evaluate(current)
                if at == "enc1.bn1":  # opened on the way
                    assert page.locator('[data-cluster-id="enc1"]').count() == 1
                else:  # ... or the block marked, folded to fit: "▸ bn1" on it
                    assert at == "enc1", at
                    part = page.locator(".nfw-node[data-current] .nfw-part").text_content()
                    assert part == "▸ bn1", part
                assert page.locator(".nfw-ins-title b").text_content() == "enc1.bn1"
                page.mouse.move(5, 5)
                settle(page)
                page.screenshot(path=str(ARTIFACTS / "jupyterlab_playback.png"))
        page.wait_for_selector("text=AT=2 STAGE=enc1.bn1", timeout=30_000)
        page.locator(".jp-Cell").nth(3).click()
        page.keyboard.press("Shift+Enter")  # w.stop(): back to the view it started from
        page.wait_for_function("() => !document.querySelector('[data-current]')", timeout=30_000)
        settle(page)  # the mark goes at once; the view it started from is laid out after
        assert page.locator('[data-cluster-id="enc1"]').count() == 0
        page.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors


def test_a_lecture_slider_retraces_and_the_vit_attention_shows_on_the_image_in_jupyterlab(
    browser,
    tmp_path,
):
    """The vision transformer demo beside an ipywidgets slider, at projector size (1024×768):
    the attention tab's "on the image" view draws the CLS token's attention and the rollout
    over the scene; moving the slider (keyboard, as a lecturer would) traces the next scene
    and the view follows, the same stage still open."""
    write_notebook(
        tmp_path,
        "vit.ipynb",
        [
            "import ipywidgets, neural_flow_widget as nfw\n"
            "from IPython.display import display\n"
            "from neural_flow_widget import demos\n"
            "from neural_flow_widget.demos import data\n"
            "vit = demos.load('vit')\n"
            "scene = lambda seed: data.shape_place_batch(1, seed=seed)[0]\n"
            "w = nfw.NeuralFlowWidget(vit.model, scene(0))\n"
            "w.height, w.selected = 560, 'blocks.2.attn'\n"
            "pick = ipywidgets.IntSlider(value=0, min=0, max=20, description='scene')\n"
            "pick.observe(lambda change: w.update(scene(change['new'])), names='value')\n"
            "display(pick, w)",
            "print('SCENE=%d SELECTED=%s' % (pick.value, w.selected))",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with jupyterlab(tmp_path, "vit.ipynb") as url:
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_and_run_first_cell(page, url, ARTIFACTS)
        page.locator(".nfw-tab[data-view=attention]").click(timeout=90_000)
        page.locator('[data-attention-mode="image"]').click(timeout=30_000)
        rollout = page.locator('[data-heat="rollout"] canvas[data-view-kind="attention-image"]')
        rollout.wait_for(timeout=30_000)
        page.wait_for_function(PAINTED, arg=rollout.element_handle(), timeout=30_000)
        assert "rollout through 3 layers" in page.text_content(".nfw-attention-image")
        first = page.locator(".nfw-attention-image").inner_text()
        # as a lecturer shows it: the file browser closed, the view scrolled to the images
        page.locator(".jp-SideBar .lm-TabBar-tab.lm-mod-current").first.click()
        settle(page)  # (the wider canvas redraws the inspector: its views are new elements)
        page.locator(".nfw-attention-image").scroll_into_view_if_needed()
        page.mouse.move(5, 5)
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_vit_on_the_image.png"))
        # the slider, moved from the keyboard: the next scene is traced, the view follows
        page.locator(".widget-slider .ui-slider-handle, .widget-slider .noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "(before) => { const el = document.querySelector('.nfw-attention-image');"
            " return el && el.innerText !== before; }",
            arg=first,
            timeout=60_000,
        )
        assert page.locator(".nfw-ins-title b").text_content() == "blocks.2.attn"
        page.locator(".jp-Cell").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector("text=SCENE=1 SELECTED=blocks.2.attn", timeout=30_000)
        page.close()
    assert not [e for e in errors if "neural" in e.lower() or "widget" in e.lower()], errors
