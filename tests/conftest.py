import os
import pathlib
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "browser"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import chromium  # noqa: E402  (tests/browser/chromium.py, on the path just above)


@pytest.fixture(scope="module")
def browser():
    """The headless Chromium of the Python browser tests (tests/browser/chromium.py): one per
    test module (a Playwright left running marks the thread's asyncio loop as running, which
    the notebook tests' kernels would trip on); skips where it is not installed."""
    if not chromium.installed():
        pytest.skip(f"needs Debian chromium at {chromium.PATH} (scripts/install_browser.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = chromium.launch(p)
        yield b
        b.close()


def pytest_collection_modifyitems(items):
    """Every test that drives a browser is slow (the ``slow`` marker, pyproject.toml)."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path, config):
    """``pytest -m "not slow"`` (the fast subset) does not even import what is slow throughout,
    its imports being slow too (nbformat's JSON-schema checks take seconds): tests/browser/, and
    each module marked ``pytestmark = pytest.mark.slow``."""
    if " ".join(str(config.getoption("markexpr") or "").split()) != "not slow":
        return None
    if collection_path == pathlib.Path(HERE, "browser"):
        return True
    slow = "\npytestmark = pytest.mark.slow"
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py":
        return True if slow in collection_path.read_text(encoding="utf-8") else None
    return None
