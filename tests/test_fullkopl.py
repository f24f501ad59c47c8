"""Full KoPL on KQA Pro-format KBs: the kopl wheel's example KB and its expected answers on
every engine, the KB's JSON <-> RDF round trip, KQA Pro-style SPARQL on the imported store,
programs, type errors, and random programs agreeing across engines."""

from __future__ import annotations

import copy
import json

import pyoxigraph as ox
import pytest

from kqapro.answers import Answer
from kqapro.compiler import compile_program
from kqapro.engines import NativeEngine, OxigraphEngine
from kqapro.kb import KB
from kqapro.program import parse_program
from kqapro.rdf import BASE, kb_from_triples, kb_to_turtle
from kqapro.sampling import function_counts, random_programs
from ontology.errors import ConfigError, ProgramSyntaxError, ProgramTypeError

example_kb = pytest.importorskip("kopl.test.test_example").example_kb


@pytest.fixture(scope="module")
def kb():
    return KB.from_json(copy.deepcopy(example_kb))


@pytest.fixture(scope="module")
def engines(kb):
    return [NativeEngine(kb), OxigraphEngine(kb)]


# The expected answers of the kopl wheel's kopl/test/test_example.py, one program each,
# written as our programs (the wheel calls the engine's methods directly).
EXAMPLE = [
    ("Find(LeBron James Jr.);Relate(father, forward);What()", "names", ["LeBron James"]),
    ("Find(LeBron James Jr.);Find(LeBron James Jr.);Relate(father, forward);SelectBetween(height, greater)",
     "names", ["LeBron James"]),
    ("Find(LeBron James);Find(LeBron James Jr.);Or();SelectAmong(height, largest)", "names", ["LeBron James"]),
    ("Find(LeBron James);QueryAttr(height)", "values", ["206 centimetre"]),
    ("Find(LeBron James);Find(Cleveland Cavaliers);QueryRelationQualifier(drafted by, point in time)",
     "values", ["2003-06-26"]),
    ("Find(Akron);QueryAttrQualifier(population, 199110, point in time)", "values", ["2010"]),
    ("Find(Akron);QueryAttrUnderCondition(population, point in time, 2010)", "values", ["199110"]),
    ("Find(Cleveland Cavaliers);FilterConcept(basketball player);Count()", "count", ["0"]),
    ("Find(Cleveland Cavaliers);FilterConcept(basketball team);What()", "names", ["Cleveland Cavaliers"]),
    ("FindAll();FilterConcept(basketball player);FilterNum(height, 188 centimetre, >);What()",
     "names", ["LeBron James"]),
    ("FindAll();FilterConcept(basketball player);FilterNum(height, 180 centimetre, >);Count()", "count", ["2"]),
    ("FindAll();FilterConcept(basketball player);FilterStr(sex or gender, male);What()",
     "names", ["LeBron James", "LeBron James Jr."]),
    ("FindAll();FilterConcept(basketball player);FilterYear(work period (start), 2003, =);What()",
     "names", ["LeBron James"]),
    ("FindAll();FilterConcept(basketball player);FilterYear(work period (start), 2000, =);What()", "names", []),
    ("FindAll();FilterConcept(basketball player);FilterDate(date of birth, 1984-12-30, =);What()",
     "names", ["LeBron James"]),
    ("Find(LeBron James);Relate(drafted by, forward);QFilterDate(point in time, 2003-06-26, =);What()",
     "names", ["Cleveland Cavaliers"]),
    ("Find(LeBron James);Relate(drafted by, forward);QFilterYear(point in time, 2003, =);What()",
     "names", ["Cleveland Cavaliers"]),
    ("Find(LeBron James);Relate(member of sports team, forward);"
     "QFilterStr(position played on team/speciality, small forward);What()", "names", ["Cleveland Cavaliers"]),
    ("Find(LeBron James);Relate(member of sports team, forward);QFilterNum(sport number, 23, =);What()",
     "names", ["Cleveland Cavaliers"]),
    ("FindAll();FilterConcept(basketball player);Count()", "count", ["2"]),
    ("Find(LeBron James);QueryAttr(sex or gender);VerifyStr(male)", "verdict", ["yes"]),
    ("Find(LeBron James);QueryAttr(sex or gender);VerifyStr(female)", "verdict", ["no"]),
    ("Find(LeBron James);QueryAttr(height);VerifyNum(206 centimetre, =)", "verdict", ["yes"]),
    ("Find(LeBron James);QueryAttr(height);VerifyNum(208 centimetre, =)", "verdict", ["no"]),
    ("Find(LeBron James);QueryAttr(date of birth);VerifyDate(1984-12-30, =)", "verdict", ["yes"]),
    ("Find(LeBron James);QueryAttr(date of birth);VerifyDate(1983-12-30, =)", "verdict", ["no"]),
    ("Find(LeBron James);QueryAttr(date of birth);VerifyYear(1984, =)", "verdict", ["yes"]),
    ("Find(LeBron James);QueryAttr(date of birth);VerifyYear(1983, =)", "verdict", ["no"]),
    ("Find(LeBron James Jr.);Find(LeBron James);QueryRelation()", "relations", ["father"]),
    # the functions the wheel's tests leave out
    ("FindAll();Count()", "count", ["4"]),
    ("FindAll();FilterConcept(athlete);Find(LeBron James);And();What()", "names", ["LeBron James"]),
    ("Find(LeBron James);Relate(father, backward);What()", "names", ["LeBron James Jr."]),
    ("FindAll();FilterConcept(athlete);QueryAttr(height);VerifyNum(200 centimetre, >)", "verdict", ["not sure"]),
    ("FindAll();FilterDate(date of birth, 1990-01-01, <);What()", "names", ["LeBron James"]),
    ("FindAll();FilterYear(date of birth, 2004, !=);What()", "names", ["LeBron James"]),
]


@pytest.mark.parametrize("text,kind,items", EXAMPLE, ids=[t for t, _, _ in EXAMPLE])
def test_kopl_example_answers_on_every_engine(engines, text, kind, items):
    program = parse_program(text)
    for engine in engines:
        assert engine.run(program) == Answer.of(kind, items), engine.name


def test_every_function_is_in_the_example_programs():
    used = function_counts(parse_program(t) for t, _, _ in EXAMPLE)
    assert [f for f, n in used.items() if n == 0] == []


def test_json_programs_with_dependencies(engines):
    program = parse_program(json.dumps([
        {"function": "Find", "inputs": ["LeBron James Jr."], "dependencies": []},
        {"function": "Relate", "inputs": ["father", "forward"], "dependencies": [0]},
        {"function": "Find", "inputs": ["LeBron James Jr."], "dependencies": []},
        {"function": "SelectBetween", "inputs": ["height", "less"], "dependencies": [1, 2]},
    ]))
    for engine in engines:
        assert engine.run(program) == Answer.of("names", ["LeBron James Jr."])
    # the text form infers the same dependencies
    assert parse_program(program.to_text()) == program


def test_kb_round_trips_through_rdf(kb):
    turtle = kb_to_turtle(kb)
    back = kb_from_triples(ox.parse(turtle, format=ox.RdfFormat.TURTLE))
    assert back.to_json() == kb.to_json()
    assert kb_to_turtle(back) == turtle
    # the canonical JSON lists every relation in both directions, as kopl needs
    lebron = kb.to_json()["entities"]["Q162990"]["relations"]
    assert {"relation": "drafted by", "direction": "backward", "object": "Q36159",
            "qualifiers": {"point in time": [{"type": "date", "value": "2003-06-26"}]}} in lebron


def test_a_kb_listing_one_direction_reads_like_one_listing_both(kb):
    both = kb.to_json()
    assert KB.from_json(both).to_json() == both
    assert KB.from_json(kb.to_json(backward=False)).to_json() == both


def test_kqapro_style_sparql_runs_unchanged(engines):
    """Queries written the way KQA Pro's dataset writes them: relative IRIs, pred:
    predicates, undeclared xsd:, value nodes and fact nodes."""
    store = engines[1]
    people = store.query('SELECT DISTINCT ?e WHERE { ?e <pred:instance_of> ?c . ?c <pred:name> "athlete" . '
                         '?e <height> ?pv . ?pv <pred:unit> "centimetre" . ?pv <pred:value> ?v . '
                         'FILTER ( ?v > "200"^^xsd:double ) . }')
    assert [s["e"].value for s in people] == [BASE + "Q36159"]
    asked = store.query('ASK { ?e <pred:name> "Akron" . ?e <population> ?pv . ?pv <pred:value> ?v . '
                        '[ <pred:fact_h> ?e ; <pred:fact_r> <population> ; <pred:fact_t> ?pv ] '
                        '<point_in_time> ?qpv . ?qpv <pred:year> 2010 . FILTER ( ?v = "199110"^^xsd:double ) }')
    assert bool(asked) is True
    count = store.query('SELECT (COUNT(DISTINCT ?e) AS ?count) WHERE { ?e <pred:instance_of> ?c . '
                        '?c <pred:name> "basketball player" . }')
    assert [s["count"].value for s in count] == ["2"]
    dated = store.query('SELECT DISTINCT ?e WHERE { ?e <date_of_birth> ?pv . ?pv <pred:date> ?d . '
                        'FILTER ( ?d = "1984-12-30"^^xsd:date ) }')
    assert len(list(dated)) == 1


@pytest.mark.parametrize("text,message", [
    ("Find(LeBron Jame);What()", "did you mean LeBron James?"),
    ("Find(LeBron James);QueryAttr(heigth)", "did you mean height?"),
    ("Find(LeBron James);Relate(fathr, forward);What()", "did you mean father?"),
    ("Find(LeBron James);Relate(father, sideways);What()", "'forward' or 'backward'"),
    ("FindAll();FilterConcept(atlete);Count()", "did you mean athlete?"),
    ("FindAll();FilterNum(height, 188, >);Count()", "measured in centimetre"),
    ("FindAll();FilterNum(height, 188 foot, >);Count()", "measured in centimetre"),
    ("FindAll();FilterNum(sex or gender, 1, >);Count()", "has string values, FilterNum needs quantity"),
    ("FindAll();FilterYear(date of birth, 1984-12-30, =);Count()", "takes a year"),
    ("FindAll();FilterDate(date of birth, 1984, =);Count()", "use FilterYear for a year"),
    ("FindAll();FilterDate(date of birth, 1984-02-30, =);Count()", "month 2 has 29 days"),
    ("FindAll();FilterNum(height, 188 centimetre, >=);Count()", "operator among = , != , < , >".replace(" , ", ", ")),
    ("Find(LeBron James);Count();VerifyNum(1, =)", "takes values"),
    ("FindAll();FilterConcept(athlete);QFilterStr(sport number, 23);What()", "entities reached through facts"),
    ("Find(LeBron James);QueryAttr(height);VerifyStr(tall)", "checks string values"),
    ("Find(LeBron James);Relate(father, backward)", "ends in a set of entities"),
    ("Find(LeBron James);SelectAmong(sex or gender, largest)", "needs quantity"),
])
def test_type_errors_name_the_culprit(kb, text, message):
    with pytest.raises(ProgramTypeError) as error:
        NativeEngine(kb).run(parse_program(text))
    assert message in str(error.value)
    assert "^" in str(error.value)


@pytest.mark.parametrize("text,message", [
    ("Find(x);Relat(a, forward);What()", "did you mean Relate?"),
    ("Find(a, b);What()", "Find takes 1 input(s)"),
    ("Find(x);Find(y);What()", "is not used by any later step"),
    ('Find("x);What()', "unclosed"),
    ("Find(x);;What()", "expected a function name"),
    ('[{"function": "Find", "inputs": ["x"]}, {"function": "What", "inputs": [], "dependencies": [3]}]',
     "each an earlier step's index"),
    ('[{"function": "Find", "inputs": ["x"], "dependencies": []}, '
     '{"function": "Count", "inputs": [], "dependencies": [0]}, '
     '{"function": "Find", "inputs": ["x"], "dependencies": []}, '
     '{"function": "And", "inputs": [], "dependencies": [0, 2]}]', "used by steps 2, 4"),
    ("[1, 2", "not a JSON program"),
])
def test_syntax_errors_name_the_culprit(text, message):
    with pytest.raises(ProgramSyntaxError) as error:
        parse_program(text)
    assert message in str(error.value)


def test_quoted_inputs_carry_any_text(kb):
    odd = copy.deepcopy(example_kb)
    odd["entities"]["Q163132"]["name"] = 'Akron, "Ohio" (city); \\ ok'
    kb2 = KB.from_json(odd)
    program = parse_program(json.dumps([{"function": "Find", "inputs": [odd["entities"]["Q163132"]["name"]]},
                                        {"function": "What", "inputs": []}]))
    text = program.to_text()
    assert parse_program(text) == program
    for engine in (NativeEngine(kb2), OxigraphEngine(kb2)):
        assert engine.run(program).items == (odd["entities"]["Q163132"]["name"],)


def test_bad_kb_json_is_one_clear_error():
    with pytest.raises(ConfigError, match=r"entities.Q1.attributes\[0\].value: unknown value type"):
        KB.from_json({"concepts": {}, "entities": {"Q1": {"name": "x", "instanceOf": [], "relations": [],
                      "attributes": [{"key": "k", "value": {"type": "colour", "value": "red"}}]}}})
    with pytest.raises(ConfigError, match="unknown concept C9"):
        KB.from_json({"concepts": {}, "entities": {"Q1": {"name": "x", "instanceOf": ["C9"]}}})
    with pytest.raises(ConfigError, match="neither 'forward' nor 'backward'"):
        KB.from_json({"concepts": {}, "entities": {"Q1": {"name": "x", "relations": [
            {"relation": "r", "object": "Q1", "direction": "up"}]}}})


def test_compiled_sparql_is_deterministic(kb):
    program = parse_program("Find(LeBron James);Relate(member of sports team, forward);"
                            "QFilterNum(sport number, 23, =);QFilterStr(position played on team/speciality, "
                            "small forward);What()")
    first = compile_program(program, kb).sparql
    assert first == compile_program(program, kb).sparql
    # both qualifier tests are on one fact node
    assert first.count("<pred:fact_h>") == 1


def test_random_programs_agree_on_the_example_kb(kb, engines):
    programs = random_programs(kb, 1500, seed=3)
    counts = function_counts(programs)
    assert all(n > 0 for n in counts.values()), counts
    native, oxigraph = engines
    wrong = [(p.to_text(), native.run(p), oxigraph.run(p)) for p in programs if native.run(p) != oxigraph.run(p)]
    assert wrong == []


@pytest.mark.slow
def test_example_and_random_programs_agree_on_virtuoso(kb, engines, tmp_path_factory):
    from kqapro.engines import EndpointEngine
    from tests.endpoint_servers import require_binary, start_virtuoso

    require_binary("virtuoso-t")
    workdir = tmp_path_factory.mktemp("virtuoso-kqapro")
    turtle = workdir / "example.ttl"
    turtle.write_bytes(kb_to_turtle(kb))
    server = start_virtuoso(turtle, workdir / "server")
    try:
        virtuoso = EndpointEngine(kb, server.store(), "virtuoso")
        for text, kind, items in EXAMPLE:
            assert virtuoso.run(parse_program(text)) == Answer.of(kind, items), text
        native = engines[0]
        programs = random_programs(kb, 500, seed=5)
        wrong = [p.to_text() for p in programs if virtuoso.run(p) != native.run(p)]
        assert wrong == []
    finally:
        server.stop()


@pytest.mark.slow
def test_example_answers_on_jena(kb, tmp_path):
    from kqapro.engines import JenaSparqlEngine
    from store.jena import jena_unavailable
    from tests.endpoint_servers import in_ci

    reason = jena_unavailable()
    if reason:
        if in_ci():
            pytest.fail(f"Jena is needed in CI: {reason}")
        pytest.skip(reason)
    turtle = tmp_path / "example.ttl"
    turtle.write_bytes(kb_to_turtle(kb))
    jena = JenaSparqlEngine(kb, turtle)
    try:
        for text, kind, items in EXAMPLE:
            assert jena.run(parse_program(text)) == Answer.of(kind, items), text
    finally:
        jena.close()


# ---- command line ------------------------------------------------------------------------------

def _cli(*args: str):
    from typer.testing import CliRunner

    from synkqa.cli import app
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_cli_import_execute_export(tmp_path):
    source = tmp_path / "kb.json"
    source.write_text(json.dumps(example_kb))
    turtle, back = tmp_path / "kb.ttl", tmp_path / "back.json"
    result = _cli("kb", "import", "--kqapro", str(source), "--out", str(turtle), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["entities"] == 4
    result = _cli("execute", "--kb", str(turtle), "--cross-check",
                  "Find(LeBron James);Relate(drafted by, forward);QFilterYear(point in time, 2003, =);What()")
    assert result.exit_code == 0 and result.output.strip() == "Cleveland Cavaliers", result.output
    lines = tmp_path / "programs.jsonl"
    lines.write_text("\n".join([
        json.dumps({"id": "q1", "program": [{"function": "Find", "inputs": ["Akron"], "dependencies": []},
                                            {"function": "QueryAttr", "inputs": ["population"],
                                             "dependencies": [0]}]}),
        json.dumps([{"function": "FindAll", "inputs": [], "dependencies": []},
                    {"function": "FilterConcept", "inputs": ["athlete"], "dependencies": [0]},
                    {"function": "Count", "inputs": [], "dependencies": [1]}]),
        "Find(Akron);QueryAttr(populaton)",
    ]) + "\n")
    result = _cli("execute", "--kb", str(turtle), "--backend", "oxigraph", "--input", str(lines), "--json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1
    assert [r.get("id") for r in rows] == ["q1", None, None]
    assert [r["answer"] for r in rows] == [["199110"], 2, None]
    assert "did you mean population?" in rows[2]["error"]
    result = _cli("kb", "export", "--format", "kqapro", "--file", str(turtle), "--out", str(back))
    assert result.exit_code == 0, result.output
    assert json.loads(back.read_text()) == KB.from_json(copy.deepcopy(example_kb)).to_json()


def test_cli_import_refuses_a_broken_kb(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"concepts": {}, "entities": {"Q1": {"name": "x", "instanceOf": ["C1"]}}}')
    result = _cli("kb", "import", "--kqapro", str(bad), "--out", str(tmp_path / "out.ttl"))
    assert result.exit_code == 1
    assert "unknown concept C1" in result.output
    assert not (tmp_path / "out.ttl").exists()
    bad.write_text("{not json")
    result = _cli("kb", "import", "--kqapro", str(bad), "--out", str(tmp_path / "out.ttl"))
    assert result.exit_code == 1 and "not JSON (line 1" in result.output


@pytest.mark.slow
def test_cli_build_kqapro_at_scale_1(tmp_path):
    out = tmp_path / "kqa.ttl"
    result = _cli("kb", "build", "--kind", "kqapro", "--scale", "1", "--seed", "5", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert 15_000 <= report["entities"] <= 20_000 and report["concepts"] >= 500
    assert report["relations"] >= 250 and report["attribute_keys"] + report["qualifier_keys"] >= 500
    assert report["bytes"] == out.stat().st_size


def test_generated_turtle_is_byte_identical_and_round_trips():
    from kqapro.generator import generate

    first = kb_to_turtle(KB.from_json(generate(scale=0.05, seed=9)))
    assert first == kb_to_turtle(KB.from_json(generate(scale=0.05, seed=9)))
    back = kb_from_triples(ox.parse(first, format=ox.RdfFormat.TURTLE))
    assert kb_to_turtle(back) == first


def test_cli_compile_on_a_kqapro_kb(tmp_path):
    source, turtle = tmp_path / "kb.json", tmp_path / "kb.ttl"
    source.write_text(json.dumps(example_kb))
    assert _cli("kb", "import", "--kqapro", str(source), "--out", str(turtle)).exit_code == 0
    result = _cli("compile", "--kb", str(turtle), "Find(Akron);QueryAttrUnderCondition(population, point in time, 2010)")
    assert result.exit_code == 0 and result.stdout.startswith("SELECT DISTINCT ?val"), result.output
    store = ox.Store()
    store.load(turtle.read_bytes(), format=ox.RdfFormat.TURTLE)
    rows = list(store.query(result.stdout))
    assert [r["val"].value for r in rows] == ["199110"]
    result = _cli("compile", "--kb", str(turtle), "--format", "kqapro", "Find(Akron);Count()")
    assert json.loads(result.stdout)[1] == {"function": "Count", "inputs": [], "dependencies": [0]}
    result = _cli("compile", "--kb", str(turtle), "Find(Akron);Count(x)")
    assert result.exit_code == 1 and "Count takes 0 input(s)" in result.output


def test_deeply_nested_json_is_one_clear_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ProgramSyntaxError, match="nested too deeply"):
        parse_program(deep)
    source = tmp_path / "deep.json"
    source.write_text(deep)
    result = _cli("kb", "import", "--kqapro", str(source), "--out", str(tmp_path / "out.ttl"))
    assert result.exit_code == 1 and "nested too deeply" in result.output
    assert not (tmp_path / "out.ttl").exists()
