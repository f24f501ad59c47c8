"""KQA Pro's function-list form: the mapping, dependencies, strict mode and round trips.

Also home of the hypothesis strategy for random well-typed programs (``typed_programs``),
which ``test_fuzz_syntax`` reuses for mutations.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopl2sparql.errors import ProgramError, ProgramSyntaxError, ProgramTypeError
from kopl2sparql.kqapro import NoKQAProCounterpart, from_kqapro, to_kqapro
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import COMPARATORS, Program, Step
from kopl2sparql.syntax import parse
from kopl2sparql.typecheck import check

# ---- a strategy for random well-typed programs ------------------------------------------------
# Programs are drawn for a KB's schema (tests pass the ``kb_schema`` fixture): relations and
# attributes from its tables, entities from its catalogue, so every Find names an entity of
# the class the program needs.

_MEMBERS: dict[int, tuple[object, dict[str, list[str]]]] = {}


def _members(schema, cls: str) -> list[str]:
    found = _MEMBERS.get(id(schema))
    if found is None or found[0] is not schema:
        found = _MEMBERS[id(schema)] = (schema, {c: schema.members(c) for c in schema.classes})
    return found[1][cls]


def _entity(draw, schema, cls: str) -> str:
    return draw(st.sampled_from(_members(schema, cls)))


def _number(draw) -> str:
    whole = draw(st.integers(-5, 3_000_000))
    if draw(st.booleans()):
        return str(whole)
    return parse(f"VerifyNum(>,{whole}.{draw(st.integers(0, 99)):02d})").steps[0].args[1]


def _attributes(schema, cls: str) -> list[str]:
    return sorted(a for a, info in schema.attributes.items() if info.domain == cls)


def _set(draw, schema, cls: str, budget: int) -> list[Step]:
    """Steps leaving one entity set that can contain ``cls`` entities."""
    choices = ["find"]
    if budget > 0:
        choices += ["relate", "relate_inv", "select", "filter", "and", "or", "diff"]
    kind = draw(st.sampled_from(choices))
    if kind == "relate":
        rels = [r for r, info in schema.relations.items() if info.range == cls]
        if rels:
            rel = draw(st.sampled_from(sorted(rels)))
            return _set(draw, schema, schema.relations[rel].domain, budget - 1) + [Step("Relate", (rel,))]
    if kind == "relate_inv":
        rels = [r for r, info in schema.relations.items() if info.domain == cls]
        if rels:
            rel = draw(st.sampled_from(sorted(rels)))
            return _set(draw, schema, schema.relations[rel].range, budget - 1) + [Step("RelateInv", (rel,))]
    if kind == "select":
        op = draw(st.sampled_from(["Argmax", "Argmin"]))
        attr = draw(st.sampled_from(_attributes(schema, cls)))
        return _set(draw, schema, cls, budget - 1) + [Step(op, (attr,))]
    if kind == "filter":
        attr = draw(st.sampled_from(_attributes(schema, cls)))
        comp = draw(st.sampled_from(COMPARATORS))
        return _set(draw, schema, cls, budget - 1) + [Step("FilterNum", (attr, comp, _number(draw)))]
    if kind in ("and", "diff"):
        half = budget // 2
        op = "And" if kind == "and" else "Diff"
        return _set(draw, schema, cls, half) + _set(draw, schema, cls, budget - 1 - half) + [Step(op)]
    if kind == "or":
        half = budget // 2
        other = draw(st.sampled_from(sorted(schema.classes)))
        left, right = _set(draw, schema, cls, half), _set(draw, schema, other, budget - 1 - half)
        if draw(st.booleans()):
            left, right = right, left
        return left + right + [Step("Or")]
    return [Step("Find", (_entity(draw, schema, cls),))]


def _number_expr(draw, schema, budget: int) -> list[Step]:
    cls = draw(st.sampled_from(sorted(schema.classes)))
    if draw(st.booleans()):
        return _set(draw, schema, cls, budget) + [Step("Count")]
    attr = draw(st.sampled_from(_attributes(schema, cls)))
    return _set(draw, schema, cls, budget) + [Step("QueryAttr", (attr,))]


@st.composite
def typed_programs(draw, schema, max_budget: int = 6) -> Program:
    """Random well-typed complete programs over the whole operator set (nesting included),
    for the KB ``schema``."""
    budget = draw(st.integers(0, max_budget))
    result = draw(st.sampled_from(["names", "set", "number", "compare", "verify_num", "verify_rel"]))
    cls = draw(st.sampled_from(sorted(schema.classes)))
    if result == "names":
        steps = _set(draw, schema, cls, budget) + [Step("QueryName")]
    elif result == "set":
        steps = _set(draw, schema, cls, budget)
    elif result == "number":
        steps = _number_expr(draw, schema, budget)
    elif result == "compare":
        half = budget // 2
        steps = (_number_expr(draw, schema, half) + _number_expr(draw, schema, budget - half)
                 + [Step("Compare", (draw(st.sampled_from(COMPARATORS)),))])
    elif result == "verify_num":
        steps = _number_expr(draw, schema, budget) + [
            Step("VerifyNum", (draw(st.sampled_from(COMPARATORS)), _number(draw)))]
    else:
        rel = draw(st.sampled_from(sorted(schema.relations)))
        info = schema.relations[rel]
        target = _entity(draw, schema, info.range)
        steps = _set(draw, schema, info.domain, budget) + [Step("VerifyRel", (rel, target))]
    return Program(tuple(steps))


@st.composite
def stack_programs(draw) -> Program:
    """Random programs that respect only the stack counts (names and types arbitrary)."""
    steps, depth = [], 0
    names = st.text("abcXYZ_019", min_size=1, max_size=12)
    for _ in range(draw(st.integers(1, 10))):
        ops = [name for name, op in OPERATORS.items() if len(op.pops) <= depth]
        name = draw(st.sampled_from(sorted(ops)))
        op = OPERATORS[name]
        args = tuple(draw(st.sampled_from(COMPARATORS)) if k.value == "comparator"
                     else _number(draw) if k.value == "number" else draw(names) for k in op.args)
        steps.append(Step(name, args))
        depth += 1 - len(op.pops)
    return Program(tuple(steps))


# ---- the mapping ------------------------------------------------------------------------------

def test_birth_country():
    assert to_kqapro("Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()") == [
        {"function": "Find", "inputs": ["Person_00371"], "dependencies": []},
        {"function": "Relate", "inputs": ["born_in", "forward"], "dependencies": [0]},
        {"function": "Relate", "inputs": ["located_in", "forward"], "dependencies": [1]},
        {"function": "What", "inputs": [], "dependencies": [2]},
    ]


def test_intersection_dependencies_are_post_order():
    assert to_kqapro("Find(Org_0012);RelateInv(works_at);Find(City_0736);RelateInv(born_in);And();Count()") == [
        {"function": "Find", "inputs": ["Org_0012"], "dependencies": []},
        {"function": "Relate", "inputs": ["works_at", "backward"], "dependencies": [0]},
        {"function": "Find", "inputs": ["City_0736"], "dependencies": []},
        {"function": "Relate", "inputs": ["born_in", "backward"], "dependencies": [2]},
        {"function": "And", "inputs": [], "dependencies": [1, 3]},
        {"function": "Count", "inputs": [], "dependencies": [4]},
    ]


@pytest.mark.parametrize("op, kqa", [("Argmax", "largest"), ("Argmin", "smallest")])
def test_select_among_merges_two_steps(op, kqa):
    steps = to_kqapro(f"Find(Country_038);RelateInv(located_in);{op}(population);QueryName()")
    assert steps[2:] == [{"function": "SelectAmong", "inputs": ["population", kqa], "dependencies": [1]}]
    assert len(steps) == 3


def test_select_among_dependencies_after_the_merge():
    steps = to_kqapro("Find(Country_1);RelateInv(located_in);Argmax(population);QueryName();"
                      "Find(City_1);QueryName();Find(City_2);Find(City_3);Or();Count()")
    assert [s["dependencies"] for s in steps] == [[], [0], [1], [], [3], [], [], [5, 6], [7]]


def test_filter_and_verify_num_argument_order():
    steps = to_kqapro("Find(Country_1);RelateInv(located_in);FilterNum(population,>,50000);Count();VerifyNum(=,3)")
    assert steps[2] == {"function": "FilterNum", "inputs": ["population", "50000", ">"], "dependencies": [1]}
    assert steps[4] == {"function": "VerifyNum", "inputs": ["3", "="], "dependencies": [3]}


def test_query_attr_and_or():
    steps = to_kqapro("Find(City_1);Find(City_2);Or();Argmax(area_km2);QueryAttr(population)")
    assert [s["function"] for s in steps] == ["Find", "Find", "Or", "Argmax", "QueryAttr"]


@pytest.mark.parametrize("text, function, inputs", [
    ("Find(City_1);QueryAttr(population);Find(City_2);QueryAttr(population);Compare(>)", "Compare", [">"]),
    ("Find(Person_1);VerifyRel(works_at,Org_1)", "VerifyRel", ["works_at", "Org_1"]),
    ("Find(City_1);Find(City_2);Diff();Count()", "Diff", []),
    ("Find(Country_1);RelateInv(located_in);Argmax(population);Relate(located_in);QueryName()",
     "Argmax", ["population"]),
    ("Find(Country_1);RelateInv(located_in);Argmin(population);Count()", "Argmin", ["population"]),
    ("Find(Country_1);RelateInv(located_in);FilterNum(population,>=,5);Count()", "FilterNum",
     ["population", "5", ">="]),
    ("Find(City_1);QueryAttr(population);VerifyNum(<=,5)", "VerifyNum", ["5", "<="]),
])
def test_extensions_and_strict_mode(text, function, inputs):
    assert any(s["function"] == function and s["inputs"] == inputs for s in to_kqapro(text))
    with pytest.raises(NoKQAProCounterpart) as info:
        to_kqapro(text, strict=True)
    error = info.value
    assert isinstance(error, ProgramError)
    assert error.source[error.span[0]:error.span[1]].startswith(function)


def test_strict_error_message():
    with pytest.raises(NoKQAProCounterpart) as info:
        to_kqapro("Find(Person_1);VerifyRel(works_at,Org_1)", strict=True)
    assert str(info.value) == (
        "no KQA Pro counterpart: VerifyRel(works_at,Org_1): KQA Pro verifies only attribute "
        "values, not relations (step 2, col 16)\n"
        "  Find(Person_1);VerifyRel(works_at,Org_1)\n"
        "                 ^^^^^^^^^^^^^^^^^^^^^^^^^")


def test_strict_mode_accepts_the_nine_templates():
    from tests.test_syntax import TEMPLATES
    for text in TEMPLATES:
        if "Compare" in text or "VerifyRel" in text:
            continue
        assert from_kqapro(to_kqapro(text, strict=True)) == parse(text)


def test_to_kqapro_reports_stack_underflow():
    with pytest.raises(ProgramTypeError, match="And pops 2 values, the stack holds 1"):
        to_kqapro(Program.of(("Find", "City_1"), ("And",)))


# ---- reading KQA Pro ---------------------------------------------------------------------------

def test_from_kqapro_without_dependencies():
    program = from_kqapro([{"function": "Find", "inputs": ["City_1"]},
                           {"function": "Relate", "inputs": ["born_in", "backward"]},
                           {"function": "Count", "inputs": []}])
    assert program.canonical() == "Find(City_1);RelateInv(born_in);Count()"


def test_from_kqapro_normalises_numbers_like_the_parser():
    program = from_kqapro([{"function": "Find", "inputs": ["Country_1"]},
                           {"function": "Relate", "inputs": ["located_in", "backward"]},
                           {"function": "FilterNum", "inputs": ["population", "35000.0", ">"]},
                           {"function": "Count", "inputs": []}])
    assert program.steps[2].args == ("population", ">", "35000")
    assert program == parse("Find(Country_1);RelateInv(located_in);FilterNum(population,>,35000.00);Count()")


def test_from_kqapro_accepts_integer_inputs():
    program = from_kqapro([{"function": "Find", "inputs": ["City_1"]},
                           {"function": "QueryAttr", "inputs": ["population"]},
                           {"function": "VerifyNum", "inputs": [5000, ">"]}])
    assert program.steps[-1] == Step("VerifyNum", (">", "5000"))


@pytest.mark.parametrize("steps, message, step", [
    ([], "empty KQA Pro program", None),
    ("Find(City_1)", "a KQA Pro program is a list of steps, not str", None),
    ([{"function": "FilterConcept", "inputs": ["human"]}],
     "KQA Pro function 'FilterConcept' has no SynKQA-Pro counterpart; supported: And, Count", 1),
    ([{"function": "Find", "inputs": ["City_1"]}, {"function": "SelectBetween", "inputs": ["a", "greater"]}],
     "'SelectBetween' has no SynKQA-Pro counterpart", 2),
    ([{"function": "Find", "inputs": ["City_1"]}, {"function": "Relate", "inputs": ["born_in", "sideways"]}],
     "direction must be forward or backward, got 'sideways'", 2),
    ([{"function": "Find", "inputs": ["City_1"]}, {"function": "Relate", "inputs": ["born_in"]}],
     "Relate takes 2 inputs (relation, direction), got 1", 2),
    ([{"function": "Find", "inputs": ["City_1"]}, {"function": "SelectAmong", "inputs": ["population", "most"]}],
     "op must be largest or smallest", 2),
    ([{"function": "Find", "inputs": ["City_1"]}, {"function": "And", "inputs": []}],
     "And needs 2 inputs but only 1 earlier step left a value", 2),
    ([{"function": "Find", "inputs": ["City_1"], "dependencies": []},
      {"function": "Find", "inputs": ["City_2"], "dependencies": []},
      {"function": "Count", "inputs": [], "dependencies": [0]}],
     "dependencies [0] do not match the post-order sequence (expected [1])", 3),
    ([{"inputs": []}], "each KQA Pro step is an object with a \"function\" key", 1),
    ([{"function": 3, "inputs": []}], "\"function\" must be a string, not int", 1),
    ([{"function": "Find", "inputs": "City_1"}], "\"inputs\" must be a list of strings", 1),
    ([{"function": "Find", "inputs": [1.5]}], "\"inputs\" must be a list of strings", 1),
    ([{"function": "What", "inputs": ["x"]}], "What takes 0 inputs (none), got 1", 1),
    ([{"function": "Find", "inputs": ["City_1"], "dependencies": 3}],
     "\"dependencies\" must be a list of step indices", 1),
])
def test_from_kqapro_errors(steps, message, step):
    with pytest.raises(ProgramSyntaxError) as info:
        from_kqapro(steps)
    assert message in info.value.message
    assert info.value.step == step


# ---- round trips ------------------------------------------------------------------------------

_FAST = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@_FAST
@given(data=st.data())
def test_random_typed_programs_check_and_round_trip(kb_schema, data):
    program = data.draw(typed_programs(kb_schema))
    check(program, kb_schema)  # the generator and the checker agree on what is well typed
    assert from_kqapro(to_kqapro(program)) == program
    assert parse(program.canonical()) == program


@settings(max_examples=500, deadline=None)
@given(stack_programs())
def test_round_trip_holds_for_every_stack_valid_program(program):
    assert from_kqapro(to_kqapro(program)) == program


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_strict_output_round_trips_when_it_exists(kb_schema, data):
    program = data.draw(typed_programs(kb_schema))
    try:
        steps = to_kqapro(program, strict=True)
    except NoKQAProCounterpart:
        return
    kqa = {"Find", "Relate", "What", "QueryAttr", "Count", "And", "Or", "FilterNum",
           "VerifyNum", "SelectAmong"}
    assert {s["function"] for s in steps} <= kqa
    assert all(s["inputs"][-1] in ("=", "!=", "<", ">")
               for s in steps if s["function"] in ("FilterNum", "VerifyNum"))
    assert from_kqapro(steps) == program
