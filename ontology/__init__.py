"""Vocabularies: the schema of any KB read from its RDF (:mod:`ontology.kbschema`), and
the SynKQA-Pro ontology shipped as ``schema.ttl`` (its namespaces are the constants below).

The language layers never read ``schema.ttl`` themselves: whoever opens a KB builds its
:class:`Schema` (for the SynKQA-Pro KB, ``schema.ttl`` plus the generated data) and passes
it down.

>>> s = Schema.from_turtle(schema_path())
>>> s.relations["born_in"].domain, s.relations["born_in"].range
('Person', 'City')
>>> s.attributes["population"].datatype
'integer'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


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


from ontology.kbschema import AttributeInfo, ClassInfo, RelationInfo, Schema  # noqa: E402

__all__ = [
    "NS", "ENTITY_NS", "PREFIXES", "Schema", "ClassInfo", "RelationInfo", "AttributeInfo",
    "schema_path", "shapes_path", "iri", "entity_iri",
]
