"""EV-TC's selection and fallback rules on hand-made cases, on the real store.

Each case fixes the candidate ranking (what a ranker would output) and the options, and
reads the facts it needs from the KB through the executor, so the cases stay true if the
KB generator changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evaluation import metrics
from kopl2sparql.errors import ConfigError, ModelError
from kopl2sparql.syntax import parse
from parsers.base import ProgramRunner, Query
from parsers.rerank import ExecutionValidatedParser
from parsers.template import TemplateClassifier
from parsers.validators import (NOT_EXAMINED, NOT_IN_OPTIONS, PASSED, UNFILLABLE, AllOf, FirstPassing,
                                Verdict, get_selection, get_validator)

FIXTURES = Path(__file__).parent / "fixtures" / "study"
PERSON = "Person_00371"
BIRTH_CITY, BIRTH_COUNTRY, HQ_COUNTRY, BIRTH_YEAR, VERIFY, COUNT, INTERSECTION, COMPARE = 1, 2, 3, 0, 8, 4, 7, 5


@pytest.fixture(scope="module")
def executor(kb_store):
    from synkqa.benchmark.executors import get_executor
    return get_executor("oxigraph")


@pytest.fixture(scope="module")
def fact(executor):
    def run(program: str) -> str:
        return executor.execute(parse(program)).canonical()
    return run


@pytest.fixture(scope="module")
def countries(fact):
    """Gold birth country, the employer's HQ country, and nine other countries."""
    gold = fact(f"Find({PERSON});Relate(born_in);Relate(located_in);QueryName()")
    hq = fact(f"Find({PERSON});Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()")
    assert gold != hq, "the spurious-pass case needs a person whose two countries differ"
    others = [f"Country_{i:03d}" for i in range(120) if f"Country_{i:03d}" not in (gold, hq)][:9]
    return gold, hq, others


def decide(query: Query, ranked: list[int], executor, k: int | None = None, **params):
    parser = ExecutionValidatedParser.from_fitted(TemplateClassifier(), k=k or len(ranked), **params)
    ids = np.array([ranked])
    scores = np.linspace(0.9, 0.1, len(ranked))[None, :]
    return parser.answer([query], ProgramRunner(executor), ranking=(ids, scores))[0]


QUESTION = f"The city where {PERSON} was born is located in which country?"


def test_first_passing_candidate_in_rank_order(executor, countries):
    gold, hq, others = countries
    query = Query(QUESTION, tuple([gold] + others))
    p = decide(query, [BIRTH_CITY, HQ_COUNTRY, BIRTH_COUNTRY, BIRTH_YEAR, COUNT], executor)
    assert (p.selected_rank, p.fallback, p.executions) == (3, False, 3)
    assert p.answer == gold and p.program == f"Find({PERSON});Relate(born_in);Relate(located_in);QueryName()"
    assert [c.outcome for c in p.candidates] == [NOT_IN_OPTIONS, NOT_IN_OPTIONS, PASSED, NOT_EXAMINED, NOT_EXAMINED]
    assert [c.rank for c in p.candidates] == [1, 2, 3, 4, 5]
    assert not p.candidates[3].executed


def test_spurious_pass_when_a_wrong_program_hits_a_distractor(executor, countries):
    gold, hq, others = countries
    record = {"answer": gold, "kopl": f"Find({PERSON});Relate(born_in);Relate(located_in);QueryName()",
              "template_id": BIRTH_COUNTRY}
    query = Query(QUESTION, tuple([gold, hq] + others[:8]))
    p = decide(query, [BIRTH_CITY, HQ_COUNTRY, BIRTH_COUNTRY], executor)
    assert (p.selected_rank, p.answer, p.template_id) == (2, hq, HQ_COUNTRY)
    assert metrics.error_type(record, p) == "SpuriousPass"


def test_empty_answers_never_pass_even_if_offered(executor, fact):
    org, city = "Org_0000", "City_0000"
    assert fact(f"Find({org});RelateInv(works_at);Find({city});RelateInv(born_in);And();QueryName()") == ""
    count = fact(f"Find({city});RelateInv(born_in);Count()")
    query = Query(f"Which employees of {org} were born in {city}?", ("", count, "yes", "no"))
    p = decide(query, [INTERSECTION, COUNT], executor)
    assert [c.outcome for c in p.candidates] == ["empty", PASSED]
    assert (p.selected_rank, p.answer) == (2, count)


def test_boolean_answers_pass(executor, fact):
    answer = fact(f"Find({PERSON});VerifyRel(works_at,Org_0000)")
    query = Query(f"Does {PERSON} work for Org_0000?", ("yes", "no", "unknown"))
    p = decide(query, [VERIFY, BIRTH_YEAR], executor)
    assert (p.selected_rank, p.answer, p.executions) == (1, answer, 1)


def test_fallback_to_rank_one_when_nothing_passes(executor, fact, countries):
    gold, hq, others = countries
    query = Query(QUESTION, tuple(others))                     # no option any candidate can produce
    p = decide(query, [BIRTH_CITY, HQ_COUNTRY, BIRTH_COUNTRY, COMPARE], executor)
    assert p.fallback and p.selected_rank is None
    assert p.program == f"Find({PERSON});Relate(born_in);QueryName()"
    assert p.answer == fact(p.program)
    assert p.executions == 3                                   # the unfillable Compare is not executed
    assert [c.outcome for c in p.candidates] == [NOT_IN_OPTIONS] * 3 + [UNFILLABLE]
    record = {"answer": gold, "kopl": "x", "template_id": BIRTH_COUNTRY}
    assert metrics.error_type(record, p) == "NoCandidatePassed"


def test_fallback_with_unfillable_rank_one_has_no_program(executor, countries):
    gold, _, others = countries
    p = decide(Query(QUESTION, tuple(others)), [COMPARE, BIRTH_CITY], executor)
    assert p.fallback and p.program is None and p.answer is None and p.template_id == COMPARE


def test_execution_errors_are_outcomes_not_crashes(executor):
    query = Query("In which year was Person_99999 born?", ("1970", "1971"))
    p = decide(query, [BIRTH_YEAR, BIRTH_CITY], executor)
    assert [c.outcome for c in p.candidates] == ["execution-error", "execution-error"]
    assert p.fallback and p.answer is None and p.executions == 2


def test_k_limits_the_candidates(executor, countries):
    gold, _, others = countries
    query = Query(QUESTION, tuple([gold] + others))
    p = decide(query, [BIRTH_CITY, HQ_COUNTRY, BIRTH_COUNTRY], executor, k=2)
    assert p.fallback and len(p.candidates) == 2 and p.answer != gold


def _fixture(split):
    return [json.loads(line) for line in (FIXTURES / f"{split}.jsonl").read_text().splitlines()]


def test_k1_equals_tc_and_k5_recovers(executor):
    train, test = _fixture("train"), _fixture("test")
    tc = TemplateClassifier(random_state=0).fit([r["question"] for r in train], [r["template_id"] for r in train])
    runner = ProgramRunner(executor, memo=True)
    tc_preds = tc.answer(test, runner)
    ev1 = ExecutionValidatedParser.from_fitted(tc, k=1).answer(test, runner)
    assert [(p.program, p.answer) for p in ev1] == [(p.program, p.answer) for p in tc_preds]
    ev5 = ExecutionValidatedParser.from_fitted(tc, k=5).answer(test, runner)
    assert metrics.score(test, ev5)["accuracy"] >= metrics.score(test, tc_preds)["accuracy"]
    # one ranking serves every k
    ranking = tc.rank([r["question"] for r in test], k=9)
    again = ExecutionValidatedParser.from_fitted(tc, k=5).answer(test, runner, ranking=ranking)
    assert [(p.program, p.answer, p.selected_rank) for p in again] == \
        [(p.program, p.answer, p.selected_rank) for p in ev5]


def test_engines_agree_on_ev_tc(executor):
    from synkqa.benchmark.executors import get_executor
    train, test = _fixture("train"), _fixture("test")
    ev = ExecutionValidatedParser(ranker=TemplateClassifier(random_state=0)).fit(
        [r["question"] for r in train], [r["template_id"] for r in train])
    on_store = ev.answer(test, executor)
    native = ev.answer(test, get_executor("native"))
    assert [(p.program, p.answer, p.candidates) for p in on_store] == \
        [(p.program, p.answer, p.candidates) for p in native]


def test_options_are_required_unless_the_validator_needs_none(executor, countries):
    gold, _, _ = countries
    open_query = Query(QUESTION)
    with pytest.raises(ModelError, match="has no 'choices'"):
        decide(open_query, [BIRTH_CITY, BIRTH_COUNTRY], executor)
    p = decide(open_query, [BIRTH_CITY, BIRTH_COUNTRY], executor, validator="non-empty")
    assert p.selected_rank == 1                                  # non-empty only: the city passes


def test_validators_and_selection_rules_are_pluggable(executor, countries):
    gold, hq, others = countries

    class NoEmployers:
        """Rejects every program that follows works_at."""
        name, needs_choices = "no-employers", False

        def check(self, query, program, execution, runner):
            return Verdict.fail("uses-works_at") if "works_at" in program else Verdict.ok()

    class LastPassing:
        name = "last"

        def select(self, trials):
            passing = [t for t in trials if t.verdict.passed]
            return passing[-1] if passing else None

    query = Query(QUESTION, tuple([gold, hq] + others[:8]))
    p = decide(query, [BIRTH_CITY, HQ_COUNTRY, BIRTH_COUNTRY], executor,
               validator=AllOf(NoEmployers(), get_validator("options")))
    assert (p.selected_rank, p.answer) == (3, gold)                 # the spurious pass is gone
    assert p.candidates[1].outcome == "uses-works_at"
    p = decide(query, [HQ_COUNTRY, BIRTH_COUNTRY, BIRTH_CITY], executor, selection=LastPassing())
    assert (p.selected_rank, p.answer, p.executions) == (2, gold, 3)   # saw every candidate
    both = get_validator("options+non-empty")
    assert both.needs_choices and both.name == "options+non-empty"
    assert isinstance(get_selection("first"), FirstPassing)
    with pytest.raises(ConfigError, match="did you mean options"):
        get_validator("option")
    with pytest.raises(ConfigError, match="unknown selection rule"):
        get_selection("best-of-all")


def test_program_runner_memo_counts_real_calls(executor):
    runner = ProgramRunner(executor, memo=True)
    program = f"Find({PERSON});Relate(born_in);QueryName()"
    first, second = runner.run(program), runner.run(program)
    assert first == second and runner.calls == 1
    timed = ProgramRunner(executor, memo=False, cache={})
    timed.run(program), timed.run(program)
    assert timed.calls == 2
    assert runner.run("Find(Person_99999);QueryName()").error.startswith("execution error")
