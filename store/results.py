"""SPARQL results as plain Python values, the same shape for every backend.

IRIs become their string, ``xsd:integer`` literals ``int``, ``xsd:decimal``/``double``
``Decimal``, ``xsd:boolean`` ``bool``, other literals ``str``; an unbound cell is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyoxigraph as ox

XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER_TYPES = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                     "positiveInteger", "negativeInteger", "nonPositiveInteger",
                                     "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}
_DECIMAL_TYPES = {XSD + t for t in ("decimal", "double", "float")}


@dataclass(frozen=True)
class SelectResult:
    """Rows of a SELECT query; ``rows[i][j]`` is the value of ``variables[j]``.

    ``truncated`` is true when a row limit cut the result short (more rows existed).
    """

    variables: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool = False

    def column(self, name: str) -> list[Any]:
        j = self.variables.index(name)
        return [row[j] for row in self.rows]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.variables, row)) for row in self.rows]


def literal_value(lexical: str, datatype: str | None) -> Any:
    """Python value of a literal given its lexical form and datatype IRI."""
    if datatype in _INTEGER_TYPES:
        return int(lexical)
    if datatype in _DECIMAL_TYPES:
        return Decimal(lexical)
    if datatype == XSD + "boolean":
        return lexical in ("true", "1")
    return lexical


def term_value(term: Any) -> Any:
    """Convert one pyoxigraph term."""
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.Literal):
        return literal_value(term.value, term.datatype.value if term.datatype else None)
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term)
