#!/usr/bin/env bash
# Set up, then trace a built-in demo model and write its self-contained HTML page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/neural-flow demo "${@:-unet}"
