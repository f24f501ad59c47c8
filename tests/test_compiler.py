"""KoPL -> SPARQL: fixture files pin the exact query text and the answer on both engines.

Each file in ``tests/fixtures/compile/`` is a runnable SPARQL query whose leading comment
block carries the case::

    # What the case shows (free text).
    # program: Find(Person_00371);Relate(born_in);QueryName()
    # answer: City_0359                  (or  # error: <the ExecutionError message>)
    # guards: entity Person_00371 @1     (what the executor checks before the query:
    #          entity E @step, value E.attr @step, singleton attr @step)
    PREFIX sk: <http://synkqa.org/ontology#>
    ...

Answers are on the seed-42, scale-1 KB. After an intended change of the compiler's output,
``python tests/test_compiler.py --regenerate`` rewrites the query, answer and guard lines
from the current code (review the diff: it is the change).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kopl2sparql.compiler import AttributeGuard, EntityGuard, SingletonGuard, compile_program
from kopl2sparql.errors import ConfigError, ExecutionError, ProgramTypeError
from kopl2sparql.interpreter import Interpreter
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.program import Program, Step
from kopl2sparql.syntax import parse
from store.executor import CrossCheckExecutor, NativeExecutor, SparqlExecutor, decode
from synkqa.benchmark.executors import get_executor
from synkqa.benchmark.templates import templates

FIXTURES = Path(__file__).parent / "fixtures" / "compile"
_HEADER = re.compile(r"# (program|answer|error|guards): ?(.*)")


def read_fixture(path: Path) -> dict:
    """Header fields, free-text description and the SPARQL body of one fixture file."""
    lines = path.read_text().splitlines(keepends=True)
    case = {"description": [], "path": path}
    k = 0
    while k < len(lines) and lines[k].startswith("#"):
        m = _HEADER.match(lines[k].rstrip("\n"))
        if m:
            case[m.group(1)] = m.group(2)
        else:
            case["description"].append(lines[k])
        k += 1
    case["sparql"] = "".join(lines[k:])
    return case


def describe_guards(compiled) -> str:
    return compiled.describe_guards()


CASES = sorted(FIXTURES.glob("*.rq"))


@pytest.fixture(scope="module")
def engines(kb_turtle, kb_store, kb_schema):
    return NativeExecutor(KBIndex.from_turtle(kb_turtle, kb_schema), kb_schema), SparqlExecutor(kb_store, kb_schema)


def test_fixtures_cover_every_operator_and_template():
    programs = [parse(read_fixture(p)["program"]) for p in CASES]
    ops = {step.op for program in programs for step in program}
    from kopl2sparql.operators import OPERATORS
    assert ops == set(OPERATORS)
    # Each of the nine template shapes has a fixture (slots filled with some entity).
    shapes = {re.sub(r"\b(Person|City|Country|Org)_[0-9]+", "E", p.canonical()) for p in programs}
    for t in templates():
        assert re.sub(r"\{[A-Za-z0-9]+\}", "E", t.skeleton) in shapes, t.name


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path, engines, kb_schema):
    case = read_fixture(path)
    program = parse(case["program"])
    compiled = compile_program(program, kb_schema)
    assert compiled.sparql == case["sparql"]
    assert describe_guards(compiled) == case.get("guards", "")
    for engine in engines:
        if "error" in case:
            with pytest.raises(ExecutionError) as info:
                engine.execute(program)
            assert str(info.value) == case["error"], engine.name
        else:
            assert engine.execute(program).canonical() == case["answer"], engine.name


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture_query_runs_as_written(path, kb_store, kb_schema):
    """The file itself (comments included) is a query any SPARQL client can run; its
    result decodes to the expected answer (guards aside: errors need them)."""
    case = read_fixture(path)
    result = kb_store.query(path.read_text())
    if "answer" in case:
        compiled = compile_program(parse(case["program"]), kb_schema)
        assert decode(compiled, result, kb_schema).canonical() == case["answer"]


# ---- prefixes and traces ----------------------------------------------------------------

@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_traces_agree_step_by_step(path, engines):
    """Every prefix compiles, and its value on the store equals the native trace's value."""
    program = parse(read_fixture(path)["program"])
    native, sparql = engines
    outcomes = []
    for engine in (native, sparql):
        try:
            outcomes.append([(t.index, t.step, t.value) for t in engine.trace(program)])
        except ExecutionError as exc:
            outcomes.append(("error", str(exc), [(t.index, t.value) for t in exc.trace]))
    assert outcomes[0] == outcomes[1]


def test_prefix_compiles_to_the_top_of_the_stack(kb_schema):
    program = parse("Find(City_0001);QueryAttr(population);Find(City_0002);QueryAttr(population);Compare(>)")
    third = compile_program(program.prefix(3), kb_schema)
    assert third.form == "select-entities"
    assert "VALUES ?city { ske:City_0002 }" in third.sparql
    # Guards cover the whole prefix (both entities), not only the top value; the first
    # population needs none: the schema says every city has exactly one.
    assert [(type(g).__name__, g.step) for g in third.guards] == [("EntityGuard", 1), ("EntityGuard", 3)]
    assert compile_program(program.prefix(4), kb_schema).form == "select-number"


# ---- guards and the QueryAttr rule --------------------------------------------------------

def test_queryattr_guards_follow_the_type_checker(kb_schema):
    """One rule, the checker's: no run-time check where the schema proves the value defined
    (every city has exactly one population), a fact check on one entity where it does not."""
    compiled = compile_program(parse("Find(City_0001);QueryAttr(population);VerifyNum(>,5)"), kb_schema)
    assert compiled.guards == (EntityGuard(1, "City_0001"),)
    assert compiled.guards[0].iri == "http://synkqa.org/entity/City_0001"
    from synkqa.benchmark.executors import kb_file_schema
    campus = kb_file_schema(Path(__file__).parent / "fixtures" / "kb" / "campus.ttl")
    compiled = compile_program(parse("Find(Ada Lovelace);QueryAttr(age);VerifyNum(>,5)"), campus)  # not every person has an age
    entity, value = compiled.guards
    assert (entity, value) == (EntityGuard(1, "p01"), AttributeGuard(2, "p01", "age"))
    assert entity.iri == value.iri == "http://example.org/campus/id/p01"
    assert value.attribute_iri == "http://example.org/campus/vocab#age"


def test_queryattr_inside_ask_on_a_set_gets_a_count_guard(kb_schema):
    compiled = compile_program(parse("Find(Org_0122);RelateInv(works_at);QueryAttr(height_cm);VerifyNum(>,5)"),
                               kb_schema)
    (guard,) = [g for g in compiled.guards if isinstance(g, SingletonGuard)]
    assert guard.step == 3 and "COUNT(DISTINCT ?person) AS ?members" in guard.sparql


def test_final_queryattr_is_checked_on_its_rows_not_by_a_guard(kb_schema):
    compiled = compile_program(parse("Find(Org_0122);RelateInv(works_at);QueryAttr(height_cm)"), kb_schema)
    assert not any(isinstance(g, SingletonGuard) for g in compiled.guards)
    assert compiled.check.member_variable == "person" and compiled.check.step == 3


def test_unknown_entity_is_reported_at_its_first_step_even_after_a_failing_later_guard(engines):
    # Step 3's QueryAttr would fail too, but native stops at step 1 first: so must SPARQL.
    program = parse("Find(Org_9999);RelateInv(works_at);QueryAttr(height_cm);VerifyNum(>,5)")
    for engine in engines:
        with pytest.raises(ExecutionError, match=r"^execution error at step 1: unknown entity 'Org_9999'$"):
            engine.execute(program)


def test_queryattr_error_before_a_later_unknown_entity(engines):
    program = parse("Find(Org_0122);RelateInv(works_at);QueryAttr(height_cm);"
                    "Find(Person_99999);QueryAttr(height_cm);Compare(>)")
    for engine in engines:
        with pytest.raises(ExecutionError, match=r"at step 3: QueryAttr\(height_cm\) needs exactly one entity, got 8"):
            engine.execute(program)


def test_known_entities_are_remembered(kb_store, kb_schema):
    calls = []

    class Counting:
        def query(self, sparql):
            calls.append(sparql)
            return kb_store.query(sparql)

    sparql = SparqlExecutor(Counting(), kb_schema)
    program = parse("Find(Person_00371);QueryAttr(birth_year)")
    assert sparql.execute(program).canonical() == "1964"
    assert len(calls) == 2                      # existence check + the query
    sparql.execute(program)
    assert len(calls) == 3                      # the entity is known now
    template5 = parse("Find(City_0880);QueryAttr(population);Find(City_0508);QueryAttr(population);Compare(>)")
    assert sparql.execute(template5).canonical() == "yes"
    assert len(calls) == 5                      # one query for four facts + the ASK
    sparql.execute(template5)
    assert len(calls) == 6


# ---- validation: nothing the program says can change the query's structure ---------------

@pytest.mark.parametrize("steps, message", [
    # The compiler compiles what the type checker accepts: these are the checker's words.
    ([("Find", "")], "non-empty name or label"),
    ([("Find", "Person_00371"), ("Relate", "born_in ?x")], "malformed relation name"),
    ([("Find", "Person_00371"), ("Relate", "birthplace")], "did you mean born_in"),
    ([("Find", "Person_00371"), ("QueryAttr", "height")], "did you mean height_cm"),
    ([("Find", "Person_00371"), ("QueryAttr", "birth_year"), ("VerifyNum", ">", "1) || true || (1")],
     "expected a decimal number"),
    ([("Find", "Person_00371"), ("QueryAttr", "birth_year"), ("VerifyNum", "> 1 ||", "1")], "unknown comparator"),
    ([("Find", "Person_00371"), ("Count",), ("Count",)], "Count needs an entity set, but step 2"),
    ([("And",)], "stack is empty"),
    ([("Select", "x")], "unknown function"),
])
def test_compiler_refuses_bad_names_and_shapes(steps, message, kb_schema):
    program = Program(tuple(Step(s[0], tuple(s[1:])) for s in steps))
    with pytest.raises(ProgramTypeError, match=re.escape(message)):
        compile_program(program, kb_schema)


@pytest.mark.parametrize("steps, unknown, step", [
    ([("Find", "Person_1 } ; DROP ALL ; {"), ("Count",)], "Person_1 } ; DROP ALL ; {", 1),
    ([("Find", "Person_1> <x"), ("QueryName",)], "Person_1> <x", 1),
    ([("Find", "Person_00371"), ("VerifyRel", "works_at", "Org_1 . ?s ?p ?o")], "Org_1 . ?s ?p ?o", 2),
    ([("Find", "Person_00371"), ("Relate", "works_at"), ("Find", "Org_0001\" ) } #"), ("And",), ("Count",)],
     "Org_0001\" ) } #", 3),
])
def test_entity_text_never_enters_a_query(steps, unknown, step, engines, kb_schema):
    """Changed on purpose: entity arguments may be labels, so text that is no entity name
    is not a type error. It still cannot inject SPARQL: no entity has it, so the query
    never mentions it (its guard fails first) and both engines report it unknown."""
    program = Program(tuple(Step(s[0], tuple(s[1:])) for s in steps))
    compiled = compile_program(program, kb_schema)
    guard = next(g for g in compiled.guards if isinstance(g, EntityGuard) and g.name == unknown)
    assert guard.step == step and guard.iri is None
    assert compiled.sparql.startswith(kb_schema.prefix_lines())
    body = compiled.sparql[len(kb_schema.prefix_lines()):]
    for fragment in (unknown, "DROP", "?s ?p ?o", "<x", "#", '"'):
        assert fragment not in body
    for engine in engines:
        with pytest.raises(ExecutionError) as info:
            engine.execute(program)
        assert str(info.value) == f"execution error at step {step}: unknown entity '{unknown}'", engine.name


@pytest.mark.parametrize("name", [" Person_00371", "Person_00371 ", "Person_00371\n} ; DROP ALL ; {"])
def test_engines_refuse_entity_text_with_surrounding_or_control_whitespace(name, engines):
    program = Program((Step("Find", (name,)), Step("Count")))
    for engine in engines:
        with pytest.raises(ProgramTypeError, match="without surrounding or control whitespace"):
            engine.execute(program)


def test_non_text_arguments_are_refused(kb_schema):
    with pytest.raises(ProgramTypeError, match="text"):
        compile_program(Program((Step("Find", (["Person_00371"],)),)), kb_schema)
    with pytest.raises(ProgramTypeError, match="text"):
        compile_program(Program((Step("Find", (371,)),)), kb_schema)


def test_numbers_are_rendered_canonically(kb_schema):
    program = Program.of(("Find", "City_0001"), ("QueryAttr", "area_km2"), ("VerifyNum", ">=", "012.50"))
    assert "FILTER(?area_km2 >= 12.5)" in compile_program(program, kb_schema).sparql


def test_compiled_queries_are_cached_by_program(kb_schema):
    a = compile_program(parse("Find(Person_00371);Relate(born_in);QueryName()"), kb_schema)
    b = compile_program(parse("Find( Person_00371 ); Relate(born_in) ;QueryName()"), kb_schema)
    assert a is b


def test_compile_requires_a_schema_and_declares_its_prefixes(kb_schema):
    program = parse("Find(Person_00371);Relate(born_in);QueryName()")
    with pytest.raises(TypeError):
        compile_program(program)                              # no default schema any more
    compiled = compile_program(program, kb_schema)
    assert compiled.sparql.startswith(kb_schema.prefix_lines())
    assert kb_schema.prefix_lines() == ("PREFIX sk: <http://synkqa.org/ontology#>\n"
                                        "PREFIX ske: <http://synkqa.org/entity/>\n")


# ---- executors --------------------------------------------------------------------------

def test_get_executor_backends(kb_turtle, kb_schema):
    native = get_executor("native")
    assert native.name == "native" and get_executor("native") is native
    assert native.schema is kb_schema
    assert get_executor("oxigraph").name == "oxigraph"
    assert get_executor("oxigraph").schema is kb_schema
    both = get_executor("oxigraph", cross_check=True)
    assert isinstance(both, CrossCheckExecutor) and both.name == "native+oxigraph"
    assert both.schema is kb_schema
    program = parse("Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()")
    assert both.execute(program).canonical() == native.execute(program).canonical() == "Country_062"


def test_get_executor_unknown_backend_suggests():
    with pytest.raises(ConfigError, match="did you mean oxigraph"):
        get_executor("oxigrap")


def test_get_executor_url_uses_the_remote_store_seam():
    executor = get_executor("http://127.0.0.1:9/sparql")   # constructed lazily, not contacted
    assert isinstance(executor, SparqlExecutor) and executor.name == "http://127.0.0.1:9/sparql"
    assert type(executor.store).__module__ == "store.remote"


def test_type_errors_come_before_execution(engines):
    program = Program.of(("Find", "Person_00371"), ("Relate", "located_in"), ("QueryName",))
    for engine in engines:
        with pytest.raises(ProgramTypeError, match="always empty"):
            engine.execute(program)


# ---- regeneration ---------------------------------------------------------------------------

def regenerate() -> None:
    """Rewrite every fixture's query, answer/error and guards from the current code."""
    from synkqa.benchmark.world import ensure_turtle, kb_schema
    schema = kb_schema(42, 1)
    interpreter = Interpreter(KBIndex.from_turtle(ensure_turtle(42, 1), schema), schema)
    for path in CASES:
        case = read_fixture(path)
        program = parse(case["program"])
        compiled = compile_program(program, schema)
        header = [*case["description"], f"# program: {program.canonical()}\n"]
        try:
            header.append(f"# answer: {interpreter.run(program).canonical()}\n")
        except ExecutionError as exc:
            header.append(f"# error: {exc}\n")
        if compiled.guards:
            header.append(f"# guards: {describe_guards(compiled)}\n")
        path.write_text("".join(header) + compiled.sparql)
        print("wrote", path)


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
    else:
        print(__doc__)
