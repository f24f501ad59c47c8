"""``synkqa kb build|stats|validate`` and ``synkqa sparql``, in-process with CliRunner."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from typer.testing import CliRunner

from synkqa.cli import app

runner = CliRunner()


def run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def one_error_line(result) -> str:
    """The command failed with exactly one ``error:`` line on stderr and no traceback."""
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- kb build ----------------------------------------------------------------------------------

def test_build_twice_in_different_dirs_gives_the_same_bytes(tmp_path):
    reports = []
    for name in ("a", "b"):
        result = run("kb", "build", "--out", str(tmp_path / name / "kb.ttl"), "--json")
        assert result.exit_code == 0, result.stderr
        reports.append(json.loads(result.stdout))
    a, b = reports
    assert a["sha256"] == b["sha256"] == hashlib.sha256((tmp_path / "a" / "kb.ttl").read_bytes()).hexdigest()
    assert a["triples"] == 46360 and a["generated"] is True
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["kb.ttl"]  # no temporary left


def test_build_into_a_store_then_reopen_without_reload(tmp_path):
    store = tmp_path / "store"
    first = run("kb", "build", "--store", str(store), "--json")
    assert first.exit_code == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["store"]["triples"] == 46360
    second = json.loads(run("kb", "build", "--store", str(store), "--json").stdout)
    assert second["generated"] is False  # the cached Turtle is reused
    assert second["store"]["loaded"] is False  # and the store is not reloaded
    text = run("kb", "build", "--store", str(store))
    assert "already loaded (not reloaded)" in text.stdout


def test_build_refuses_an_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run("kb", "build", "--out", str(blocker / "kb.ttl"))
    assert result.exit_code == 1
    assert "is not a directory" in one_error_line(result)
    result = run("kb", "build", "--store", str(blocker))
    assert result.exit_code == 1
    assert "not a directory" in one_error_line(result)


# ---- kb stats ----------------------------------------------------------------------------------

def test_stats_json_reports_table_i_from_sparql():
    result = run("kb", "stats", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["entities"], data["Person"], data["City"], data["Country"], data["Organization"]) == \
        (8120, 6000, 1200, 120, 800)
    assert (data["relation_edges"], data["attribute_values"]) == (14000, 16120)
    assert (data["relation_types"], data["attribute_types"]) == (4, 7)
    assert data["matches"] is True and data["paper"]["entities"] == 8120


def test_stats_table_shows_the_paper_beside_the_measurement():
    result = run("kb", "stats")
    assert result.exit_code == 0, result.stderr
    assert "16120" in result.stdout and "paper" in result.stdout and "DIFFERS" not in result.stdout


def test_stats_fails_when_the_counts_differ_from_the_expected(monkeypatch):
    """Measured on the real store, compared with a deliberately wrong expectation: exit 1."""
    from synkqa.benchmark import world
    real = world.expected_table_i
    monkeypatch.setattr(world, "expected_table_i", lambda scale: {**real(scale), "City": 1201})
    result = run("kb", "stats")
    assert result.exit_code == 1
    assert "DIFFERS" in result.stdout
    assert "City 1200 != 1201" in one_error_line(result)


def test_stats_on_an_unreachable_endpoint_is_one_line():
    result = run("kb", "stats", "--endpoint", "http://127.0.0.1:9/sparql", "--timeout", "2")
    assert result.exit_code == 1
    assert "127.0.0.1:9" in one_error_line(result)


# ---- kb validate -------------------------------------------------------------------------------

def test_validate_reports_the_broken_node(tmp_path):
    broken = tmp_path / "broken.ttl"
    broken.write_text(
        "@prefix sk: <http://synkqa.org/ontology#> . @prefix ske: <http://synkqa.org/entity/> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "ske:Country_000 a sk:Country ; rdfs:label \"Country_000\" ; sk:gdp_billion_usd \"big\" .\n")
    result = run("kb", "validate", "--file", str(broken), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["conforms"] is False
    assert {v["focus"] for v in report["violations"]} == {"http://synkqa.org/entity/Country_000"}
    missing = run("kb", "validate", "--file", str(tmp_path / "nope.ttl"))
    assert missing.exit_code == 1 and "not found" in one_error_line(missing)


def without_entity(turtle, out, name: str):
    """A copy of ``turtle`` without ``name``: every triple whose subject or object it is."""
    import pyoxigraph as ox
    from ontology import ENTITY_NS
    node = ox.NamedNode(ENTITY_NS + name)
    kept = (t for t in ox.parse(path=str(turtle), format=ox.RdfFormat.TURTLE) if node not in (t.subject, t.object))
    ox.serialize(kept, output=str(out), format=ox.RdfFormat.TURTLE)
    return out


@pytest.fixture()
def shacl_conforms(monkeypatch):
    """SHACL stubbed to 'conforms' (it takes seconds on the whole KB and cannot see a removed
    entity anyway): these tests are about the counts. The slow test below runs the real one."""
    import ontology.shacl
    monkeypatch.setattr(ontology.shacl, "validate", lambda path: ontology.shacl.ShaclReport(True, ()))


def test_validate_reports_each_count_that_differs_from_the_generator(tmp_path, kb_turtle, shacl_conforms):
    from synkqa.benchmark import kbgen
    n = kbgen.BASE_COUNTS["Person"]                         # persons per scale unit, from the generator
    cut = without_entity(kb_turtle, tmp_path / "cut.ttl", "Person_00371")
    result = run("kb", "validate", "--file", str(cut), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["conforms"] is False and report["violations"] == []      # SHACL alone would pass it
    counts = report["counts"]
    assert (counts["seed"], counts["scale"], counts["conforms"]) == (42, 1, False)
    person_rows = {"Person", "entities", "born_in", "works_at", "birth_year", "height_cm"}
    assert {v["name"] for v in counts["violations"]} == person_rows
    assert all(v["found"] == v["expected"] - 1 for v in counts["violations"])
    assert f"Person: {n - 1:,} entities, expected {n:,} for scale 1" in \
        [v["message"] for v in counts["violations"]]
    text = run("kb", "validate", "--file", str(cut))
    assert text.exit_code == 1 and "6 count violation(s)" in text.stdout
    assert f"Person: {n - 1:,} entities, expected {n:,} for scale 1" in text.stdout
    # The intact file conforms; against another scale it does not; --no-expect-counts skips.
    intact = run("kb", "validate", "--file", str(kb_turtle))
    assert intact.exit_code == 0 and "conforms" in intact.stdout and "the counts are those of" in intact.stdout
    scale2 = run("kb", "validate", "--file", str(kb_turtle), "--scale", "2")
    assert scale2.exit_code == 1 and f"Person: {n:,} entities, expected {2 * n:,} for scale 2" in scale2.stdout
    skipped = run("kb", "validate", "--file", str(cut), "--no-expect-counts")
    assert skipped.exit_code == 0 and "counts not checked: --no-expect-counts" in skipped.stdout


def test_validate_holds_only_the_synkqa_vocabulary_to_its_counts(shacl_conforms):
    campus = "tests/fixtures/kb/campus.ttl"                  # a KB of its own schema (docs/KB.md)
    result = run("kb", "validate", "--file", campus, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["counts"] is None and "does not use the SynKQA-Pro ontology" in report["counts_skipped"]
    forced = run("kb", "validate", "--file", campus, "--expect-counts", "--json")
    assert forced.exit_code == 1
    names = {v["name"]: v for v in json.loads(forced.stdout)["counts"]["violations"]}
    # Counted by IRI: the campus cv:Person is not the SynKQA-Pro sk:Person.
    assert names["Person"]["found"] == 0
    assert names["<http://example.org/campus/vocab#Person>"]["expected"] == 0


@pytest.mark.slow
def test_validate_with_shacl_fails_a_kb_with_one_person_removed(tmp_path, kb_turtle):
    """End to end, real SHACL (about 5 s a file): one person removed with all their triples
    still satisfies every shape, but not Table I."""
    from synkqa.benchmark import kbgen
    n = kbgen.BASE_COUNTS["Person"]
    cut = without_entity(kb_turtle, tmp_path / "cut.ttl", "Person_00371")
    result = run("kb", "validate", "--file", str(cut))
    assert result.exit_code == 1
    assert "every SHACL invariant holds" in result.stdout
    assert f"Person: {n - 1:,} entities, expected {n:,} for scale 1" in result.stdout
    intact = run("kb", "validate", "--file", str(kb_turtle))
    assert intact.exit_code == 0, intact.output
    assert f"{kb_turtle}: conforms: every SHACL invariant holds" in intact.stdout


# ---- synkqa sparql -----------------------------------------------------------------------------

def test_sparql_formats():
    query = "SELECT ?c ?pop WHERE { ske:Person_00371 sk:born_in ?c . ?c sk:population ?pop }"
    as_json = run("sparql", query, "--format", "json")
    assert as_json.exit_code == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["variables"] == ["c", "pop"] and len(data["rows"]) == 1
    assert data["rows"][0]["c"].startswith("http://synkqa.org/entity/City_")
    assert isinstance(data["rows"][0]["pop"], int)
    as_csv = run("sparql", query, "--format", "csv")
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0] == ["c", "pop"] and rows[1][0] == data["rows"][0]["c"]
    table = run("sparql", query)
    assert "ske:City_" in table.stdout and "1 row(s)" in table.stderr
    ask = run("sparql", "ASK { ske:Person_00371 sk:born_in ?c }", "--format", "json")
    assert json.loads(ask.stdout) == {"boolean": True}
    assert run("sparql", "ASK { ske:Person_00371 sk:born_in ske:Nowhere }").stdout.strip() == "no"


def test_sparql_reads_the_ontology_graph():
    result = run("sparql", "SELECT ?l WHERE { GRAPH <http://synkqa.org/ontology> { sk:born_in rdfs:label ?l } }",
                 "--format", "csv")
    assert result.stdout.splitlines() == ["l", "born in"]


def test_sparql_file_stdin_and_out(tmp_path):
    qfile = tmp_path / "q.rq"
    qfile.write_text("# count people\nSELECT (COUNT(*) AS ?n)\nWHERE { ?p a sk:Person }\n")
    result = run("sparql", "--file", str(qfile), "--format", "csv", "--out", str(tmp_path / "r.csv"))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "r.csv").read_text().splitlines() == ["n", "6000"]
    piped = run("sparql", "--file", "-", "--format", "csv", input=qfile.read_text())
    assert piped.stdout.splitlines() == ["n", "6000"]


def test_sparql_update_is_refused_and_nothing_changes():
    result = run("sparql", "DELETE WHERE { ?s ?p ?o }")
    assert result.exit_code == 1
    assert "refused" in one_error_line(result)
    count = run("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--format", "csv")
    assert count.stdout.splitlines() == ["n", "46360"]


def test_sparql_syntax_error_has_line_and_column():
    result = run("sparql", "SELECT ?x WHERE {\n  ?x sk:born_in ?c .\n  FILTER(?c = )\n}")
    assert result.exit_code == 1
    assert "line 3, column 3" in one_error_line(result)


def test_sparql_limits():
    limited = run("sparql", "SELECT ?p WHERE { ?p a sk:Person }", "--limit", "5", "--format", "csv")
    assert limited.exit_code == 0
    assert len(limited.stdout.splitlines()) == 6 and "more rows exist" in limited.stderr
    slow = run("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }",
               "--timeout", "1")
    assert slow.exit_code == 1
    assert "time limit of 1 s" in one_error_line(slow) and "--timeout" in slow.stderr


@pytest.mark.parametrize("args, code, words", [
    (("sparql", "--file", "/nonexistent/q.rq"), 1, "query file not found"),
    (("sparql",), 2, "exactly one"),
    (("sparql", "ASK {}", "--file", "x.rq"), 2, "exactly one"),
    (("sparql", "ASK {}", "--out", "/dev/null/x"), 1, "not a directory"),
    (("sparql", "ASK {}", "--endpoint", "ftp://example.org/sparql"), 1, "not an http(s) endpoint"),
])
def test_sparql_bad_input_is_one_line(args, code, words):
    result = run(*args)
    assert result.exit_code == code
    assert words in one_error_line(result)


def test_unknown_flags_are_usage_errors_without_traceback():
    for args in (("sparql", "--bogus", "ASK {}"), ("kb", "build", "--bogus"), ("kb", "stats", "--scale", "0")):
        result = run(*args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.stderr + result.stdout


def test_help_texts():
    for args in (("kb", "--help"), ("kb", "build", "--help"), ("kb", "stats", "--help"),
                 ("sparql", "--help")):
        result = run(*args)
        assert result.exit_code == 0 and "Usage" in result.stdout
