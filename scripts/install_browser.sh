#!/usr/bin/env bash
# Install the headless browser used by the browser tests and the JS benchmark.
# Idempotent: does nothing when /usr/bin/chromium already exists.
# Uses Debian's chromium package only (never `playwright install`, never a CDN).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core

echo "installed: $(/usr/bin/chromium --version)"
