"""What the type checker knows of every value: its type, the classes of an entity set, a
bound on its size, and per step what it pops and pushes (:class:`CheckedProgram`).

Shared by the checker (:mod:`kopl2sparql.typecheck`) and the operators' typing rules
(:mod:`kopl2sparql.operators`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from kopl2sparql.program import Program, Step, ValueType

__all__ = ["Cardinality", "ONE", "OPT", "MANY", "Value", "StepType", "CheckedProgram", "TYPE_WORD", "COUNT_WORD",
           "classes_text", "a_noun"]


class Cardinality(str, Enum):
    """Static bound on the size of an entity set."""

    ONE = "one"    # exactly one entity
    OPT = "opt"    # zero or one
    MANY = "many"  # any number

    @property
    def at_most_one(self) -> bool:
        return self is not Cardinality.MANY


ONE, OPT, MANY = Cardinality.ONE, Cardinality.OPT, Cardinality.MANY


class Value(NamedTuple):
    """A value on the stack. ``step`` is the 0-based index of the step that pushed it;
    ``classes`` and ``cardinality`` describe entity sets (and QueryName's names).

    (Value and StepType are named tuples rather than frozen dataclasses because checking
    builds two per step and tuples are three times cheaper to build.)
    """

    type: ValueType
    step: int
    classes: frozenset[str] | None = frozenset()     # None: any class (not known statically)
    cardinality: Cardinality | None = None

    def describe(self) -> str:
        """``Person entities``, ``a number``, ... (for messages)."""
        if self.type in (ValueType.ENTITIES, ValueType.NAMES):
            what = "names of " if self.type is ValueType.NAMES else ""
            return f"{what}{classes_text(self.classes)} entities"
        return {ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
                ValueType.STRING: "a text value"}[self.type]


class StepType(NamedTuple):
    """What one step does to the stack."""

    index: int                   # 0-based position in the program
    step: Step
    inputs: tuple[Value, ...]    # popped values, in push order (Compare: left, right)
    output: Value                # pushed value
    depth: int                   # stack depth after the step

    @property
    def dependencies(self) -> tuple[int, ...]:
        """0-based indices of the steps whose values this step consumes (KQA Pro's deps)."""
        return tuple(v.step for v in self.inputs)

    @property
    def needs_singleton_guard(self) -> bool:
        """True for a QueryAttr whose value is not statically defined (one entity with exactly
        one value): the engines check at run time."""
        return self.step.op == "QueryAttr" and self.output.cardinality is not ONE


@dataclass(frozen=True)
class CheckedProgram:
    """A program that passed :func:`check`, with the type of every intermediate value."""

    program: Program
    steps: tuple[StepType, ...]
    stack: tuple[Value, ...]     # what remains at the end (bottom first)

    @property
    def complete(self) -> bool:
        """True when exactly one value remains (a full program rather than a prefix)."""
        return len(self.stack) == 1

    @property
    def result(self) -> Value:
        """The final value of a complete program."""
        if len(self.stack) != 1:
            raise ValueError(f"a program prefix leaves {len(self.stack)} values, not one")
        return self.stack[0]

    @property
    def answer_kind(self) -> str:
        """Kind of :class:`~kopl2sparql.answer.Answer` the program gives: entities, number or bool."""
        return _ANSWER_KIND[self.result.type]

    def __getitem__(self, index: int) -> StepType:
        return self.steps[index]

    def __len__(self) -> int:
        return len(self.steps)


_ANSWER_KIND = {ValueType.ENTITIES: "entities", ValueType.NAMES: "entities",
                ValueType.NUMBER: "number", ValueType.BOOL: "bool", ValueType.STRING: "string"}
TYPE_WORD = {ValueType.ENTITIES: "an entity set", ValueType.NAMES: "an entity set",
              ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
              ValueType.STRING: "a text value"}
COUNT_WORD = {1: "one", 2: "two", 3: "three"}


def a_noun(noun: str) -> str:
    return f"{'an' if noun[:1] in 'AEIOU' else 'a'} {noun}"


def classes_text(classes: frozenset[str] | None) -> str:
    if classes is None:
        return "any"
    return "/".join(sorted(classes)) if classes else "no"
