"""Real SPARQL servers for the endpoint tests: fixtures around :mod:`store.servers` (an
Oxigraph server and a Virtuoso, private and on loopback), a scriptable broken endpoint, and
program samples.

Missing binaries: with ``CI=true`` a test that needs a server FAILS (CI installs them with
scripts/install_endpoints.sh, so a missing binary is a broken CI, not a reason to skip); on
a developer machine it is skipped with a loud reason naming the install command.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from store.servers import Server, free_port, start_oxigraph, start_virtuoso  # noqa: F401  (the tests' API)

INSTALL_HINT = "install it with: bash scripts/install_endpoints.sh"


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

    from synkqa.benchmark.templates import templates

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
