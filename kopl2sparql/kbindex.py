"""The KB read back from RDF into plain dicts and sets, for the native interpreter.

The index is built from the Turtle file or from a store, never from a generator's Python
objects, so the native engine is an independent second reading of the same data. What is
a relation, an attribute and an entity comes from the KB's :class:`~ontology.Schema`;
entities are named by the schema's IRI -> name mapping.

>>> from ontology import Schema
>>> index = KBIndex.from_triples([], Schema.from_rdf([]))
>>> index.entity_count()
0
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pyoxigraph as ox

from kopl2sparql.errors import ConfigError
from ontology import RDF_TYPE, XSD, Schema

Number = int | Decimal
EMPTY: frozenset[str] = frozenset()

_INTEGER = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                               "positiveInteger", "negativeInteger", "nonPositiveInteger",
                               "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}
_DECIMAL = {XSD + t for t in ("decimal", "double", "float")}


class Multi(tuple):
    """Several values of one attribute on one entity, sorted (single values are stored bare,
    so the common case costs nothing)."""


def literal_value(literal: ox.Literal, numeric: bool):
    """Python value of an attribute literal: ``int``/``Decimal`` for numeric attributes
    (``None`` when the literal is not a number), the lexical form otherwise."""
    if not numeric:
        return literal.value
    datatype = literal.datatype.value if literal.datatype is not None else None
    if datatype in _INTEGER:
        return int(literal.value)
    if datatype in _DECIMAL:
        return Decimal(literal.value)
    return None


@dataclass(frozen=True)
class KBIndex:
    """Entities, types, adjacency and attribute values of one KB.

    ``forward[r][s]`` is the set of objects of ``s r ?o``; ``inverse[r][o]`` the set of
    subjects of ``?s r o``; ``values[a][e]`` the value of attribute ``a`` on ``e`` (a
    :class:`Multi` when there are several). Sets are frozensets of entity names, so the
    interpreter can return them unchanged.
    """

    types: dict[str, frozenset[str]]               # entity name -> its classes (direct)
    members: dict[str, tuple[str, ...]]            # class -> entity names in name order (subclasses included)
    forward: dict[str, dict[str, frozenset[str]]]
    inverse: dict[str, dict[str, frozenset[str]]]
    values: dict[str, dict[str, object]]

    # ---- construction ------------------------------------------------------------------

    @classmethod
    def from_turtle(cls, path: Path | str, schema: Schema) -> "KBIndex":
        """Parse a Turtle file (streaming, no store needed).

        :raises ConfigError: if the file is missing or is not valid Turtle.
        """
        try:
            triples = ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
            return cls.from_triples(triples, schema)
        except FileNotFoundError:
            raise ConfigError(f"KB file not found: {path}") from None
        except SyntaxError as exc:
            raise ConfigError(f"KB file {path} is not valid Turtle: {exc}") from None

    @classmethod
    def from_store(cls, store, schema: Schema) -> "KBIndex":
        """Read the default graph of a ``pyoxigraph.Store`` (or an ``OxigraphStore``)."""
        raw = getattr(store, "raw", store)
        return cls.from_triples(raw.quads_for_pattern(None, None, None, ox.DefaultGraph()), schema)

    @classmethod
    def from_triples(cls, triples: Iterable, schema: Schema) -> "KBIndex":
        """Build from pyoxigraph triples or quads (anything with subject/predicate/object)."""
        relation_of = {info.iri: name for name, info in schema.relations.items()}
        attribute_of = {info.iri: (name, info.numeric) for name, info in schema.attributes.items()}
        class_of = {info.iri: name for name, info in schema.classes.items()}
        name_of = schema.entity_name
        types: dict[str, set[str]] = {}
        edges: dict[str, list[tuple[str, str]]] = {r: [] for r in schema.relations}
        values: dict[str, dict[str, object]] = {a: {} for a in schema.attributes}
        named = ox.NamedNode
        for triple in triples:
            subject, obj = triple.subject, triple.object
            if type(subject) is not named:
                continue
            p = triple.predicate.value
            if p == RDF_TYPE:
                cls_name = class_of.get(obj.value) if type(obj) is named else None
                if cls_name is not None:
                    types.setdefault(name_of(subject.value), set()).add(cls_name)
                continue
            rel = relation_of.get(p)
            if rel is not None:
                if type(obj) is named:
                    edges[rel].append((name_of(subject.value), name_of(obj.value)))
                continue
            attr = attribute_of.get(p)
            if attr is not None and isinstance(obj, ox.Literal):
                value = literal_value(obj, attr[1])
                if value is not None:
                    table = values[attr[0]]
                    s = name_of(subject.value)
                    old = table.get(s)
                    if old is None:
                        table[s] = value
                    elif value != old and not (isinstance(old, Multi) and value in old):
                        table[s] = Multi(sorted((*old, value) if isinstance(old, Multi) else (old, value)))
        # Entities the schema knows without a type in this data (objects of relations).
        for name in schema.entity_iris:
            types.setdefault(name, set())
        return cls._build(types, edges, values, schema)

    @classmethod
    def _build(cls, types, edges, values, schema: Schema) -> "KBIndex":
        members: dict[str, list[str]] = {c: [] for c in schema.classes}
        for name, classes in types.items():
            for klass in {a for c in classes for a in schema.ancestors(c)}:
                members.setdefault(klass, []).append(name)
        forward: dict[str, dict[str, frozenset[str]]] = {}
        inverse: dict[str, dict[str, frozenset[str]]] = {}
        for rel, pairs in edges.items():
            fwd: dict[str, set[str]] = {}
            inv: dict[str, set[str]] = {}
            for s, o in pairs:
                fwd.setdefault(s, set()).add(o)
                inv.setdefault(o, set()).add(s)
            forward[rel] = {k: frozenset(v) for k, v in fwd.items()}
            inverse[rel] = {k: frozenset(v) for k, v in inv.items()}
        return cls(types={n: frozenset(c) for n, c in types.items()},
                   members={c: tuple(sorted(names)) for c, names in members.items()},
                   forward=forward, inverse=inverse, values=values)

    # ---- lookups -----------------------------------------------------------------------

    def __contains__(self, name: str) -> bool:
        return name in self.types

    def entity_count(self) -> int:
        return len(self.types)

    def relation_names(self) -> list[str]:
        return sorted(self.forward)

    def attribute_names(self) -> list[str]:
        return sorted(self.values)

    def counts(self) -> dict[str, int]:
        """Entities per class, edges and attribute values (compare with the paper's Table I)."""
        out = {c: len(m) for c, m in self.members.items()}
        out["entities"] = len(self.types)
        out["relation_edges"] = sum(len(v) for rel in self.forward.values() for v in rel.values())
        out["attribute_values"] = sum(len(v) if isinstance(v, Multi) else 1
                                      for table in self.values.values() for v in table.values())
        return out


__all__ = ["KBIndex", "EMPTY", "Number", "Multi", "literal_value"]
