"""Private SPARQL servers on loopback: an Oxigraph server and a Virtuoso, each with free
ports, its own data directory and the KB loaded with the library's own loaders
(:mod:`store.loaders`, the code ``synkqa kb load`` runs), stopped by PID by whoever started
it. Nothing here touches a system service. The endpoint tests and ``synkqa bench`` use them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from store.loaders import DEFAULT_GRAPH, load_oxigraph_location, load_virtuoso
from store.remote import EndpointStore

VIRTUOSO_VSP = "/var/lib/virtuoso-opensource-7/vsp"


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A server process this test session started; ``stop()`` ends it by PID."""

    name: str
    url: str
    graph: str | None
    process: subprocess.Popen
    workdir: Path
    log: Path
    load_seconds: float = 0.0
    start_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def store(self, **kwargs) -> EndpointStore:
        return EndpointStore(self.url, graph=self.graph, **kwargs)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the PID, wait, then SIGKILL if it is still there."""
        if self.process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait(5)


def _wait_http(server: Server, seconds: float) -> None:
    """Until the endpoint answers ASK {} (or the process dies: then show its log)."""
    store = EndpointStore(server.url, timeout=2.0, retries=0)
    deadline = time.monotonic() + seconds
    while True:
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-1500:] if server.log.exists() else ""
            raise RuntimeError(f"{server.name} exited with {server.process.returncode} during start:\n{tail}")
        try:
            store.ping()
            return
        except Exception:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"{server.name} did not answer at {server.url} within {seconds} s")
            time.sleep(0.1)


def start_oxigraph(turtle: Path, workdir: Path, graph: str | None = None) -> Server:
    """``oxigraph load`` into a private directory, then ``oxigraph serve-read-only`` on loopback."""
    workdir.mkdir(parents=True, exist_ok=True)
    location = workdir / "data"
    t0 = time.perf_counter()
    load_oxigraph_location(turtle, location, graph=graph)
    loaded = time.perf_counter() - t0
    port = free_port()
    log = workdir / "oxigraph.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [shutil.which("oxigraph"), "serve-read-only", "--location", str(location),
             "--bind", f"127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
    server = Server("oxigraph-server", f"http://127.0.0.1:{port}/query", graph, process, workdir, log,
                    load_seconds=loaded)
    t1 = time.perf_counter()
    _wait_http(server, 30)
    server.start_seconds = time.perf_counter() - t1
    return server


VIRTUOSO_INI = """\
[Database]
DatabaseFile       = {db}/virtuoso.db
ErrorLogFile       = {db}/virtuoso.log
LockFile           = {db}/virtuoso.lck
TransactionFile    = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
ErrorLogLevel      = 7
FileExtend         = 200
MaxCheckpointRemap = 2000
Striping           = 0
TempStorage        = TempDatabase

[TempDatabase]
DatabaseFile       = {db}/virtuoso-temp.db
TransactionFile    = {db}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping           = 0

[Parameters]
ServerPort            = 127.0.0.1:{sql_port}
DisableUnixSocket     = 1
CaseMode              = 2
DirsAllowed           = ., {data}
NumberOfBuffers       = 20000
MaxDirtyBuffers       = 15000
CheckpointInterval    = 0
ThreadsPerQuery       = 2

[HTTPServer]
ServerPort            = 127.0.0.1:{http_port}
ServerRoot            = {vsp}
ServerThreads         = 8
MaxClientConnections  = 8

[SPARQL]
ResultSetMaxRows           = 1000000
MaxQueryExecutionTime      = 60
MaxQueryCostEstimationTime = 0
; 0: no refusal by cost estimate (it overestimates small joins a thousandfold)
"""


def start_virtuoso(turtle: Path, workdir: Path, graph: str = DEFAULT_GRAPH) -> Server:
    """``virtuoso-t +foreground`` with a private ini/database on loopback, then the bulk loader."""
    db, data = workdir / "db", workdir / "data"
    db.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    # The bulk loader reads the file from a directory listed in DirsAllowed.
    shutil.copy(turtle, data / turtle.name)
    sql_port, http_port = free_port(), free_port()
    while http_port == sql_port:
        http_port = free_port()
    vsp = VIRTUOSO_VSP if Path(VIRTUOSO_VSP).is_dir() else str(workdir)
    ini = workdir / "virtuoso.ini"
    ini.write_text(VIRTUOSO_INI.format(db=db, data=data, sql_port=sql_port, http_port=http_port, vsp=vsp))
    log = workdir / "virtuoso.out"
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        process = subprocess.Popen([shutil.which("virtuoso-t"), "+foreground", "+configfile", str(ini)],
                                   stdout=out, stderr=subprocess.STDOUT, cwd=db, start_new_session=True)
    server = Server("virtuoso", f"http://127.0.0.1:{http_port}/sparql", graph, process, workdir, log,
                    extra={"isql": f"127.0.0.1:{sql_port}"})
    _wait_http(server, 90)
    server.start_seconds = time.perf_counter() - t0
    try:
        report = load_virtuoso(data / turtle.name, graph=graph, isql=server.extra["isql"])
    except Exception:
        server.stop()
        raise
    server.load_seconds = report.seconds
    return server


# ---- session fixtures (imported by tests/conftest.py) ------------------------------------------


__all__ = ["Server", "free_port", "start_oxigraph", "start_virtuoso", "VIRTUOSO_VSP"]
