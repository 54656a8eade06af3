#!/usr/bin/env bash
# Set up a development environment in .venv: the CPU build of torch first (a bare "torch"
# requirement would pull a multi-GB CUDA build), then this package with its test extras, then
# the front end's node modules and bundle. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q "torch==2.13.0"
extras=${1:-}
if [ -f js/package.json ]; then
  # `npm install --no-save` with the committed lock file: npm 11's `npm ci` rejects this lock
  # over a platform-only optional dependency of vite that it never records.
  # (again when the lock file changed since the last install: a new devDependency)
  (cd js && { [ node_modules/.package-lock.json -nt package-lock.json ] \
       || npm install --no-save --no-audit --no-fund --loglevel=error; } \
     && npm run -s build)
fi
.venv/bin/python -m pip install -q -e ".${extras}" 2>&1 | grep -v "^WARNING: Location" || true
