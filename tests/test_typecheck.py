"""The type checker: stack discipline, schema names, domain/range, cardinality, located errors."""

from __future__ import annotations

import pytest

from kopl2sparql.errors import ExecutionError, ProgramSyntaxError, ProgramTypeError
from kopl2sparql.program import Program, Step, ValueType
from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import Cardinality, CheckedProgram, check
from ontology import Schema, schema_path
from synkqa.kbgen import class_of_name

E, N, B, S = ValueType.ENTITIES, ValueType.NUMBER, ValueType.BOOL, ValueType.NAMES
ONE, OPT, MANY = Cardinality.ONE, Cardinality.OPT, Cardinality.MANY


def _types(text: str, schema):
    checked = check(parse(text), schema)
    return [(s.output.type, tuple(sorted(s.output.classes)), s.output.cardinality)
            for s in checked.steps]


# ---- well-typed programs ------------------------------------------------------------------

def test_birth_country_template(kb_schema):
    assert _types("Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()", kb_schema) == [
        (E, ("Person",), ONE), (E, ("City",), ONE), (E, ("Country",), ONE), (S, ("Country",), ONE)]


def test_count_born_in_template(kb_schema):
    checked = check("Find(City_0736);RelateInv(born_in);Count()", kb_schema)
    assert [s.output.type for s in checked.steps] == [E, E, N]
    assert checked.steps[1].output.classes == {"Person"}
    assert checked.steps[1].output.cardinality is MANY
    assert checked.answer_kind == "number"


def test_compare_template_dependencies(kb_schema):
    checked = check("Find(City_0001);QueryAttr(population);Find(City_0002);QueryAttr(population);Compare(>)", kb_schema)
    assert [s.dependencies for s in checked.steps] == [(), (0,), (), (2,), (1, 3)]
    assert [s.depth for s in checked.steps] == [1, 1, 2, 2, 1]
    assert checked.result.type is B and checked.answer_kind == "bool"
    assert not any(s.needs_singleton_guard for s in checked.steps)


def test_argmax_template_is_at_most_one(kb_schema):
    types = _types("Find(Country_038);RelateInv(located_in);Argmax(population);QueryName()", kb_schema)
    assert types[1] == (E, ("City",), MANY)
    assert types[2] == (E, ("City",), OPT)


def test_intersection_template(kb_schema):
    checked = check("Find(Org_0012);RelateInv(works_at);Find(City_0736);RelateInv(born_in);And();QueryName()", kb_schema)
    assert checked.steps[4].dependencies == (1, 3)
    assert checked.steps[4].output.classes == {"Person"}
    assert checked.steps[4].output.cardinality is MANY
    assert checked.answer_kind == "entities"


def test_verify_employment_template(kb_schema):
    checked = check("Find(Person_00371);VerifyRel(works_at,Org_0012)", kb_schema)
    assert checked.result.type is B


@pytest.mark.parametrize("text, cardinality", [
    ("Find(City_0001)", ONE),
    ("Find(Person_00001);Relate(works_at);Relate(headquarters_in)", ONE),
    ("Find(City_0001);RelateInv(born_in);Relate(born_in)", MANY),
    ("Find(City_0001);Argmax(population)", ONE),
    ("Find(Country_001);RelateInv(located_in);Argmin(area_km2);Relate(located_in)", OPT),
    ("Find(City_0001);FilterNum(population,>,1000)", OPT),
    ("Find(Country_001);RelateInv(located_in);FilterNum(population,>,1000)", MANY),
    ("Find(City_0001);Find(City_0002);Or()", MANY),
    ("Find(City_0001);Find(Country_001);RelateInv(located_in);And()", OPT),
    ("Find(Country_001);RelateInv(located_in);Find(City_0001);Diff()", MANY),
    ("Find(City_0001);Find(Country_001);RelateInv(located_in);Diff()", OPT),
])
def test_cardinality(text, cardinality, kb_schema):
    assert check(text, kb_schema).result.cardinality is cardinality


def test_query_attr_on_a_set_needs_a_runtime_guard(kb_schema):
    guarded = check("Find(Country_001);RelateInv(located_in);QueryAttr(population)", kb_schema)
    assert guarded.steps[-1].needs_singleton_guard
    argmin = check("Find(Country_001);RelateInv(located_in);Argmin(population);QueryAttr(area_km2)", kb_schema)
    assert argmin.steps[-1].needs_singleton_guard  # OPT: the set may be empty
    direct = check("Find(Person_00001);Relate(born_in);QueryAttr(population)", kb_schema)
    assert not direct.steps[-1].needs_singleton_guard


def test_or_may_mix_classes_and_relate_keeps_the_matching_part(kb_schema):
    checked = check("Find(Person_00001);Find(City_0001);Or();Relate(located_in);QueryName()", kb_schema)
    assert checked.steps[2].output.classes == {"Person", "City"}
    assert checked.steps[3].output.classes == {"Country"}
    assert checked.steps[3].output.cardinality is MANY


def test_full_operator_set_checks(kb_schema):
    checked = check("Find(Country_001);RelateInv(located_in);FilterNum(population,>=,100000);"
                    "Find(Country_002);RelateInv(located_in);Or();Count();VerifyNum(!=,0)", kb_schema)
    assert checked.answer_kind == "bool"


def test_check_accepts_text_and_reports_syntax_errors(kb_schema):
    assert isinstance(check("Find(City_0001);Count()", kb_schema), CheckedProgram)
    with pytest.raises(ProgramSyntaxError):
        check("Find(City_0001;Count()", kb_schema)


def test_every_operator_has_a_typing_rule(kb_schema):
    from kopl2sparql.program import OPERATORS
    from kopl2sparql.typecheck import _RULES
    assert set(_RULES) == set(OPERATORS)


# ---- entity names -------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [
    ("Person_00371", "Person"), ("City_0736", "City"), ("Country_038", "Country"),
    ("Org_0012", "Organization"), ("Person_1234567", "Person"),
    ("Person00371", None), ("Person_", None), ("Organization_1", None), ("person_1", None),
    ("Person_1a", None), ("", None),
])
def test_entity_class(name, cls):
    assert entity_class(name) == cls


def test_entity_prefixes_cover_the_ontology_classes():
    assert set(ENTITY_PREFIXES.values()) == set(schema().classes)


# ---- errors ---------------------------------------------------------------------------------

def _error(text: str | Program, **kwargs) -> ProgramTypeError:
    with pytest.raises(ProgramTypeError) as info:
        check(text if isinstance(text, Program) else parse(text), **kwargs)
    return info.value


def _underlined(error) -> str:
    return error.source[error.span[0]:error.span[1]]


@pytest.mark.parametrize("text, message, step, underlined", [
    # unknown names, suggestions from labels and altLabels
    ("Find(Person_00001);Relate(birthplace);QueryName()",
     "unknown relation 'birthplace'; did you mean born_in?", 2, "birthplace"),
    ("Find(Person_00001);Relate(hometown);QueryName()",
     "unknown relation 'hometown'; did you mean born_in?", 2, "hometown"),
    ("Find(Org_0001);Relate(HQ);QueryName()", "did you mean headquarters_in?", 2, "HQ"),
    ("Find(Person_00001);Relate(bornin);QueryName()", "did you mean born_in?", 2, "bornin"),
    ("Find(City_0001);QueryAttr(inhabitants)",
     "unknown attribute 'inhabitants'; did you mean population?", 2, "inhabitants"),
    ("Find(Org_0001);QueryAttr(turnover)", "did you mean revenue_billion_usd?", 2, "turnover"),
    ("Find(City_0001);QueryAttr(populaton)", "did you mean population?", 2, "populaton"),
    ("Find(City_0001);RelateInv(xyzzy);Count()", "unknown relation 'xyzzy'; known: born_in", 2, "xyzzy"),
    ("Find(City_0001);QueryAttr(born_in)", "'born_in' is a relation, not an attribute", 2, "born_in"),
    ("Find(City_0001);Relate(population)", "'population' is an attribute, not a relation", 2, "population"),
    ("Find(Persn_00371);Count()", "unknown entity 'Persn_00371'; did you mean Person_00371?", 1, "Persn_00371"),
    ("Find(Company_12);Count()", "did you mean Org_12?", 1, "Company_12"),
    ("Find(person_00371);Count()", "did you mean Person_00371?", 1, "person_00371"),
    ("Find(Person00371);Count()", "did you mean Person_00371?", 1, "Person00371"),
    ("Find(Organization_12);Count()", "did you mean Org_12?", 1, "Organization_12"),
    ("Find(Beijing);Count()", "malformed entity name 'Beijing'", 1, "Beijing"),
    ("Find(Person_00001);VerifyRel(works_at,Acme)", "malformed entity name 'Acme'", 2, "Acme"),
    # domain / range
    ("Find(Person_00371);Relate(located_in);QueryName()",
     "Relate(located_in) needs City entities (located_in: City -> Country), but step 1 gives "
     "Person entities: the result is always empty", 2, "located_in"),
    ("Find(Person_00001);RelateInv(born_in);Count()",
     "RelateInv(born_in) needs City entities", 2, "born_in"),
    ("Find(Country_001);QueryAttr(population)",
     "QueryAttr(population) needs City entities (population is an attribute of City), but step 1 "
     "gives Country entities: the value is undefined", 2, "population"),
    ("Find(Country_001);RelateInv(located_in);Argmax(gdp_billion_usd);QueryName()",
     "Argmax(gdp_billion_usd) needs Country entities", 3, "gdp_billion_usd"),
    ("Find(City_0001);FilterNum(height_cm,>,150);Count()", "FilterNum(height_cm) needs Person", 2, "height_cm"),
    ("Find(City_0001);VerifyRel(works_at,Org_0001)",
     "VerifyRel(works_at, ...) needs Person entities", 2, "works_at"),
    ("Find(Person_00001);VerifyRel(works_at,City_0001)",
     "works_at points to an Organization, not a City: the answer is always no", 2, "City_0001"),
    ("Find(Person_00001);Find(City_0001);And();Count()",
     "And of Person entities (step 1) and City entities (step 2): the intersection is always empty",
     3, "And()"),
    ("Find(Person_00001);Find(City_0001);Diff();Count()", "nothing is ever removed", 3, "Diff()"),
    # stack discipline
    ("Find(City_0001);QueryAttr(population);Compare(>)",
     "Compare needs two numbers, but the stack has one (a number from step 2)", 3, "Compare(>)"),
    ("Compare(<)", "Compare needs two numbers, but the stack is empty", 1, "Compare(<)"),
    ("Find(City_0001);And()", "And needs two entity sets, but the stack has one", 2, "And()"),
    ("Count()", "Count needs an entity set, but the stack is empty", 1, "Count()"),
    ("Find(City_0001);Count();Relate(located_in)",
     "Relate needs an entity set, but step 2 (Count) gives a number", 3, "Relate(located_in)"),
    ("Find(City_0001);QueryName();Count()",
     "Count needs an entity set, but step 2 (QueryName) gives names of City entities", 3, "Count()"),
    ("Find(City_0001);Count();Find(City_0002);Compare(>)",
     "Compare needs a number as its second operand, but step 3 (Find) gives City entities", 4, "Compare(>)"),
    ("Find(City_0001);Find(City_0002);QueryAttr(population);Compare(=)",
     "as its first operand, but step 1 (Find) gives City entities", 4, "Compare(=)"),
    ("Find(Person_00001);VerifyRel(born_in,City_0001);VerifyNum(>,1)",
     "VerifyNum needs a number, but step 2 (VerifyRel) gives a yes/no value", 3, "VerifyNum(>,1)"),
    ("Find(City_0001);Find(City_0002)",
     "the program leaves 2 values on the stack (step 1 Find, step 2 Find)", 1, "Find(City_0001)"),
    ("Find(City_0001);Count();Find(City_0002);Count();Find(City_0003);QueryName()",
     "leaves 3 values", 2, "Count()"),
])
def test_type_errors_are_located(text, message, step, underlined):
    error = _error(text)
    assert message in error.message
    assert error.step == step
    assert _underlined(error) == underlined


def test_type_error_text_matches_the_issue_example():
    error = _error("Find(Person_00371);Relate(birthplace);QueryName()")
    assert str(error) == (
        "type error: unknown relation 'birthplace'; did you mean born_in? (step 2, col 27)\n"
        "  Find(Person_00371);Relate(birthplace);QueryName()\n"
        "                            ^^^^^^^^^^")


def test_spans_follow_the_source_text_as_written():
    text = "Find( Person_00001 ) ;\n Relate( located_in )"
    error = _error(text, allow_prefix=True)
    assert error.source == text and _underlined(error) == "located_in"


# ---- programs built in Python -----------------------------------------------------------------

def test_programs_without_source_get_their_canonical_text_in_errors():
    program = Program.of(("Find", "Person_00001"), ("Relate", "birthplace"))
    error = _error(program, allow_prefix=True)
    assert error.source == "Find(Person_00001);Relate(birthplace)"
    assert _underlined(error) == "birthplace"


@pytest.mark.parametrize("step, message", [
    (Step("Nope"), "unknown function 'Nope'"),
    (Step("Find", ()), "Find takes 1 argument, got 0"),
    (Step("Find", ("City_0001", "City_0002")), "Find takes 1 argument, got 2"),
    (Step("Find", ("City 1",)), "malformed entity name 'City 1'"),
    (Step("Find", (["City_0001"],)), "argument 1 must be text, not list"),
    (Step("Find", ("City_0001> . ?s ?p ?o",)), "malformed entity name"),
])
def test_python_built_programs_are_validated_like_parsed_ones(step, message):
    error = _error(Program((step,)), allow_prefix=True)
    assert message in error.message
    assert error.step == 1


@pytest.mark.parametrize("args, message", [
    (("population", "=>", "5"), "unknown comparator '=>'"),
    (("population", ">", "1e5"), "expected a decimal number, got '1e5'"),
    (("population", ">", "5 } ; DROP ALL"), "expected a decimal number"),
])
def test_python_built_arguments_are_validated(args, message):
    program = Program((Step("Find", ("City_0001",)), Step("FilterNum", args)))
    error = _error(program, allow_prefix=True)
    assert message in error.message and error.step == 2


def test_empty_program_is_an_error_unless_a_prefix():
    with pytest.raises(ProgramTypeError, match="empty program"):
        check(Program(()))
    assert check(Program(()), allow_prefix=True).stack == ()


# ---- prefixes -------------------------------------------------------------------------------

def test_prefixes_of_a_program_all_check():
    program = parse("Find(Org_0001);RelateInv(works_at);Find(City_0001);RelateInv(born_in);And();QueryName()")
    depths = [len(check(program.prefix(n), allow_prefix=True).stack) for n in range(len(program) + 1)]
    assert depths == [0, 1, 1, 2, 2, 1, 1]
    partial = check(program.prefix(4), allow_prefix=True)
    assert not partial.complete
    with pytest.raises(ValueError):
        partial.result
    assert [v.step for v in partial.stack] == [1, 3]


# ---- schema parameter -----------------------------------------------------------------------

def test_check_uses_the_given_schema():
    base = schema()
    relations = dict(base.relations)
    relations["citizen_of"] = RelationInfo("citizen_of", "citizen of", ("nationality",),
                                           "Person", "Country", False)
    extended = dataclasses.replace(base, relations=relations)
    program = parse("Find(Person_00001);Relate(citizen_of);QueryName()")
    with pytest.raises(ProgramTypeError, match="unknown relation 'citizen_of'"):
        check(program)
    checked = check(program, schema=extended)
    assert checked.steps[1].output.classes == {"Country"}
    assert checked.steps[1].output.cardinality is MANY  # not functional
    with pytest.raises(ProgramTypeError, match="did you mean citizen_of"):
        check(parse("Find(Person_00001);Relate(nationality);QueryName()"), schema=extended)
