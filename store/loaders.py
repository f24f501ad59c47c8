"""Loading the KB's Turtle into a SPARQL server.

One loader per way in, each checked by counting the triples back through the endpoint:

- :func:`load_virtuoso` — Virtuoso's bulk loader through ``isql-vt`` (``ld_dir``,
  ``rdf_loader_run``, ``checkpoint``), with ``DB.DBA.load_list.ll_error`` checked: the bulk
  loader records a parse error there and otherwise reports success.
- :func:`load_oxigraph_location` — ``oxigraph load --location DIR --file kb.ttl`` into the
  directory a server is then started on (``oxigraph serve-read-only --location DIR``).
- :func:`load_graph_store` — the SPARQL 1.1 Graph Store HTTP Protocol (``PUT``/``POST``
  Turtle), which a running Oxigraph server (``/store``) and Fuseki (``/<dataset>/data``) speak.

:func:`load_endpoint` picks one by ``kind``; ``synkqa kb load`` and the ``docker/`` loader
service call it, and the endpoint test fixtures use the same functions, so the loading
code CI runs is the code the compose file runs.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import pyoxigraph as ox

from kopl2sparql.errors import ConfigError, EndpointError, StoreError

DEFAULT_GRAPH = "http://synkqa.org/kb"
"""Named graph the KB goes into on servers that need one (Virtuoso's bulk loader does)."""
KINDS = ("virtuoso", "oxigraph", "graph-store")
"""Values of ``synkqa kb load --kind``; ``fuseki`` is accepted as an alias of ``graph-store``."""


@dataclass(frozen=True)
class LoadReport:
    """What a load did: where, into which graph, how many triples are there now, how long."""

    kind: str
    target: str
    graph: str | None
    triples: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def count_triples(turtle: Path | str) -> int:
    """Number of triples in a Turtle file (parsed, so the count is what a store holds)."""
    return sum(1 for _ in ox.parse(path=str(turtle), format=ox.RdfFormat.TURTLE))


def _check_iri(iri: str | None) -> None:
    if iri is not None and (not iri or re.search(r"[\s<>\"{}|^`\\']", iri) or ":" not in iri):
        raise ConfigError(f"not an absolute IRI for a graph: {iri!r}")


def _find_binary(explicit: str | None, env: str, candidates: tuple[str, ...], hint: str) -> str:
    for name in ((explicit,) if explicit else (os.environ.get(env),) + candidates):
        if name and shutil.which(name):
            return shutil.which(name)
    wanted = explicit or "/".join(candidates)
    raise ConfigError(f"{wanted} not found on PATH; {hint}")


# ---- Virtuoso -------------------------------------------------------------------------

def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def run_isql(sql: str, *, isql: str = "127.0.0.1:1111", user: str = "dba", password: str | None = None,
             binary: str | None = None, timeout: float = 3600.0) -> str:
    """Run SQL statements through Virtuoso's ``isql-vt``; its output (stdout + stderr).

    isql exits 0 even when a statement fails, so failure is read from its ``*** Error`` lines.

    :raises EndpointError: when isql cannot log in or a statement fails.
    :raises ConfigError: when no isql binary is found.
    """
    exe = _find_binary(binary, "SYNKQA_ISQL", ("isql-vt", "isql-v"),
                       "install Virtuoso (scripts/install_endpoints.sh) or pass --isql-binary")
    if password is None:
        password = os.environ.get("VIRTUOSO_DBA_PASSWORD", "dba")
    cmd = [exe, isql, user, password, "VERBOSE=OFF", "BANNER=OFF", "PROMPT=OFF", "ECHO=OFF",
           "ERRORS=stdout", f"exec={sql}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise EndpointError(f"Virtuoso isql {isql}: no answer within {timeout:g} s") from None
    output = proc.stdout + proc.stderr
    errors = [line.strip() for line in output.splitlines() if line.startswith("*** Error")]
    if errors or proc.returncode != 0:
        what = errors[0] if errors else f"isql exited with {proc.returncode}: {' '.join(output.split())[:200]}"
        if "FA003" in what or "access control" in what:
            what += " (the data directory must be listed in DirsAllowed of virtuoso.ini)"
        raise EndpointError(f"Virtuoso isql {isql}: {what}")
    return output


def load_virtuoso(turtle: Path | str, *, graph: str = DEFAULT_GRAPH, isql: str = "127.0.0.1:1111",
                  user: str = "dba", password: str | None = None, server_dir: str | None = None,
                  replace: bool = True, binary: str | None = None) -> LoadReport:
    """Bulk-load ``turtle`` into ``graph`` of a Virtuoso server.

    The server reads the file itself, so it must see it: ``server_dir`` is the file's
    directory as the server sees it (default: the same path; with Docker, the volume's mount
    point), and that directory must be in ``DirsAllowed``.
    ``replace`` clears the graph first, so a reload never keeps stale triples.

    :raises EndpointError: login failure, a refused directory, a file the server cannot see,
        or a parse error recorded in ``load_list.ll_error``.
    """
    _check_iri(graph)
    turtle = Path(turtle).resolve()
    if not turtle.is_file():
        raise ConfigError(f"no such Turtle file: {turtle}")
    directory = (server_dir or str(turtle.parent)).rstrip("/") or "/"
    ll_file = f"{directory}/{turtle.name}"
    start = time.perf_counter()
    login = {"isql": isql, "user": user, "password": password, "binary": binary}
    # Register the file first: a refused directory or a file the server cannot see fails
    # here, before the graph is cleared. (load_list remembers loaded files; forget this one
    # so a reload loads it again.)
    registered = run_isql(
        f"DELETE FROM DB.DBA.load_list WHERE ll_file = {_sql_string(ll_file)}; "
        f"ld_dir({_sql_string(directory)}, {_sql_string(turtle.name)}, {_sql_string(graph)}); "
        f"SELECT 'SYNKQA_REGISTERED', COUNT(*) FROM DB.DBA.load_list WHERE ll_file = {_sql_string(ll_file)};",
        **login)
    if _isql_scalar(registered, "SYNKQA_REGISTERED") == "0":
        raise EndpointError(f"Virtuoso isql {isql}: bulk loader registered no file {ll_file} "
                            "(does the server see that path? pass the directory as the server sees it)")
    statements = [
        f"SPARQL CLEAR GRAPH <{graph}>" if replace else None,
        "rdf_loader_run()",
        "checkpoint",
        "SELECT 'SYNKQA_LOAD', ll_state, coalesce(ll_error, 'NONE') FROM DB.DBA.load_list "
        f"WHERE ll_file = {_sql_string(ll_file)}",
    ]
    output = run_isql("; ".join(s for s in statements if s) + ";", **login)
    rows = [line.split(None, 2) for line in output.splitlines() if line.startswith("SYNKQA_LOAD")]
    if not rows:
        raise EndpointError(f"Virtuoso isql {isql}: no load_list row for {ll_file} after rdf_loader_run()")
    _, state, error = rows[0] + [""] * (3 - len(rows[0]))
    if error.strip() != "NONE" or state.strip() != "2":
        raise EndpointError(f"Virtuoso bulk load of {ll_file} failed (ll_state {state}): {error.strip()}")
    triples = int(_isql_scalar(run_isql(
        f"SPARQL SELECT 'SYNKQA_COUNT', COUNT(*) FROM <{graph}> WHERE {{ ?s ?p ?o }};", **login),
        "SYNKQA_COUNT"))
    return LoadReport("virtuoso", isql, graph, triples, round(time.perf_counter() - start, 3))


def _wait_for_isql(isql: str, seconds: float, **login) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            run_isql("SELECT 1;", isql=isql, timeout=10.0, **login)
            return
        except EndpointError as exc:
            if "Bad login" in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def _isql_scalar(output: str, marker: str) -> str:
    for line in output.splitlines():
        if line.startswith(marker):
            return line.split()[1]
    raise EndpointError(f"unexpected isql output: {' '.join(output.split())[:200]}")


# ---- Oxigraph ---------------------------------------------------------------------------

def load_oxigraph_location(turtle: Path | str, location: Path | str, *, graph: str | None = None,
                           binary: str | None = None) -> LoadReport:
    """Load ``turtle`` into the Oxigraph data directory ``location`` with ``oxigraph load``.

    Run it before a server opens the directory (``oxigraph serve-read-only --location``);
    the load is atomic, and loading into a directory a server holds open fails.

    :raises StoreError: when ``oxigraph load`` fails (its message is passed on).
    """
    _check_iri(graph)
    exe = _find_binary(binary, "SYNKQA_OXIGRAPH", ("oxigraph",),
                       "pip install oxigraph (the wheel ships the server binary)")
    turtle = Path(turtle)
    if not turtle.is_file():
        raise ConfigError(f"no such Turtle file: {turtle}")
    start = time.perf_counter()
    cmd = [exe, "load", "--location", str(location), "--file", str(turtle)]
    if graph:
        cmd += ["--graph", graph]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        message = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise StoreError(f"oxigraph load into {location} failed (exit {proc.returncode}): {message}")
    with_graph = ox.Store.read_only(str(location))
    source = ox.NamedNode(graph) if graph else ox.DefaultGraph()
    triples = sum(1 for _ in with_graph.quads_for_pattern(None, None, None, source))
    del with_graph
    return LoadReport("oxigraph", str(location), graph, triples, round(time.perf_counter() - start, 3))


def graph_store_url(endpoint: str, kind: str) -> str:
    """The Graph Store Protocol URL beside a query endpoint.

    Oxigraph server: ``.../query`` -> ``.../store``; Fuseki: ``.../<ds>/sparql`` or
    ``.../<ds>/query`` -> ``.../<ds>/data``.
    """
    parts = urllib.parse.urlsplit(endpoint)
    path = parts.path.rstrip("/")
    head, _, last = path.rpartition("/")
    if kind == "oxigraph":
        new = (head if last in ("query", "sparql") else path) + "/store"
    else:
        new = (head if last in ("query", "sparql") else path) + "/data"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, new, "", ""))


def load_graph_store(turtle: Path | str, store_url: str, *, graph: str | None = None,
                     replace: bool = True, user: str | None = None, password: str | None = None,
                     timeout: float = 600.0) -> LoadReport:
    """Send ``turtle`` to a Graph Store HTTP Protocol URL (``PUT`` replaces, ``POST`` adds).

    ``graph=None`` targets the default graph (``?default``), else ``?graph=<iri>``.

    :raises EndpointError: for an unreachable server or an HTTP error (status and message).
    """
    _check_iri(graph)
    turtle = Path(turtle)
    if not turtle.is_file():
        raise ConfigError(f"no such Turtle file: {turtle}")
    query = urllib.parse.urlencode({"graph": graph}) if graph else "default"
    url = f"{store_url}?{query}"
    data = turtle.read_bytes()
    request = urllib.request.Request(url, data=data, method="PUT" if replace else "POST",
                                     headers={"Content-Type": "text/turtle"})
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        body = " ".join(exc.read().decode("utf-8", "replace").split())[:200]
        raise EndpointError(f"graph store {url}: HTTP {exc.code}: {body or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise EndpointError(f"graph store {url}: no HTTP status: {reason}") from None
    return LoadReport("graph-store", store_url, graph, count_triples(turtle),
                      round(time.perf_counter() - start, 3))


# ---- any endpoint -------------------------------------------------------------------------

def wait_for_endpoint(url: str, seconds: float, graph: str | None = None) -> None:
    """Poll ``url`` with ``ASK {}`` until it answers (for servers still starting up).

    :raises EndpointError: the last failure, when ``seconds`` pass without an answer.
    """
    from store.remote import EndpointStore

    store = EndpointStore(url, graph=graph, timeout=5.0, retries=0)
    deadline = time.monotonic() + seconds
    while True:
        try:
            store.ping()
            return
        except StoreError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def load_endpoint(turtle: Path | str, kind: str, *, endpoint: str | None = None,
                  graph: str | None = None, isql: str | None = None, user: str | None = None,
                  password: str | None = None, server_dir: str | None = None,
                  store_url: str | None = None, location: str | None = None,
                  isql_binary: str | None = None, wait: float = 0.0) -> LoadReport:
    """Load ``turtle`` the way ``kind`` needs, then check the count through ``endpoint``.

    - ``virtuoso``: bulk loader over ``isql`` (default: the endpoint's host, port 1111), into
      ``graph`` (default :data:`DEFAULT_GRAPH`);
    - ``oxigraph``: ``location`` given -> ``oxigraph load`` into that directory (the server
      is started afterwards); else Graph Store ``PUT`` to ``store_url`` (default: the
      endpoint's ``/store``) of a running ``oxigraph serve``;
    - ``graph-store`` (alias ``fuseki``): Graph Store ``PUT`` to ``store_url`` (default: the
      endpoint's ``.../data``).

    With ``endpoint``, the triples are counted back through it (``default-graph-uri`` =
    ``graph``) and must equal the file's count: a load that "succeeded" into the wrong
    graph is caught here, not by an empty answer later.

    :raises ConfigError: unknown kind, missing options or binaries.
    :raises EndpointError: the load failed or the count does not match.
    """
    from store.remote import EndpointStore

    kind = "graph-store" if kind == "fuseki" else kind
    if kind not in KINDS:
        raise ConfigError(f"unknown endpoint kind {kind!r}; expected one of: {', '.join(KINDS)}")
    if endpoint and wait > 0:
        wait_for_endpoint(endpoint, wait)
    if kind == "virtuoso":
        if isql is None:
            if endpoint is None:
                raise ConfigError("virtuoso needs --isql HOST:PORT or --endpoint URL")
            isql = f"{urllib.parse.urlsplit(endpoint).hostname}:1111"
        graph = graph or DEFAULT_GRAPH
        if wait > 0:
            # Virtuoso opens its HTTP port a moment before its SQL port.
            _wait_for_isql(isql, wait, user=user or "dba", password=password, binary=isql_binary)
        report = load_virtuoso(turtle, graph=graph, isql=isql, user=user or "dba", password=password,
                               server_dir=server_dir, binary=isql_binary)
    elif kind == "oxigraph" and location is not None:
        report = load_oxigraph_location(turtle, location, graph=graph)
    else:
        if store_url is None:
            if endpoint is None:
                raise ConfigError(f"{kind} needs --store-url URL or --endpoint URL")
            store_url = graph_store_url(endpoint, kind)
        report = load_graph_store(turtle, store_url, graph=graph, user=user, password=password)
    if endpoint is not None and not (kind == "oxigraph" and location is not None):
        expected = count_triples(turtle)
        found = EndpointStore(endpoint, graph=graph).triple_count()
        if found != expected:
            where = f"graph <{graph}>" if graph else "the default graph"
            raise EndpointError(f"endpoint {endpoint}: {where} holds {found} triples after loading "
                                f"{expected} from {turtle}")
        report = LoadReport(report.kind, report.target, report.graph, found, report.seconds)
    return report
