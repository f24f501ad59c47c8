"""The SPARQL servers a run starts itself (Oxigraph server and Virtuoso, on loopback,
through :mod:`store.servers`) when no endpoint URL is given, stopped by PID when
the scale is done.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from store.servers import start_oxigraph, start_virtuoso


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
        log(f"  starting {engine} ...")
        try:
            if engine == "oxigraph-server":
                server = start_oxigraph(turtle, workdir)
            else:
                server = start_virtuoso(turtle, workdir)
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
