"""Validation rules and selection rules for execution-validated reranking.

EV-TC (:mod:`parsers.rerank`) walks a question's ranked candidate programs and asks two
pluggable objects what to do:

- a **validator** judges one executed candidate and returns a :class:`Verdict` (passed, or
  the name of the reason it failed). The paper's rule is :class:`OptionSetValidator`:
  the answer must be one of the options and, unless boolean, non-empty.
- a **selection rule** consumes the lazily evaluated candidates and picks one (or none,
  and the parser falls back to rank 1). The paper's rule is :class:`FirstPassing`, which
  stops executing at the first pass.

Adding a validator or a rule is a class with the same small interface plus one entry in
:data:`VALIDATORS` or :data:`SELECTIONS` (so it can be named on the command line).
Validators combine with :class:`AllOf`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kopl2sparql.errors import ConfigError, unknown_name_message
from parsers.base import Execution, ProgramRunner, Query

# Outcome names recorded per candidate. Validators may add their own failure names.
PASSED = "passed"
NOT_IN_OPTIONS = "not-in-options"
EMPTY = "empty"
EXECUTION_ERROR = "execution-error"
UNFILLABLE = "unfillable"
NOT_EXAMINED = "not-examined"
OUTCOMES = (PASSED, NOT_IN_OPTIONS, EMPTY, EXECUTION_ERROR, UNFILLABLE, NOT_EXAMINED)


@dataclass(frozen=True)
class Verdict:
    """A validator's judgement: ``outcome`` is :data:`PASSED` or the reason for failing."""

    passed: bool
    outcome: str

    @classmethod
    def ok(cls) -> "Verdict":
        return cls(True, PASSED)

    @classmethod
    def fail(cls, reason: str) -> "Verdict":
        return cls(False, reason)


_PASSED = Verdict.ok()


@dataclass(frozen=True)
class Trial:
    """One candidate after the parser looked at it (what selection rules choose among).

    ``execution`` is ``None`` when the template could not be filled (then ``program`` is
    ``None`` too and the verdict is :data:`UNFILLABLE`).
    """

    rank: int
    template_id: int
    score: float
    program: str | None
    execution: Execution | None
    verdict: Verdict


@runtime_checkable
class Validator(Protocol):
    """Judges an executed candidate.

    ``needs_choices``: true if the rule cannot work without an option set (the parser then
    refuses open-ended questions with a clear message instead of passing nothing).
    ``runner`` lets a validator execute more (e.g. program prefixes for trace checks).
    """

    name: str
    needs_choices: bool

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict: ...


class OptionSetValidator:
    """The paper's rule: the answer is in the option set and, unless boolean, non-empty."""

    name = "options"
    needs_choices = True

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        text = execution.canonical
        if not text and execution.answer.kind != "bool":
            return Verdict.fail(EMPTY)
        if query.choices is None or text not in query.choices:
            return Verdict.fail(NOT_IN_OPTIONS)
        return _PASSED

    def __repr__(self) -> str:
        return "OptionSetValidator()"


class NonEmptyValidator:
    """Open-ended minimum: the answer is non-empty unless boolean. Needs no options."""

    name = "non-empty"
    needs_choices = False

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        if not execution.canonical and execution.answer.kind != "bool":
            return Verdict.fail(EMPTY)
        return _PASSED

    def __repr__(self) -> str:
        return "NonEmptyValidator()"


class AllOf:
    """Passes when every validator passes; the verdict is the first failure, in order."""

    def __init__(self, *validators: Validator):
        self.validators = tuple(validators)
        self.name = "+".join(v.name for v in self.validators)
        self.needs_choices = any(v.needs_choices for v in self.validators)

    def check(self, query: Query, program: str, execution: Execution, runner: ProgramRunner) -> Verdict:
        for validator in self.validators:
            verdict = validator.check(query, program, execution, runner)
            if not verdict.passed:
                return verdict
        return Verdict.ok()

    def __repr__(self) -> str:
        return f"AllOf{self.validators!r}"


@runtime_checkable
class SelectionRule(Protocol):
    """Chooses among candidates. ``trials`` yields them in rank order and executes each one
    only when it is drawn, so a rule that stops early saves the remaining executions.
    Returns the chosen trial, or ``None`` (the parser then falls back to rank 1)."""

    name: str

    def select(self, trials: Iterator[Trial]) -> Trial | None: ...


class FirstPassing:
    """The paper's rule: the first candidate, in rank order, that passes validation."""

    name = "first"

    def select(self, trials: Iterator[Trial]) -> Trial | None:
        for trial in trials:
            if trial.verdict.passed:
                return trial
        return None

    def __repr__(self) -> str:
        return "FirstPassing()"


VALIDATORS: dict[str, Callable[[], Validator]] = {
    "options": OptionSetValidator,
    "non-empty": NonEmptyValidator,
}
"""Validators by name (``--validator`` on the command line); ``a+b`` combines with AllOf."""

SELECTIONS: dict[str, Callable[[], SelectionRule]] = {
    "first": FirstPassing,
}
"""Selection rules by name."""


def get_validator(spec: str | Validator | None) -> Validator:
    """A validator from a name (``options``, ``non-empty``, ``options+non-empty``) or object.

    :raises ConfigError: for an unknown name, with a suggestion.
    """
    if spec is None:
        return OptionSetValidator()
    if not isinstance(spec, str):
        return spec
    parts = [p.strip() for p in spec.split("+") if p.strip()]
    for part in parts:
        if part not in VALIDATORS:
            raise ConfigError(unknown_name_message("validator", part, VALIDATORS))
    if not parts:
        raise ConfigError("empty validator name")
    built = [VALIDATORS[p]() for p in parts]
    return built[0] if len(built) == 1 else AllOf(*built)


def get_selection(spec: str | SelectionRule | None) -> SelectionRule:
    """A selection rule from a name (``first``) or object.

    :raises ConfigError: for an unknown name, with a suggestion.
    """
    if spec is None:
        return FirstPassing()
    if not isinstance(spec, str):
        return spec
    if spec not in SELECTIONS:
        raise ConfigError(unknown_name_message("selection rule", spec, SELECTIONS))
    return SELECTIONS[spec]()
