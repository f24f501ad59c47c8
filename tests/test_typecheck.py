"""The type checker: stack discipline, schema names, domain/range, cardinality, located errors."""

from __future__ import annotations

import pytest

from kopl2sparql.errors import ExecutionError, ProgramSyntaxError, ProgramTypeError
from kopl2sparql.program import Program, Step, ValueType
from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import Cardinality, CheckedProgram, check
from ontology import Schema, schema_path
from synkqa.benchmark.kbgen import class_of_name

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
    checked = check("Find(City_0001);QueryAttr(population);Find(City_0002);QueryAttr(population);Compare(>)",
                    kb_schema)
    assert [s.dependencies for s in checked.steps] == [(), (0,), (), (2,), (1, 3)]
    assert [s.depth for s in checked.steps] == [1, 1, 2, 2, 1]
    assert checked.result.type is B and checked.answer_kind == "bool"
    assert not any(s.needs_singleton_guard for s in checked.steps)


def test_argmax_template_is_at_most_one(kb_schema):
    types = _types("Find(Country_038);RelateInv(located_in);Argmax(population);QueryName()", kb_schema)
    assert types[1] == (E, ("City",), MANY)
    assert types[2] == (E, ("City",), OPT)


def test_intersection_template(kb_schema):
    checked = check("Find(Org_0012);RelateInv(works_at);Find(City_0736);RelateInv(born_in);And();QueryName()",
                    kb_schema)
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
    argmin = check("Find(Country_001);RelateInv(located_in);Argmin(population);QueryAttr(area_km2)",
                   kb_schema)
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


def test_every_operator_defines_its_rule_semantics_and_lowering():
    """Each operator is one class with its typing rule, native semantics and SPARQL lowering."""
    from kopl2sparql.operators import OPERATORS, Operator
    for name, op in OPERATORS.items():
        assert op.name == name
        for method in ("check", "run", "lower"):
            assert getattr(type(op), method) is not getattr(Operator, method), f"{name}.{method}"


# ---- entity names -------------------------------------------------------------------------
# An entity's class comes from the KB's schema (its rdf:type), not from its name. The
# SynKQA-Pro naming rule (Org_0012 is an Organization) lives in the generator and agrees
# with the types the KB declares.

@pytest.mark.parametrize("name, cls", [
    ("Person_00371", "Person"), ("City_0736", "City"), ("Country_038", "Country"),
    ("Org_0012", "Organization"), ("Person_1234567", "Person"),
    ("Person00371", None), ("Person_", None), ("Organization_1", None), ("person_1", None),
    ("Person_1a", None), ("", None),
])
def test_class_of_name(name, cls):
    assert class_of_name(name) == cls


def test_entity_classes_come_from_the_schema_and_agree_with_the_naming_rule(kb_schema):
    names = kb_schema.entity_names()
    assert len(names) == 8120
    for name in names:
        assert kb_schema.entity_classes(name) == {class_of_name(name)}, name
    assert {class_of_name(n) for n in names} == set(kb_schema.classes)
    # A well-formed name the KB lacks has no class: the checker takes it as any class.
    assert kb_schema.entity_classes("Person_99999") is None


@pytest.mark.parametrize("text", [
    "Find(Persn_00371);Count()", "Find(Company_12);Count()", "Find(person_00371);Count()",
    "Find(Person00371);Count()", "Find(Organization_12);Count()", "Find(Beijing);Count()",
    "Find(Person_99999);Count()",
])
def test_unknown_entities_are_any_class_for_the_checker(text, kb_schema):
    """Changed on purpose: an entity the schema does not know is no type error (no
    class-prefix rule, no did-you-mean); it may be of any class, and the engines report
    it unknown at run time."""
    checked = check(text, kb_schema)
    find = checked.steps[0].output
    assert find.type is E and find.classes is None and find.cardinality is ONE


def test_unknown_entity_of_any_class_passes_domain_checks(kb_schema):
    # Person_99999 would be a Person by its name, but only the schema counts: Relate(located_in)
    # (City -> Country) is not refused, and the result is the range's class.
    checked = check("Find(Person_99999);Relate(located_in);QueryName()", kb_schema)
    assert checked.steps[1].output.classes == {"Country"}
    assert checked.steps[1].output.cardinality is MANY     # not known to be one City
    checked = check("Find(Person_00001);VerifyRel(works_at,Acme)", kb_schema)
    assert checked.result.type is B
    # The same programs with known entities of the wrong class are refused.
    with pytest.raises(ProgramTypeError, match="always empty"):
        check("Find(Person_00001);Relate(located_in);QueryName()", kb_schema)
    with pytest.raises(ProgramTypeError, match="always no"):
        check("Find(Person_00001);VerifyRel(works_at,City_0001)", kb_schema)


@pytest.mark.parametrize("text, unknown, step", [
    ("Find(Persn_00371);Count()", "Persn_00371", 1),
    ("Find(Beijing);Count()", "Beijing", 1),
    ("Find(Person_00001);VerifyRel(works_at,Acme)", "Acme", 2),
])
def test_unknown_entities_fail_at_run_time(text, unknown, step):
    from synkqa.benchmark.executors import get_executor
    with pytest.raises(ExecutionError) as info:
        get_executor("native").execute(parse(text))
    assert str(info.value) == f"execution error at step {step}: unknown entity '{unknown}'"


def test_find_of_a_label_naming_several_entities_is_many():
    schema = Schema.from_turtle_text(_SMALL_TTL)
    assert schema.resolve("Springfield") == ("city_a", "city_b")
    checked = check("Find(Springfield);Relate(located_in)", schema)
    assert checked.steps[0].output.classes == {"City"}
    assert checked.steps[0].output.cardinality is MANY
    assert checked.steps[1].output.cardinality is MANY
    one = check("Find(Ada Lovelace);Relate(born_in);Relate(located_in)", schema)
    assert [s.output.cardinality for s in one.steps] == [ONE, ONE, ONE]
    assert one.steps[0].output.classes == {"Person"}


# A tiny KB with its own ontology: a subclass, a label shared by two cities, and a
# functional relation that not every member of its domain has.
_SMALL_TTL = """
@prefix ex: <http://example.org/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Person a owl:Class . ex:City a owl:Class . ex:Country a owl:Class .
ex:Student a owl:Class ; rdfs:subClassOf ex:Person .
ex:born_in a owl:ObjectProperty, owl:FunctionalProperty ; rdfs:domain ex:Person ; rdfs:range ex:City .
ex:located_in a owl:ObjectProperty, owl:FunctionalProperty ; rdfs:domain ex:City ; rdfs:range ex:Country .
ex:mentor a owl:ObjectProperty, owl:FunctionalProperty ; rdfs:domain ex:Person ; rdfs:range ex:Person .
ex:population a owl:DatatypeProperty ; rdfs:domain ex:City .
ex:motto a owl:DatatypeProperty ; rdfs:domain ex:City .
ex:ada a ex:Person ; rdfs:label "Ada Lovelace" ; ex:born_in ex:city_a ; ex:mentor ex:bob .
ex:bob a ex:Student ; ex:born_in ex:city_b .
ex:city_a a ex:City ; rdfs:label "Springfield" ; ex:located_in ex:land ; ex:population 10 ; ex:motto "Onward" .
ex:city_b a ex:City ; rdfs:label "Springfield" ; ex:located_in ex:land ; ex:population 20 ; ex:motto "Upward" .
ex:land a ex:Country .
"""


def test_subclasses_and_totality_in_a_small_schema():
    schema = Schema.from_turtle_text(_SMALL_TTL)
    assert schema.relations["born_in"].total and not schema.relations["mentor"].total
    # A Student is a Person: Relate(born_in) applies, and born_in is total: ONE stays ONE.
    student = check("Find(bob);Relate(born_in)", schema)
    assert student.steps[0].output.classes == {"Student"}
    assert student.steps[1].output.cardinality is ONE
    # mentor is functional but bob has none: at most one.
    assert check("Find(ada);Relate(mentor)", schema).result.cardinality is OPT
    # A set of people may hold students, and students are people.
    both = check("Find(bob);Find(ada);And()", schema)
    assert both.result.classes == {"Student"}
    with pytest.raises(ProgramTypeError, match="always empty"):
        check("Find(bob);Find(land);And()", schema)


def test_text_attributes_answer_strings_and_refuse_numeric_operators():
    schema = Schema.from_turtle_text(_SMALL_TTL)
    assert not schema.attributes["motto"].numeric and schema.attributes["population"].numeric
    checked = check("Find(city_a);QueryAttr(motto)", schema)
    assert checked.result.type is ValueType.STRING and checked.answer_kind == "string"
    assert check("Find(city_a);QueryAttr(population)", schema).result.type is N
    for text in ("Find(land);RelateInv(located_in);Argmax(motto)",
                 "Find(land);RelateInv(located_in);FilterNum(motto,>,1)"):
        with pytest.raises(ProgramTypeError, match="needs a numeric attribute, but motto holds string values"):
            check(text, schema)


# ---- errors ---------------------------------------------------------------------------------

def _error(text: str | Program, schema, **kwargs) -> ProgramTypeError:
    with pytest.raises(ProgramTypeError) as info:
        check(text if isinstance(text, Program) else parse(text), schema, **kwargs)
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
def test_type_errors_are_located(text, message, step, underlined, kb_schema):
    error = _error(text, kb_schema)
    assert message in error.message
    assert error.step == step
    assert _underlined(error) == underlined


def test_type_error_text_matches_the_issue_example(kb_schema):
    error = _error("Find(Person_00371);Relate(birthplace);QueryName()", kb_schema)
    assert str(error) == (
        "type error: unknown relation 'birthplace'; did you mean born_in? (step 2, col 27)\n"
        "  Find(Person_00371);Relate(birthplace);QueryName()\n"
        "                            ^^^^^^^^^^")


def test_spans_follow_the_source_text_as_written(kb_schema):
    text = "Find( Person_00001 ) ;\n Relate( located_in )"
    error = _error(text, kb_schema, allow_prefix=True)
    assert error.source == text and _underlined(error) == "located_in"


# ---- programs built in Python -----------------------------------------------------------------

def test_programs_without_source_get_their_canonical_text_in_errors(kb_schema):
    program = Program.of(("Find", "Person_00001"), ("Relate", "birthplace"))
    error = _error(program, kb_schema, allow_prefix=True)
    assert error.source == "Find(Person_00001);Relate(birthplace)"
    assert _underlined(error) == "birthplace"


@pytest.mark.parametrize("step, message", [
    (Step("Nope"), "unknown function 'Nope'"),
    (Step("Find", ()), "Find takes 1 argument, got 0"),
    (Step("Find", ("City_0001", "City_0002")), "Find takes 1 argument, got 2"),
    (Step("Find", (["City_0001"],)), "argument 1 must be text, not list"),
    (Step("Find", ("",)), "an entity is named by a non-empty name or label"),
    (Step("Find", (" City_0001",)), "without surrounding or control whitespace, got ' City_0001'"),
    (Step("Find", ("City_0001 ",)), "got 'City_0001 '"),
    (Step("Find", ("City\t0001",)), "got 'City\\t0001'"),
    (Step("Find", ("\u00a0City_0001",)), "got '\\xa0City_0001'"),    # the parser keeps a no-break space
    (Step("Find", ("City_0001\n?s ?p ?o",)), "without surrounding or control whitespace"),
    (Step("Relate", ("born_in ?x",)), "Relate: malformed relation name 'born_in ?x'"),
    (Step("QueryAttr", ("population>",)), "QueryAttr: malformed attribute name 'population>'"),
])
def test_python_built_programs_are_validated_like_parsed_ones(step, message, kb_schema):
    program = Program((Step("Find", ("City_0001",)), step)) if step.op in ("Relate", "QueryAttr") else Program((step,))
    error = _error(program, kb_schema, allow_prefix=True)
    assert message in error.message
    assert error.step == len(program)


@pytest.mark.parametrize("text", ["City 1", "City_0001> . ?s ?p ?o", "Ada Lovelace", "São Paulo"])
def test_entity_arguments_may_be_any_label_text(text, kb_schema):
    """Changed on purpose: entity arguments are names or labels, so inner spaces and
    punctuation are no longer type errors (the compiler never writes them into a query;
    see test_compiler). They name no entity of this KB: any class."""
    checked = check(Program((Step("Find", (text,)), Step("Count"))), kb_schema)
    assert checked.steps[0].output.classes is None and checked.answer_kind == "number"


@pytest.mark.parametrize("args, message", [
    (("population", "=>", "5"), "unknown comparator '=>'"),
    (("population", ">", "1e5"), "expected a decimal number, got '1e5'"),
    (("population", ">", "5 } ; DROP ALL"), "expected a decimal number"),
])
def test_python_built_arguments_are_validated(args, message, kb_schema):
    program = Program((Step("Find", ("City_0001",)), Step("FilterNum", args)))
    error = _error(program, kb_schema, allow_prefix=True)
    assert message in error.message and error.step == 2


def test_empty_program_is_an_error_unless_a_prefix(kb_schema):
    with pytest.raises(ProgramTypeError, match="empty program"):
        check(Program(()), kb_schema)
    assert check(Program(()), kb_schema, allow_prefix=True).stack == ()


# ---- prefixes -------------------------------------------------------------------------------

def test_prefixes_of_a_program_all_check(kb_schema):
    program = parse("Find(Org_0001);RelateInv(works_at);Find(City_0001);RelateInv(born_in);And();QueryName()")
    depths = [len(check(program.prefix(n), kb_schema, allow_prefix=True).stack) for n in range(len(program) + 1)]
    assert depths == [0, 1, 1, 2, 2, 1, 1]
    partial = check(program.prefix(4), kb_schema, allow_prefix=True)
    assert not partial.complete
    with pytest.raises(ValueError):
        partial.result
    assert [v.step for v in partial.stack] == [1, 3]


# ---- schema parameter -----------------------------------------------------------------------

def test_check_uses_the_given_schema(kb_schema):
    extended = Schema.from_turtle_text(schema_path().read_text() + """
@prefix ske: <http://synkqa.org/entity/> .
sk:citizen_of a owl:ObjectProperty ; rdfs:label "citizen of" ; skos:altLabel "nationality" ;
    rdfs:domain sk:Person ; rdfs:range sk:Country .
ske:Person_00001 a sk:Person ; sk:citizen_of ske:Country_001, ske:Country_002 .
ske:Country_001 a sk:Country .
ske:Country_002 a sk:Country .
""")
    assert not extended.relations["citizen_of"].functional       # a person with two
    program = parse("Find(Person_00001);Relate(citizen_of);QueryName()")
    with pytest.raises(ProgramTypeError, match="unknown relation 'citizen_of'"):
        check(program, kb_schema)
    checked = check(program, extended)
    assert checked.steps[0].output.classes == {"Person"}
    assert checked.steps[1].output.classes == {"Country"}
    assert checked.steps[1].output.cardinality is MANY  # not functional
    with pytest.raises(ProgramTypeError, match="did you mean citizen_of"):
        check(parse("Find(Person_00001);Relate(nationality);QueryName()"), extended)
    with pytest.raises(ProgramTypeError, match="Relate.citizen_of. needs Person entities"):
        check(parse("Find(Country_001);Relate(citizen_of);QueryName()"), extended)


def test_check_requires_a_schema():
    with pytest.raises(TypeError):
        check("Find(City_0001);Count()")            # no default schema any more
    with pytest.raises(TypeError, match="needs the KB's Schema"):
        check("Find(City_0001);Count()", None)
