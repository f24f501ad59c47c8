"""Deterministic synthetic KB (paper Table I) and its Turtle serialisation.

At scale 1: 6000 Person, 1200 City, 120 Country, 800 Organization; each Person is born in
one City and works at one Organization, each Organization is headquartered in one City,
each City is located in one Country (14,000 edges); seven numeric attributes, one value
per entity and attribute (16,120 values). ``scale`` multiplies every count; ids widen so
names stay zero-padded and sort in id order.

The generator's Python objects only feed the Turtle writer: every engine reads the KB back
from RDF, so the generator cannot mask an engine bug.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pyoxigraph as ox

from ontology import paper
from kopl2sparql.answer import format_number
from ontology import ENTITY_NS, NS, PREFIXES, RDF_TYPE, RDFS, XSD

BASE_COUNTS = {"Person": 6000, "City": 1200, "Country": 120, "Organization": 800}
"""Entities per class at scale 1 (paper Table I)."""
BASE_WIDTHS = {"Person": 5, "City": 4, "Country": 3, "Organization": 4}
NAME_PREFIX = {"Person": "Person", "City": "City", "Country": "Country", "Organization": "Org"}
PAPER_TABLE_I = paper.TABLE_I
"""Table I of the paper, for side-by-side reports (kept in :mod:`ontology.paper`)."""


@dataclass
class KB:
    """The generated world. ``names[cls]`` lists entity names in id order."""

    seed: int
    scale: int
    names: dict[str, list[str]]
    relations: dict[str, list[tuple[str, str]]]             # relation -> [(subject, object)]
    attributes: dict[str, list[tuple[str, str, str]]]       # attribute -> [(subject, lexical, xsd)]

    def counts(self) -> dict[str, int]:
        n_edges = sum(len(v) for v in self.relations.values())
        n_values = sum(len(v) for v in self.attributes.values())
        out = {cls: len(names) for cls, names in self.names.items()}
        out.update(entities=sum(len(n) for n in self.names.values()), relation_edges=n_edges,
                   attribute_values=n_values)
        return out


def entity_names(cls: str, count: int) -> list[str]:
    width = max(BASE_WIDTHS[cls], len(str(count - 1)))
    prefix = NAME_PREFIX[cls]
    return [f"{prefix}_{i:0{width}d}" for i in range(count)]


def _decimal(rng: random.Random, low_exp: float, high_exp: float, places: int) -> str:
    """Log-uniform decimal with a non-zero last digit (its canonical lexical form then
    keeps a fraction, so Turtle writes it as a decimal and stores round-trip it unchanged)."""
    value = Decimal(f"{10 ** rng.uniform(low_exp, high_exp):.{places}f}")
    step = Decimal(1).scaleb(-places)
    if value == value.to_integral_value() or str(value)[-1] == "0":
        value += step
    return format_number(value)


def generate(seed: int = 42, scale: int = 1) -> KB:
    """Generate the KB. Same (seed, scale) -> same KB, on every machine."""
    if scale < 1:
        raise ValueError("scale must be a positive integer")
    rng = random.Random(seed)
    names = {cls: entity_names(cls, n * scale) for cls, n in BASE_COUNTS.items()}
    people, cities, countries, orgs = (names[c] for c in ("Person", "City", "Country", "Organization"))

    # Every country gets at least one city, so Argmax over a country's cities is never empty.
    country_of = list(range(len(countries))) + [rng.randrange(len(countries))
                                                  for _ in range(len(cities) - len(countries))]
    rng.shuffle(country_of)
    relations = {
        "located_in": [(c, countries[k]) for c, k in zip(cities, country_of)],
        "headquarters_in": [(o, cities[rng.randrange(len(cities))]) for o in orgs],
        "born_in": [], "works_at": [],
    }
    for p in people:
        relations["born_in"].append((p, cities[rng.randrange(len(cities))]))
        relations["works_at"].append((p, orgs[rng.randrange(len(orgs))]))

    integer = "integer"
    gens: dict[str, tuple[list[str], Callable[[], str], str]] = {
        "birth_year": (people, lambda: str(rng.randint(1935, 2006)), integer),
        "height_cm": (people, lambda: str(rng.randint(150, 205)), integer),
        "population": (cities, lambda: str(int(10 ** rng.uniform(4.0, 7.3))), integer),
        "area_km2": (cities, lambda: _decimal(rng, 1.0, 3.8, 1), "decimal"),
        "revenue_billion_usd": (orgs, lambda: _decimal(rng, -1.5, 2.8, 2), "decimal"),
        "founded_year": (orgs, lambda: str(rng.randint(1850, 2022)), integer),
        "gdp_billion_usd": (countries, lambda: _decimal(rng, 0.0, 4.4, 1), "decimal"),
    }
    attributes = {attr: [(e, make(), dt) for e in ents] for attr, (ents, make, dt) in gens.items()}
    return KB(seed, scale, names, relations, attributes)


def triples(kb: KB) -> Iterator[ox.Triple]:
    """The KB as RDF triples, grouped by subject in a fixed order (for compact, stable Turtle).

    Classes come in the order Country, City, Organization, Person; entities in id order;
    each entity's ``rdf:type`` and ``rdfs:label`` first, then its edges and attributes
    sorted by predicate IRI. Rows of every relation and attribute are aligned with
    ``kb.names`` (one per entity, in id order), so they are zipped rather than regrouped
    through a dictionary: at scale 100 that halves the time and memory of the writer.
    """
    rdf_type, label = ox.NamedNode(RDF_TYPE), ox.NamedNode(RDFS + "label")
    nodes = {cls: [ox.NamedNode(ENTITY_NS + n) for n in names] for cls, names in kb.names.items()}
    node_of = {name: node for cls in nodes for name, node in zip(kb.names[cls], nodes[cls])}
    datatypes = {dt: ox.NamedNode(XSD + dt) for dt in ("integer", "decimal")}
    for cls in ("Country", "City", "Organization", "Person"):
        names = kb.names[cls]
        columns: list[tuple[ox.NamedNode, list]] = []
        for attr, rows in kb.attributes.items():
            if rows and _class_of(rows[0][0]) == cls:
                _check_aligned(attr, rows, names)
                columns.append((ox.NamedNode(NS + attr),
                                [ox.Literal(lex, datatype=datatypes[dt]) for _, lex, dt in rows]))
        for rel, rows in kb.relations.items():
            if rows and _class_of(rows[0][0]) == cls:
                _check_aligned(rel, rows, names)
                columns.append((ox.NamedNode(NS + rel), [node_of[obj] for _, obj in rows]))
        columns.sort(key=lambda column: column[0].value)
        cls_node = ox.NamedNode(NS + cls)
        for i, (name, node) in enumerate(zip(names, nodes[cls])):
            yield ox.Triple(node, rdf_type, cls_node)
            yield ox.Triple(node, label, ox.Literal(name))
            for pred, values in columns:
                yield ox.Triple(node, pred, values[i])


_CLASS_OF_PREFIX = {prefix: cls for cls, prefix in NAME_PREFIX.items()}


def _class_of(name: str) -> str:
    return _CLASS_OF_PREFIX[name.rsplit("_", 1)[0]]


def class_of_name(name: str) -> str | None:
    """Class of a SynKQA-Pro canonical entity name (``Org_0012`` -> ``Organization``), from
    its prefix; ``None`` for anything else. The generator names entities this way; every
    other layer reads classes from the KB's schema and uses this only for names that are
    not in the KB (parsers linking a mention of a non-existent entity)."""
    head, _, digits = name.rpartition("_")
    return _CLASS_OF_PREFIX.get(head) if digits.isdigit() else None


def _check_aligned(prop: str, rows: list, names: list[str]) -> None:
    # The zip in triples() relies on one row per entity in id order; a generator change
    # that broke it would silently shift values between entities.
    if len(rows) != len(names) or rows[0][0] != names[0] or rows[-1][0] != names[-1]:
        raise ValueError(f"{prop}: rows are not aligned with the entity list")


def write_turtle(kb: KB, path: Path | str, progress: Callable[[int], None] | None = None) -> Path:
    """Serialise ``kb`` as Turtle at ``path`` (byte-identical for the same seed and scale).

    ``progress(done)`` is called every 50,000 triples and once at the end.
    """
    prefixes = {k: PREFIXES[k] for k in ("sk", "ske", "rdfs", "xsd")}
    stream = triples(kb) if progress is None else _counted(triples(kb), progress)
    ox.serialize(stream, output=str(path), format=ox.RdfFormat.TURTLE, prefixes=prefixes)
    return Path(path)


def _counted(items: Iterator[ox.Triple], progress: Callable[[int], None],
             every: int = 50_000) -> Iterator[ox.Triple]:
    done = 0
    for done, item in enumerate(items, 1):
        if done % every == 0:
            progress(done)
        yield item
    progress(done)
