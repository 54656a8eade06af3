"""The one headless Chromium of the Python browser tests and benchmarks: Debian's
(``scripts/install_browser.sh`` installs it; ``NFW_CHROMIUM`` names another), driven by
Playwright's driver, never ``playwright install``. Tests take it from the ``browser`` fixture
(tests/conftest.py, one per test module); tests/browser/harness.mjs is its twin for the node
tests."""

from __future__ import annotations

import os
import shutil

PATH = os.environ.get("NFW_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def installed() -> bool:
    return os.path.exists(PATH)


def launch(playwright):
    """A headless Chromium from a started Playwright (``sync_playwright()``)."""
    if not installed():
        raise RuntimeError(f"{PATH} is missing: run scripts/install_browser.sh")
    return playwright.chromium.launch(executable_path=PATH, args=ARGS)
