"""The SynKQA-Pro vocabulary, read from ``schema.ttl``.

The Turtle file is the single source of truth; this module only exposes it as Python
tables so that the type checker, the compiler, the generator and the rankers agree on
names without repeating them by hand.

>>> s = schema()
>>> s.relations["born_in"].domain, s.relations["born_in"].range
('Person', 'City')
>>> s.attributes["population"].datatype
'integer'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pyoxigraph as ox

NS = "http://synkqa.org/ontology#"
"""Namespace of classes and properties (prefix ``sk:``)."""
ENTITY_NS = "http://synkqa.org/entity/"
"""Namespace of entities (prefix ``ske:``); the local name is the canonical entity name."""
ONTOLOGY_IRI = "http://synkqa.org/ontology"

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
XSD = "http://www.w3.org/2001/XMLSchema#"

PREFIXES = {
    "sk": NS,
    "ske": ENTITY_NS,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": RDFS,
    "xsd": XSD,
}


@dataclass(frozen=True)
class ClassInfo:
    name: str
    label: str
    alt_labels: tuple[str, ...]


@dataclass(frozen=True)
class RelationInfo:
    """An object property: ``domain`` and ``range`` are class local names."""

    name: str
    label: str
    alt_labels: tuple[str, ...]
    domain: str
    range: str
    functional: bool


@dataclass(frozen=True)
class AttributeInfo:
    """A datatype property: ``datatype`` is the XSD local name (``integer``, ``decimal``)."""

    name: str
    label: str
    alt_labels: tuple[str, ...]
    domain: str
    datatype: str
    functional: bool


@dataclass(frozen=True)
class Schema:
    classes: dict[str, ClassInfo]
    relations: dict[str, RelationInfo]
    attributes: dict[str, AttributeInfo]

    def words(self, name: str) -> tuple[str, ...]:
        """Label and altLabels of a class, relation or attribute (for suggestions, rankers)."""
        for table in (self.classes, self.relations, self.attributes):
            if name in table:
                info = table[name]
                return (info.label, *info.alt_labels)
        raise KeyError(name)


def schema_path() -> Path:
    """Path of the Turtle schema shipped with the package."""
    return Path(str(resources.files(__name__).joinpath("schema.ttl")))


def shapes_path() -> Path:
    """Path of the SHACL shapes shipped with the package."""
    return Path(str(resources.files(__name__).joinpath("shapes.ttl")))


def iri(name: str) -> str:
    """Full IRI of a vocabulary term given its local name."""
    return NS + name


def entity_iri(name: str) -> str:
    """Full IRI of an entity given its canonical name (``Person_00371``)."""
    return ENTITY_NS + name


def _local(term: ox.NamedNode) -> str:
    value = term.value
    return value[len(NS):] if value.startswith(NS) else value.rsplit("#", 1)[-1]


@lru_cache(maxsize=1)
def schema() -> Schema:
    """Read the schema tables from ``schema.ttl`` (cached)."""
    store = ox.Store()
    store.load(path=str(schema_path()), format=ox.RdfFormat.TURTLE)

    def objects(subject: ox.NamedNode, predicate: str) -> list:
        return [q.object for q in store.quads_for_pattern(subject, ox.NamedNode(predicate), None)]

    def subjects_of_type(cls: str) -> list[ox.NamedNode]:
        found = store.quads_for_pattern(None, ox.NamedNode(RDF_TYPE), ox.NamedNode(OWL + cls))
        return sorted({q.subject for q in found if q.subject.value.startswith(NS)}, key=lambda n: n.value)

    def labels(node: ox.NamedNode) -> tuple[str, tuple[str, ...]]:
        label = objects(node, RDFS + "label")[0].value
        alts = tuple(sorted(o.value for o in objects(node, SKOS + "altLabel")))
        return label, alts

    functional = set(subjects_of_type("FunctionalProperty"))
    classes = {}
    for node in subjects_of_type("Class"):
        label, alts = labels(node)
        classes[_local(node)] = ClassInfo(_local(node), label, alts)
    relations = {}
    for node in subjects_of_type("ObjectProperty"):
        label, alts = labels(node)
        relations[_local(node)] = RelationInfo(
            _local(node), label, alts,
            domain=_local(objects(node, RDFS + "domain")[0]),
            range=_local(objects(node, RDFS + "range")[0]),
            functional=node in functional,
        )
    attributes = {}
    for node in subjects_of_type("DatatypeProperty"):
        label, alts = labels(node)
        rng = objects(node, RDFS + "range")[0].value
        attributes[_local(node)] = AttributeInfo(
            _local(node), label, alts,
            domain=_local(objects(node, RDFS + "domain")[0]),
            datatype=rng[len(XSD):],
            functional=node in functional,
        )
    return Schema(classes, relations, attributes)


__all__ = [
    "NS", "ENTITY_NS", "PREFIXES", "Schema", "ClassInfo", "RelationInfo", "AttributeInfo",
    "schema", "schema_path", "shapes_path", "iri", "entity_iri",
]
