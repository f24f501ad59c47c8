#!/usr/bin/env bash
# Install the SPARQL servers the endpoint tests run against, on a Debian machine:
#   - Virtuoso Open Source 7 from Debian (virtuoso-t, isql-vt), with the DBA password
#     preseeded so apt never prompts, and no system service left running;
#   - the Oxigraph server from PyPI (the `oxigraph` wheel ships the binary).
# Idempotent: anything already installed is left alone. Needs root (or sudo) for apt.
# The test fixtures (tests/endpoint_servers.py) start each server privately on loopback.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if ! command -v virtuoso-t >/dev/null || ! command -v isql-vt >/dev/null; then
    # The package asks for a DBA password through debconf; an empty one keeps the stock
    # "dba" account, which only matters for the packaged service we stop right away.
    printf '%s\n' \
        'virtuoso-opensource-7 virtuoso-opensource-7/dba-password password ' \
        'virtuoso-opensource-7 virtuoso-opensource-7/dba-password-again password ' \
        | $SUDO debconf-set-selections
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends virtuoso-opensource
    # The package may start its own service on ports 1111/8890; the tests use private
    # ports, but a running system instance is not ours to keep.
    if command -v service >/dev/null; then
        $SUDO service virtuoso-opensource-7 stop >/dev/null 2>&1 || true
    fi
fi

if ! command -v oxigraph >/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check 'oxigraph>=0.5,<0.6'
fi

echo "virtuoso-t: $(command -v virtuoso-t)"
echo "isql-vt:    $(command -v isql-vt)"
echo "oxigraph:   $(command -v oxigraph) ($(oxigraph --version 2>/dev/null || echo '?'))"
