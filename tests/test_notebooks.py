"""The teaching notebooks run top to bottom, headless, in a kernel of *this* Python, and show
what they promise: a live widget of the right model with the right selection, their own
assertions passed, the expected text, no errors, no warnings, no files left behind.

The kernel is pinned to ``sys.executable``: the test writes a throwaway kernelspec whose argv
starts with this interpreter and gives nbclient a kernel manager that only looks there, so a
``python3`` kernelspec elsewhere on the machine (user-wide, another venv) is never used.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402  (after the skips)
from jupyter_client.manager import AsyncKernelManager  # noqa: E402

pytestmark = pytest.mark.slow  # runs every notebook in a kernel

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "nfw-test-python"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_CLASS = "neural_flow_widget.notebook.widget.NeuralFlowWidget"


@dataclass(frozen=True)
class Expect:
    """What an executed notebook must show."""

    models: tuple[str, ...] = ()  # graph["model"] of every displayed widget, in display order
    selected: dict[str, str] = field(default_factory=dict)  # model -> saved widget.selected
    text: tuple[str, ...] = ()  # snippets that must appear in the outputs
    passed: str = ""  # what the notebook's last cell prints when its assertions pass
    controls: tuple[str, ...] = ()  # ipywidgets controls displayed (their _model_name), in order


EXPECT = {
    "01_quickstart.ipynb": Expect(
        models=("UNet",),
        selected={"UNet": "dec1"},
        text=(
            "up1, enc1 (skip)",
            "up3, enc3 (skip)",
            "'skip': 3",
            "selected: dec1",
            "unet.html",
            "external resources: 0",
        ),
        passed="quickstart: all checks passed",
    ),
    "02_skip_connections.ipynb": Expect(
        models=("UNet", "ResNet"),
        selected={"UNet": "dec1"},
        text=(
            "enc3 (skip)",
            "stem.relu (skip)",
            "layer2.0.downsample.bn (merge)",
            "dec1 skip cut",
            '<img src="data:image/png;base64,',
        ),
        passed="skip connections: all checks passed",
    ),
    "03_attention.ipynb": Expect(
        models=("TinyTransformer", "GPT2LMHeadModel"),
        selected={"TinyTransformer": "blocks.1.attn", "GPT2LMHeadModel": "transformer.h.0.attn"},
        text=(
            "source 'softmax'",
            "source 'sdpa'",
            "allclose to output_attentions: True",
            "argmax on the anti-diagonal 100%",
        ),
        passed="attention: all checks passed",
    ),
    "04_multimodal.ipynb": Expect(
        models=("FusionNet",),
        selected={"FusionNet": "fusion"},
        text=(
            "clinical_mlp (merge)",
            "output:diagnosis",
            "output:severity",
            "['diagnosis_head', 'severity_head']",
            "<--",
        ),
        passed="multimodal: all checks passed",
    ),
    "06_attention_lecture.ipynb": Expect(
        models=("TinyTransformer", "GPT2LMHeadModel", "VisionTransformer"),
        selected={
            "TinyTransformer": "blocks.1.attn",
            "GPT2LMHeadModel": "transformer.h.1.attn",
            "VisionTransformer": "blocks.2.attn",
        },
        controls=("TextModel", "IntSliderModel"),
        text=(
            "tokens: 3 1 4 1 5 9 2 6 SEP 6 2 9 5 1 4 1",
            "heads reading the mirrored digit: 100%",
            "blocks of 4×4 positions",
            "'rollout': '6 of 6 on the shape'",
        ),
        passed="attention lecture: all checks passed",
    ),
    "07_debugging_with_compare.ipynb": Expect(
        models=("UNet", "Tower"),
        selected={"UNet": "dec1", "Tower": "blocks.4.norm"},
        controls=("FloatSliderModel",),
        text=(
            "first stage above 5 %: enc1.conv1",
            "first divergent above 1 %: blocks.4.norm",
            "stages with NaN/Inf in their output: ()",
            "first divergent above 1 % after the fix: None",
        ),
        passed="debugging with compare: all checks passed",
    ),
    "05_trace_without_widget.ipynb": Expect(
        models=(),
        text=(
            "stem.1 (skip)",
            "topology 'fx'",
            "could not be symbolically traced",
            "The graph up to that point is in err.partial",
            "matches no module",
            "available: grid, first, channel, mean",
            "forward calls during select(): 0",
        ),
        passed="trace without widget: all checks passed",
    ),
    "08_why_not_learning.ipynb": Expect(
        models=("Deep",),
        selected={"Deep": "layers.3"},
        text=(
            "plain: the gradient vanishes: by stage 'layers.12'",
            "residual: gradients flow",
            "plain: loss 0.927 -> 0.884; layers.0 moved by 0.0e+00",
        ),
        passed="why not learning: all checks passed",
    ),
    "09_which_layer_knows.ipynb": Expect(
        models=("TinyTransformer", "TinyTransformer"),
        selected={"TinyTransformer": "blocks.0.attn"},
        text=(
            "embed          restores the answer from position(s) [2]",
            "blocks.0.attn  restores the answer from position(s) [13]",
        ),
        passed="which layer knows: all checks passed",
    ),
}


# ------------------------------------------------------------------------------ execution


def kernel_manager(spec_dir: Path) -> AsyncKernelManager:
    """A kernel manager that can only start this interpreter's ipykernel."""
    spec = spec_dir / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"nfw tests ({sys.executable})",
                "language": "python",
                "env": env,
            }
        ),
        encoding="utf-8",
    )
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir)], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


def execute(nb, spec_dir: Path, cwd: Path = NOTEBOOKS):
    """Run ``nb`` in place, top to bottom; raises ``CellExecutionError`` on the first error."""
    client = nbclient.NotebookClient(
        nb,
        km=kernel_manager(spec_dir),
        timeout=120,
        allow_errors=False,
        store_widget_state=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


@pytest.fixture(scope="module")
def run_notebook(tmp_path_factory):
    """Execute each notebook once per test session; returns (executed notebook, seconds)."""
    done: dict[str, tuple] = {}
    spec_dir = tmp_path_factory.mktemp("kernels")

    def run(name: str):
        if name not in done:
            before = sorted(p.name for p in NOTEBOOKS.iterdir())
            nb = nbformat.read(NOTEBOOKS / name, as_version=4)
            start = time.perf_counter()
            execute(nb, spec_dir)
            seconds = time.perf_counter() - start
            after = sorted(p.name for p in NOTEBOOKS.iterdir())
            done[name] = (nb, seconds, sorted(set(after) - set(before)))
        return done[name]

    return run


# ------------------------------------------------------------------------------ checks


def output_texts(cells) -> list[str]:
    """Every text the outputs of ``cells`` show: streams, plain text, HTML, tracebacks."""
    texts = []
    for cell in cells:
        stream = None  # a print may reach the notebook in several stream outputs: join them
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                if stream == out.get("name"):
                    texts[-1] += out.get("text", "")
                else:
                    texts.append(out.get("text", ""))
                stream = out.get("name")
                continue
            stream = None
            if out.get("output_type") == "error":
                texts.append("\n".join(out.get("traceback", [])))
            for mime in ("text/plain", "text/html"):
                value = out.get("data", {}).get(mime)
                if value:
                    texts.append(value if isinstance(value, str) else "".join(value))
    return texts


def widget_views(nb) -> list[str]:
    """Model ids of the widget views the notebook displayed, in order."""
    ids = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view:
                ids.append(view["model_id"])
    return ids


def problems(nb, expect: Expect) -> list[str]:
    """Everything wrong with an executed notebook, as readable lines (empty: all good)."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {i} raised {out.get('ename')}: {out.get('evalue')}")
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                found.append(f"cell {i} wrote to stderr: {out.get('text', '')[:300]!r}")
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    models, controls = [], []
    for model_id in widget_views(nb):
        if model_id not in state:
            found.append(f"widget view {model_id} has no saved widget state")
            continue
        widget = state[model_id]["state"]
        if state[model_id].get("model_module") == "@jupyter-widgets/controls":
            controls.append(state[model_id].get("model_name"))
            continue
        if widget.get("_anywidget_id") != WIDGET_CLASS:
            found.append(
                f"widget view {model_id} is a {widget.get('_anywidget_id')}, not a NeuralFlowWidget"
            )
            continue
        graph = widget.get("graph") or {}
        model = graph.get("model")
        models.append(model)
        ids = {call.get("id") for call in graph.get("calls", [])}
        if not ids:
            found.append(f"the {model} widget's graph has no stages")
        want = expect.selected.get(model)
        if want is not None and widget.get("selected") != want:
            found.append(
                f"the {model} widget has selected={widget.get('selected')!r}, expected {want!r}"
            )
        if want is not None and want not in ids:
            found.append(f"the {model} widget's graph has no stage {want!r}")
    if tuple(models) != expect.models:
        found.append(f"widgets shown: {models}, expected {list(expect.models)}")
    if tuple(controls) != expect.controls:
        found.append(f"controls shown: {controls}, expected {list(expect.controls)}")
    joined = "\n".join(output_texts(nb.cells))
    for snippet in expect.text:
        if snippet not in joined:
            found.append(f"no output contains {snippet!r}")
    last = [c for c in nb.cells if c.cell_type == "code"][-1:]
    if expect.passed and not (last and expect.passed in "\n".join(output_texts(last))):
        found.append(f"the last code cell did not print {expect.passed!r}")
    return found


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_notebook_runs_and_shows_what_it_promises(name, run_notebook):
    nb, seconds, left_behind = run_notebook(name)
    assert problems(nb, EXPECT[name]) == []
    assert left_behind == [], f"{name} left files in notebooks/: {left_behind}"
    print(f"{name}: {seconds:.1f} s")


def test_every_notebook_is_checked():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECT)


def test_notebooks_are_stored_valid_and_without_outputs():
    """The notebooks are edited as notebooks; what is committed has no outputs (a readable
    diff, no stale figures) and passes nbformat's validation."""
    for name in EXPECT:
        nb = nbformat.reads((NOTEBOOKS / name).read_text(encoding="utf-8"), as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, name


def test_checks_catch_a_broken_notebook():
    """The checks above fail on what they guard against (so a passing run means something)."""
    expect = Expect(
        models=("UNet",), selected={"UNet": "dec1"}, text=("(skip)",), passed="all checks passed"
    )
    graph = {"model": "UNet", "calls": [{"id": "enc1"}, {"id": "dec1"}]}

    def notebook(selected="dec1", model_class=WIDGET_CLASS, outputs=None, last="all checks passed"):
        view = {
            "output_type": "display_data",
            "data": {WIDGET_VIEW: {"model_id": "m1"}, "text/plain": "x"},
        }
        cells = [
            {"cell_type": "code", "outputs": outputs if outputs is not None else [view]},
            {
                "cell_type": "code",
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": "enc1 (skip)\n" + last}
                ],
            },
        ]
        state = {
            "m1": {"state": {"_anywidget_id": model_class, "graph": graph, "selected": selected}}
        }
        return nbformat.from_dict(
            {"cells": cells, "metadata": {"widgets": {WIDGET_STATE: {"state": state}}}}
        )

    assert problems(notebook(), expect) == []
    assert problems(notebook(selected="enc1"), expect)
    assert problems(notebook(model_class="ipywidgets.IntSlider"), expect)
    assert problems(notebook(outputs=[]), expect)  # no widget displayed
    assert problems(notebook(last="nothing"), expect)
    assert problems(notebook(), Expect(models=("UNet",), text=("(merge)",)))
    error = {"output_type": "error", "ename": "AssertionError", "evalue": "", "traceback": []}
    assert problems(notebook(outputs=[error]), Expect())
    warning = {"output_type": "stream", "name": "stderr", "text": "UserWarning: careful"}
    assert problems(notebook(outputs=[warning]), Expect())
    # a control (a slider) is counted as one, never as the model's widget
    slider = {
        "model_module": "@jupyter-widgets/controls",
        "model_name": "FloatSliderModel",
        "state": {},
    }
    with_slider = notebook()
    with_slider.cells[0].outputs.insert(
        0, {**with_slider.cells[0].outputs[0], "data": {WIDGET_VIEW: {"model_id": "s1"}}}
    )
    with_slider.metadata["widgets"][WIDGET_STATE]["state"]["s1"] = slider
    assert problems(with_slider, expect)  # a control not expected
    assert (
        problems(with_slider, Expect(**{**vars(expect), "controls": ("FloatSliderModel",)})) == []
    )


def test_a_failing_assertion_fails_the_run(tmp_path):
    """A notebook whose check cell fails raises, in a kernel of this interpreter."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"),
        nbformat.v4.new_code_cell("assert 1 + 1 == 3, 'the check failed'"),
    ]
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="the check failed"):
        execute(nb, tmp_path / "kernels", cwd=tmp_path)
    assert os.path.realpath(nb.cells[0].outputs[0]["text"].strip()) == os.path.realpath(
        sys.executable
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "kernels"]


def test_a_print_split_over_several_stream_outputs_reads_as_one_text():
    # ipykernel flushes stdout on a timer, so one print can arrive as two outputs
    cell = {
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "after the fix:"},
            {"output_type": "stream", "name": "stdout", "text": " None\n"},
            {"output_type": "stream", "name": "stderr", "text": "warning\n"},
        ]
    }
    assert output_texts([cell]) == ["after the fix: None\n", "warning\n"]
