"""KQA Pro's 27 KoPL functions: inputs, dependencies and types, declared once.

Types flow along dependencies (KOPL.md §2):

- ``entities``: a set of entities (FindAll, Find, FilterConcept, And, Or);
- ``facts``: a set of entities, each reached through facts (Filter*, Relate); QFilter*
  keep the entities whose fact has a matching qualifier. ``facts`` is also ``entities``;
- ``values``: attribute or qualifier values (QueryAttr*, QueryRelationQualifier), which
  Verify* check;
- final kinds (see :mod:`kqapro.answers`): ``names``, ``count``, ``values``,
  ``relations``, ``verdict``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kqapro.values import OPS


@dataclass(frozen=True)
class Function:
    name: str
    inputs: tuple[str, ...]
    """Roles of the text inputs, in order: name, concept, key, qkey, value, qvalue, op,
    relation, direction, select_op."""
    takes: tuple[str, ...]
    """Types of the dependencies, in order (``entities`` accepts ``facts`` too)."""
    gives: str
    value_type: str | None = None
    """The type ``value``/``qvalue`` is read as (string, quantity, year, date)."""

    @property
    def arity(self) -> int:
        return len(self.takes)

    @property
    def ops(self) -> tuple[str, ...]:
        if self.name == "SelectBetween":
            return ("greater", "less")
        if self.name == "SelectAmong":
            return ("largest", "smallest")
        return OPS


E, F, V = "entities", "facts", "values"
_TYPED = {"Str": "string", "Num": "quantity", "Year": "year", "Date": "date"}


def _table() -> dict[str, Function]:
    fs = [
        Function("FindAll", (), (), E),
        Function("Find", ("name",), (), E),
        Function("FilterConcept", ("concept",), (E,), E),
        Function("Relate", ("relation", "direction"), (E,), F),
        Function("And", (), (E, E), E),
        Function("Or", (), (E, E), E),
        Function("What", (), (E,), "names"),
        Function("Count", (), (E,), "count"),
        Function("SelectBetween", ("key", "op"), (E, E), "names"),
        Function("SelectAmong", ("key", "op"), (E,), "names"),
        Function("QueryAttr", ("key",), (E,), V),
        Function("QueryAttrUnderCondition", ("key", "qkey", "qvalue"), (E,), V),
        Function("QueryRelation", (), (E, E), "relations"),
        Function("QueryAttrQualifier", ("key", "value", "qkey"), (E,), V),
        Function("QueryRelationQualifier", ("relation", "qkey"), (E, E), V),
    ]
    for suffix, kind in _TYPED.items():
        op = () if suffix == "Str" else ("op",)
        fs.append(Function(f"Filter{suffix}", ("key", "value") + op, (E,), F, kind))
        fs.append(Function(f"QFilter{suffix}", ("qkey", "qvalue") + op, (F,), F, kind))
        fs.append(Function(f"Verify{suffix}", ("value",) + op, (V,), "verdict", kind))
    return {f.name: f for f in fs}


FUNCTIONS: dict[str, Function] = _table()
ALIASES = {"QueryName": "What"}
"""Other spellings accepted on input (``kopl`` calls What QueryName)."""

ENTITY_TYPES = (E, F)
FINAL = ("names", "count", V, "relations", "verdict")


def accepts(expected: str, actual: str) -> bool:
    return expected == actual or (expected == E and actual == F)


assert len(FUNCTIONS) == 27, len(FUNCTIONS)
