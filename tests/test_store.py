"""The embedded Oxigraph store: Table I from SPARQL, graph layout, round trip, read-only
queries, syntax errors with positions, time and row limits, on-disk reopen without reload."""

from __future__ import annotations

from decimal import Decimal

import pyoxigraph as ox
import pytest

from kopl2sparql.errors import QuerySyntaxError, QueryTimeout, ReadOnlyError, StoreError
from ontology import ENTITY_NS, NS, PREFIXES
from store.oxigraph import (OxigraphStore, file_sha256, query_form, query_in_subprocess,
                            refuse_update)
from store.results import SelectResult
from synkqa.benchmark import world

CROSS_PRODUCT_COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
"""~10^14 solutions counted before the first row: never finishes, cannot be interrupted in-process."""


def _count(store) -> int:
    return store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0][0]


def test_table_i_exact_from_sparql(kb_store):
    found = world.table_i(kb_store)
    assert found["measured"] == {
        "Person": 6000, "City": 1200, "Country": 120, "Organization": 800, "entities": 8120,
        "relation_types": 4, "relation_edges": 14000, "attribute_types": 7, "attribute_values": 16120}
    assert found["measured"] == {k: v for k, v in world.expected_table_i(1).items()}
    assert found["relations"] == {"born_in": 6000, "headquarters_in": 800, "located_in": 1200,
                                  "works_at": 6000}
    assert world.expected_table_i(100)["relation_edges"] == 1_400_000
    assert world.expected_table_i(100)["attribute_types"] == 7


def test_default_graph_is_the_kb_and_the_ontology_is_a_named_graph(kb_store):
    assert len(kb_store) == 46360 == _count(kb_store)
    labels = kb_store.query(
        "PREFIX skos: <http://www.w3.org/2004/02/skos/core#>\n"
        "SELECT ?alt WHERE { GRAPH <http://synkqa.org/ontology> { sk:born_in skos:altLabel ?alt } }",
        prefixes=PREFIXES)
    assert "birthplace" in labels.column("alt")
    assert kb_store.query("ASK { sk:born_in ?p ?o }", prefixes=PREFIXES) is False  # schema not in the default graph
    assert kb_store.record.triples == 46360


def test_values_come_back_as_plain_python(kb_store):
    row = kb_store.query(
        "SELECT ?c ?pop ?area ?label WHERE { ske:City_0736 a ?c ; sk:population ?pop ; "
        "sk:area_km2 ?area ; rdfs:label ?label }", prefixes=PREFIXES).rows[0]
    assert row[0] == NS + "City" and isinstance(row[1], int) and isinstance(row[2], Decimal)
    assert row[3] == "City_0736"
    opt = kb_store.query("SELECT ?x ?y WHERE { BIND(1 AS ?x) OPTIONAL { ?x sk:nothing ?y } }",
                         prefixes=PREFIXES)
    assert opt.rows == [(1, None)]


def test_turtle_to_store_to_dump_keeps_the_triple_set(kb_turtle, kb_store, tmp_path):
    original = set(ox.parse(path=str(kb_turtle), format=ox.RdfFormat.TURTLE))
    for name in ("dump.nt", "dump.ttl"):
        kb_store.dump(tmp_path / name)
        dumped = set(ox.parse(path=str(tmp_path / name)))
        assert dumped == original, name
    assert set(ox.parse(kb_store.dump(), format=ox.RdfFormat.N_TRIPLES)) == original
    with pytest.raises(StoreError, match="format"):
        kb_store.dump(tmp_path / "dump.unknown")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.nt", "dump.ttl"]  # no leftovers


UPDATES = [
    "INSERT DATA { ske:X sk:born_in ske:City_0001 }",
    "DELETE WHERE { ?s sk:born_in ?o }",
    "delete { ?s ?p ?o } insert { ?s ?p 1 } where { ?s ?p ?o }",
    "PREFIX ex: <http://example.org/>\n# a comment\nCLEAR DEFAULT",
    "DROP ALL", "LOAD <http://example.org/kb.ttl>", "CREATE GRAPH <http://example.org/g>",
    "ADD DEFAULT TO <http://example.org/g>", "MOVE DEFAULT TO <http://example.org/g>",
    "COPY DEFAULT TO <http://example.org/g>",
    "WITH <http://synkqa.org/ontology> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
]


@pytest.mark.parametrize("update", UPDATES)
def test_updates_are_refused_and_the_data_stays(kb_store, update):
    with pytest.raises(ReadOnlyError, match="read-only"):
        kb_store.query(update)
    assert _count(kb_store) == 46360
    assert kb_store.query("ASK { ske:Person_00371 sk:born_in ?c }", prefixes=PREFIXES) is True


def test_prefixes_are_strict_unless_given(kb_store):
    """Undeclared prefixes fail by default, so a query that runs here runs on any endpoint."""
    with pytest.raises(QuerySyntaxError, match="undefined prefix 'sk:'"):
        kb_store.query("ASK { ?p sk:born_in ?c }")
    assert kb_store.query("ASK { ?p sk:born_in ?c }", prefixes=PREFIXES) is True


def test_query_form_skips_the_prologue():
    assert query_form("BASE <http://x/>\nPREFIX a: <http://a/>  # c\n  ask {}") == "ASK"
    assert query_form("  # only a comment") is None
    refuse_update("SELECT ?insert WHERE { ?insert ?p ?o }")  # a variable named like an update


def test_updates_cannot_sneak_past_the_parser(kb_store):
    """A query followed by an update is not a query: the parser rejects it, nothing runs."""
    with pytest.raises(QuerySyntaxError):
        kb_store.query("SELECT * WHERE { ?s ?p ?o } ; DROP ALL")
    assert _count(kb_store) == 46360


@pytest.mark.parametrize("text, line, column, words", [
    ("SELECT ?x WHERE {\n  ?x sk:born_in ?c .\n  FILTER(?c = )\n}", 3, 3, "FILTER"),
    ("SELECT (COUNT(?x) AS ?n) WHERE { ?x ?p ?o } GROUP ?x", 1, 45, "GROUP"),
    ("SELECT ?x WHERE {\n ?x foo:bar ?o }", 2, 5, "undefined prefix 'foo:'"),
    ("SELEC ?x WHERE { ?x ?p ?o }", 1, 1, "SELEC"),
])
def test_syntax_errors_give_line_and_column(kb_store, text, line, column, words):
    with pytest.raises(QuerySyntaxError) as info:
        kb_store.query(text, prefixes=PREFIXES)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(info.value)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_row_limit(kb_store):
    result = kb_store.query("SELECT ?s WHERE { ?s a sk:Person }", limit=10, prefixes=PREFIXES)
    assert len(result.rows) == 10 and result.truncated
    exact = kb_store.query("SELECT ?s WHERE { ?s a sk:Country }", limit=120, prefixes=PREFIXES)
    assert len(exact.rows) == 120 and not exact.truncated


@pytest.mark.timeout(60)          # a limit that did not stop the query would hang here
def test_time_limit_in_process_stops_a_streaming_query(kb_store):
    with pytest.raises(QueryTimeout, match="time limit of 0.5 s"):
        kb_store.query("SELECT * WHERE { ?a ?p ?b . ?c ?q ?d }", timeout=0.5)
    assert kb_store.query("ASK { ?s ?p ?o }", timeout=5) is True


def test_construct_gives_triples(kb_store):
    result = kb_store.query("CONSTRUCT WHERE { ske:Person_00371 sk:born_in ?c }", prefixes=PREFIXES)
    assert result.variables == ("subject", "predicate", "object")
    assert result.rows[0][:2] == (ENTITY_NS + "Person_00371", NS + "born_in")


# ---- on disk -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def disk_store(kb_turtle, tmp_path_factory):
    """A scale-1 on-disk store, built once and closed (tests reopen it)."""
    path = tmp_path_factory.mktemp("disk") / "store"
    assert world.ensure_store(42, 1, path=path) == path
    return path


def test_reopening_an_on_disk_store_does_not_reload(disk_store, kb_turtle):
    store = OxigraphStore(disk_store)
    assert store.holds(kb_turtle)
    assert store.record.turtle_sha256 == file_sha256(kb_turtle)
    assert store.ensure_loaded(kb_turtle) is False
    assert _count(store) == 46360
    assert world.table_i(store)["measured"]["entities"] == 8120
    del store
    # the loaded content survives closing; a second ensure_store is a no-op
    assert world.ensure_store(42, 1, path=disk_store) == disk_store
    assert OxigraphStore(disk_store, read_only=True).record.triples == 46360


def test_an_interrupted_load_is_redone_and_a_new_file_replaces_the_old(tmp_path, kb_turtle):
    path = tmp_path / "store"
    store = OxigraphStore(path)
    # a bulk load that "died" before the record was written
    store.raw.bulk_load(path=str(kb_turtle), format=ox.RdfFormat.TURTLE)
    assert store.record is None and not store.holds(kb_turtle)
    assert store.ensure_loaded(kb_turtle) is True
    assert _count(store) == 46360
    small = tmp_path / "small.ttl"
    small.write_text("<http://synkqa.org/entity/A> <http://www.w3.org/2000/01/rdf-schema#label> \"A\" .\n")
    assert store.ensure_loaded(small) is True
    assert _count(store) == 1 and store.record.source == "small.ttl"
    assert store.ensure_loaded(small) is False


def test_read_only_store_refuses_writes_and_locks_are_reported(disk_store, kb_turtle, tmp_path):
    import subprocess
    import sys

    reader = OxigraphStore(disk_store, read_only=True)
    with pytest.raises(ReadOnlyError):
        reader.load_turtle(kb_turtle)
    writer = OxigraphStore(tmp_path / "locked")  # holds the write lock while the child tries
    code = ("from store.oxigraph import OxigraphStore\nfrom kopl2sparql.errors import StoreError\n"
            f"try:\n    OxigraphStore({str(tmp_path / 'locked')!r})\n"
            "except StoreError as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("StoreLocked ") and "in use by another process" in out.stdout
    del writer


def test_bad_store_paths(tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not an Oxigraph store"):
        OxigraphStore(tmp_path / "junk")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        OxigraphStore(tmp_path / "file")
    with pytest.raises(StoreError, match="no store at"):
        OxigraphStore(tmp_path / "missing", read_only=True)
    assert list((tmp_path / "junk").iterdir()) == [tmp_path / "junk" / "notes.txt"]


# ---- queries in a child process ------------------------------------------------------------------

def test_subprocess_query_matches_in_process(disk_store, kb_store):
    sparql = "SELECT ?p ?y WHERE { ?p sk:born_in ske:City_0736 ; sk:birth_year ?y } ORDER BY ?p"
    remote = query_in_subprocess(disk_store, sparql, timeout=60)
    assert isinstance(remote, SelectResult)
    assert remote == kb_store.query(sparql, prefixes=PREFIXES)
    assert query_in_subprocess(disk_store, "ASK { ske:Person_00371 ?p ?o }") is True
    limited = query_in_subprocess(disk_store, "SELECT ?s WHERE { ?s a sk:Person }", limit=3)
    assert len(limited.rows) == 3 and limited.truncated


@pytest.mark.timeout(60)          # a limit that did not stop the query would hang here
def test_subprocess_time_limit_really_stops_the_query(disk_store):
    with pytest.raises(QueryTimeout, match="time limit of 1 s"):
        query_in_subprocess(disk_store, CROSS_PRODUCT_COUNT, timeout=1)


def test_subprocess_errors_keep_their_type_and_position(disk_store, tmp_path):
    with pytest.raises(QuerySyntaxError) as info:
        query_in_subprocess(disk_store, "SELECT ?x WHERE {\n ?x foo:bar ?o }")
    assert (info.value.line, info.value.column) == (2, 5)
    with pytest.raises(ReadOnlyError):
        query_in_subprocess(disk_store, "DROP ALL")
    with pytest.raises(StoreError, match="no store at"):
        query_in_subprocess(tmp_path / "missing", "ASK {}")
    half = tmp_path / "half"
    OxigraphStore(half).raw.add(ox.Quad(ox.NamedNode("http://a"), ox.NamedNode("http://b"), ox.Literal("c")))
    with pytest.raises(StoreError, match="no complete KB"):
        query_in_subprocess(half, "ASK {}")


# ---- SERVICE: a query must not make this machine call other endpoints ---------------------------

def test_service_is_refused_and_nothing_is_sent(kb_store, fake_endpoint):
    from kopl2sparql.errors import QueryRefused
    query = f"SELECT * WHERE {{ SERVICE <{fake_endpoint.url}> {{ ?s ?p ?o }} }}"
    for text in (query, query.lower(), "# a comment\nSELECT * { service\n<" + fake_endpoint.url + "> { ?s ?p ?o } }"):
        with pytest.raises(QueryRefused, match="SERVICE refused"):
            kb_store.query(text)
    assert fake_endpoint.requests == []
    # The word elsewhere is not the keyword: a variable, a string, an IRI, a comment.
    assert kb_store.query("SELECT ?service WHERE { ?service ?p 'SERVICE' } LIMIT 1 # SERVICE").variables == ("service",)


def test_service_runs_only_when_allowed(kb_store, fake_endpoint):
    fake_endpoint.respond(200, b'{"head": {"vars": ["s"]}, "results": {"bindings": []}}')
    kb_store.query(f"SELECT * WHERE {{ SERVICE <{fake_endpoint.url}> {{ ?s ?p ?o }} }}", allow_service=True)
    assert len(fake_endpoint.requests) == 1            # a real request on loopback: the option works


def test_cli_sparql_refuses_service_on_every_path(fake_endpoint):
    from typer.testing import CliRunner
    from synkqa.cli import app
    query = f"SELECT * WHERE {{ SERVICE <{fake_endpoint.url}> {{ ?s ?p ?o }} }}"
    for extra in ([], ["--endpoint", fake_endpoint.url]):
        result = CliRunner().invoke(app, ["sparql", *extra, query])
        assert result.exit_code == 1 and "SERVICE refused" in result.output, result.output
    assert fake_endpoint.requests == []
