"""Validators that need no option set, on hand-made cases over the real KB and store."""

from __future__ import annotations

import pytest

from kopl2sparql.kbindex import KBIndex
from ontology import Schema, schema_path
from parsers.base import ProgramRunner, Query
from parsers.trace_validators import (WRONG_ANSWER_TYPE, AnswerTypeValidator, BestScoring,
                                      OptionsIfGivenValidator, ScoredVerdict, TraceValidator)
from parsers.validators import (EMPTY, NOT_IN_OPTIONS, AllOf, FirstPassing, OptionSetValidator, Trial,
                                Verdict, get_selection, get_validator)
from store.executor import SparqlExecutor
from store.oxigraph import OxigraphStore


@pytest.fixture(scope="module")
def kb(kb_turtle, kb_schema):
    return KBIndex.from_turtle(kb_turtle, kb_schema)


@pytest.fixture(scope="module")
def runner(kb_store, kb_schema):
    # SPARQL on the embedded store: the trace validator runs every program prefix as a query.
    return ProgramRunner(SparqlExecutor(kb_store, kb_schema), memo=True)


def _one(values) -> str:
    (value,) = values
    return value


def _run(validator, question, program, runner, choices=None):
    query = Query(question, tuple(choices) if choices is not None else None)
    execution = runner.run(program)
    assert execution.ok, execution.error
    return validator.check(query, program, execution, runner)


def spurious_case(kb):
    """A person whose employer's HQ country differs from the birth country (the paper's
    BirthCountry / EmployerHQCountry confusion), with both programs and answers."""
    for person in kb.members["Person"]:
        born = _one(kb.forward["located_in"][_one(kb.forward["born_in"][person])])
        org = _one(kb.forward["works_at"][person])
        hq = _one(kb.forward["located_in"][_one(kb.forward["headquarters_in"][org])])
        if born != hq:
            return (person, f"Find({person});Relate(born_in);Relate(located_in);QueryName()", born,
                    f"Find({person});Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()", hq)
    raise AssertionError("no such person")


def test_option_set_validator_lets_the_spurious_program_pass(kb, runner):
    """The paper's 115 errors: EmployerHQCountry's answer is a country among the options, so
    the option-set rule passes it for a birth-country question; the answer type cannot tell
    the two apart either (both give a country) — the ranker must (see test_open_ended)."""
    person, gold, born, wrong, hq = spurious_case(kb)
    question = f"The city where {person} was born is located in which country?"
    choices = [born, hq] + [c for c in kb.members["Country"] if c not in (born, hq)][:8]
    options = OptionSetValidator()
    assert _run(options, question, wrong, runner, choices).passed
    assert _run(options, question, gold, runner, choices).passed
    assert _run(AnswerTypeValidator(), question, wrong, runner).passed
    assert _run(TraceValidator(), question, wrong, runner).passed
    # Without the HQ country among the options, the rule rejects it.
    assert _run(options, question, wrong, runner, [born]).outcome == NOT_IN_OPTIONS


def test_answer_type_validator(runner):
    p = "Person_00371"
    birth_city = f"Find({p});Relate(born_in);QueryName()"
    birth_country = f"Find({p});Relate(born_in);Relate(located_in);QueryName()"
    birth_year = f"Find({p});QueryAttr(birth_year)"
    check = AnswerTypeValidator()
    country_q = f"The city where {p} was born is located in which country?"
    verdict = _run(check, country_q, birth_city, runner)
    assert not verdict.passed and verdict.outcome == WRONG_ANSWER_TYPE
    assert "Country" in verdict.detail and "City" in verdict.detail
    assert _run(check, country_q, birth_country, runner).passed
    assert not _run(check, f"In which year was {p} born?", birth_city, runner).passed
    assert _run(check, f"In which year was {p} born?", birth_year, runner).passed
    assert not _run(check, f"Does {p} work for Org_0001?", birth_year, runner).passed
    # A question whose type the rules cannot tell is not judged.
    assert _run(check, f"{p}?", birth_city, runner).passed


def test_trace_rejects_the_first_empty_step(kb, runner):
    no_hq = next(c for c in kb.members["City"] if c not in kb.inverse["headquarters_in"])
    other = "City_0001"
    program = f"Find({no_hq});RelateInv(headquarters_in);RelateInv(works_at);VerifyRel(born_in,{other})"
    assert runner.run(program).canonical == "no"          # the final answer alone looks fine
    verdict = _run(TraceValidator(), "Does anyone there ...?", program, runner)
    assert not verdict.passed
    assert verdict.outcome == "trace-empty@2" and verdict.step == 2
    assert "RelateInv(headquarters_in)" in verdict.detail


def test_trace_rejects_an_empty_intersection(kb, runner):
    org = "Org_0042"
    employees = kb.inverse["works_at"][org]
    city = next(c for c in kb.members["City"] if not (kb.inverse["born_in"].get(c, frozenset()) & employees))
    program = f"Find({org});RelateInv(works_at);Find({city});RelateInv(born_in);And();QueryName()"
    verdict = _run(TraceValidator(), "Which employees ...?", program, runner)
    assert verdict.outcome in ("trace-empty@4", "trace-empty@5")
    person = next(iter(employees))
    city = _one(kb.forward["born_in"][person])
    good = f"Find({org});RelateInv(works_at);Find({city});RelateInv(born_in);And();QueryName()"
    assert _run(TraceValidator(), "Which employees ...?", good, runner).passed


def test_trace_lets_a_count_of_nothing_pass_with_a_penalty(kb, runner):
    unborn = next((c for c in kb.members["City"] if c not in kb.inverse["born_in"]), None)
    if unborn is None:
        pytest.skip("every city is someone's birthplace in this KB")
    program = f"Find({unborn});RelateInv(born_in);Count()"
    assert runner.run(program).canonical == "0"
    verdict = _run(TraceValidator(), f"How many people were born in {unborn}?", program, runner)
    assert verdict.passed and isinstance(verdict, ScoredVerdict) and verdict.score < 0


def test_trace_reports_the_step_that_fails_to_execute(runner):
    # QueryAttr of a whole country's cities: well typed, but not one entity at run time.
    program = "Find(Country_038);RelateInv(located_in);QueryAttr(population)"
    assert not runner.run(program).ok
    verdict = TraceValidator().check(Query("?"), program, runner.run(program), runner)
    assert verdict.outcome == "trace-error@3" and verdict.step == 3


@pytest.fixture(scope="module")
def bad_runner(tmp_path_factory):
    """A runner on a tiny KB that breaks the schema (a person born in a country), with the
    KB's own schema: the SynKQA vocabulary plus its two entities (neither is in the
    SynKQA-Pro KB) and their classes."""
    ttl = tmp_path_factory.mktemp("bad-kb") / "bad.ttl"
    ttl.write_text("@prefix sk: <http://synkqa.org/ontology#> .\n"
                   "@prefix ske: <http://synkqa.org/entity/> .\n"
                   "ske:Person_1 a sk:Person ; sk:born_in ske:Country_1 .\n"
                   "ske:Country_1 a sk:Country .\n", encoding="utf-8")
    store = OxigraphStore()
    store.load_turtle(ttl)
    return ProgramRunner(SparqlExecutor(store, Schema.from_turtle(schema_path(), ttl)))


def test_trace_rejects_an_ill_typed_step(bad_runner):
    """A KB that breaks the schema gives a step value of the wrong class: the trace says
    which step."""
    runner = bad_runner
    program = "Find(Person_1);Relate(born_in);QueryName()"
    assert runner.run(program).canonical == "Country_1"
    verdict = TraceValidator().check(Query("In which city was Person_1 born?"), program, runner.run(program), runner)
    assert verdict.outcome == "trace-ill-typed@2" and "Country_1" in verdict.detail


def test_validators_type_check_with_the_runners_schema(bad_runner, kb_schema):
    """The static checks use the schema of the KB the runner's programs run on: Country_1
    is a country there (the SynKQA-Pro KB does not have it, which would allow any class)."""
    assert kb_schema.entity_classes("Country_1") is None
    program = "Find(Country_1);QueryName()"
    city_q = "Which city is Country_1?"
    verdict = _run(AnswerTypeValidator(), city_q, program, bad_runner)
    assert verdict.outcome == WRONG_ANSWER_TYPE and "program gives Country" in verdict.detail
    assert _run(AnswerTypeValidator(), "Which country is Country_1?", program, bad_runner).passed
    # A relation Country_1's class does not have is a type error on that KB.
    wrong = "Find(Country_1);Relate(born_in);QueryName()"
    execution = bad_runner.run(wrong)
    assert not execution.ok
    verdict = TraceValidator().check(Query(city_q), wrong, execution, bad_runner)
    assert verdict.outcome == "ill-typed" and "born_in" in verdict.detail


def test_gold_template_programs_pass_every_open_validator(kb, runner):
    person = "Person_00371"
    org = _one(kb.forward["works_at"][person])
    city = _one(kb.forward["born_in"][person])
    country = _one(kb.forward["located_in"][city])
    cases = [
        (f"In which year was {person} born?", f"Find({person});QueryAttr(birth_year)"),
        (f"In which city was {person} born?", f"Find({person});Relate(born_in);QueryName()"),
        (f"What is the number of people who were born in {city}?", f"Find({city});RelateInv(born_in);Count()"),
        (f"Does {city} have a larger population than City_0001?",
         f"Find({city});QueryAttr(population);Find(City_0001);QueryAttr(population);Compare(>)"),
        (f"Which city located in {country} has the largest population?",
         f"Find({country});RelateInv(located_in);Argmax(population);QueryName()"),
        (f"Which employees of {org} were born in {city}?",
         f"Find({org});RelateInv(works_at);Find({city});RelateInv(born_in);And();QueryName()"),
        (f"Does {person} work for {org}?", f"Find({person});VerifyRel(works_at,{org})"),
    ]
    chain = get_validator("open")
    for question, program in cases:
        assert _run(chain, question, program, runner).passed, program


def test_options_if_given():
    check = OptionsIfGivenValidator()
    runner = None
    from kopl2sparql.answer import Answer
    from parsers.base import Execution
    execution = Execution.of(Answer.entities(["Country_001"]))
    assert check.check(Query("q"), "p", execution, runner).passed
    assert check.check(Query("q", ("Country_001", "Country_002")), "p", execution, runner).passed
    assert check.check(Query("q", ("Country_002",)), "p", execution, runner).outcome == NOT_IN_OPTIONS
    empty = Execution.of(Answer.entities([]))
    assert check.check(Query("q", ("",)), "p", empty, runner).outcome == EMPTY


def test_validators_by_name():
    assert get_validator("exists").name == "non-empty"
    chain = get_validator("options+open")
    assert isinstance(chain, AllOf) and chain.needs_choices
    assert not get_validator("open").needs_choices
    assert not get_validator("options-if-given+open").needs_choices
    assert get_validator("open").name == "non-empty+answer-type+trace"
    assert isinstance(get_selection("best"), BestScoring)


def _trial(rank, score, passed, adjust=0.0):
    verdict = ScoredVerdict(True, "passed", score=adjust) if passed else Verdict.fail("x")
    return Trial(rank, 0, score, f"p{rank}", None, verdict)


def test_first_passing_and_best_scoring():
    trials = [_trial(1, 3.0, False), _trial(2, 2.0, True, adjust=-1.5), _trial(3, 1.0, True)]
    drawn = []

    def lazily():
        for t in trials:
            drawn.append(t.rank)
            yield t

    assert FirstPassing().select(lazily()).rank == 2 and drawn == [1, 2]     # stops early
    drawn.clear()
    assert BestScoring().select(lazily()).rank == 3 and drawn == [1, 2, 3]   # sees all
    assert BestScoring().select(iter([_trial(1, 1.0, False)])) is None
    # Ties go to the better rank.
    assert BestScoring().select(iter([_trial(1, 1.0, True), _trial(2, 1.0, True)])).rank == 1


def test_native_trace_and_sparql_prefixes_agree(kb, runner, kb_schema):
    """The same verdicts whether the steps come from SPARQL prefix queries or from the
    native interpreter's trace."""
    from store.executor import NativeExecutor
    native = ProgramRunner(NativeExecutor(kb, kb_schema))
    no_hq = next(c for c in kb.members["City"] if c not in kb.inverse["headquarters_in"])
    programs = [f"Find({no_hq});RelateInv(headquarters_in);RelateInv(works_at);VerifyRel(born_in,City_0001)",
                "Find(Person_00371);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()",
                "Find(Org_0042);RelateInv(works_at);Find(City_0001);RelateInv(born_in);And();QueryName()",
                "Find(Country_038);RelateInv(located_in);Argmax(population);QueryName()"]
    for program in programs:
        a = TraceValidator().check(Query("?"), program, runner.run(program), runner)
        b = TraceValidator().check(Query("?"), program, native.run(program), native)
        assert (a.passed, a.outcome) == (b.passed, b.outcome), program
