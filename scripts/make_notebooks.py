"""Write the teaching notebooks in ``notebooks/`` from their cells, without outputs.

    python scripts/make_notebooks.py           # (re)write notebooks/*.ipynb
    python scripts/make_notebooks.py --check   # exit 1 if a notebook differs from its cells

The cells are in ``scripts/notebook_cells/`` (a module per notebook), so that a change to a
notebook is a readable diff of Python source; cell ids
are fixed, so regenerating an unchanged notebook rewrites the same bytes.
``tests/test_notebooks.py`` runs every notebook headless and checks what it shows.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

sys.path.insert(0, str(ROOT / "scripts"))
from notebook_cells import attention, library, multimodal, quickstart, skips  # noqa: E402

NOTEBOOK_CELLS = {
    "01_quickstart.ipynb": quickstart.CELLS,
    "02_skip_connections.ipynb": skips.CELLS,
    "03_attention.ipynb": attention.CELLS,
    "04_multimodal.ipynb": multimodal.CELLS,
    "05_trace_without_widget.ipynb": library.CELLS,
}


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` (a key of NOTEBOOK_CELLS), without outputs, with fixed cell ids."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"},
    }
    stem = name.split("_")[0]
    for i, (kind, source) in enumerate(NOTEBOOK_CELLS[name]):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"nb{stem}-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    NOTEBOOKS.mkdir(exist_ok=True)
    for name in NOTEBOOK_CELLS:
        path = NOTEBOOKS / name
        text = render(name)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date (run python scripts/make_notebooks.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
