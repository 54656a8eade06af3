#!/usr/bin/env bash
# Set up (package, test extras, front end, Chromium), then run the whole test suite: the
# formatters, linters and type checkers (Python: ruff, mypy; TypeScript: tsc, Biome), the
# front end's unit and browser tests, and the Python tests (which include the JupyterLab and
# packaging tests, and tests/test_docs.py: `mkdocs build --strict` of the documentation site
# with a small gallery).
#
# `bash scripts/test.sh --fast`: the fast subset, for each edit (under 2 minutes here): the same
# set-up and checks, the front end's unit tests and the Python tests not marked slow
# (`pytest -m "not slow"`: no browser, JupyterLab, packaging, notebook, docs or big-model
# tests; the marker is described in pyproject.toml). Further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
bash scripts/setup.sh "[test]"
if [ "$fast" = 0 ] && [ -f scripts/install_browser.sh ]; then bash scripts/install_browser.sh; fi
.venv/bin/ruff format --check --quiet .
.venv/bin/ruff check --quiet .
.venv/bin/mypy
# the optional capture accelerator must compile here (tests/capture/test_accelerator.py
# fails otherwise; on a machine without a C compiler those tests are skipped)
export NFW_REQUIRE_ACCELERATOR=1
if [ "$fast" = 1 ]; then
  (cd js && npm run -s typecheck && npm run -s lint && npm test --silent)
  exec .venv/bin/python -m pytest -q -m "not slow" "$@"
fi
(cd js && npm run -s typecheck && npm run -s lint && npm test --silent && npm run -s test:browser)
exec .venv/bin/python -m pytest -q "$@"
