"""Build the documentation's gallery: for each entry of ``scripts/gallery_catalog.py`` the
widget's own offline page (``NeuralFlowWidget(model, inputs).to_html(...)``), a page of the
site that shows it live in a frame with what to look at, a thumbnail, and the gallery's index.

    .venv/bin/python scripts/gallery.py                      # every entry, into docs/gallery/
    .venv/bin/python scripts/gallery.py --only unet,bert --no-shots

``bash scripts/docs.sh`` runs it, then ``mkdocs build --strict``. Everything it writes is
generated (docs/gallery/ is git-ignored) and rewritten on each run: the folder holds what the
last run built, and the index lists exactly that.
"""

from __future__ import annotations

import argparse
import html
import pathlib
import shutil
import sys
import time
import warnings
from dataclasses import dataclass

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gallery_catalog import ENTRIES, ROOT, Entry

OUT = ROOT / "docs" / "gallery"
GROUPS = {
    "demos": (
        "Trained demos",
        "Small models shipped with the package with their trained weights: what flows "
        "through them means something (`NeuralFlowWidget(demos.load(name).model, ...)`, "
        "or `neural-flow demo NAME`).",
    ),
    "architectures": (
        "Real architectures",
        "Built from their libraries' configurations with random weights, nothing downloaded: "
        "the graph, the shapes and the parameter counts are the real model's; the "
        "activations and attention are those of an untrained network.",
    ),
}


@dataclass(frozen=True, slots=True)
class Page:
    entry: Entry
    bytes: int
    seconds: float
    stages: int


def build(
    out: pathlib.Path = OUT,
    names: list[str] | None = None,
    *,
    budget_bytes: int = 8_000_000,
    shots: bool = True,
) -> list[Page]:
    """Write the pages of ``names`` (default: every entry) into ``out`` (emptied first), and
    the site's page of every entry: those not built this time say how to build them."""
    entries = _chosen(names)
    if out.exists():
        shutil.rmtree(out)
    (out / "pages").mkdir(parents=True)
    pages = [_page(entry, out, budget_bytes) for entry in entries]
    if shots:
        _shots(out, entries)
    built = {p.entry.name: p for p in pages}
    for entry in ENTRIES:
        text = _entry_markdown(entry, built.get(entry.name))
        (out / f"{entry.name}.md").write_text(text, "utf-8")
    (out / "index.md").write_text(_index_markdown(built, budget_bytes, shots), "utf-8")
    return pages


def _chosen(names: list[str] | None) -> list[Entry]:
    if names is None:
        return list(ENTRIES)
    known = {e.name: e for e in ENTRIES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"gallery: no entry {', '.join(unknown)}; entries: {', '.join(known)}")
    return [known[n] for n in names]


def _page(entry: Entry, out: pathlib.Path, budget_bytes: int) -> Page:
    from neural_flow_widget import NeuralFlowWidget

    started = time.perf_counter()
    torch.manual_seed(0)
    model, inputs, options = entry.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (transformers' notes on random weights and configs)
        widget = NeuralFlowWidget(model, inputs, **options)
    path = widget.to_html(
        out / "pages" / f"{entry.name}.html", budget_bytes=budget_bytes, title=entry.title
    )
    seconds = time.perf_counter() - started
    size = path.stat().st_size
    print(
        f"  {entry.name:12} {len(widget.flow.stages):4} stages  {size / 1e6:5.2f} MB  "
        f"{seconds:5.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return Page(entry, size, seconds, len(widget.flow.stages))


# ------------------------------------------------------------------------------- markdown


def _entry_markdown(e: Entry, page: Page | None) -> str:
    head = f"---\ntitle: {e.title}\nhide: [navigation, toc]\n---\n\n# {html.escape(e.title)}\n\n"
    if page is None:
        return head + (
            f"{e.look.strip()}\n\n!!! note\n    This page was not built this time: "
            f"`python scripts/gallery.py --only {e.name}` (or `bash scripts/docs.sh`, "
            f"every entry) builds it.\n\n[Back to the gallery](index.md)\n"
        )
    src = f"pages/{e.name}.html"
    return head + (
        f"{e.look.strip()}\n\n"
        f'<iframe class="nfw-gallery-frame" src="{src}" title="{html.escape(e.title)}: '
        f'the widget" loading="lazy"></iframe>\n\n'
        f"[Open the page on its own]({src}) ({_mb(page.bytes)}, {page.stages} stages, "
        f"offline: everything is inside the file). [Back to the gallery](index.md)\n"
    )


def _index_markdown(built: dict[str, Page], budget_bytes: int, shots: bool) -> str:
    total = sum(p.bytes for p in built.values())
    missing = len(ENTRIES) - len(built)
    lines = [
        "---\ntitle: Gallery\nhide: [toc]\n---\n",
        "# Gallery\n",
        "Each entry is the widget's own offline page, `widget.to_html(path)`: the graph, and "
        f"each stage's statistics and default view baked in, within {_mb(budget_bytes)}. "
        "Open one, click a "
        "stage, press Play; nothing is fetched. All of them are built by one script, "
        f"`python scripts/gallery.py` ({len(built)} pages, {_mb(total)} in all"
        + (f"; {missing} not built this time" if missing else "")
        + ").\n",
    ]
    for group, (title, words) in GROUPS.items():
        lines += [f"## {title}\n", f"{words}\n", '<div class="grid cards" markdown>\n']
        for e in (e for e in ENTRIES if e.group == group):
            shot = shots and e.name in built
            image = f"[![{e.title}](shots/{e.name}.jpg)]({e.name}.md)\n    " if shot else ""
            absent = "" if e.name in built else " (not built this time)"
            lines.append(f"-   {image}**[{e.title}]({e.name}.md)**{absent}: {e.what}\n")
        lines.append("</div>\n")
    return "\n".join(lines)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


# ------------------------------------------------------------------------------ thumbnails


def _shots(out: pathlib.Path, entries: list[Entry]) -> None:
    """A 640 x 360 picture of each page as it first draws (headless Chromium, offline)."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    import chromium  # the tests' Chromium and their wait for a view at rest
    from live import COUNT_PAINTS, painted_after, settle

    (out / "shots").mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = chromium.launch(p)
        context = browser.new_context(
            viewport={"width": 1280, "height": 720}, device_scale_factor=0.5
        )
        context.route("http*://**", lambda route: route.abort())
        context.add_init_script(COUNT_PAINTS)
        for entry in entries:
            page = context.new_page()
            page.goto((out / "pages" / f"{entry.name}.html").as_uri())
            painted_after(page, 0, timeout=60_000)
            settle(page)
            page.screenshot(path=str(out / "shots" / f"{entry.name}.jpg"), quality=80)
            page.close()
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="default: docs/gallery")
    parser.add_argument("--only", help="comma-separated entry names (default: all)")
    parser.add_argument(
        "--budget-mb", type=float, default=8.0, help="per page (default 8, as to_html)"
    )
    parser.add_argument("--no-shots", action="store_true", help="no thumbnails (no Chromium)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else None
    started = time.perf_counter()
    pages = build(args.out, names, budget_bytes=int(args.budget_mb * 1e6), shots=not args.no_shots)
    total = sum(p.bytes for p in pages)
    print(
        f"gallery: {len(pages)} pages, {_mb(total)}, {time.perf_counter() - started:.0f} s "
        f"-> {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
