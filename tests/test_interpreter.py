"""The native engine: its KB index read from RDF, DESIGN.md's semantics on a hand-made KB
(checked on both engines against answers worked out by hand), the template answers against
the generator's own Python objects (an oracle that never went through RDF), and traces."""

from __future__ import annotations

import textwrap

import pytest

from kopl2sparql.errors import ConfigError, ExecutionError, ProgramTypeError
from kopl2sparql.interpreter import Interpreter, TraceStep
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.program import Program, Step
from kopl2sparql.syntax import parse
from ontology import Schema, schema_path
from store.executor import NativeExecutor, SparqlExecutor
from store.oxigraph import OxigraphStore
from synkqa.benchmark import kbgen

# ---- the index --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def index(kb_turtle, kb_schema):
    return KBIndex.from_turtle(kb_turtle, kb_schema)


def test_index_matches_table_i(index):
    counts = index.counts()
    for key in ("Person", "City", "Country", "Organization", "entities", "relation_edges", "attribute_values"):
        assert counts[key] == kbgen.PAPER_TABLE_I[key], key


def test_index_from_store_equals_index_from_turtle(index, kb_store, kb_schema):
    assert KBIndex.from_store(kb_store, kb_schema) == index
    assert KBIndex.from_store(kb_store.raw, kb_schema) == index


def test_index_types_come_from_the_schema(index, kb_schema):
    assert index.types["Org_0012"] == {"Organization"}
    assert index.types == {n: kb_schema.entity_classes(n) for n in kb_schema.entity_names()}
    assert "Org_9999" not in index and "Org_0012" in index


def test_index_keeps_numbers_exact(index):
    assert isinstance(index.values["birth_year"]["Person_00371"], int)
    area = index.values["area_km2"]["City_0001"]
    assert type(area).__name__ == "Decimal"


def test_index_missing_file_is_a_config_error(tmp_path, kb_schema):
    with pytest.raises(ConfigError, match="not found"):
        KBIndex.from_turtle(tmp_path / "nope.ttl", kb_schema)


def test_index_bad_turtle_is_a_config_error(tmp_path, kb_schema):
    bad = tmp_path / "bad.ttl"
    bad.write_text("this is not turtle")
    with pytest.raises(ConfigError, match="not valid Turtle"):
        KBIndex.from_turtle(bad, kb_schema)


# ---- semantics on a hand-made KB, both engines ------------------------------------------------

SMALL_KB = textwrap.dedent("""\
    @prefix sk: <http://synkqa.org/ontology#> .
    @prefix ske: <http://synkqa.org/entity/> .
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
    ske:Country_001 a sk:Country ; rdfs:label "Country_001" ; sk:gdp_billion_usd 10.5 .
    ske:Country_002 a sk:Country ; rdfs:label "Country_002" ; sk:gdp_billion_usd 10.50 .
    ske:City_0001 a sk:City ; sk:located_in ske:Country_001 ; sk:population 500 ; sk:area_km2 5.0 .
    ske:City_0002 a sk:City ; sk:located_in ske:Country_001 ; sk:population 500 ; sk:area_km2 7.25 .
    ske:City_0003 a sk:City ; sk:located_in ske:Country_001 .
    ske:City_0004 a sk:City ; sk:located_in ske:Country_002 ; sk:population 100 .
    ske:Person_00001 a sk:Person ; sk:born_in ske:City_0001 ; sk:works_at ske:Org_0001 ;
        sk:birth_year 1990 ; sk:height_cm 180 .
    ske:Person_00002 a sk:Person ; sk:born_in ske:City_0001 ; sk:works_at ske:Org_0002 ; sk:birth_year 1990 .
    ske:Person_00003 a sk:Person ; sk:born_in ske:City_0003 ; sk:works_at ske:Org_0001 ;
        sk:birth_year 1985 ; sk:height_cm 170 .
    ske:Person_00004 a sk:Person .
    ske:Org_0001 a sk:Organization ; sk:headquarters_in ske:City_0002 ; sk:revenue_billion_usd 2.5 .
    ske:Org_0002 a sk:Organization ; sk:headquarters_in ske:City_0004 ; sk:revenue_billion_usd 2 .
    """)

# (program, expected canonical answer or "error: <message>") worked out by hand from SMALL_KB.
SEMANTICS = [
    # Argmax/Argmin: ties to the smallest id; members without the attribute are skipped.
    ("Find(Country_001);RelateInv(located_in);Argmax(population);QueryName()", "City_0001"),
    ("Find(Country_001);RelateInv(located_in);Argmin(area_km2);QueryName()", "City_0001"),
    ("Find(Country_001);RelateInv(located_in);Argmax(area_km2);QueryName()", "City_0002"),
    ("Find(City_0001);RelateInv(born_in);Argmax(birth_year);QueryName()", "Person_00001"),
    ("Find(City_0001);RelateInv(born_in);Argmax(height_cm);QueryName()", "Person_00001"),
    ("Find(Org_0001);RelateInv(works_at);Argmin(birth_year);QueryName()", "Person_00003"),
    ("Find(City_0003);Argmax(population);QueryName()", ""),
    ("Find(Person_00004);Relate(born_in);Argmax(population);Count()", "0"),
    # QueryName and Count.
    ("Find(Person_00004);Relate(born_in);QueryName()", ""),
    ("Find(Country_001);RelateInv(located_in);QueryName()", "City_0001|City_0002|City_0003"),
    ("Find(City_0001);RelateInv(born_in);Find(Org_0001);RelateInv(works_at);Or();Count()", "3"),
    ("Find(Person_00001);Find(Person_00001);And();Count()", "1"),
    ("Find(Person_00001);Find(Person_00002);And();QueryName()", ""),
    ("Find(Org_0001);RelateInv(works_at);Find(City_0001);RelateInv(born_in);Diff();QueryName()", "Person_00003"),
    # FilterNum skips members without a value.
    ("Find(Country_001);RelateInv(located_in);FilterNum(population,>=,500);QueryName()", "City_0001|City_0002"),
    ("Find(Country_001);RelateInv(located_in);FilterNum(population,!=,7);Count()", "2"),
    # Numbers compare as numbers: 10.5 = 10.50, integer 2 = 2.0.
    ("Find(Country_001);QueryAttr(gdp_billion_usd);Find(Country_002);QueryAttr(gdp_billion_usd);Compare(=)", "yes"),
    ("Find(Org_0002);QueryAttr(revenue_billion_usd);VerifyNum(=,2.0)", "yes"),
    ("Find(Org_0002);QueryAttr(revenue_billion_usd);Find(Org_0001);QueryAttr(revenue_billion_usd);Compare(<)", "yes"),
    ("Find(Country_002);QueryAttr(gdp_billion_usd)", "10.5"),
    ("Find(City_0001);QueryAttr(area_km2)", "5"),
    # VerifyRel: some member has the edge.
    ("Find(City_0001);RelateInv(born_in);VerifyRel(works_at,Org_0002)", "yes"),
    ("Find(City_0003);RelateInv(born_in);VerifyRel(works_at,Org_0002)", "no"),
    ("Find(Person_00004);Relate(born_in);RelateInv(born_in);VerifyRel(works_at,Org_0002)", "no"),
    # QueryAttr: exactly one entity having the attribute, else an error at that step.
    ("Find(City_0001);RelateInv(born_in);Argmax(height_cm);QueryAttr(birth_year)", "1990"),
    ("Find(City_0003);QueryAttr(population)", "error: execution error at step 2: City_0003 has no population"),
    ("Find(City_0003);QueryAttr(population);VerifyNum(>,0)",
     "error: execution error at step 2: City_0003 has no population"),
    ("Find(City_0001);RelateInv(born_in);QueryAttr(height_cm)",
     "error: execution error at step 3: QueryAttr(height_cm) needs exactly one entity, got 2"),
    ("Find(Person_00004);Relate(born_in);QueryAttr(population)",
     "error: execution error at step 3: QueryAttr(population) needs exactly one entity, got none"),
    ("Find(Person_00004);Relate(born_in);QueryAttr(population);VerifyNum(>,1)",
     "error: execution error at step 3: QueryAttr(population) needs exactly one entity, got none"),
    ("Find(Person_00002);Relate(born_in);RelateInv(born_in);FilterNum(birth_year,=,1990);"
     "Argmin(birth_year);Relate(works_at);QueryAttr(revenue_billion_usd);VerifyNum(>,1)", "yes"),
    ("Find(City_0003);RelateInv(born_in);Find(City_0002);RelateInv(born_in);Or();QueryAttr(height_cm);"
     "VerifyNum(>,1)", "yes"),
    ("Find(City_0001);RelateInv(born_in);Argmin(birth_year);QueryAttr(height_cm);VerifyNum(>,1)", "yes"),
    # Unknown entities, wherever they are named.
    ("Find(Person_00009);QueryName()", "error: execution error at step 1: unknown entity 'Person_00009'"),
    ("Find(City_0001);RelateInv(born_in);VerifyRel(works_at,Org_0003)",
     "error: execution error at step 3: unknown entity 'Org_0003'"),
]


@pytest.fixture(scope="module")
def small_engines(tmp_path_factory):
    """Both engines on SMALL_KB, with the SynKQA-Pro vocabulary (schema.ttl) as its ontology."""
    path = tmp_path_factory.mktemp("small-kb") / "small.ttl"
    path.write_text(SMALL_KB)
    schema = Schema.from_turtle(schema_path(), path)
    store = OxigraphStore()
    store.load_turtle(path)
    return NativeExecutor(KBIndex.from_turtle(path, schema), schema), SparqlExecutor(store, schema, name="oxigraph")


@pytest.mark.parametrize("text, expected", SEMANTICS, ids=[c[0] for c in SEMANTICS])
def test_semantics_on_both_engines(text, expected, small_engines):
    program = parse(text)
    for engine in small_engines:
        if expected.startswith("error: "):
            with pytest.raises(ExecutionError) as info:
                engine.execute(program)
            assert str(info.value) == expected[len("error: "):], engine.name
        else:
            assert engine.execute(program).canonical() == expected, engine.name


def test_small_kb_index_reads_back_what_the_turtle_says(small_engines):
    index = small_engines[0].index
    assert index.members["City"] == ("City_0001", "City_0002", "City_0003", "City_0004")
    assert index.forward["born_in"]["Person_00001"] == {"City_0001"}
    assert index.inverse["born_in"]["City_0001"] == {"Person_00001", "Person_00002"}
    assert "City_0003" not in index.values["population"]
    assert index.types["Org_0002"] == {"Organization"} and "Org_0009" not in index


# ---- the templates against the generator's own objects ------------------------------------------

@pytest.fixture(scope="module")
def oracle():
    """Template answers computed from the generator's Python objects (never through RDF)."""
    kb = kbgen.generate(42, 1)
    rel = {r: dict(pairs) for r, pairs in kb.relations.items()}
    inv: dict[str, dict[str, set]] = {r: {} for r in kb.relations}
    for r, pairs in kb.relations.items():
        for s, o in pairs:
            inv[r].setdefault(o, set()).add(s)
    from decimal import Decimal
    val = {a: {e: Decimal(lex) for e, lex, _ in rows} for a, rows in kb.attributes.items()}
    return kb, rel, inv, val


def test_templates_agree_with_the_generator(index, oracle, kb_schema):
    kb, rel, inv, val = oracle
    run = Interpreter(index, kb_schema).run
    people, cities, countries, orgs = (kb.names[c] for c in ("Person", "City", "Country", "Organization"))
    for p in people[::97]:
        assert run(parse(f"Find({p});QueryAttr(birth_year)")).canonical() == str(val["birth_year"][p])
        assert run(parse(f"Find({p});Relate(born_in);QueryName()")).canonical() == rel["born_in"][p]
        assert (run(parse(f"Find({p});Relate(born_in);Relate(located_in);QueryName()")).canonical()
                == rel["located_in"][rel["born_in"][p]])
        hq_country = rel["located_in"][rel["headquarters_in"][rel["works_at"][p]]]
        assert run(parse(f"Find({p});Relate(works_at);Relate(headquarters_in);Relate(located_in);"
                         "QueryName()")).canonical() == hq_country
        for o in (rel["works_at"][p], orgs[len(p) % len(orgs)]):
            expected = "yes" if rel["works_at"][p] == o else "no"
            assert run(parse(f"Find({p});VerifyRel(works_at,{o})")).canonical() == expected
        c, o = rel["born_in"][p], rel["works_at"][p]
        both = sorted(inv["works_at"].get(o, set()) & inv["born_in"].get(c, set()))
        assert (run(parse(f"Find({o});RelateInv(works_at);Find({c});RelateInv(born_in);And();QueryName()"))
                .canonical() == "|".join(both))
    for c1, c2 in zip(cities[::37], cities[5::37]):
        assert (run(parse(f"Find({c1});RelateInv(born_in);Count()")).canonical()
                == str(len(inv["born_in"].get(c1, ()))))
        expected = "yes" if val["population"][c1] > val["population"][c2] else "no"
        assert run(parse(f"Find({c1});QueryAttr(population);Find({c2});QueryAttr(population);"
                         "Compare(>)")).canonical() == expected
    for k in countries:
        members = inv["located_in"][k]
        top = max(val["population"][c] for c in members)
        expected = min(c for c in members if val["population"][c] == top)
        assert run(parse(f"Find({k});RelateInv(located_in);Argmax(population);QueryName()")).canonical() == expected


# ---- traces ----------------------------------------------------------------------------------

def test_trace_shows_every_step(small_engines):
    native = small_engines[0]
    trace = native.trace(parse("Find(Country_001);RelateInv(located_in);Argmax(population);Count()"))
    assert [(t.index, t.step, t.value.kind, t.value.canonical()) for t in trace] == [
        (1, "Find(Country_001)", "entities", "Country_001"),
        (2, "RelateInv(located_in)", "entities", "City_0001|City_0002|City_0003"),
        (3, "Argmax(population)", "entities", "City_0001"),
        (4, "Count()", "number", "1"),
    ]
    assert trace[3].to_dict() == {"step": 4, "function": "Count()", "kind": "number", "value": "1"}
    assert isinstance(trace[0], TraceStep)


def test_trace_of_a_failing_program_keeps_the_steps_done(small_engines):
    for engine in small_engines:
        with pytest.raises(ExecutionError) as info:
            engine.trace(parse("Find(City_0001);RelateInv(born_in);QueryAttr(height_cm);VerifyNum(>,1)"))
        assert [t.value.canonical() for t in info.value.trace] == ["City_0001", "Person_00001|Person_00002"]


def test_trace_of_compare_keeps_both_operands_in_order(small_engines):
    for engine in small_engines:
        trace = engine.trace(parse("Find(City_0004);QueryAttr(population);Find(City_0001);"
                                   "QueryAttr(population);Compare(<)"))
        assert [t.value.canonical() for t in trace] == ["City_0004", "100", "City_0001", "500", "yes"]


# ---- ill-typed programs never crash the interpreter ------------------------------------------------

@pytest.mark.parametrize("steps, message", [
    ([], "empty program"),
    ([("QueryName",)], "stack is empty"),
    # The interpreter runs what the type checker accepts: these are the checker's words.
    ([("Find", "City_0001"), ("Compare", ">")], "Compare needs two numbers"),
    ([("Find", "City_0001"), ("QueryName",), ("Count",)], "QueryName renders a final answer"),
    ([("Find", "City_0001"), ("Relate", "birthplace")], "did you mean born_in"),
    ([("Find", "City_0001"), ("Argmax", "pop")], "unknown attribute 'pop'"),
    ([("Find", "City_0001"), ("QueryAttr", "population"), ("VerifyNum", "~", "1")], "unknown comparator"),
    ([("Find", "City_0001"), ("FilterNum", "population", ">", "1e5")], "expected a decimal number"),
    ([("Find", "City_0001", "City_0002")], "Find takes 1 argument, got 2"),
    ([("Lookup",)], "unknown function 'Lookup'"),
])
def test_interpreter_reports_ill_typed_programs(steps, message, small_engines):
    interpreter = small_engines[0].interpreter
    program = Program(tuple(Step(s[0], tuple(s[1:])) for s in steps))
    with pytest.raises(ProgramTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        interpreter.run(program)


def test_prefix_value_is_the_top_of_the_stack(small_engines):
    interpreter = small_engines[0].interpreter
    program = parse("Find(City_0004);QueryAttr(population);Find(City_0001);QueryAttr(population);Compare(<)")
    assert interpreter.run(program.prefix(3)).canonical() == "City_0001"
