"""Does a Turtle file hold what the SynKQA-Pro KB of (seed, scale) must hold? (``kb validate``)

SHACL (``ontology/shapes.ttl``) checks each entity on its own, so it cannot see an entity
that is missing altogether: a KB with one person removed (every triple whose subject or
object is that person) still conforms. The KB also promises Table I: so many entities per
class, edges per relation and values per attribute at each scale. This module checks those
numbers.

- The expected counts come from the generator itself (:func:`synkqa.benchmark.kbgen.generate`
  for the same seed and scale), not from a copy of the paper's table, so a change in how
  the generator sizes the KB changes the expectation with it.
- The measured counts come from SPARQL COUNT queries (:data:`synkqa.benchmark.world.STATS_QUERIES`,
  the queries of ``kb stats``) on the file loaded into an in-memory pyoxigraph store: about
  half a second at scale 1.

Counts are keyed by full IRI, so a term of another vocabulary that happens to share a local
name (``ex:Person``) is not mistaken for the SynKQA-Pro one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from kopl2sparql.errors import ConfigError, safe_text
from ontology import NS, PREFIXES
from synkqa.benchmark import kbgen
from synkqa.benchmark.world import STATS_QUERIES

__all__ = ["CountViolation", "CountReport", "expected_counts", "measure_counts", "uses_synkqa_vocabulary",
           "compare_counts", "check_counts"]

_PREFIXES = ("PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
             "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n")

_UNITS = {"classes": "entities", "relations": "edges", "attributes": "values"}
_SINGULAR = {"entities": "entity", "edges": "edge", "values": "value"}
_KINDS = {"classes": "class", "relations": "relation", "attributes": "attribute"}


@dataclass(frozen=True)
class CountViolation:
    """One count that differs: ``kind`` is ``class``, ``relation``, ``attribute`` or
    ``entities`` (the distinct entities of every class together)."""

    kind: str
    name: str
    found: int
    expected: int
    message: str


@dataclass(frozen=True)
class CountReport:
    """Outcome of :func:`check_counts`; ``expected`` and ``measured`` are keyed by compact name."""

    seed: int
    scale: int
    expected: dict
    measured: dict
    violations: tuple[CountViolation, ...] = field(default_factory=tuple)

    @property
    def conforms(self) -> bool:
        return not self.violations


def expected_counts(seed: int = 42, scale: int = 1) -> dict:
    """What the SynKQA-Pro KB of (seed, scale) holds, read off the generator's own output:
    ``{"entities": n, "classes": {iri: n}, "relations": {iri: edges}, "attributes": {iri: values}}``."""
    kb = kbgen.generate(seed, scale)
    return {
        "entities": sum(len(names) for names in kb.names.values()),
        "classes": {NS + cls: len(names) for cls, names in kb.names.items()},
        "relations": {NS + rel: len(rows) for rel, rows in kb.relations.items()},
        "attributes": {NS + attr: len(rows) for attr, rows in kb.attributes.items()},
    }


def measure_counts(turtle: Path | str) -> dict:
    """The same numbers for a Turtle file, by SPARQL COUNT on an in-memory store (every
    triple of the file in the default graph; schema triples count like data).

    :raises ConfigError: if the file cannot be read or is not valid Turtle.
    """
    store = ox.Store()
    try:
        store.bulk_load(path=str(turtle), format=ox.RdfFormat.TURTLE)
    except OSError as exc:
        raise ConfigError(f"cannot read {turtle}: {exc.strerror or exc}") from None
    except SyntaxError as exc:
        raise ConfigError(f"{turtle} is not valid Turtle: {safe_text(str(exc), 300)}") from None

    def rows(name: str) -> list[tuple[str, int]]:
        return [(row[0].value, int(row[1].value)) for row in store.query(_PREFIXES + STATS_QUERIES[name])]

    entities = next(iter(store.query(_PREFIXES + STATS_QUERIES["entities"])))[0]
    return {"entities": int(entities.value), "classes": dict(sorted(rows("classes"))),
            "relations": dict(sorted(rows("relations"))), "attributes": dict(sorted(rows("attributes")))}


def uses_synkqa_vocabulary(measured: dict) -> bool:
    """Whether a file's counts involve any class or property of the SynKQA-Pro ontology
    (``http://synkqa.org/ontology#``): such a file claims to be (part of) the SynKQA-Pro KB."""
    return any(iri.startswith(NS) for kind in _UNITS for iri in measured[kind])


def _name(iri: str) -> str:
    if iri.startswith(NS):
        return iri[len(NS):]
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return f"{prefix}:{iri[len(namespace):]}"
    return f"<{iri}>"


def compare_counts(measured: dict, expected: dict, scale: int) -> tuple[CountViolation, ...]:
    """Every count of ``measured`` that differs from ``expected``, one violation each:
    classes, then the distinct entities in all, then relations, then attributes; a class or
    property the SynKQA-Pro KB does not have is expected to count zero."""
    out = []

    def add(kind: str, name: str, found: int, want: int, unit: str) -> None:
        name = safe_text(name, 120)
        if found == 1 and unit in _SINGULAR:
            unit = _SINGULAR[unit]
        if want == 0:
            message = f"{name}: {found:,} {unit}, expected none (the SynKQA-Pro KB has no such {kind})"
        else:
            message = f"{name}: {found:,} {unit}, expected {want:,} for scale {scale}"
        out.append(CountViolation(kind, name, found, want, message))

    for key in ("classes", "entities", "relations", "attributes"):
        if key == "entities":
            if measured["entities"] != expected["entities"]:
                add("entities", "entities", measured["entities"], expected["entities"], "in all")
            continue
        for iri in sorted(set(expected[key]) | set(measured[key]), key=lambda i: (i not in expected[key], i)):
            found, want = measured[key].get(iri, 0), expected[key].get(iri, 0)
            if found != want:
                add(_KINDS[key], _name(iri), found, want, _UNITS[key])
    return tuple(out)


def _compact(counts: dict) -> dict:
    return {"entities": counts["entities"],
            **{kind: {_name(iri): n for iri, n in counts[kind].items()} for kind in _UNITS}}


def check_counts(turtle: Path | str, seed: int = 42, scale: int = 1, measured: dict | None = None) -> CountReport:
    """Compare a Turtle file's counts with those of the SynKQA-Pro KB of (seed, scale).

    :param measured: the file's :func:`measure_counts`, when the caller already has them.
    :raises ConfigError: if the file cannot be read or is not valid Turtle.
    """
    measured = measure_counts(turtle) if measured is None else measured
    expected = expected_counts(seed, scale)
    return CountReport(seed, scale, _compact(expected), _compact(measured),
                       compare_counts(measured, expected, scale))
