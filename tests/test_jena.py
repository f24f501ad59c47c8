"""Apache Jena (ARQ in memory, TDB2 on disk) from one long-lived JVM: results, base IRIs,
errors with Jena's messages, time limits that leave the JVM serving, a JVM killed when a
query outlives its limit, a dead JVM reported with its stderr, and many queries per JVM."""

from __future__ import annotations

import os
import signal
import time
from decimal import Decimal

import pytest

from ontology.errors import ConfigError, QueryRefused, QuerySyntaxError, QueryTimeout, ReadOnlyError, StoreError
from store.jena import JenaEngine, jena_unavailable

_REASON = jena_unavailable()
pytestmark = [
    pytest.mark.slow,   # JVM starts (about a second each), compiling the server once per session
    pytest.mark.skipif(_REASON is not None, reason=f"Apache Jena cannot run here: {_REASON}"),
]

BASE = "http://example.org/kb/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"

KB = """\
@base <http://example.org/kb/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .

<Q1> rdfs:label "Zürich" ; <P31> <Q5> ;
     <population> [ <pred:value> "206"^^xsd:double ; <pred:unit> "1" ] .
<Q2> rdfs:label "東京 — Tōkyō" ; <P31> <Q5> ;
     <population> [ <pred:value> "1400"^^xsd:double ] .
<Q3> rdfs:label "Paris" ; <P31> <Q5> ;
     <population> [ <pred:value> "215"^^xsd:double ] .
<Q4> rdfs:label "Country A" ; <P31> <Q6> .
<Q5> rdfs:label "city" .
<Q6> rdfs:label "country" .
"""

CROSS_PRODUCT = ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . "
                 "?m ?n1 ?o . ?p ?q ?r . ?s ?t ?u . ?v ?w ?x . ?y ?z ?aa }")
"""About 24^9 = 2.6e12 solutions counted before the first row: runs for hours unless cancelled."""

QUERIES = [
    RDFS + "SELECT ?label WHERE { <Q1> rdfs:label ?label }",
    RDFS + "SELECT ?e WHERE { ?e rdfs:label \"東京 — Tōkyō\" }",
    "SELECT ?v WHERE { <Q1> <population> ?n . ?n <pred:value> ?v }",
    "SELECT (COUNT(?e) AS ?n) WHERE { ?e <P31> <Q5> }",
    "SELECT ?e ?v WHERE { ?e <population> ?n . ?n <pred:value> ?v } ORDER BY DESC(?v) LIMIT 2",
    "ASK { <Q4> <P31> <Q6> }",
    "ASK { <Q4> <P31> <Q5> }",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
]


def uri(name: str) -> dict:
    return {"type": "uri", "value": BASE + name}


def values(answer: dict, var: str) -> list:
    return [row[var]["value"] for row in answer["results"]["bindings"]]


@pytest.fixture(scope="module")
def turtle(tmp_path_factory):
    path = tmp_path_factory.mktemp("jena") / "kb.ttl"
    path.write_text(KB, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def engine(turtle):
    with JenaEngine(turtle, base_iri=BASE) as jena:
        print(f"\nJena {jena.jena_version} in memory: JVM start {jena.start_seconds:.2f} s "
              f"(load {jena.load_seconds:.2f} s, {jena.triples} triples)")
        yield jena


@pytest.fixture(scope="module")
def tdb2_engine(turtle, tmp_path_factory):
    location = tmp_path_factory.mktemp("jena-tdb2") / "db"
    with JenaEngine(turtle, base_iri=BASE, tdb2_dir=location) as jena:
        print(f"\nJena TDB2: JVM start {jena.start_seconds:.2f} s (load {jena.load_seconds:.2f} s)")
        yield jena


# ---- answers -------------------------------------------------------------------------------------

def test_select_bindings(engine):
    answer = engine.query(RDFS + "SELECT ?label WHERE { <http://example.org/kb/Q1> rdfs:label ?label }")
    assert answer["head"] == {"vars": ["label"]}
    assert answer["results"]["bindings"] == [{"label": {"type": "literal", "value": "Zürich"}}]
    assert engine.triples == 17


def test_unicode_literal_in_query_and_answer(engine):
    answer = engine.query(RDFS + "SELECT ?e WHERE { ?e rdfs:label \"東京 — Tōkyō\" }")
    assert answer["results"]["bindings"] == [{"e": uri("Q2")}]
    assert values(engine.query(RDFS + "SELECT ?l WHERE { <Q2> rdfs:label ?l }"), "l") == ["東京 — Tōkyō"]


def test_blank_node_value(engine):
    answer = engine.query("SELECT ?n ?v WHERE { <Q1> <population> ?n . ?n <pred:value> ?v }")
    [row] = answer["results"]["bindings"]
    assert row["n"]["type"] == "bnode"
    assert row["v"] == {"type": "literal", "datatype": XSD + "double", "value": "206"}


def test_ask(engine):
    assert engine.query("ASK { <Q4> <P31> <Q6> }") == {"head": {}, "boolean": True}
    assert engine.query("ASK { <Q4> <P31> <Q5> }") == {"head": {}, "boolean": False}


def test_count(engine):
    answer = engine.query("SELECT (COUNT(?e) AS ?n) WHERE { ?e <P31> <Q5> }")
    assert answer["results"]["bindings"] == [{"n": {"type": "literal", "datatype": XSD + "integer", "value": "3"}}]


def test_relative_iris_resolve_against_the_base(engine):
    query = RDFS + "SELECT ?l WHERE { <Q3> rdfs:label ?l }"
    assert values(engine.query(query), "l") == ["Paris"]                          # the engine's base_iri
    assert values(engine.query(query, base="http://example.org/other/"), "l") == []
    assert values(engine.query(query, base=BASE), "l") == ["Paris"]
    assert values(engine.query("BASE <http://example.org/kb/> " + query, base="http://example.org/other/"),
                  "l") == ["Paris"]                                                # BASE in the text wins


def test_order_by_limit(engine):
    answer = engine.query("SELECT ?e ?v WHERE { ?e <population> ?n . ?n <pred:value> ?v } "
                          "ORDER BY DESC(?v) LIMIT 2")
    assert values(answer, "e") == [BASE + "Q2", BASE + "Q3"]
    assert values(answer, "v") == ["1400", "215"]


# ---- errors --------------------------------------------------------------------------------------

def test_syntax_error_has_jenas_message_and_position(engine):
    with pytest.raises(QuerySyntaxError) as info:
        engine.query("SELECT ?s WHERE {\n  ?s ?p }")
    assert (info.value.line, info.value.column) == (2, 9)
    assert "Encountered" in str(info.value) and "Was expecting" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(QuerySyntaxError, match="Lexical error"):
        engine.query("SELEC ?s WHERE { ?s ?p ?o }")
    with pytest.raises(QuerySyntaxError, match="Was expecting"):
        engine.query("# an empty request is no update")


def test_update_is_refused_and_changes_nothing(engine):
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    before = values(engine.query(count), "n")
    for update in ("INSERT DATA { <Q9> <P31> <Q5> }", "DELETE WHERE { ?s ?p ?o }", "CLEAR DEFAULT"):
        with pytest.raises(ReadOnlyError, match="SPARQL Update refused"):
            engine.query(update)
    assert values(engine.query(count), "n") == before


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
    "SELECT * WHERE { ?s ?p ?o FILTER NOT EXISTS { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } } }",
    "SELECT * WHERE { { SELECT * WHERE { SERVICE SILENT <http://127.0.0.1:9/sparql> { ?s ?p ?o } } } }",
])
def test_service_is_refused(engine, query):
    with pytest.raises(QueryRefused, match="SERVICE refused"):
        engine.query(query)


def test_construct_is_refused(engine):
    with pytest.raises(QueryRefused, match="only SELECT and ASK"):
        engine.query("CONSTRUCT WHERE { ?s ?p ?o }")


def test_timeout_cancels_the_query_and_the_jvm_keeps_serving(engine):
    pid = engine.pid
    t0 = time.perf_counter()
    with pytest.raises(QueryTimeout, match="time limit of 0.5 s"):
        engine.query(CROSS_PRODUCT, timeout=0.5)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5 + engine.kill_margin
    assert engine.pid == pid                       # Jena cancelled it: same JVM
    assert engine.query("ASK { <Q4> <P31> <Q6> }")["boolean"] is True


def test_query_outliving_its_limit_kills_the_jvm(engine):
    # A request with no limit for Jena but a short wait here stands for a query Jena fails
    # to cancel: the JVM is killed at the deadline and the next query starts a new one.
    pid, starts = engine.pid, engine.starts
    with pytest.raises(QueryTimeout, match="JVM was killed"):
        engine._exchange({"query": CROSS_PRODUCT, "base": None, "timeout_ms": 0}, wait=1.0)
    assert engine.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert engine.query("ASK { <Q4> <P31> <Q6> }")["boolean"] is True
    assert engine.starts == starts + 1 and engine.pid != pid


def test_a_dead_jvm_is_reported_then_replaced(engine):
    os.kill(engine.pid, signal.SIGKILL)
    engine._process.wait(10)
    with pytest.raises(StoreError, match="exited with code -9"):
        engine.query("ASK {}")
    assert engine.query("ASK {}")["boolean"] is True


def test_failed_start_shows_the_jvm_stderr(turtle):
    with pytest.raises(StoreError, match=r"(?s)exited with code 1 while starting.*heap"):
        JenaEngine(turtle, jvm_options=["-Xmx1k"])


def test_malformed_turtle_is_reported_with_jenas_message(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("<a> <b> .\n", encoding="utf-8")
    with pytest.raises(StoreError, match=r"(?s)exited with code 1 while starting.*line: 1"):
        JenaEngine(bad)


def test_missing_turtle(tmp_path):
    with pytest.raises(ConfigError, match="Turtle file not found"):
        JenaEngine(tmp_path / "nope.ttl")


def test_unavailable_reason():
    assert "no Java runtime" in jena_unavailable(java="no-such-java-here")
    assert jena_unavailable(classpath=["/nonexistent/jena-arq.jar"]).startswith("classpath entries missing")


def test_closed_engine(turtle):
    jena = JenaEngine(turtle, base_iri=BASE)
    pid = jena.pid
    jena.close()
    jena.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(StoreError, match="closed"):
        jena.query("ASK {}")


# ---- TDB2 ----------------------------------------------------------------------------------------

def _same_value(answer: dict) -> dict:
    """Rows with numeric literals as numbers: TDB2 stores numbers as values and gives back
    canonical forms ("206.0e0" for "206"^^xsd:double), the in-memory dataset the text as loaded."""
    def cell(term: dict) -> tuple:
        if term.get("datatype") in (XSD + "double", XSD + "float", XSD + "decimal", XSD + "integer"):
            return term["type"], term["datatype"], Decimal(term["value"])
        return term["type"], term.get("datatype"), term["value"]
    if "boolean" in answer:
        return answer
    return {"head": answer["head"],
            "rows": [{var: cell(term) for var, term in row.items()} for row in answer["results"]["bindings"]]}


def test_tdb2_gives_the_same_answers(engine, tdb2_engine):
    assert tdb2_engine.triples == 17
    assert tdb2_engine.query(QUERIES[2])["results"]["bindings"][0]["v"]["value"] == "206.0e0"
    for query in QUERIES:
        assert _same_value(tdb2_engine.query(query)) == _same_value(engine.query(query)), query
    with pytest.raises(ReadOnlyError):
        tdb2_engine.query("INSERT DATA { <Q9> <P31> <Q5> }")
    with pytest.raises(QueryTimeout):
        tdb2_engine.query(CROSS_PRODUCT, timeout=0.5)
    assert tdb2_engine.query("ASK { <Q4> <P31> <Q6> }")["boolean"] is True


def test_tdb2_reopens_without_reloading(turtle, tmp_path):
    location = tmp_path / "db"
    with JenaEngine(turtle, base_iri=BASE, tdb2_dir=location) as first:
        assert first.triples == 17
    with JenaEngine(turtle, base_iri=BASE, tdb2_dir=location) as second:
        assert second.triples is None              # opened as it was, not loaded again
        assert values(second.query(QUERIES[3]), "n") == ["3"]


# ---- throughput ----------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["engine", "tdb2_engine"])
def test_thousand_small_queries_in_one_jvm(request, which):
    jena = request.getfixturevalue(which)
    pid = jena.pid
    t0 = time.perf_counter()
    for i in range(1000):
        answer = jena.query(f"SELECT ?l WHERE {{ <Q{i % 6 + 1}> <http://www.w3.org/2000/01/rdf-schema#label> ?l }}")
        assert len(answer["results"]["bindings"]) == 1
    elapsed = time.perf_counter() - t0
    print(f"\n{which}: 1000 queries in {elapsed:.2f} s, {1000 / elapsed:.0f} queries/s")
    assert jena.pid == pid
