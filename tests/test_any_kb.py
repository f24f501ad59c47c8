"""Any KB: a second KB with a schema of its own (tests/fixtures/kb/campus.ttl) runs through the
whole language layer, and no code names its classes.

The campus KB has subclasses, an entity with two types, multi-valued relations and
attributes, decimals, years and strings, labels that are not ids and an ambiguous label.
Random well-typed programs drawn from its schema must get the same answer (or the same
kind of error) from the native interpreter, the embedded Oxigraph store and Virtuoso.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kopl2sparql.errors import ExecutionError, ProgramError
from kopl2sparql.sampling import random_programs
from kopl2sparql.syntax import parse
from store.executor import SparqlExecutor
from synkqa.cli import app
from synkqa.benchmark.executors import get_executor

CAMPUS = Path(__file__).parent / "fixtures" / "kb" / "campus.ttl"


@pytest.fixture(scope="module")
def native():
    return get_executor("native", kb=CAMPUS)


@pytest.fixture(scope="module")
def oxigraph():
    return get_executor("oxigraph", kb=CAMPUS)


def _numbers(native):
    schema, values = native.schema, native.index.values
    return {a: sorted({v for v in values[a].values() if not isinstance(v, tuple)}, key=float)
            for a, info in schema.attributes.items() if info.numeric}


def _outcome(executor, program):
    try:
        return "answer", executor.execute(program)
    except ExecutionError:
        return "execution error", None


def _disagreements(first, second, programs):
    out = []
    for program in programs:
        a, b = _outcome(first, program), _outcome(second, program)
        if a != b:
            out.append(f"{program.canonical()}\n  {first.name}: {a}\n  {second.name}: {b}")
    return out


def test_schema_comes_from_the_rdf(native):
    schema = native.schema
    assert set(schema.classes) >= {"Person", "Student", "Professor", "University", "Course"}
    assert schema.ancestors("Student") == {"Student", "Person", "Agent"}
    assert schema.relations["advisor"].domain == "Student"          # inferred from the data
    assert schema.relations["advisor"].functional and not schema.relations["advisor"].total
    assert not schema.relations["memberOf"].functional
    assert schema.attributes["founded"].value_type == "year"
    assert schema.attributes["title"].value_type == "string"
    assert schema.attributes["gpa"].datatype == "decimal"
    assert schema.resolve("Alex Kim") == ("s01", "s02")
    assert schema.entity_classes("p06") == {"Professor", "Student"}


@pytest.mark.parametrize("text, answer", [
    ("Find(Alex Kim);Relate(advisor);QueryName()", "Ada Lovelace|Edsger Dijkstra"),
    ("Find(Grace Hopper);Relate(advisor);QueryName()", "Edsger Dijkstra"),
    ("Find(Linear Algebra);RelateInv(teaches);Count()", "2"),
    ("Find(Northport University);QueryAttr(founded)", "1861"),
    ("Find(Calculus I);QueryAttr(title)", "Differential calculus"),
    ("Find(Computer Science);RelateInv(memberOf);Argmax(gpa);QueryName()", "Grace Hopper"),
    ("Find(Mathematics);RelateInv(memberOf);FilterNum(age,<,30);Count()", "3"),   # two departments
    ("Find(Dara Singh);QueryAttr(gpa);Find(Alex Kim);Relate(advisor);Argmin(age);QueryAttr(age);Compare(<)", "yes"),
    ("Find(Ada Lovelace);VerifyRel(memberOf,Northport University)", "yes"),
    ("Find(Professor Nobody);Count()", None),
    ("Find(Ada Lovelace);QueryAttr(nickname)", None),               # two values: an error, not a guess
])
def test_programs_on_native_and_oxigraph(native, oxigraph, text, answer):
    program = parse(text)
    for executor in (native, oxigraph):
        if answer is None:
            with pytest.raises(ExecutionError):
                executor.execute(program)
        else:
            assert executor.execute(program).canonical() == answer, executor.name


def test_type_errors_use_the_kbs_schema(native):
    with pytest.raises(ProgramError, match="did you mean teaches"):
        native.execute(parse("Find(Ada Lovelace);Relate(teachs);QueryName()"))
    with pytest.raises(ProgramError, match="needs Department entities"):
        native.execute(parse("Find(Paul Dirac);Relate(partOf);QueryName()"))
    with pytest.raises(ProgramError, match="numeric attribute"):
        native.execute(parse("Find(Calculus I);RelateInv(enrolledIn);Argmax(nickname);QueryName()"))


def test_random_programs_agree_native_and_oxigraph(native, oxigraph):
    programs = random_programs(native.schema, 1500, seed=13, numbers=_numbers(native))
    assert not _disagreements(native, oxigraph, programs)
    ops = {s.op for p in programs for s in p.steps}
    assert ops >= {"Find", "Relate", "RelateInv", "And", "Or", "Diff", "Argmax", "Argmin", "FilterNum",
                   "Count", "QueryAttr", "QueryName", "Compare", "VerifyNum", "VerifyRel"}


@pytest.mark.slow
def test_5000_random_programs_agree_on_native_oxigraph_and_virtuoso(native, oxigraph, tmp_path_factory):
    from tests.endpoint_servers import require_binary, start_virtuoso
    require_binary("virtuoso-t")
    programs = random_programs(native.schema, 5000, seed=29, numbers=_numbers(native))
    assert not _disagreements(native, oxigraph, programs)
    server = start_virtuoso(CAMPUS, tmp_path_factory.mktemp("virtuoso-campus"))
    try:
        virtuoso = SparqlExecutor(server.store(), native.schema, name="virtuoso")
        found = _disagreements(native, virtuoso, programs)
        assert not found, f"{len(found)} disagreements, first:\n" + "\n".join(found[:5])
    finally:
        server.stop()


def test_cli_runs_any_kb():
    runner = CliRunner()
    result = runner.invoke(app, ["execute", "--kb", str(CAMPUS), "--cross-check",
                                 "Find(Alex Kim);Relate(advisor);QueryName()"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Ada Lovelace|Edsger Dijkstra"
    result = runner.invoke(app, ["compile", "--kb", str(CAMPUS), "Find(Calculus I);RelateInv(teaches);Count()"])
    assert result.exit_code == 0, result.output
    assert "PREFIX cv: <http://example.org/campus/vocab#>" in result.output
    assert "cid:k1" in result.output and "COUNT(DISTINCT ?prof)" in result.output
    result = runner.invoke(app, ["execute", "--kb", str(CAMPUS) + ".missing", "Find(x);Count()"])
    assert result.exit_code == 1 and "not found" in result.output


def test_cli_sparql_and_stats_on_any_kb():
    runner = CliRunner()
    result = runner.invoke(app, ["sparql", "--kb", str(CAMPUS), "--format", "json",
                                 "SELECT ?l WHERE { ?p cv:teaches cid:k2 ; rdfs:label ?l } ORDER BY ?l"])
    assert result.exit_code == 0, result.output
    assert '"Ada Lovelace"' in result.output and '"Emmy Noether"' in result.output
    result = runner.invoke(app, ["kb", "stats", "--kb", str(CAMPUS), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["entities"] == 33
    assert stats["classes"]["Person"] == 16 and stats["classes"]["Agent"] == 24     # subclasses counted
    assert stats["relations"]["memberOf"] == 21 and stats["attributes"]["nickname"] == 4


UNTYPED = """@prefix ex: <http://example.org/u/> .
ex:a a ex:T ; ex:r ex:b ; ex:list ( ex:a ex:b ) .
"""


def test_an_entity_without_a_type_exists_on_every_engine(tmp_path):
    """ex:b occurs only as an object: the schema knows it without a type. Every engine finds it,
    the embedded store directly and through the generic (endpoint) path; a predicate whose
    only objects are blank nodes (an RDF list) is neither a relation nor an attribute."""
    from kopl2sparql.kbindex import KBIndex
    from store.executor import NativeExecutor
    from store.oxigraph import OxigraphStore
    path = tmp_path / "untyped.ttl"
    path.write_text(UNTYPED)
    native = get_executor("native", kb=path)
    schema = native.schema
    assert schema.entity_classes("b") is None and "list" not in schema.attributes and "list" not in schema.relations
    store = OxigraphStore()
    store.load_turtle(path, with_ontology=False)

    class QueryOnly:                      # what an endpoint offers: queries, no triple index
        def query(self, sparql):
            return store.query(sparql)

    engines = [native, NativeExecutor(KBIndex.from_turtle(path, schema), schema),
               get_executor("oxigraph", kb=path), SparqlExecutor(QueryOnly(), schema, name="generic")]
    for engine in engines:
        assert engine.execute(parse("Find(b);Count()")).canonical() == "1", engine.name
        assert engine.execute(parse("Find(b);RelateInv(r);QueryName()")).canonical() == "a", engine.name
        with pytest.raises(ExecutionError, match="unknown entity 'zz'"):
            engine.execute(parse("Find(zz);Count()"))
