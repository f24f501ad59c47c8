"""Answers in canonical form, shared by every engine.

Entity sets: names sorted by entity id, joined with ``|`` (the empty set is the empty
string); ``QueryName`` gives labels in the same order. Numbers: plain decimal strings
without exponent or trailing zeros (``17``, ``2311923.9``). Strings (text, date and year
attribute values): the lexical form. Booleans: ``yes`` / ``no``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

AnswerKind = Literal["entities", "number", "bool", "string"]


def format_number(value: int | str | Decimal) -> str:
    """Canonical decimal text: ``Decimal('12.50')`` -> ``'12.5'``, ``7`` -> ``'7'``, ``-0`` -> ``'0'``.

    Floats are refused: they would make the text depend on binary rounding.
    """
    if isinstance(value, float):
        raise TypeError("format_number takes int, str or Decimal, not float")
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a decimal number: {value!r}") from None
    if number == 0:
        return "0"
    text = format(number.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


@dataclass(frozen=True)
class Answer:
    """What running a program gives, in one shape for every engine."""

    kind: AnswerKind
    values: tuple[str, ...]

    @classmethod
    def entities(cls, names) -> "Answer":
        """An entity set from names (sorted here; names sort in entity-id order)."""
        return cls("entities", tuple(sorted(set(names))))

    @classmethod
    def number(cls, value: int | str | Decimal) -> "Answer":
        return cls("number", (format_number(value),))

    @classmethod
    def string(cls, value: str) -> "Answer":
        """A non-numeric attribute value, as written in the KB."""
        return cls("string", (value,))

    @classmethod
    def boolean(cls, value: bool) -> "Answer":
        return cls("bool", ("yes" if value else "no",))

    def canonical(self) -> str:
        """The string answers are compared by: ``Country_038``, ``17``, ``yes``, ``A|B``."""
        return "|".join(self.values)

    def is_empty(self) -> bool:
        return self.kind == "entities" and not self.values

    def __str__(self) -> str:
        return self.canonical()
