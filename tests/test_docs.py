"""The documentation site (mkdocs.yml, docs/, scripts/gallery.py): it builds with
``mkdocs build --strict`` from the sources and a small gallery (the full gallery is
``bash scripts/docs.sh``), its API reference is generated from the docstrings, and its gallery
pages draw offline in Chromium, alone and inside the site's frame. Saves
test-artifacts/docs_gallery_page_1280x720.png and docs_gallery_frame_1280x720.png."""

from __future__ import annotations

import doctest
import importlib
import os
import pathlib
import re
import shutil
import sys
import time

import pytest

pytestmark = pytest.mark.slow  # builds the documentation site and a gallery

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

#: the gallery the test builds: one trained demo, one real architecture (a few seconds)
SMALL = ["unet", "resnet50"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built strict from docs/ (its own gallery left out) and a gallery of SMALL."""
    import gallery
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    tmp = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "docs", tmp / "docs", ignore=shutil.ignore_patterns("gallery"))
    started = time.perf_counter()
    pages = gallery.build(tmp / "docs" / "gallery", SMALL, shots=False)
    built = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(ROOT)  # (mkdocs.yml names its griffe extension by a path from the root)
    try:
        config = load_config(
            str(ROOT / "mkdocs.yml"),
            docs_dir=str(tmp / "docs"),
            site_dir=str(tmp / "site"),
            strict=True,
        )
        build(config)  # raises mkdocs' Abort on any warning (strict)
    finally:
        os.chdir(cwd)
    print(
        f"\ngallery of {len(pages)}: {built - started:.1f} s; site: "
        f"{time.perf_counter() - built:.1f} s"
    )
    return tmp / "site", pages


def test_the_site_builds_strict_with_every_page_of_the_nav(site):
    root, _ = site
    for page in (
        "index.html",
        "getting-started.html",
        "guide/reading-the-graph.html",
        "guide/attention.html",
        "guide/playback.html",
        "guide/debugging.html",
        "environments.html",
        "marimo.html",
        "gallery/index.html",
        "api.html",
    ):
        assert (root / page).is_file(), page
    assert (root / "search" / "search_index.js").is_file()  # (the offline plugin: from disk)


def test_the_api_reference_is_generated_from_the_docstrings(site):
    import docs_griffe

    import neural_flow_widget as nfw

    text = (site[0] / "api.html").read_text("utf-8")
    plain = _plain(text)
    paths = re.findall(r"^::: (\S+)$", (ROOT / "docs" / "api.md").read_text(), re.M)
    documented = {}
    for path in paths:
        module, _, name = path.rpartition(".")
        documented[name] = getattr(importlib.import_module(module), name)
        assert f'id="{path}"' in text, path  # its own heading
    # every public name, NeuralFlowWidget included (lazy in __init__)
    assert sorted(documented) == sorted(nfw.__all__)
    for name, obj in documented.items():
        assert obj is getattr(nfw, name), name
        # the first line of its docstring, as written in the source
        first = docs_griffe.markdown(obj.__doc__.strip().split("\n")[0]).replace("`", "")
        assert first in plain, (name, first)
    # the docstrings' examples are code blocks, their roles gone
    assert re.search(r"<code>(<span[^>]*>)*&gt;&gt;&gt;", text)
    assert ":func:" not in text and ":class:" not in text


def test_the_gallery_lists_each_page_it_built(site):
    root, pages = site
    index = (root / "gallery" / "index.html").read_text("utf-8")
    for page in pages:
        name = page.entry.name
        assert f'href="{name}.html"' in index, name
        entry = (root / "gallery" / f"{name}.html").read_text("utf-8")
        assert f'src="pages/{name}.html"' in entry  # the widget's page, live in a frame
        assert (root / "gallery" / "pages" / f"{name}.html").stat().st_size == page.bytes
        words = " ".join(re.sub(r"[`*]", "", page.entry.look).split()[:8])
        assert words in _plain(entry), words


def test_the_griffe_extension_fences_doctests():
    import docs_griffe

    assert doctest.testmod(docs_griffe).failed == 0
    text = "Text.\n\n  >>> f(1)\n  2\n\nMore, :class:`Flow`."
    assert docs_griffe.markdown(text).split("\n") == [
        "Text.", "", "  ```pycon", "  >>> f(1)", "  2", "  ```", "", "More, `Flow`.",
    ]  # fmt: skip


_PAINTED = """window.__painted = [];
window.addEventListener("nfw-painted", (e) => window.__painted.push(e.detail.nodes), true);"""


def test_gallery_pages_draw_offline_alone_and_in_the_site(site, browser):
    root, pages = site
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.route("http*://**", lambda route: route.abort())  # offline
    context.add_init_script(_PAINTED)
    errors: list[str] = []
    for page_ in pages:
        name = page_.entry.name
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((root / "gallery" / "pages" / f"{name}.html").as_uri())
        page.wait_for_function("() => window.__painted.length > 0", timeout=30_000)
        assert page.evaluate("window.__painted[0]") > 0, name  # nodes drawn
        assert page.locator(".nfw-node[data-stage-id]").count() > 0
        if name == pages[0].entry.name:
            page.screenshot(path=str(ARTIFACTS / "docs_gallery_page_1280x720.png"))
        page.close()
    # the site's page of the first entry: the same widget, live inside the frame
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((root / "gallery" / f"{pages[0].entry.name}.html").as_uri())
    frame = page.frame_locator("iframe.nfw-gallery-frame")
    frame.locator(".nfw-node[data-stage-id]").first.wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "docs_gallery_frame_1280x720.png"))
    context.close()
    assert errors == []


def _plain(html_text: str) -> str:
    """The page's text: tags dropped, entities of quotes and brackets read."""
    text = re.sub(r"<[^>]+>", "", html_text)
    for entity, char in (("&quot;", '"'), ("&#39;", "'"), ("&gt;", ">"), ("&lt;", "<")):
        text = text.replace(entity, char)
    return re.sub(r"\s+", " ", text)
