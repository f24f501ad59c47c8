"""Real SPARQL servers for the endpoint tests: Oxigraph server and Virtuoso, private and on loopback.

Each server gets free ports on 127.0.0.1, a private data directory, the KB loaded with the
library's own loaders (store/loaders.py, the code ``synkqa kb load`` and docker/ run), and
is stopped by PID by whoever started it. Nothing here touches a system service.

Missing binaries: with ``CI=true`` a test that needs a server FAILS (CI installs them with
scripts/install_endpoints.sh, so a missing binary is a broken CI, not a reason to skip); on
a developer machine it is skipped with a loud reason naming the install command.
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

import pytest

from store.loaders import DEFAULT_GRAPH, load_oxigraph_location, load_virtuoso
from store.remote import EndpointStore

INSTALL_HINT = "install it with: bash scripts/install_endpoints.sh"
VIRTUOSO_VSP = "/var/lib/virtuoso-opensource-7/vsp"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_binary(*names: str) -> None:
    """Fail (CI) or skip loudly (developer machine) unless every binary is on PATH."""
    missing = [n for n in names if shutil.which(n) is None]
    if not missing:
        return
    message = f"SPARQL server binary not found: {', '.join(missing)}; {INSTALL_HINT}"
    if in_ci():
        pytest.fail(f"CI=true but {message}", pytrace=False)
    pytest.skip(f"!!! ENDPOINT TESTS NOT RUN: {message}")


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

@pytest.fixture(scope="session")
def oxigraph_server(kb_turtle, tmp_path_factory):
    """A read-only Oxigraph server on loopback holding the scale-1 KB in its default graph."""
    require_binary("oxigraph")
    server = start_oxigraph(kb_turtle, tmp_path_factory.mktemp("oxigraph-server"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def virtuoso_server(kb_turtle, tmp_path_factory):
    """A private Virtuoso on loopback holding the scale-1 KB in graph DEFAULT_GRAPH."""
    require_binary("virtuoso-t", "isql-vt")
    server = start_virtuoso(kb_turtle, tmp_path_factory.mktemp("virtuoso"))
    yield server
    server.stop()


# ---- a scriptable broken endpoint: a real HTTP server on a loopback socket ----------------------

class FakeEndpoint:
    """An ``http.server`` in a thread that answers every request as told and records them.

    ``respond(status, body, content_type, headers, delay)`` sets the next answers;
    ``requests`` lists ``(method, path, params)`` of what arrived (params from the URL
    query string and from a form body).
    """

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlsplit

        self.requests: list[tuple[str, str, dict]] = []
        self.respond(200, b'{"head": {"vars": []}, "results": {"bindings": []}}')
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                parts = urlsplit(self.path)
                params = parse_qs(parts.query)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    params.update(parse_qs(self.rfile.read(length).decode()))
                outer.requests.append((self.command, parts.path, params))
                status, body, content_type, headers, delay = outer.behaviour
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass   # the client gave up (time-out tests)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"

    def respond(self, status: int = 200, body: bytes | str = b"", content_type: str =
                "application/sparql-results+json", headers: dict | None = None, delay: float = 0.0):
        if isinstance(body, str):
            body = body.encode()
        self.behaviour = (status, body, content_type, headers or {}, delay)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_endpoint():
    endpoint = FakeEndpoint()
    yield endpoint
    endpoint.close()


# ---- programs to cross-check ---------------------------------------------------------------------

def kb_samples(store) -> dict:
    """Entity names per class and (person, org, city) facts, read from the store with SPARQL."""
    from ontology import ENTITY_NS, NS

    def local(iri: str) -> str:
        return iri[len(ENTITY_NS):]

    names = {}
    for cls in ("Person", "City", "Country", "Organization"):
        result = store.query(f"SELECT ?e WHERE {{ ?e a <{NS}{cls}> }} ORDER BY ?e")
        names[cls] = [local(e) for e in result.column("e")]
    facts = store.query(f"SELECT ?p ?o ?c WHERE {{ ?p <{NS}works_at> ?o ; <{NS}born_in> ?c }} ORDER BY ?p")
    return {"names": names, "facts": [tuple(local(x) for x in row) for row in facts.rows]}


def template_programs(samples: dict, per_template: int, seed: int = 7) -> list[tuple[object, object]]:
    """``per_template`` instantiations of each of the nine templates with slots drawn from the KB.

    Half of the WorkAndBornIntersection and VerifyEmployment draws are made from one person's
    facts (a non-empty intersection, a "yes"), the rest uniformly, so both outcomes occur.
    """
    import random

    from synkqa.templates import templates

    rng = random.Random(seed)
    names, facts = samples["names"], samples["facts"]
    out = []
    for template in templates():
        for i in range(per_template):
            slots = {slot: rng.choice(names[cls]) for slot, cls in template.slots}
            if i % 2 == 0 and template.name in ("WorkAndBornIntersection", "VerifyEmployment"):
                person, org, city = rng.choice(facts)
                slots.update(Org=org, City=city) if template.name == "WorkAndBornIntersection" \
                    else slots.update(Person=person, Org=org)
            out.append((template, template.program(**slots)))
    return out


def random_programs(kb_turtle, schema, count: int) -> list:
    """``count`` distinct well-typed random programs from the language tests' grammar
    (tests/test_crosscheck.py) over the KB ``kb_turtle`` with its ``schema``, the same ones on
    every run (hypothesis, derandomized).

    Derandomized hypothesis repeats itself (minimal examples first), so draws are
    de-duplicated and more are drawn until ``count`` distinct programs are in hand.
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from kopl2sparql.kbindex import KBIndex
    from tests.test_crosscheck import Grammar

    grammar = Grammar(KBIndex.from_turtle(kb_turtle, schema), schema)
    per_example = 25
    distinct: dict[str, object] = {}
    examples = max(1, 2 * count // per_example)
    for _ in range(6):
        @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(grammar.program(), min_size=per_example, max_size=per_example))
        def collect(batch):
            for program in batch:
                distinct.setdefault(program.canonical(), program)

        collect()
        if len(distinct) >= count:
            break
        examples *= 2
    return list(distinct.values())[:count]
