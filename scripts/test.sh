#!/usr/bin/env bash
# Set up (package, test extras, front end, Chromium), then run the whole test suite:
# the Python tests (which include the browser and JupyterLab tests) and the front end's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "[test]"
if [ -f scripts/install_browser.sh ]; then bash scripts/install_browser.sh; fi
(cd js && npm test --silent && npm run -s test:browser)
# the compiled capture path must have been built (tests/test_native.py fails otherwise)
NFW_REQUIRE_NATIVE=1 exec .venv/bin/python -m pytest -q "$@"
