#!/usr/bin/env bash
# Set up (package, test extras, front end, Chromium), then run the whole test suite: the
# formatters, linters and type checkers (Python: ruff, mypy; TypeScript: tsc, Biome), the
# front end's unit and browser tests, and the Python tests (which include the JupyterLab and
# packaging tests, and tests/test_docs.py: `mkdocs build --strict` of the documentation site
# with a small gallery).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "[test]"
if [ -f scripts/install_browser.sh ]; then bash scripts/install_browser.sh; fi
.venv/bin/ruff format --check --quiet .
.venv/bin/ruff check --quiet .
.venv/bin/mypy
(cd js && npm run -s typecheck && npm run -s lint && npm test --silent && npm run -s test:browser)
# the optional capture accelerator must compile here (tests/capture/test_accelerator.py
# fails otherwise; on a machine without a C compiler those tests are skipped)
NFW_REQUIRE_ACCELERATOR=1 exec .venv/bin/python -m pytest -q "$@"
