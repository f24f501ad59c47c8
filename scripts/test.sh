#!/usr/bin/env bash
# The project's test command (README, .ci/run). Installs everything it needs on a fresh
# Debian machine — Python packages, the peer KoPL engines, Virtuoso and the Oxigraph
# server, Jena, Chromium — then runs the whole suite, endpoint and browser tests included,
# and then the container test (docker/test.sh: the images built, the compose stack run and
# cross-checked). The exit code is non-zero when either fails. The container test is
# skipped, saying why, when no Docker engine can be installed or started here
# (docker/test.sh exits 77), or on request with SYNKQA_SKIP_DOCKER=1.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test,peers]'
bash scripts/install_endpoints.sh
# Apache Jena ARQ/TDB2 (tests/test_jena.py): Debian's jars, a JRE, and javac for the query server.
if [ ! -f /usr/share/java/jena-arq.jar ] || ! command -v java >/dev/null || ! command -v javac >/dev/null; then
    SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
        libapache-jena-java default-jre-headless default-jdk-headless
fi
# Debian's Chromium for the workbench's browser tests (Playwright drives it; Playwright's own
# browser download needs the network).
if ! command -v chromium >/dev/null; then
    SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium
fi
status=0
python3 -m pytest "$@" || status=$?

if [ "${SYNKQA_SKIP_DOCKER:-0}" = 1 ]; then
    echo "skipping the container test: SYNKQA_SKIP_DOCKER=1"
else
    docker_status=0
    bash docker/test.sh || docker_status=$?
    if [ "$docker_status" = 77 ]; then
        echo "the container test was skipped (reason above): the result is the test suite's alone"
        docker_status=0
    fi
    if [ "$status" = 0 ]; then status=$docker_status; fi
fi
exit "$status"
