#!/usr/bin/env bash
# Set up (package, docs tools, Chromium for the gallery's thumbnails), build the gallery
# (scripts/gallery.py: the widget's offline pages of real architectures and the demos), then
# the documentation site, and print the page to open. The site works from disk, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "[docs]"
if [ -f scripts/install_browser.sh ]; then bash scripts/install_browser.sh; fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export NO_MKDOCS_2_WARNING=1  # (mkdocs-material's notice about MkDocs 2)
started=$(date +%s)
.venv/bin/python scripts/gallery.py "$@"
.venv/bin/mkdocs build --strict --quiet
echo "site: $(du -sh site | cut -f1), built in $(( $(date +%s) - started )) s" >&2
echo "$(pwd)/site/index.html"
