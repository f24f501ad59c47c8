"""EndpointStore against real sockets: faults, read-only guard, server quirks, CLI exits.

The broken endpoints are a real ``http.server`` on 127.0.0.1 (tests/endpoint_servers.py,
``fake_endpoint``) answering as each test tells it, and a loopback port nobody listens on.
The quirk payloads are the bytes a real Virtuoso 7.2 sent for the same queries.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from typer.testing import CliRunner

from kopl2sparql.errors import ConfigError, EndpointError, QueryTimeout, ReadOnlyError, StoreError
from store.remote import EndpointStore, query_form
from store.results import SelectResult
from tests.endpoint_servers import free_port

SELECT = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"

# Recorded from Virtuoso 7.2 (typed-literal cells, canonical decimals); one decimal altered
# to a non-canonical lexical form ("46.70") as other servers send it.
VIRTUOSO_SELECT = b"""
{ "head": { "link": [], "vars": ["c", "a", "p"] },
  "results": { "distinct": false, "ordered": true, "bindings": [
    { "c": { "type": "uri", "value": "http://synkqa.org/entity/City_0000" }\t, "a": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#decimal", "value": "225.6" }\t, "p": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#integer", "value": "71890" }},
    { "c": { "type": "uri", "value": "http://synkqa.org/entity/City_0001" }\t, "a": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#decimal", "value": "46.70" }} ] } }"""
# Virtuoso without CaseMode = 2 answers ASK as a one-row SELECT.
VIRTUOSO_ASK_AS_SELECT = b"""{ "head": { "link": [], "vars": ["__ASK_RETVAL"] },
  "results": { "distinct": false, "ordered": true, "bindings": [
    { "__ASK_RETVAL": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#integer", "value": "1" }} ] } }"""


def one_line(message: str) -> bool:
    return "\n" not in message and len(message) < 600


# ---- faults --------------------------------------------------------------------------------------

def test_endpoint_down_is_one_clear_line():
    url = f"http://127.0.0.1:{free_port()}/sparql"
    store = EndpointStore(url, retries=1)
    with pytest.raises(EndpointError) as info:
        store.query(SELECT)
    message = str(info.value)
    assert one_line(message)
    assert url in message and "connection refused" in message and "no HTTP status" in message
    assert "query: SELECT ?s WHERE" in message
    assert store.requests_sent == 2          # the read was retried once, then reported


def test_slow_endpoint_times_out_without_retrying(fake_endpoint):
    fake_endpoint.respond(200, b'{"boolean": true}', delay=3.0)
    store = EndpointStore(fake_endpoint.url, timeout=0.4, retries=2)
    with pytest.raises(QueryTimeout) as info:      # the answer (yes) would come after 3 s
        store.query("ASK { ?s ?p ?o }")
    message = str(info.value)
    assert one_line(message) and "time limit of 0.4 s" in message and fake_endpoint.url in message
    assert store.requests_sent == 1


def test_http_500_is_retried_a_bounded_number_of_times(fake_endpoint):
    fake_endpoint.respond(500, "Virtuoso 42000 Error SR186: No permission\n\nSPARQL query:\n" + SELECT,
                          content_type="text/plain")
    store = EndpointStore(fake_endpoint.url, retries=2)
    with pytest.raises(EndpointError) as info:
        store.query(SELECT)
    message = str(info.value)
    assert one_line(message)
    assert "HTTP 500" in message and "SR186: No permission" in message and fake_endpoint.url in message
    assert len(fake_endpoint.requests) == 3 == store.requests_sent


def test_server_side_timeout_is_a_query_timeout(fake_endpoint):
    fake_endpoint.respond(500, "Virtuoso S1T00 Error SR171: Transaction timed out", content_type="text/plain")
    with pytest.raises(QueryTimeout, match="HTTP 500.*time limit.*S1T00"):
        EndpointStore(fake_endpoint.url).query(SELECT)
    assert len(fake_endpoint.requests) == 1


def test_virtuoso_cost_estimate_refusal_names_the_setting(fake_endpoint):
    fake_endpoint.respond(500, "Virtuoso 42000 Error The estimated execution time 882 (sec) exceeds the "
                               "limit of 400 (sec).\n\nSPARQL query:\n" + SELECT, content_type="text/plain")
    with pytest.raises(EndpointError, match="HTTP 500: .*estimated execution time 882.*MaxQueryCostEstimationTime"):
        EndpointStore(fake_endpoint.url, retries=2).query(SELECT)
    assert len(fake_endpoint.requests) == 1       # deterministic: not retried


def test_client_errors_are_not_retried(fake_endpoint):
    fake_endpoint.respond(400, "error at 1:8: expected one of VERSION", content_type="text/plain")
    with pytest.raises(EndpointError, match="HTTP 400: error at 1:8: expected one of VERSION"):
        EndpointStore(fake_endpoint.url, retries=3).query(SELECT)
    fake_endpoint.respond(404, "<html><head><title>404 Not Found</title></head><body>x</body></html>",
                          content_type="text/html")
    with pytest.raises(EndpointError, match="HTTP 404: 404 Not Found"):
        EndpointStore(fake_endpoint.url, retries=3).query(SELECT)
    assert len(fake_endpoint.requests) == 2


def test_malformed_json_is_an_error_not_an_empty_answer(fake_endpoint):
    fake_endpoint.respond(200, b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": ')
    with pytest.raises(EndpointError) as info:
        EndpointStore(fake_endpoint.url).query(SELECT)
    assert one_line(str(info.value)) and "malformed SPARQL JSON results" in str(info.value)
    assert "HTTP 200" in str(info.value)


@pytest.mark.parametrize("body", [b'{"results": {}}', b'[1, 2]', b'{"head": {"vars": ["s"]}}'])
def test_json_without_results_is_an_error(fake_endpoint, body):
    fake_endpoint.respond(200, body)
    with pytest.raises(EndpointError, match="SPARQL JSON results"):
        EndpointStore(fake_endpoint.url).query(SELECT)


def test_html_error_page_with_status_200(fake_endpoint):
    page = ("<!DOCTYPE html><html><head><title>Service Unavailable - proxy</title></head>"
            "<body><h1>Try again later</h1></body></html>")
    fake_endpoint.respond(200, page, content_type="text/html; charset=utf-8")
    with pytest.raises(EndpointError) as info:
        EndpointStore(fake_endpoint.url).query(SELECT)
    message = str(info.value)
    assert one_line(message) and "HTML" in message and "Service Unavailable - proxy" in message
    assert "<" not in message.split("proxy")[0].split("):")[-1]   # tags are not dumped


def test_html_error_page_with_status_502(fake_endpoint):
    fake_endpoint.respond(502, "<html><head><title>502 Bad Gateway</title></head><body><center>nginx"
                               "</center></body></html>", content_type="text/html")
    with pytest.raises(EndpointError, match=r"HTTP 502: 502 Bad Gateway; query: SELECT"):
        EndpointStore(fake_endpoint.url, retries=1).query(SELECT)
    assert len(fake_endpoint.requests) == 2


def test_virtuoso_result_cap_is_an_error(fake_endpoint):
    fake_endpoint.respond(200, VIRTUOSO_SELECT, headers={"X-SPARQL-MaxRows": "10000"})
    with pytest.raises(EndpointError, match="capped the result at 10000 rows.*ResultSetMaxRows"):
        EndpointStore(fake_endpoint.url).query(SELECT)


# ---- read-only -----------------------------------------------------------------------------------

UPDATES = [
    "INSERT DATA { <http://a> <http://b> <http://c> }",
    "PREFIX sk: <http://synkqa.org/ontology#>\nDELETE WHERE { ?s sk:born_in ?o }",
    "delete { ?s ?p ?o } where { ?s ?p ?o }",
    "WITH <http://synkqa.org/kb> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "LOAD <http://example.org/evil.ttl>",
    "CLEAR ALL", "DROP GRAPH <http://synkqa.org/kb>", "CREATE GRAPH <http://g>",
    "COPY DEFAULT TO <http://g>", "MOVE <http://g> TO DEFAULT", "ADD <http://g> TO DEFAULT",
    "MODIFY GRAPH <http://g> DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o }",
    "# a comment\nSELECT * WHERE { ?s ?p ?o } ; INSERT DATA { <http://a> <http://b> <http://c> }",
    "DEFINE sql:log-enable 3 INSERT INTO <http://g> { <http://a> <http://b> <http://c> }",
    "SELECT * WHERE { ?s ?p ?o }.DELETE WHERE { ?s ?p ?o }",
]


@pytest.mark.parametrize("update", UPDATES)
def test_updates_are_refused_before_anything_is_sent(fake_endpoint, update):
    store = EndpointStore(fake_endpoint.url)
    with pytest.raises(ReadOnlyError, match="refused to send a SPARQL update"):
        store.query(update)
    assert fake_endpoint.requests == [] and store.requests_sent == 0


def test_update_words_inside_names_strings_and_iris_are_data(fake_endpoint):
    query = ('PREFIX ex: <http://example.org/insert/>\n'
             'SELECT ?insert ?delete WHERE { ?insert ex:drop "load; CLEAR ALL" . '
             '?delete <http://x/copy#move> ?o # DROP GRAPH in a comment\n}')
    assert query_form(query) == "SELECT"
    EndpointStore(fake_endpoint.url).query(query)
    assert len(fake_endpoint.requests) == 1


@pytest.mark.parametrize("query", ["", "hello", "LOAD2 <http://a>"])
def test_only_queries_are_sent(fake_endpoint, query):
    with pytest.raises(StoreError, match="only SELECT, ASK, CONSTRUCT and DESCRIBE"):
        EndpointStore(fake_endpoint.url).query(query)
    assert fake_endpoint.requests == []


def test_construct_and_describe_come_back_as_triples(fake_endpoint):
    turtle = (b'@prefix ex: <http://example.org/> .\n'
              b'ex:a ex:p "x" ; ex:q 3 .\n')
    fake_endpoint.respond(200, turtle, content_type="text/turtle")
    result = EndpointStore(fake_endpoint.url).query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert result.variables == ("subject", "predicate", "object")
    assert sorted(result.rows) == [("http://example.org/a", "http://example.org/p", "x"),
                                   ("http://example.org/a", "http://example.org/q", 3)]
    fake_endpoint.respond(200, b"<html>oops</html>", content_type="text/html")
    with pytest.raises(EndpointError, match="HTML page instead of Turtle"):
        EndpointStore(fake_endpoint.url).query("DESCRIBE <http://example.org/a>")
    fake_endpoint.respond(200, b"this is not turtle", content_type="text/turtle")
    with pytest.raises(EndpointError, match="malformed Turtle"):
        EndpointStore(fake_endpoint.url).query("DESCRIBE <http://example.org/a>")


# ---- server quirks and the request that goes out ---------------------------------------------------

def test_virtuoso_typed_literals_and_decimals(fake_endpoint):
    fake_endpoint.respond(200, VIRTUOSO_SELECT)
    result = EndpointStore(fake_endpoint.url).query(SELECT)
    assert isinstance(result, SelectResult) and result.variables == ("c", "a", "p")
    assert result.rows == [("http://synkqa.org/entity/City_0000", Decimal("225.6"), 71890),
                           ("http://synkqa.org/entity/City_0001", Decimal("46.7"), None)]
    assert isinstance(result.rows[0][2], int)
    assert str(result.rows[1][1]) == "46.7"   # canonical, whatever lexical form came


def test_virtuoso_ask_as_one_row_select(fake_endpoint):
    fake_endpoint.respond(200, VIRTUOSO_ASK_AS_SELECT)
    assert EndpointStore(fake_endpoint.url).query("ASK { ?s ?p ?o }") is True
    fake_endpoint.respond(200, VIRTUOSO_ASK_AS_SELECT.replace(b'"value": "1"', b'"value": "0"'))
    assert EndpointStore(fake_endpoint.url).query("ASK { ?s ?p ?o }") is False
    fake_endpoint.respond(200, b'{"head": {}, "boolean": false}')
    assert EndpointStore(fake_endpoint.url).query("ASK { ?s ?p ?o }") is False
    with pytest.raises(EndpointError, match="boolean answer to a SELECT"):
        EndpointStore(fake_endpoint.url).query(SELECT)


def test_graph_goes_out_as_default_graph_uri(fake_endpoint):
    EndpointStore(fake_endpoint.url, graph="http://synkqa.org/kb").query(SELECT)
    EndpointStore(fake_endpoint.url).query(SELECT)
    EndpointStore(fake_endpoint.url + "?default-graph-uri=http%3A%2F%2Fg&timeout=5000").query(SELECT)
    (m1, p1, q1), (_, _, q2), (_, p3, q3) = fake_endpoint.requests
    assert m1 == "GET" and p1 == p3 == "/sparql"
    assert q1["default-graph-uri"] == ["http://synkqa.org/kb"] and q1["query"] == [SELECT]
    assert "default-graph-uri" not in q2
    assert q3["default-graph-uri"] == ["http://g"] and q3["timeout"] == ["5000"]


def test_long_queries_go_by_post_as_a_query_operation(fake_endpoint):
    values = " ".join(f"<http://synkqa.org/entity/Person_{i:05d}>" for i in range(100))
    query = f"SELECT ?e WHERE {{ VALUES ?e {{ {values} }} ?e ?p ?o }}"
    EndpointStore(fake_endpoint.url, graph="http://g").query(query)
    method, _, params = fake_endpoint.requests[0]
    assert method == "POST" and params["query"] == [query] and "update" not in params
    assert params["default-graph-uri"] == ["http://g"]


@pytest.mark.parametrize("url", ["ftp://example.org/sparql", "localhost:8890/sparql", "http://"])
def test_bad_urls_are_config_errors(url):
    with pytest.raises(ConfigError, match="not an http"):
        EndpointStore(url)


def test_bad_limits_are_config_errors():
    with pytest.raises(ConfigError):
        EndpointStore("http://127.0.0.1:1/sparql", timeout=0)
    with pytest.raises(ConfigError):
        EndpointStore("http://127.0.0.1:1/sparql", retries=-1)


# ---- through the CLI: non-zero exit, one line, no traceback ----------------------------------------

PROGRAM = "Find(Person_00371);Relate(born_in);QueryName()"


def _cli(*args):
    from synkqa.cli import app
    return CliRunner().invoke(app, list(args))


def _assert_clean_failure(result, *needles):
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("fault", ["down", "500", "html", "malformed"])
def test_execute_on_a_failing_endpoint_exits_1(fake_endpoint, fault, kb_turtle):
    # kb_turtle: the KB's schema (read from the local Turtle) exists before the run, so
    # stderr holds only the error, not a first-use progress bar.
    url = fake_endpoint.url
    if fault == "down":
        url = f"http://127.0.0.1:{free_port()}/sparql"
    elif fault == "500":
        fake_endpoint.respond(500, "internal trouble", content_type="text/plain")
    elif fault == "html":
        fake_endpoint.respond(200, "<html><title>Login required</title></html>", content_type="text/html")
    else:
        fake_endpoint.respond(200, b"{not json")
    result = _cli("execute", PROGRAM, "--backend", url)
    expected = {"down": "connection refused", "500": "HTTP 500: internal trouble",
                "html": "Login required", "malformed": "malformed SPARQL JSON"}[fault]
    _assert_clean_failure(result, url, expected)


def test_sparql_command_on_a_failing_endpoint_exits_1(fake_endpoint):
    from synkqa.cli import app
    if not any(getattr(c, "name", None) == "sparql" for c in app.registered_commands):
        pytest.skip("`synkqa sparql` is not registered yet (KB issue)")
    fake_endpoint.respond(503, "<html><title>Maintenance</title></html>", content_type="text/html")
    result = _cli("sparql", SELECT, "--endpoint", fake_endpoint.url)
    _assert_clean_failure(result, fake_endpoint.url, "HTTP 503", "Maintenance")
    result = _cli("sparql", "DELETE WHERE { ?s ?p ?o }", "--endpoint", fake_endpoint.url)
    assert result.exit_code == 1 and "read-only" in result.stderr + result.output
    assert len(fake_endpoint.requests) == 3      # 1 + 2 retries for the 503; nothing for DELETE


def test_kb_load_needs_a_target():
    result = _cli("kb", "load", "--kind", "virtuoso")
    assert result.exit_code == 2 and "--endpoint" in result.stderr


def test_kb_load_into_an_unreachable_graph_store_exits_1(kb_turtle):
    url = f"http://127.0.0.1:{free_port()}/ds/sparql"
    result = _cli("kb", "load", "--kind", "fuseki", "--endpoint", url, "--file", str(kb_turtle))
    _assert_clean_failure(result, "/ds/data?default", "no HTTP status")


# ---- the servers' own absence: fail in CI, loud skip elsewhere ----------------------------------------

def test_missing_server_binary_fails_in_ci_and_skips_loudly_elsewhere(monkeypatch):
    from tests.endpoint_servers import require_binary
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but SPARQL server binary not found: no-such-server"):
        require_binary("no-such-server")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="ENDPOINT TESTS NOT RUN.*install_endpoints.sh"):
        require_binary("no-such-server")
    require_binary("sh")      # present: nothing happens


# ---- loader plumbing that needs no server ------------------------------------------------------------

def test_graph_store_urls_beside_query_endpoints():
    from store.loaders import graph_store_url
    assert graph_store_url("http://h:7878/query", "oxigraph") == "http://h:7878/store"
    assert graph_store_url("http://h:3030/synkqa/sparql", "graph-store") == "http://h:3030/synkqa/data"
    assert graph_store_url("http://h:3030/synkqa/query", "graph-store") == "http://h:3030/synkqa/data"


def test_loader_refuses_bad_kinds_iris_and_files(kb_turtle, tmp_path):
    from store.loaders import load_endpoint, load_graph_store
    with pytest.raises(ConfigError, match="unknown endpoint kind 'blazegraph'"):
        load_endpoint(kb_turtle, "blazegraph", endpoint="http://127.0.0.1:1/sparql")
    with pytest.raises(ConfigError, match="not an absolute IRI"):
        load_graph_store(kb_turtle, "http://127.0.0.1:1/store", graph="kb graph")
    with pytest.raises(ConfigError, match="no such Turtle file"):
        load_graph_store(tmp_path / "missing.ttl", "http://127.0.0.1:1/store")
    with pytest.raises(ConfigError, match="needs --isql"):
        load_endpoint(kb_turtle, "virtuoso")


def test_graph_store_http_error_is_one_line(fake_endpoint, kb_turtle):
    from store.loaders import load_graph_store
    fake_endpoint.respond(403, "The server is read-only", content_type="text/plain")
    with pytest.raises(EndpointError) as info:
        load_graph_store(kb_turtle, fake_endpoint.url.replace("/sparql", "/store"), graph="http://g")
    assert one_line(str(info.value)) and "HTTP 403: The server is read-only" in str(info.value)
    method, path, params = fake_endpoint.requests[0]
    assert method == "PUT" and path == "/store" and params["graph"] == ["http://g"]


# ---- a whole-request deadline and a size cap, against real misbehaving servers ----------------

class _RawServer:
    """A TCP server on loopback that answers every connection with ``behave(conn)``."""

    def __init__(self, behave):
        import socket
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.stop = threading.Event()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/sparql"

        def serve():
            self.sock.settimeout(0.2)
            while not self.stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    continue
                threading.Thread(target=self._run, args=(behave, conn), daemon=True).start()
        threading.Thread(target=serve, daemon=True).start()

    def _run(self, behave, conn):
        try:
            conn.recv(65536)
            behave(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"
           b"Connection: close\r\n\r\n")


def _trickle(conn, stop):
    conn.sendall(HEADERS)
    for _ in range(200):                       # one byte every 0.2 s: 40 s if nobody stops it
        if stop.is_set():
            return
        conn.sendall(b" ")
        stop.wait(0.2)


def _endless(conn, stop):
    conn.sendall(HEADERS + b'{"head": {"vars": ["s"]}, "results": {"bindings": [')
    row = b'{"s": {"type": "literal", "value": "x"}},' * 1000
    while not stop.is_set():
        conn.sendall(row)


@pytest.mark.timeout(30)                        # the failure mode is a hang
def test_a_trickling_server_cannot_outlast_the_time_limit():
    server = _RawServer(_trickle)
    try:
        with pytest.raises(QueryTimeout, match="no complete answer within the time limit of 1 s"):
            EndpointStore(server.url, timeout=1.0, retries=0).query("ASK { ?s ?p ?o }")
    finally:
        server.close()


@pytest.mark.timeout(60)
def test_an_endless_answer_is_cut_at_the_size_cap():
    server = _RawServer(_endless)
    try:
        with pytest.raises(EndpointError, match="larger than 1,048,576 bytes"):
            EndpointStore(server.url, timeout=30.0, retries=0, max_bytes=2**20).query("SELECT ?s { ?s ?p ?o }")
    finally:
        server.close()
