"""KQA Pro's values: strings, quantities with units, years and dates.

The semantics follow the official ``kopl`` engine (KOPL.md §2):

- a quantity is a number and a unit (``"1"`` means no unit); two quantities compare only
  when their units are equal;
- a year compares with a year or a date, a date with a date or a year; ``<`` and ``>``
  between a year and a date compare years; ``=`` and ``!=`` against a year or a date mean
  containment (``1984-12-30 = 1984`` holds, ``1984 = 1984-12-30`` does not);
- strings compare only for (in)equality.

Numbers are compared as Python floats (IEEE doubles), as ``kopl`` and SPARQL's
``xsd:double`` do, but kept as given (``int`` or ``float``) so a KB round-trips exactly.
Dates are ``(year, month, day)`` triples so years before 1 and after 9999 work.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from typing import Union

from ontology.errors import ConfigError, safe_text

TYPES = ("string", "quantity", "year", "date")
OPS = ("=", "!=", "<", ">")
NO_UNIT = "1"

Number = Union[int, float]
Date = tuple[int, int, int]

_DATE = re.compile(r"^(-?\d{1,9})[-/](\d{1,2})[-/](\d{1,2})$")
_YEAR = re.compile(r"^-?\d{1,9}$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class ValueError_(ConfigError):
    """A value that cannot be read as its type (in a KB file or a program input)."""


def format_number(number: Number) -> str:
    """The canonical text of a number: integral values without a fraction, others in the
    shortest text that reads back as the same double.

    >>> format_number(206), format_number(206.0), format_number(0.1), format_number(-2.5)
    ('206', '206', '0.1', '-2.5')
    """
    if isinstance(number, bool):
        raise TypeError("a bool is not a number")
    if isinstance(number, int):
        return str(number)
    if math.isfinite(number) and number == int(number) and abs(number) < 1e16:
        return str(int(number))
    return repr(float(number))


def format_date(date: Date) -> str:
    y, m, d = date
    sign = "-" if y < 0 else ""
    return f"{sign}{abs(y):04d}-{m:02d}-{d:02d}"


def _check_date(y: int, m: int, d: int, text: str) -> Date:
    if not 1 <= m <= 12:
        raise ValueError_(f"{safe_text(text, 80)!r} is not a date: month {m} is not 1-12")
    # the proleptic Gregorian calendar; calendar.monthrange works for years 1..9999 only,
    # and leap years repeat every 400 years
    days = calendar.monthrange(2000 + (y % 400), m)[1]
    if not 1 <= d <= days:
        raise ValueError_(f"{safe_text(text, 80)!r} is not a date: month {m} has {days} days")
    return (y, m, d)


def parse_date(text: str) -> Date:
    """``YYYY-MM-DD`` (``/`` also accepted, as ``kopl`` does; a leading ``-`` for years BC)."""
    match = _DATE.match(text.strip())
    if not match:
        raise ValueError_(f"{safe_text(text, 80)!r} is not a date (expected YYYY-MM-DD)")
    return _check_date(int(match[1]), int(match[2]), int(match[3]), text)


def parse_number(text: str) -> Number:
    text = text.strip()
    if not _NUMBER.match(text):
        raise ValueError_(f"{safe_text(text, 80)!r} is not a number")
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    number = float(text)
    if not math.isfinite(number):
        raise ValueError_(f"{safe_text(text, 80)!r} is out of range")
    return number


@dataclass(frozen=True)
class Value:
    """One KQA Pro value. ``value`` is ``str`` (string), ``int``/``float`` (quantity),
    ``int`` (year) or a ``(y, m, d)`` triple (date); ``unit`` is set for quantities only."""

    type: str
    value: object
    unit: str | None = None

    # ---- construction ---------------------------------------------------------------
    @classmethod
    def string(cls, text: str) -> "Value":
        return cls("string", text)

    @classmethod
    def quantity(cls, number: Number, unit: str = NO_UNIT) -> "Value":
        return cls("quantity", number, unit or NO_UNIT)

    @classmethod
    def year(cls, year: int) -> "Value":
        return cls("year", int(year))

    @classmethod
    def date(cls, date: Date) -> "Value":
        return cls("date", tuple(date))

    @classmethod
    def from_json(cls, data: object, where: str = "value") -> "Value":
        """A value in KQA Pro's KB JSON: ``{"type": ..., "value": ..., "unit"?: ...}``."""
        if not isinstance(data, dict) or "type" not in data or "value" not in data:
            raise ValueError_(f"{where}: expected an object with 'type' and 'value', got "
                              f"{safe_text(repr(data), 120)}")
        kind, raw = data["type"], data["value"]
        if kind == "string":
            if not isinstance(raw, str):
                raise ValueError_(f"{where}: a string value must be a JSON string")
            return cls.string(raw)
        if kind == "quantity":
            if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
                raise ValueError_(f"{where}: a quantity value must be a number")
            number = parse_number(raw) if isinstance(raw, str) else raw
            if isinstance(number, float) and not math.isfinite(number):
                raise ValueError_(f"{where}: a quantity must be finite")
            unit = data.get("unit", NO_UNIT)
            if not isinstance(unit, str) or not unit:
                raise ValueError_(f"{where}: a quantity unit must be a non-empty string ('1' = none)")
            return cls.quantity(number, unit)
        if kind in ("year", "date"):
            text = str(raw)
            # kopl reads the text, not the declared type: a dash after the first
            # character makes a date
            if _YEAR.match(text.strip()):
                return cls.year(int(text))
            return cls.date(parse_date(text))
        raise ValueError_(f"{where}: unknown value type {safe_text(repr(kind), 40)} "
                          f"(expected one of {', '.join(TYPES)})")

    @classmethod
    def parse(cls, text: str, kind: str) -> "Value":
        """A value written in a program: ``kind`` is the function's (``string``,
        ``quantity``: ``"188 centimetre"`` or ``"188"``; ``year``/``date``: a year or a date,
        as ``kopl`` reads them)."""
        if kind == "string":
            return cls.string(text)
        if kind == "quantity":
            number, _, unit = text.strip().partition(" ")
            return cls.quantity(parse_number(number), unit.strip() or NO_UNIT)
        if kind in ("year", "date"):
            if _YEAR.match(text.strip()):
                return cls.year(int(text))
            return cls.date(parse_date(text))
        raise ValueError(kind)

    # ---- reading --------------------------------------------------------------------
    @property
    def is_time(self) -> bool:
        return self.type in ("year", "date")

    @property
    def year_of(self) -> int:
        return self.value if self.type == "year" else self.value[0]

    def text(self) -> str:
        """The canonical answer text (``206 centimetre``, ``199110``, ``2010``, ``1984-12-30``)."""
        if self.type == "string":
            return self.value
        if self.type == "quantity":
            number = format_number(self.value)
            return number if self.unit == NO_UNIT else f"{number} {self.unit}"
        if self.type == "year":
            return str(self.value)
        return format_date(self.value)

    def to_json(self) -> dict:
        if self.type == "quantity":
            return {"type": "quantity", "value": self.value, "unit": self.unit}
        if self.type == "date":
            return {"type": "date", "value": format_date(self.value)}
        return {"type": self.type, "value": self.value}

    def key(self) -> tuple:
        """A total order for sorting values of one type (numbers as doubles)."""
        if self.type == "quantity":
            return (1, self.unit, float(self.value))
        if self.type in ("year", "date"):
            return (2, self.year_of, self.value if self.type == "date" else (self.value, 0, 0))
        return (0, self.value)

    def __str__(self) -> str:
        return self.text()


def comparable(a: Value, b: Value) -> bool:
    """Whether ``a`` (a KB value) can be compared with ``b`` (kopl's ``can_compare``)."""
    if a.type == "string":
        return b.type == "string"
    if a.type == "quantity":
        return b.type == "quantity" and a.unit == b.unit
    return b.is_time


def contains(container: Value, other: Value) -> bool:
    """A year contains itself and every date in it; a date contains only itself."""
    if container.type == "year":
        return container.value == other.year_of
    return other.type == "date" and container.value == other.value


def compare(a: Value, b: Value, op: str) -> bool:
    """``a op b`` for a KB value ``a`` and a target ``b``; False when they are not
    comparable (kopl checks ``can_compare`` first everywhere it compares)."""
    if not comparable(a, b):
        return False
    if b.is_time and op in ("=", "!="):
        return contains(b, a) == (op == "=")
    if op == "=":
        return _same(a, b)
    if op == "!=":
        return not _same(a, b)
    if a.type == "string":
        return False  # strings have no order (kopl raises; the type checker refuses it)
    left, right = _ordinal(a, b)
    if op == "<":
        return left < right
    if op == ">":
        return left > right
    raise ValueError(op)


def _same(a: Value, b: Value) -> bool:
    if a.type == "quantity":
        return float(a.value) == float(b.value)
    return a.type == b.type and a.value == b.value


def _ordinal(a: Value, b: Value) -> tuple:
    if a.type == "quantity":
        return float(a.value), float(b.value)
    if a.type == "date" and b.type == "date":
        return a.value, b.value
    return a.year_of, b.year_of
