"""Validators that need no option set, and a best-scoring selection rule.

They plug into execution-validated reranking through the registries of
:mod:`parsers.validators` (importing this module registers them), so both EV-TC
(``ExecutionValidatedParser(validator="non-empty+answer-type+trace")``) and the
schema-aware parser (:mod:`parsers.open_ended`) can use them, alone or combined with ``+``:

``exists``            alias of ``non-empty``: the answer is non-empty unless boolean
``answer-type``       the program's answer type fits the type the *question* asks for
                      (:func:`parsers.answer_type.expected_type`); questions whose type
                      the rules cannot tell are not judged
``trace``             EVER-style: every step of the program runs (on a SPARQL store each
                      program prefix is compiled and queried; other engines give their
                      trace) and the
                      candidate is rejected at the first step whose value is empty or of
                      a class the type checker did not expect; the outcome names the step
                      (``trace-empty@2``: step 2 gave nothing)
``options-if-given``  the paper's option-set rule when the question has options, else a pass
``open``              ``exists+answer-type+trace``

Selection rules: ``first`` (the paper's, in :mod:`parsers.validators`) and ``best``: every
candidate is executed and the passing one with the highest score wins, the score being
the ranker's plus any adjustment a validator attaches to its verdict (the trace validator
lets a ``Count`` of an empty set pass, since "how many" can be zero, but marks it down).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from kopl2sparql.answer import Answer
from kopl2sparql.errors import ExecutionError, ProgramError
from kopl2sparql.program import ValueType
from kopl2sparql.typecheck import check
from parsers.answer_type import compatible, expected_type, program_answer_type
from parsers.base import Execution, ProgramRunner, Query, schema_of
from parsers.validators import (SELECTIONS, VALIDATORS, AllOf, NonEmptyValidator, OptionSetValidator,
                                Trial, Verdict)

__all__ = ["ScoredVerdict", "AnswerTypeValidator", "TraceValidator", "OptionsIfGivenValidator",
           "BestScoring", "open_validator", "WRONG_ANSWER_TYPE", "TRACE_EMPTY", "TRACE_ILL_TYPED",
           "TRACE_ERROR", "ILL_TYPED"]

WRONG_ANSWER_TYPE = "wrong-answer-type"
TRACE_EMPTY = "trace-empty"
TRACE_ILL_TYPED = "trace-ill-typed"
TRACE_ERROR = "trace-error"
ILL_TYPED = "ill-typed"
EMPTY_COUNT_PENALTY = 1.0
"""Score taken off a candidate that counts an empty set (see :class:`TraceValidator`)."""


@dataclass(frozen=True)
class ScoredVerdict(Verdict):
    """A verdict with a score adjustment for :class:`BestScoring` and, for trace failures,
    the 1-based ``step`` that failed and what was wrong there."""

    score: float = 0.0
    step: int | None = None
    detail: str = ""


@lru_cache(maxsize=50_000)
def _checked(program: str, schema):
    """``program`` type-checked against ``schema`` (the KB the runner's programs run on)."""
    from kopl2sparql.syntax import parse
    return check(parse(program), schema)


@lru_cache(maxsize=50_000)
def _answer_type(program: str, schema) -> str:
    return program_answer_type(_checked(program, schema), schema)


class AnswerTypeValidator:
    """The program's answer type fits the question's (a country for "which country", a
    number for "how many", yes/no for "Does ..."); unknown question types pass."""

    name = "answer-type"
    needs_choices = False

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        try:
            actual = _answer_type(program, schema_of(runner))
        except ProgramError as exc:
            return ScoredVerdict(False, ILL_TYPED, detail=str(exc).splitlines()[0])
        expected = expected_type(query.question)
        if compatible(expected, actual) is False:
            return ScoredVerdict(False, WRONG_ANSWER_TYPE,
                                 detail=f"question asks for {'/'.join(sorted(expected.allowed))} "
                                        f"({expected.cue!r}), program gives {actual}")
        return Verdict.ok()

    def __repr__(self) -> str:
        return "AnswerTypeValidator()"


class TraceValidator:
    """EVER-style step checks: run every step (through the runner's executor, i.e. SPARQL
    program prefixes on a store) and reject at the first empty or ill-typed value.

    Rules per step value, against the type checker's expectation for that step:

    - an entity set must be non-empty, except as the operand of ``Count`` (a count of
      nothing is the answer 0): that passes with a score of ``-EMPTY_COUNT_PENALTY``;
    - every entity in it must belong to a class the checker allows there (by its
      canonical name; the KB's SHACL shapes tie names to ``rdf:type``);
    - numbers and yes/no values must be of that kind;
    - an execution error stops the trace at the failing step (``trace-error@n``).

    Traces are memoised per program text, and step values per program prefix (candidates
    of one question share their first steps), when the runner memoises (evaluation), and
    recomputed otherwise (timed runs pay for them).
    """

    name = "trace"
    needs_choices = False

    def __init__(self):
        self._cache: dict[tuple[int, str], Verdict] = {}
        self._prefixes: dict[tuple, Answer] = {}

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        key = (id(runner.executor), program)
        if runner.memo and key in self._cache:
            return self._cache[key]
        verdict = self._judge(program, execution, runner)
        if runner.memo:
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[key] = verdict
        return verdict

    def _judge(self, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        schema = schema_of(runner)
        try:
            checked = _checked(program, schema)
        except ProgramError as exc:
            return ScoredVerdict(False, ILL_TYPED, detail=str(exc).splitlines()[0])
        try:
            memo = None
            if runner.memo:
                if len(self._prefixes) > 200_000:
                    self._prefixes.clear()
                memo = self._prefixes
            values = _step_values(checked.program, execution, runner.executor, memo)
        except ExecutionError as exc:
            done = len(getattr(exc, "trace", None) or [])
            return ScoredVerdict(False, f"{TRACE_ERROR}@{done + 1}", step=done + 1,
                                 detail=str(exc).splitlines()[0])
        if values is None:                     # an executor without traces cannot be judged
            return Verdict.ok()
        consumers: dict[int, str] = {}
        for st in checked.steps:
            for value in st.inputs:
                consumers[value.step] = st.step.op
        score = 0.0
        for i, (st, answer) in enumerate(zip(checked.steps, values)):
            want = st.output
            n = i + 1
            if want.type in (ValueType.ENTITIES, ValueType.NAMES):
                if answer.kind != "entities":
                    return ScoredVerdict(False, f"{TRACE_ILL_TYPED}@{n}", step=n,
                                         detail=f"step {n} gave a {answer.kind}, expected entities")
                if not answer.values:
                    if consumers.get(i) == "Count":
                        score -= EMPTY_COUNT_PENALTY
                        continue
                    return ScoredVerdict(False, f"{TRACE_EMPTY}@{n}", step=n,
                                         detail=f"step {n} {st.step.text()} gave no entity")
                for name in answer.values:
                    classes = schema.entity_classes(name)
                    cls = min(classes) if classes else None
                    if want.classes is not None and not (classes and classes & want.classes):
                        return ScoredVerdict(False, f"{TRACE_ILL_TYPED}@{n}", step=n,
                                             detail=f"step {n} gave {name} ({cls}), expected "
                                                    f"{'/'.join(sorted(want.classes))}")
            elif want.type is ValueType.NUMBER and answer.kind != "number":
                return ScoredVerdict(False, f"{TRACE_ILL_TYPED}@{n}", step=n,
                                     detail=f"step {n} gave a {answer.kind}, expected a number")
            elif want.type is ValueType.BOOL and answer.kind != "bool":
                return ScoredVerdict(False, f"{TRACE_ILL_TYPED}@{n}", step=n,
                                     detail=f"step {n} gave a {answer.kind}, expected yes/no")
        return ScoredVerdict(True, "passed", score=score) if score else Verdict.ok()

    def __repr__(self) -> str:
        return "TraceValidator()"


def _step_values(program, execution: Execution, executor, memo: dict | None = None) -> list[Answer] | None:
    """The value every step of ``program`` pushes (prefix values kept in ``memo`` if given).

    On a SPARQL executor (one with ``run_compiled``) each program prefix is compiled with
    :func:`~kopl2sparql.compiler.compile_program` and queried, except where the value is
    already known: a ``Find`` pushes its entity (the full run checked that it exists), a
    ``QueryName`` renders the set below it, and the last step's value is the answer the
    candidate's execution gave (if it gave one). Other executors give their ``trace``.

    :raises ExecutionError: with ``trace`` set to the values of the steps before the failing one.
    """
    steps = program.steps
    run_compiled = getattr(executor, "run_compiled", None)
    if run_compiled is None:
        trace = getattr(executor, "trace", None)
        return None if trace is None else [t.value for t in trace(program)]
    from kopl2sparql.compiler import compile_program
    schema = schema_of(executor)
    values: list[Answer] = []
    for n, step in enumerate(steps, start=1):
        if n == len(steps) and execution.answer is not None:
            values.append(execution.answer)
        elif step.op == "Find":
            # The entities the argument names (a name, or a label naming several).
            values.append(Answer.entities(schema.resolve(step.args[0]) or step.args[:1]))
        elif step.op == "QueryName" and values:
            values.append(values[-1])
        else:
            key = (id(executor), program.steps[:n])
            value = memo.get(key) if memo is not None else None
            if value is None:
                try:
                    value = run_compiled(compile_program(program.prefix(n), schema))
                except ExecutionError as exc:
                    exc.trace = values
                    raise
                if memo is not None:
                    memo[key] = value
            values.append(value)
    return values


class OptionsIfGivenValidator:
    """The paper's option-set rule when the question has options; a pass when it has none
    (so one validator chain serves multiple-choice and open-ended questions)."""

    name = "options-if-given"
    needs_choices = False

    def __init__(self):
        self._options = OptionSetValidator()

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        if query.choices is None:
            return Verdict.ok()
        return self._options.check(query, program, execution, runner)

    def __repr__(self) -> str:
        return "OptionsIfGivenValidator()"


def open_validator() -> AllOf:
    """``exists+answer-type+trace``: everything that can be checked without options."""
    return AllOf(NonEmptyValidator(), AnswerTypeValidator(), TraceValidator())


class BestScoring:
    """Execute every candidate; of those that pass, take the highest ranker score plus the
    verdict's adjustment (ties: the better rank). ``None`` when none passes."""

    name = "best"

    def select(self, trials: Iterator[Trial]) -> Trial | None:
        best, best_key = None, None
        for trial in trials:
            if not trial.verdict.passed:
                continue
            key = trial.score + getattr(trial.verdict, "score", 0.0)
            if best is None or key > best_key:
                best, best_key = trial, key
        return best

    def __repr__(self) -> str:
        return "BestScoring()"


def _empty_alias() -> NonEmptyValidator:
    return NonEmptyValidator()


for _name, _factory in (("exists", _empty_alias), ("answer-type", AnswerTypeValidator),
                        ("trace", TraceValidator), ("options-if-given", OptionsIfGivenValidator),
                        ("open", open_validator)):
    VALIDATORS.setdefault(_name, _factory)
SELECTIONS.setdefault("best", BestScoring)
