"""Values of the native engine and how they become answers: shared by the interpreter
(:mod:`kopl2sparql.interpreter`) and the operators' native semantics
(:mod:`kopl2sparql.operators`).

Entity sets are frozensets of entity names; ``QueryName`` gives :class:`Names`; numbers are
``int``/``Decimal`` (never floats); text values ``str``; yes/no ``bool``.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kopl2sparql.answer import Answer
from kopl2sparql.errors import ProgramTypeError
from kopl2sparql.kbindex import EMPTY
from kopl2sparql.program import COMPARATORS, ValueType

COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
           "=": operator.eq, "!=": operator.ne}
"""Comparator symbol -> function; the keys are exactly ``program.COMPARATORS``."""
assert set(COMPARE) == set(COMPARATORS)

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")


def parse_number(text: str, step: int | None = None) -> Decimal:
    """A number argument (``1990``, ``-2.5``) as an exact Decimal; exponents are refused.

    :raises ProgramTypeError: if ``text`` is not a plain decimal literal.
    """
    if not _NUMBER.match(text):
        raise ProgramTypeError(f"not a number: {text!r}", step=step)
    return Decimal(text)


class Names(tuple):
    """QueryName's value: entity labels in name order (a distinct type so traces can tell it apart)."""


@dataclass(frozen=True)
class TraceStep:
    """The value on top of the stack after one step (1-based ``index``)."""

    index: int
    step: str
    value: Answer

    def to_dict(self) -> dict[str, Any]:
        """JSON shape used by ``synkqa execute --trace``."""
        return {"step": self.index, "function": self.step, "kind": self.value.kind,
                "value": self.value.canonical()}


def _answer_direct(kind: str, values: tuple, _new=object.__new__, _cls=Answer) -> Answer:
    answer = _new(_cls)
    answer.__dict__.update(kind=kind, values=values)
    return answer


# A frozen dataclass's __init__ sets each field through object.__setattr__, a third of the
# time of rendering a one-name answer. Answer has no __post_init__ and no __slots__, so
# filling its __dict__ builds the same object (the guard keeps this honest if Answer changes).
_answer = (Answer if hasattr(Answer, "__slots__") or hasattr(Answer, "__post_init__")
           else _answer_direct)
_YES, _NO = Answer.boolean(True), Answer.boolean(False)


def to_answer(value: Any) -> Answer:
    """Render an interpreter value (entity set, names, number, bool) as an :class:`Answer`."""
    kind = type(value)
    if kind is bool:
        return _YES if value else _NO
    if kind is frozenset or kind is set:
        return _answer("entities", tuple(sorted(value)) if len(value) > 1 else tuple(value))
    if kind is Names:
        return _answer("entities", tuple(value))
    if kind is int:
        return _answer("number", (str(value),))    # already canonical; format_number costs µs
    if kind is str:
        return _answer("string", (value,))
    if isinstance(value, (frozenset, set)):
        return _answer("entities", tuple(sorted(value)))
    if isinstance(value, Names):
        return _answer("entities", tuple(value))
    return Answer.number(value)


VALUE_WORDS = {ValueType.ENTITIES: "an entity set", ValueType.NAMES: "entity names (QueryName's output)",
               ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
               ValueType.STRING: "a text value"}
KIND = {frozenset: ValueType.ENTITIES, Names: ValueType.NAMES, bool: ValueType.BOOL,
         int: ValueType.NUMBER, Decimal: ValueType.NUMBER, str: ValueType.STRING}


def neighbours(adjacency: dict[str, frozenset[str]], members: frozenset[str]) -> frozenset[str]:
    if len(members) == 1:
        for only in members:
            return adjacency.get(only, EMPTY)
    return EMPTY.union(*(adjacency.get(e, EMPTY) for e in members))



__all__ = ["COMPARE", "parse_number", "Names", "TraceStep", "to_answer", "VALUE_WORDS", "KIND", "neighbours"]
