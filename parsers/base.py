"""What every parser shares: the question it reads, the prediction it writes, and the
runner that executes candidate programs.

A *system* answers :class:`Query` objects. Systems that predict a program hand its text to a
:class:`ProgramRunner`, which parses it, runs it through an ``Executor`` (SPARQL on the
embedded Oxigraph store, the native interpreter, or a remote endpoint) and turns the
failures a wrong program can cause into an :class:`Execution` with an error instead of an
exception. Evaluation reuses one memoising runner across systems, seeds and values of k,
because a program's answer on a fixed KB never changes; timing runs use a fresh,
non-memoising one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kopl2sparql.answer import Answer
from kopl2sparql.errors import DatasetError, ExecutionError, ProgramError


@dataclass(frozen=True)
class Query:
    """One question as a system sees it.

    ``choices`` is ``None`` in open-ended use; ``gold_program`` is only read by the oracle.
    """

    question: str
    choices: tuple[str, ...] | None = None
    id: str | None = None
    gold_program: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str = "input") -> "Query":
        """Build from a dataset record or a ``predict`` input line.

        :raises DatasetError: when ``question`` is missing or not a string, or ``choices``
            is present but not a list of strings.
        """
        question = record.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DatasetError(f"{where}: field 'question' must be a non-empty string")
        choices = record.get("choices")
        if choices is not None:
            if not isinstance(choices, (list, tuple)) or not all(isinstance(c, str) for c in choices):
                raise DatasetError(f"{where}: field 'choices' must be a list of strings")
            choices = tuple(choices)
        rid = record.get("id")
        return cls(question=question, choices=choices, id=None if rid is None else str(rid),
                   gold_program=record.get("kopl"))


@dataclass(frozen=True)
class Execution:
    """The result of running one program text: an answer, or the reason there is none.

    ``canonical`` is the answer's canonical string, computed once (validators and metrics
    compare it many times).
    """

    answer: Answer | None
    error: str | None = None
    canonical: str | None = field(default=None, compare=False)

    @classmethod
    def of(cls, answer: Answer) -> "Execution":
        return cls(answer, None, answer.canonical())

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Candidate:
    """One ranked candidate program of a question, as EV-TC examined it.

    ``outcome`` is the validation outcome (``passed``, ``not-in-options``, ``empty``,
    ``execution-error``, ``unfillable``, or ``not-examined`` for candidates after the
    selection); validators may add their own outcome names.
    """

    rank: int
    template_id: int
    score: float
    program: str | None
    answer: str | None = None
    outcome: str = "not-examined"
    executed: bool = False


@dataclass(frozen=True)
class Prediction:
    """What a system returns for one query.

    ``program`` is the canonical program text (``None`` for systems that predict no
    program, or when no program could be built); ``answer`` the canonical answer string
    (``None`` when the program failed). The EV-TC fields stay at their defaults for other
    systems: ``selected_rank`` is 1-based and ``None`` when no candidate passed
    validation (``fallback`` is then true and the rank-1 candidate is returned).
    """

    id: str | None
    program: str | None
    answer: str | None
    template_id: int | None = None
    selected_rank: int | None = None
    fallback: bool = False
    executions: int = 0
    candidates: tuple[Candidate, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        """The ``predict`` output line: ``{"id", "program", "answer"}``."""
        return {"id": self.id, "program": self.program, "answer": self.answer}


@runtime_checkable
class Executor(Protocol):
    """What the runner needs from an engine (``store.executor`` provides the real ones)."""

    def execute(self, program: Any) -> Answer: ...


class ProgramRunner:
    """Parse and execute program texts, turning program-caused failures into errors.

    :param executor: any object with ``execute(Program) -> Answer`` raising
        :class:`ExecutionError` for programs that cannot run.
    :param memo: reuse earlier executions of the same program text. Only for evaluation:
        answers on a fixed KB never change, so memoising changes no number, only the time.
    :param cache: the dict results are kept in (share one between runners).

    ``calls`` counts real executor calls (memo hits excluded).
    Store failures (:class:`StoreError`, e.g. an endpoint going away) are *not* caught:
    they say nothing about the program and must stop the run.
    """

    def __init__(self, executor: Executor, memo: bool = False, cache: dict[str, Execution] | None = None):
        self.executor = executor
        self.memo = memo
        self.calls = 0
        # A shared ``cache`` with ``memo=False`` is written but never read: a timed run
        # pays for every execution and still leaves its results for the untimed ones.
        self._cache: dict[str, Execution] = {} if cache is None else cache
        self._keep = memo or cache is not None

    @property
    def name(self) -> str:
        return getattr(self.executor, "name", type(self.executor).__name__)

    def run(self, text: str) -> Execution:
        """Execute one canonical program text."""
        if self.memo:
            hit = self._cache.get(text)
            if hit is not None:
                return hit
        result = self._execute(text)
        if self._keep:
            self._cache[text] = result
        return result

    def _execute(self, text: str) -> Execution:
        from kopl2sparql.syntax import parse
        self.calls += 1
        try:
            answer = self.executor.execute(parse(text))
        except (ExecutionError, ProgramError) as exc:
            # A wrong candidate may ask QueryAttr of several entities or name an entity the
            # KB lacks: that is a verdict on the candidate, not a failure of the run.
            return Execution(None, str(exc).splitlines()[0])
        return Execution.of(answer)


def default_schema():
    """The schema parsers use when none is given: the SynKQA-Pro KB's (seed 42, scale 1),
    built on first use. The parsers are written for that benchmark's vocabulary."""
    from synkqa.benchmark.world import kb_schema
    return kb_schema(42, 1)


def schema_of(runner_or_executor) -> object:
    """The schema of the KB a runner's (or an executor's) programs run on."""
    executor = getattr(runner_or_executor, "executor", runner_or_executor)
    schema = getattr(executor, "schema", None)
    return schema if schema is not None else default_schema()


def as_runner(executor: Executor | ProgramRunner) -> ProgramRunner:
    """Accept either an executor or a ready runner (so callers can share one memo)."""
    return executor if isinstance(executor, ProgramRunner) else ProgramRunner(executor)


def queries_from(items: Sequence[Query | Mapping[str, Any] | str]) -> list[Query]:
    """Normalise a batch: ``Query`` objects, dataset records, or bare question strings."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Query):
            out.append(item)
        elif isinstance(item, str):
            out.append(Query(question=item))
        else:
            out.append(Query.from_record(item, where=f"item {i + 1}"))
    return out
