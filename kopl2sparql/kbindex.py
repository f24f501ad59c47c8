"""The KB read back from RDF into plain dicts and sets, for the native interpreter.

The index is built from the Turtle file or from a store, never from the generator's
Python objects, so the native engine is an independent second reading of the same data.
Entities are the subjects typed with one of the ontology's classes; their name is the
local part of their IRI in the entity namespace (the KB also writes it as ``rdfs:label``).
Every other predicate in the ontology namespace is a relation when its objects are IRIs
and an attribute when they are literals.

>>> index = KBIndex.from_triples([])
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
from ontology import ENTITY_NS, NS, RDF_TYPE, XSD, schema

Number = int | Decimal
EMPTY: frozenset[str] = frozenset()

_INTEGER = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                               "positiveInteger", "negativeInteger", "nonPositiveInteger")}
_DECIMAL = {XSD + t for t in ("decimal", "double", "float")}


def _number(literal: ox.Literal) -> Number | None:
    """Python value of a numeric literal (``None`` for non-numeric ones, which are not attributes)."""
    datatype = literal.datatype.value if literal.datatype is not None else None
    if datatype in _INTEGER:
        return int(literal.value)
    if datatype in _DECIMAL:
        return Decimal(literal.value)
    return None


@dataclass(frozen=True)
class KBIndex:
    """Entities, classes, adjacency and attribute values of one KB.

    ``forward[r][s]`` is the set of objects of ``s r ?o``; ``inverse[r][o]`` the set of
    subjects of ``?s r o``; ``values[a][e]`` the value of attribute ``a`` on ``e``.
    Sets are frozensets of entity names, so the interpreter can return them unchanged.
    """

    classes: dict[str, str]                        # entity name -> class local name
    members: dict[str, tuple[str, ...]]            # class -> entity names in id order
    forward: dict[str, dict[str, frozenset[str]]]
    inverse: dict[str, dict[str, frozenset[str]]]
    values: dict[str, dict[str, Number]]

    # ---- construction ------------------------------------------------------------------

    @classmethod
    def from_turtle(cls, path: Path | str) -> "KBIndex":
        """Parse a Turtle file (streaming, no store needed).

        :raises ConfigError: if the file is missing or is not valid Turtle.
        """
        try:
            triples = ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
            return cls.from_triples(triples)
        except FileNotFoundError:
            raise ConfigError(f"KB file not found: {path}") from None
        except SyntaxError as exc:
            raise ConfigError(f"KB file {path} is not valid Turtle: {exc}") from None

    @classmethod
    def from_store(cls, store) -> "KBIndex":
        """Read the default graph of a ``pyoxigraph.Store`` (or an ``OxigraphStore``)."""
        raw = getattr(store, "raw", store)
        return cls.from_triples(raw.quads_for_pattern(None, None, None, ox.DefaultGraph()))

    @classmethod
    def from_triples(cls, triples: Iterable) -> "KBIndex":
        """Build from pyoxigraph triples or quads (anything with subject/predicate/object)."""
        classes: dict[str, str] = {}
        edges: dict[str, list[tuple[str, str]]] = {r: [] for r in schema().relations}
        values: dict[str, dict[str, Number]] = {a: {} for a in schema().attributes}
        ns_len, ent_len = len(NS), len(ENTITY_NS)
        for triple in triples:
            subject, obj = triple.subject, triple.object
            if not isinstance(subject, ox.NamedNode):
                continue
            s = subject.value
            if not s.startswith(ENTITY_NS):
                continue
            p = triple.predicate.value
            if p == RDF_TYPE:
                if isinstance(obj, ox.NamedNode) and obj.value.startswith(NS):
                    classes[s[ent_len:]] = obj.value[ns_len:]
                continue
            if not p.startswith(NS):
                continue                                   # rdfs:label and other annotations
            name = p[ns_len:]
            if isinstance(obj, ox.NamedNode):
                if obj.value.startswith(ENTITY_NS):
                    edges.setdefault(name, []).append((s[ent_len:], obj.value[ent_len:]))
            elif isinstance(obj, ox.Literal):
                number = _number(obj)
                if number is not None:
                    values.setdefault(name, {})[s[ent_len:]] = number
        return cls._build(classes, edges, values)

    @classmethod
    def _build(cls, classes, edges, values) -> "KBIndex":
        members: dict[str, list[str]] = {c: [] for c in schema().classes}
        for name, klass in classes.items():
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
        return cls(classes=classes,
                   members={c: tuple(sorted(names)) for c, names in members.items()},
                   forward=forward, inverse=inverse, values=values)

    # ---- lookups -----------------------------------------------------------------------

    def __contains__(self, name: str) -> bool:
        return name in self.classes

    def entity_count(self) -> int:
        return len(self.classes)

    def class_of(self, name: str) -> str | None:
        """Class local name of an entity, ``None`` if the KB has no such entity."""
        return self.classes.get(name)

    @staticmethod
    def iri(name: str) -> str:
        """Entity name -> IRI."""
        return ENTITY_NS + name

    @staticmethod
    def name(iri: str) -> str:
        """Entity IRI -> name.

        :raises ValueError: for an IRI outside the entity namespace.
        """
        if not iri.startswith(ENTITY_NS):
            raise ValueError(f"not an entity IRI: {iri}")
        return iri[len(ENTITY_NS):]

    def relation_names(self) -> list[str]:
        return sorted(self.forward)

    def attribute_names(self) -> list[str]:
        return sorted(self.values)

    def counts(self) -> dict[str, int]:
        """Entities per class, edges and attribute values (compare with the paper's Table I)."""
        out = {c: len(m) for c, m in self.members.items()}
        out["entities"] = len(self.classes)
        out["relation_edges"] = sum(len(v) for rel in self.forward.values() for v in rel.values())
        out["attribute_values"] = sum(len(v) for v in self.values.values())
        return out


__all__ = ["KBIndex", "EMPTY", "Number"]
