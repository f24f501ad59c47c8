"""The SPARQL servers a run starts itself (Oxigraph server and Virtuoso, on loopback,
through ``tests/endpoint_servers.py``) when no endpoint URL is given, stopped by PID when
the scale is done.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def _server_helpers():
    """tests/endpoint_servers.py, which starts Virtuoso and Oxigraph server privately on loopback.

    :raises ImportError: outside a source checkout, or without pytest.
    """
    try:
        from tests import endpoint_servers
    except ImportError:
        root = Path(__file__).resolve().parents[2]
        if not (root / "tests" / "endpoint_servers.py").is_file():
            raise
        sys.path.insert(0, str(root))
        from tests import endpoint_servers
    return endpoint_servers


class _Servers:
    """Servers this run starts (stopped by PID when the scale is done)."""

    def __init__(self):
        self.started: list = []

    def start(self, engine: str, turtle: Path, workdir: Path, log) -> tuple[dict | None, str | None]:
        """``(endpoint facts, None)`` or ``(None, why it is not available)``."""
        binaries = {"oxigraph-server": ("oxigraph",), "virtuoso": ("virtuoso-t", "isql-vt")}[engine]
        missing = [b for b in binaries if shutil.which(b) is None]
        if missing:
            return None, f"{', '.join(missing)} not installed (bash scripts/install_endpoints.sh)"
        try:
            helpers = _server_helpers()
        except ImportError as exc:
            return None, (f"cannot import tests/endpoint_servers.py ({exc}); run from a source checkout "
                          "with the test extra, or pass the endpoint URL")
        log(f"  starting {engine} ...")
        try:
            if engine == "oxigraph-server":
                server = helpers.start_oxigraph(turtle, workdir)
            else:
                server = helpers.start_virtuoso(turtle, workdir)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            return None, f"could not start: {str(exc).splitlines()[0][:200]}"
        self.started.append(server)
        return {"url": server.url, "graph": server.graph, "pid": server.pid,
                "load_s": round(server.load_seconds, 3), "start_s": round(server.start_seconds, 3)}, None

    def stop(self) -> None:
        for server in self.started:
            try:
                server.stop()
            finally:
                shutil.rmtree(server.workdir, ignore_errors=True)
        self.started.clear()
