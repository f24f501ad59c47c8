"""``synkqa serve`` over HTTP: the JSON API, the SPARQL 1.1 Protocol with standard clients,
and hostile requests. A real server process (tests/web_server.py) on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.web_server import ROOT, start_server

pytestmark = pytest.mark.slow

FIRST = "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"


def _post(url: str, path: str, body, **kwargs) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=60, **kwargs)


def test_execute_returns_answer_trace_sparql_and_a_cross_check(served, kb_turtle):
    for backend in ("native", "oxigraph"):
        result = _post(served.url, "/api/execute", {"program": FIRST, "backend": backend}).json()
        assert result["error"] is None and result["answer"] == "Country_062"
        assert [s["items"] for s in result["trace"]][:3] == [["Person_00371"], ["City_0359"], ["Country_062"]]
        assert [s["dependencies"] for s in result["steps"]] == [[], [0], [1], [2]]
        assert "SELECT" in result["sparql"] and "born_in" in result["sparql"]
        assert result["cross_check"]["agree"] is True
        assert result["cross_check"]["engine"] == ("oxigraph" if backend == "native" else "native")
    # KQA Pro JSON as a list, and two branches joined by And
    steps = [{"function": "Find", "inputs": ["Person_00371"], "dependencies": []},
             {"function": "Relate", "inputs": ["born_in", "forward"], "dependencies": [0]},
             {"function": "What", "inputs": [], "dependencies": [1]}]
    assert _post(served.url, "/api/execute", {"program": steps}).json()["answer"] == "City_0359"
    both = "Find(Org_0122);RelateInv(works_at);Find(City_0359);RelateInv(born_in);And();Count()"
    result = _post(served.url, "/api/check", {"program": both}).json()
    assert [s["dependencies"] for s in result["steps"]] == [[], [0], [], [2], [1, 3], [4]]


def test_program_errors_are_located_with_did_you_mean(served):
    result = _post(served.url, "/api/execute", {"program": "Find(Person_00371);Relate(birthplace);QueryName()"})
    error = result.json()["error"]
    assert result.status_code == 200 and error["kind"] == "type error" and error["step"] == 2
    assert "did you mean born_in" in error["message"] and error["span"] == [26, 36]
    result = _post(served.url, "/api/execute", {"program": "Find(Person_99999);QueryName()"}).json()
    assert result["error"]["kind"] in ("type error", "execution error")
    long = "Find(Person_00001);" + ";".join(["Relate(born_in);RelateInv(born_in)"] * 5000) + ";Count()"
    result = _post(served.url, "/api/execute", {"program": long})
    assert result.status_code == 200 and "at most 1,000" in result.json()["error"]["message"]


def test_completion_by_label_prefix(served):
    items = httpx.get(served.url + "/api/complete", params={"kind": "relation", "prefix": "bo"}).json()["items"]
    assert [i["value"] for i in items] == ["born_in"]
    items = httpx.get(served.url + "/api/complete", params={"kind": "entity", "prefix": "person_0037",
                                                           "limit": 3}).json()["items"]
    assert [i["value"] for i in items] == ["Person_00370", "Person_00371", "Person_00372"]
    items = httpx.get(served.url + "/api/complete", params={"kind": "function", "prefix": "rel"}).json()["items"]
    assert {i["value"] for i in items} == {"Relate", "RelateInv"}
    bad = httpx.get(served.url + "/api/complete", params={"kind": "colour", "prefix": ""})
    assert bad.status_code == 400 and "unknown completion kind" in bad.json()["error"]["message"]


def test_questions_give_a_program_and_ranked_candidates_with_verdicts(served):
    result = _post(served.url, "/api/ask", {"question": "Which country was Person_00371 born in?"}).json()
    assert result["answer"] == "Country_062" and "Relate(located_in)" in result["program"]
    assert result["candidates"] and all("verdict" in c for c in result["candidates"])
    chosen = [c for c in result["candidates"] if c["rank"] == result["selected_rank"]]
    assert chosen and chosen[0]["verdict"] == "passed"
    run = _post(served.url, "/api/execute", {"program": result["program"]}).json()
    assert run["answer"] == result["answer"]


# ---- the SPARQL 1.1 Protocol ----------------------------------------------------------------------

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def _count(url: str) -> int:
    body = httpx.get(url + "/sparql", params={"query": COUNT}).json()
    return int(body["results"]["bindings"][0]["n"]["value"])


def test_protocol_get_post_and_formats(served, kb_turtle):
    import pyoxigraph as ox
    with open(kb_turtle, "rb") as handle:
        assert _count(served.url) == sum(1 for _ in ox.parse(handle, format=ox.RdfFormat.TURTLE))
    query = "SELECT ?city WHERE { <http://synkqa.org/entity/Person_00371> <http://synkqa.org/ontology#born_in> ?city }"
    city = "http://synkqa.org/entity/City_0359"
    as_form = httpx.post(served.url + "/sparql", data={"query": query}).json()
    as_body = httpx.post(served.url + "/sparql", content=query.encode(),
                         headers={"Content-Type": "application/sparql-query"}).json()
    assert as_form == as_body and as_form["results"]["bindings"][0]["city"] == {"type": "uri", "value": city}
    xml = httpx.get(served.url + "/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+xml"})
    assert xml.headers["content-type"].startswith("application/sparql-results+xml") and f"<uri>{city}</uri>" in xml.text
    csv = httpx.get(served.url + "/sparql", params={"query": query}, headers={"Accept": "text/csv"})
    assert csv.text.splitlines() == ["city", city]
    tsv = httpx.get(served.url + "/sparql", params={"query": query}, headers={"Accept": "text/tab-separated-values"})
    assert tsv.text.splitlines() == ["?city", f"<{city}>"]
    ask = httpx.get(served.url + "/sparql", params={"query": f"ASK {{ ?x ?y <{city}> }}"}).json()
    assert ask == {"head": {}, "boolean": True}
    graph = httpx.get(served.url + "/sparql", params={"query": "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 3"})
    assert graph.headers["content-type"].startswith("text/turtle") and graph.text.count(" .") >= 1


def test_row_limit_is_reported(served):
    result = httpx.get(served.url + "/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }"}, timeout=60)
    assert result.status_code == 200, result.text
    assert result.headers["x-sparql-truncated"] == "row limit 10000" and result.headers["x-sparql-rows"] == "10000"
    assert len(result.json()["results"]["bindings"]) == 10_000


def test_standard_clients_work(served):
    from SPARQLWrapper import JSON, SPARQLWrapper
    wrapper = SPARQLWrapper(served.url + "/sparql", returnFormat=JSON)
    wrapper.setQuery("SELECT ?c WHERE { <http://synkqa.org/entity/Person_00371> "
                     "<http://synkqa.org/ontology#born_in> ?c }")
    rows = wrapper.query().convert()["results"]["bindings"]
    assert rows[0]["c"]["value"] == "http://synkqa.org/entity/City_0359"

    import rdflib
    from rdflib.plugins.stores.sparqlstore import SPARQLStore
    graph = rdflib.Graph(store=SPARQLStore(served.url + "/sparql"))
    found = list(graph.query("SELECT ?n WHERE { <http://synkqa.org/entity/Country_062> "
                             "<http://synkqa.org/ontology#gdp_billion_usd> ?n }"))
    assert len(found) == 1 and float(found[0][0]) == 3.5

    done = subprocess.run([sys.executable, "-c", "from synkqa.cli import main; main()", "sparql",
                           "--endpoint", served.url + "/sparql", "--format", "csv",
                           "SELECT ?c WHERE { <http://synkqa.org/entity/Person_00371> "
                           "<http://synkqa.org/ontology#born_in> ?c }"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "City_0359" in done.stdout
    done = subprocess.run([sys.executable, "-c", "from synkqa.cli import main; main()", "execute", "--backend",
                           served.url + "/sparql", FIRST], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().endswith("Country_062"), done.stderr


# ---- abuse --------------------------------------------------------------------------------------

def test_updates_and_service_are_refused_and_nothing_is_written(served):
    before = _count(served.url)
    insert = "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }"
    for response in (
        httpx.post(served.url + "/sparql", content=insert, headers={"Content-Type": "application/sparql-update"}),
        httpx.post(served.url + "/sparql", data={"update": insert}),
        httpx.get(served.url + "/sparql", params={"query": insert}),
        httpx.get(served.url + "/sparql", params={"query": "DELETE WHERE { ?s ?p ?o }"}),
    ):
        assert response.status_code == 403, response.text
        assert "refused" in response.json()["error"]["message"].lower() or "read-only" in response.text
    service = httpx.get(served.url + "/sparql", params={
        "query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"})
    assert service.status_code == 403 and "SERVICE" in service.json()["error"]["message"]
    assert _count(served.url) == before


def test_bad_requests_get_clear_json_errors(served):
    url = served.url
    cases = [
        httpx.post(url + "/api/execute", content=b"{not json", headers={"Content-Type": "application/json"}),
        httpx.post(url + "/api/execute", content=b"[1, 2]"),
        httpx.post(url + "/api/execute", content=b"\xff\xfe"),
        httpx.post(url + "/api/execute", content=b"[" * 100_000),
        httpx.post(url + "/api/execute", json={"program": 3}),
        httpx.post(url + "/api/execute", json={"program": FIRST, "backend": "mysql"}),
        httpx.get(url + "/sparql"),
        httpx.get(url + "/sparql", params={"query": "SELEC ?x WHERE {}"}),
        httpx.post(url + "/sparql", content=b"q", headers={"Content-Type": "image/png"}),
    ]
    for response in cases:
        assert 400 <= response.status_code < 500, (response.status_code, response.text)
        assert response.json()["error"]["message"], response.text
    big = httpx.post(url + "/api/execute", content=b"x" * 2_000_000, timeout=60)
    assert big.status_code == 413
    assert httpx.get(url + "/no/such/page").status_code == 404


def test_time_limits_stop_runaway_work_and_the_server_keeps_serving(served):
    slow_program = "Find(City_0359);" + ";".join(["RelateInv(born_in);Relate(born_in)"] * 400) + ";Count()"
    started = time.monotonic()
    result = _post(served.url, "/api/execute", {"program": slow_program, "backend": "oxigraph"})
    assert result.status_code == 503 and "time limit of 2 s" in result.json()["error"]["message"]
    cross = httpx.get(served.url + "/sparql", params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"},
                      timeout=60)
    assert cross.status_code == 503 and "time limit" in cross.json()["error"]["message"]
    assert time.monotonic() - started < 20
    assert _post(served.url, "/api/execute", {"program": FIRST}).json()["answer"] == "Country_062"


def test_a_slow_client_is_cut_off_and_others_are_served(served):
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as slow:
        slow.sendall(b"POST /api/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{")
        # while it dribbles, other clients are answered
        assert _post(served.url, "/api/execute", {"program": FIRST}).json()["answer"] == "Country_062"
        slow.settimeout(30)
        started = time.monotonic()
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = slow.recv(4096)
            if not chunk:
                break
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
        assert time.monotonic() - started < 15


def test_concurrent_clients_all_get_answers(served):
    import concurrent.futures as futures

    programs = [FIRST, "Find(City_0359);RelateInv(born_in);Count()",
                "Find(Org_0122);RelateInv(works_at);Find(City_0359);RelateInv(born_in);And();Count()"]

    def one(i: int) -> int:
        if i % 2:
            return httpx.get(served.url + "/sparql", params={"query": COUNT}, timeout=60).status_code
        return _post(served.url, "/api/execute", {"program": programs[i % 3], "backend": "oxigraph"}).status_code

    with futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(one, range(200)))
    assert statuses == [200] * 200


def test_a_full_kopl_kb_is_served(tmp_path):
    import copy

    from kqapro.kb import KB
    from kqapro.rdf import kb_to_turtle
    example_kb = pytest.importorskip("kopl.test.test_example").example_kb      # the kopl wheel's example KB

    turtle = tmp_path / "example.ttl"
    turtle.write_bytes(kb_to_turtle(KB.from_json(copy.deepcopy(example_kb))))
    server = start_server(tmp_path, "--kb", str(turtle), "--no-questions")
    try:
        info = httpx.get(server.url + "/api/info").json()
        assert info["language"] == "kqapro" and len(info["functions"]) >= 27 and info["questions"] is False
        result = _post(server.url, "/api/execute", {"program": "Find(LeBron James);QueryAttr(height)",
                                                    "backend": "oxigraph"}).json()
        assert result["answer"] == "206 centimetre" and result["cross_check"]["agree"] is True
        kqa_style = ("SELECT DISTINCT ?e WHERE { ?e <pred:name> \"LeBron James\" . }")
        rows = httpx.get(server.url + "/sparql", params={"query": kqa_style}).json()["results"]["bindings"]
        assert len(rows) == 1
        assert httpx.post(server.url + "/api/ask", json={"question": "Who?"}).status_code == 400
    finally:
        server.stop()


def test_load_smoke_has_no_errors_and_flat_memory(served, tmp_path):
    """The load bench (synkqa bench --kind serve) on the session server, briefly: every
    request answered, cross-checks agreeing. The 32-client, 60-second figures are in
    docs/BENCH.md."""
    from evaluation.bench.serve import run_load

    report = run_load(served.url, clients=8, seconds=6, programs=50, out=tmp_path, latency_requests=30)
    assert report["errors"] == 0, report["failures"]
    assert report["program"]["requests"] > 20 and report["sparql"]["requests"] > 20
    assert json.loads((tmp_path / "serve-load.json").read_text())["requests"] == report["requests"]
