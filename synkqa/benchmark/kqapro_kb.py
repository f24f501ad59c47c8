"""The KB in KQA Pro's JSON format, for the official KoPL engines (``kopl``, ``kopl-engine``).

Layout (KOPL.md §4)::

    {"concepts": {"City": {"name": "City", "subclassOf": []}, ...},
     "entities": {"City_0000": {"name": "City_0000", "instanceOf": ["City"],
                                "attributes": [{"key": "population",
                                                "value": {"type": "quantity", "value": 71890, "unit": "1"},
                                                "qualifiers": {}}, ...],
                                "relations": [{"relation": "located_in", "direction": "forward",
                                               "object": "Country_017", "qualifiers": {}},
                                              {"relation": "born_in", "direction": "backward",
                                               "object": "Person_00042", "qualifiers": {}}, ...]}}}

Choices and why:

- Ids are the canonical names (entities) and class local names (concepts): KoPL's ``Find``
  looks entities up by name, so a program runs unchanged, and answers need no id mapping.
- Every attribute is a ``quantity`` with unit ``"1"`` (no unit): KQA Pro compares two
  quantities only when their units match, and our attributes carry no units. Years are
  quantities too, not KQA Pro ``year`` values, so ``=`` means equality, not containment.
- Relations are written in both directions (``kopl`` only follows what is written;
  ``backward=False`` writes forward edges only, for ``kopl-engine``, which derives them).
- The KB is read from the Turtle (RDF), like every engine here, not from the generator.
- Entities in name order, attributes by key, relations by (relation, direction, object),
  compact JSON: the same Turtle gives the same bytes.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pyoxigraph as ox

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ConfigError
from ontology import ENTITY_NS, NS, RDF_TYPE, RDFS, Schema, schema_path

_LABEL = RDFS + "label"


def _quantity(literal: ox.Literal) -> int | float:
    """A JSON number that reads back as exactly the literal's decimal value."""
    value = Decimal(literal.value)
    if value == value.to_integral_value():
        return int(value)
    as_float = float(value)
    # float repr is the shortest round-tripping text; refuse a value it cannot carry exactly.
    if format_number(Decimal(repr(as_float))) != format_number(value):
        raise ConfigError(f"attribute value {literal.value} cannot be written exactly as a JSON number")
    return as_float


def kb_to_kqapro(turtle: Path | str, *, backward: bool = True) -> dict:
    """Read the KB Turtle and return the KQA Pro KB dict (a fresh dict on every call).

    :param backward: also write each relation on its object, ``direction: backward``.
    :raises ConfigError: if the file is missing or holds no typed entities.
    """
    turtle = Path(turtle)
    if not turtle.is_file():
        raise ConfigError(f"no such KB Turtle file: {turtle}")
    tables = Schema.from_turtle(schema_path())   # the SynKQA-Pro vocabulary
    classes = {NS + c: c for c in tables.classes}
    relations = {NS + r: r for r in tables.relations}
    attributes = {NS + a: a for a in tables.attributes}

    def local(node: ox.NamedNode) -> str:
        value = node.value
        return value[len(ENTITY_NS):] if value.startswith(ENTITY_NS) else value

    instance_of: dict[str, set[str]] = defaultdict(set)
    names: dict[str, str] = {}
    attrs: dict[str, list[tuple[str, int | float]]] = defaultdict(list)
    edges: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for triple in ox.parse(path=str(turtle), format=ox.RdfFormat.TURTLE):
        subject, predicate, obj = triple.subject, triple.predicate.value, triple.object
        if not isinstance(subject, ox.NamedNode):
            continue
        sid = local(subject)
        if predicate == RDF_TYPE and isinstance(obj, ox.NamedNode) and obj.value in classes:
            instance_of[sid].add(classes[obj.value])
        elif predicate == _LABEL and isinstance(obj, ox.Literal):
            names[sid] = obj.value
        elif predicate in attributes and isinstance(obj, ox.Literal):
            attrs[sid].append((attributes[predicate], _quantity(obj)))
        elif predicate in relations and isinstance(obj, ox.NamedNode):
            oid = local(obj)
            edges[sid].append((relations[predicate], "forward", oid))
            if backward:
                edges[oid].append((relations[predicate], "backward", sid))
    if not instance_of:
        raise ConfigError(f"{turtle} holds no entities typed with an ontology class")

    # Concept names are the class local names, the words programs use (FilterConcept(City)).
    concepts = {c: {"name": c, "subclassOf": []} for c in sorted(tables.classes)}
    entities = {}
    for eid in sorted(instance_of):
        entities[eid] = {
            "name": names.get(eid, eid),
            "instanceOf": sorted(instance_of[eid]),
            "attributes": [{"key": key, "value": {"type": "quantity", "value": value, "unit": "1"},
                            "qualifiers": {}} for key, value in sorted(attrs.get(eid, []))],
            "relations": [{"relation": rel, "direction": direction, "object": other, "qualifiers": {}}
                          for rel, direction, other in sorted(edges.get(eid, []))],
        }
    return {"concepts": concepts, "entities": entities}


def write_kqapro(turtle: Path | str, out: Path | str, *, backward: bool = True) -> dict:
    """Write the KQA Pro KB JSON of ``turtle`` to ``out`` (atomically); return a summary.

    The summary counts concepts, entities, attributes and relation facts (each direction
    written counts once).
    """
    from synkqa.benchmark.paths import atomic_path

    kb = kb_to_kqapro(turtle, backward=backward)
    with atomic_path(Path(out)) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            # One dumps + write: json.dump streams thousands of tiny writes (3x slower).
            handle.write(json.dumps(kb, ensure_ascii=False, separators=(",", ":")) + "\n")
        # mkstemp creates 0600; an exported file should get the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    return summary(kb) | {"path": str(out)}


def summary(kb: dict) -> dict:
    """Counts of a KQA Pro KB dict."""
    entities = kb["entities"].values()
    relations = [r for e in entities for r in e["relations"]]
    return {
        "concepts": len(kb["concepts"]),
        "entities": len(kb["entities"]),
        "attributes": sum(len(e["attributes"]) for e in entities),
        "relations_forward": sum(r["direction"] == "forward" for r in relations),
        "relations_backward": sum(r["direction"] == "backward" for r in relations),
    }


# ---- KQA Pro-format KBs (full KoPL, kqapro package) -------------------------------------------

def _write_bytes(out: Path | str, data: bytes) -> None:
    from synkqa.benchmark.paths import atomic_path

    with atomic_path(Path(out)) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)


def import_kqapro(json_path: Path | str, out: Path | str) -> dict:
    """KQA Pro's KB JSON -> Turtle in KQA Pro's RDF model (docs/FULL_KOPL.md); returns counts."""
    from kqapro.kb import KB
    from kqapro.rdf import kb_to_turtle

    kb = KB.load(json_path)
    data = kb_to_turtle(kb)
    _write_bytes(out, data)
    return kb.counts() | {"path": str(out), "bytes": len(data)}


def is_kqapro_file(turtle: Path | str) -> bool:
    """Whether a Turtle file is a KQA Pro-model KB (written by import_kqapro or build_kqapro)."""
    from kqapro.rdf import is_kqapro_turtle

    try:
        with open(turtle, "rb") as handle:
            return is_kqapro_turtle(handle.read(1 << 16))
    except OSError:
        return False


def export_kqapro_model(turtle: Path | str, out: Path | str, *, backward: bool = True) -> dict:
    """A KQA Pro-model Turtle back to KQA Pro's KB JSON (the inverse of import_kqapro)."""
    from kqapro.rdf import kb_from_turtle

    kb = kb_from_turtle(turtle)
    data = json.dumps(kb.to_json(backward=backward), ensure_ascii=False, separators=(",", ":")) + "\n"
    _write_bytes(out, data.encode("utf-8"))
    return kb.counts() | {"path": str(out)}


def build_kqapro(seed: int, scale: float, out: Path | str) -> dict:
    """Generate a KQA Pro-shaped KB (kqapro.generator) and write it as Turtle."""
    from kqapro.generator import generate
    from kqapro.kb import KB
    from kqapro.rdf import kb_to_turtle

    kb = KB.from_json(generate(scale=scale, seed=seed), where="generated KB")
    data = kb_to_turtle(kb)
    _write_bytes(out, data)
    return kb.counts() | {"path": str(out), "bytes": len(data)}
