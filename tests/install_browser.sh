#!/usr/bin/env bash
# Debian's chromium and its chromium-driver for the report's browser tests (tests/report/browser/test_report_browser.py);
# browsers cannot be downloaded here, so selenium drives these. Idempotent: returns at once when both exist.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_browser.sh: needs root (or sudo) to apt-get install chromium chromium-driver" >&2; exit 1; }
    SUDO=(sudo)
fi
command -v apt-get >/dev/null || { echo "install_browser.sh: no apt-get; install chromium and its chromedriver with this system's package manager" >&2; exit 1; }
echo "install_browser.sh: installing chromium chromium-driver" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null \
    || { "${SUDO[@]}" apt-get update -q >/dev/null && "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null; }
