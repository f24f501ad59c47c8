#!/usr/bin/env bash
# The project's test command (README, .ci/run). Installs everything it needs on a fresh
# Debian machine — Python packages, the peer KoPL engines, Virtuoso and the Oxigraph
# server — then runs the whole suite, endpoint tests against real servers included.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test,peers]'
bash scripts/install_endpoints.sh
python3 -m pytest "$@"
