"""A KQA Pro-format knowledge base in memory: concepts, entities, attribute facts and
relation facts, each fact with its qualifiers.

Read from KQA Pro's KB JSON (:meth:`KB.from_json`) or from its RDF (:mod:`kqapro.rdf`),
written back to the JSON (:meth:`KB.to_json`). The JSON lists a relation fact twice, once
``forward`` on its head and once ``backward`` on its tail; here a relation fact is stored
once, with its head and tail. A fact listed in one direction only is the same fact: the
number of copies of a fact is the larger of its forward and backward counts, so a KB that
lists both directions and one that lists only one read the same.

Lossless up to order: :meth:`to_json` writes entities by id, concepts' parents and
entities' concepts sorted, attributes by key, value and qualifiers, relations by relation,
direction, object and qualifiers, and every relation fact in both directions (``kopl``
follows only what is written).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kqapro.values import Value
from ontology.errors import ConfigError, safe_text

Qualifiers = tuple[tuple[str, tuple[Value, ...]], ...]
"""Qualifier key -> values, sorted by key (values in the order written)."""


def _dump(data: object) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def qualifiers_json(qualifiers: Qualifiers) -> dict:
    return {key: [v.to_json() for v in values] for key, values in qualifiers}


def _read_qualifiers(data: object, where: str) -> Qualifiers:
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: qualifiers must be an object {{key: [values]}}")
    out = []
    for key in sorted(data):
        values = data[key]
        if not isinstance(values, list):
            raise ConfigError(f"{where}.{safe_text(key, 60)}: qualifier values must be a list")
        read = [Value.from_json(v, f"{where}.{safe_text(key, 60)}[{i}]") for i, v in enumerate(values)]
        out.append((key, sort_values(read)))
    return tuple(out)


def sort_values(values: Iterable[Value]) -> tuple[Value, ...]:
    """Qualifier values in a canonical order (RDF keeps no order among them)."""
    return tuple(sorted(values, key=lambda v: _dump(v.to_json())))


class _Qualified:
    qualifiers: Qualifiers

    def qualifier(self, key: str) -> tuple[Value, ...]:
        """The values of qualifier ``key`` (none: the empty tuple)."""
        for k, values in self.qualifiers:
            if k == key:
                return values
        return ()


@dataclass(frozen=True)
class AttributeFact(_Qualified):
    key: str
    value: Value
    qualifiers: Qualifiers = ()

    def sort_key(self) -> tuple:
        return (self.key, _dump(self.value.to_json()), _dump(qualifiers_json(self.qualifiers)))


@dataclass(frozen=True)
class RelationFact(_Qualified):
    head: str
    relation: str
    tail: str
    qualifiers: Qualifiers = ()

    def sort_key(self) -> tuple:
        return (self.head, self.relation, self.tail, _dump(qualifiers_json(self.qualifiers)))


@dataclass
class Concept:
    id: str
    name: str
    parents: tuple[str, ...] = ()


@dataclass
class Entity:
    id: str
    name: str
    concepts: tuple[str, ...] = ()
    attributes: list[AttributeFact] = field(default_factory=list)


class KB:
    """Concepts and entities by id, relation facts in a list. Indexes are built on first use."""

    def __init__(self, concepts: dict[str, Concept], entities: dict[str, Entity],
                 relations: list[RelationFact]):
        self.concepts = concepts
        self.entities = entities
        self.relations = relations

    # ---- JSON ---------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path | str) -> "KB":
        path = Path(path)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read KQA Pro KB {path}: {e}") from e
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
        except RecursionError:
            raise ConfigError(f"{path}: JSON nested too deeply to be a KQA Pro KB") from None
        return cls.from_json(data, where=str(path))

    @classmethod
    def from_json(cls, data: object, where: str = "KB") -> "KB":
        if not isinstance(data, Mapping) or not isinstance(data.get("entities"), Mapping) \
                or not isinstance(data.get("concepts", {}), Mapping):
            raise ConfigError(f"{where}: a KQA Pro KB is an object with 'concepts' and 'entities' objects")
        concepts: dict[str, Concept] = {}
        for cid, info in data.get("concepts", {}).items():
            at = f"{where}: concepts.{safe_text(cid, 60)}"
            if not isinstance(info, Mapping) or not isinstance(info.get("name"), str):
                raise ConfigError(f"{at}: a concept needs a string 'name'")
            parents = info.get("subclassOf", [])
            if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
                raise ConfigError(f"{at}.subclassOf: expected a list of concept ids")
            # sorted: RDF keeps no order among a concept's parents or an entity's concepts
            concepts[cid] = Concept(cid, info["name"], tuple(sorted(parents)))
        entities: dict[str, Entity] = {}
        forward: Counter = Counter()
        backward: Counter = Counter()
        for eid, info in data["entities"].items():
            at = f"{where}: entities.{safe_text(eid, 60)}"
            if eid in concepts:
                raise ConfigError(f"{at}: the id is also a concept's")
            if not isinstance(info, Mapping) or not isinstance(info.get("name"), str):
                raise ConfigError(f"{at}: an entity needs a string 'name'")
            kinds = info.get("instanceOf", [])
            if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
                raise ConfigError(f"{at}.instanceOf: expected a list of concept ids")
            attributes = []
            for i, attr in enumerate(info.get("attributes", []) or []):
                aat = f"{at}.attributes[{i}]"
                if not isinstance(attr, Mapping) or not isinstance(attr.get("key"), str):
                    raise ConfigError(f"{aat}: an attribute needs a string 'key'")
                attributes.append(AttributeFact(attr["key"], Value.from_json(attr.get("value"), f"{aat}.value"),
                                                _read_qualifiers(attr.get("qualifiers"), f"{aat}.qualifiers")))
            for i, rel in enumerate(info.get("relations", []) or []):
                rat = f"{at}.relations[{i}]"
                if not isinstance(rel, Mapping) or not isinstance(rel.get("relation"), str) \
                        or not isinstance(rel.get("object"), str):
                    raise ConfigError(f"{rat}: a relation needs string 'relation' and 'object'")
                direction = rel.get("direction", "forward")
                qualifiers = _read_qualifiers(rel.get("qualifiers"), f"{rat}.qualifiers")
                if direction == "forward":
                    forward[RelationFact(eid, rel["relation"], rel["object"], qualifiers)] += 1
                elif direction == "backward":
                    backward[RelationFact(rel["object"], rel["relation"], eid, qualifiers)] += 1
                else:
                    raise ConfigError(f"{rat}.direction: {safe_text(repr(direction), 40)} is neither "
                                      "'forward' nor 'backward'")
            entities[eid] = Entity(eid, info["name"], tuple(sorted(kinds)), attributes)
        relations = []
        for fact in sorted(set(forward) | set(backward), key=RelationFact.sort_key):
            relations.extend([fact] * max(forward[fact], backward[fact]))
        kb = cls(concepts, entities, relations)
        kb.check_references(where)
        return kb

    def check_references(self, where: str = "KB") -> None:
        """Every concept, parent and relation end named must exist."""
        for c in self.concepts.values():
            for p in c.parents:
                if p not in self.concepts:
                    raise ConfigError(f"{where}: concept {safe_text(c.id, 60)} has an unknown parent "
                                      f"{safe_text(p, 60)}")
        for e in self.entities.values():
            for c in e.concepts:
                if c not in self.concepts:
                    raise ConfigError(f"{where}: entity {safe_text(e.id, 60)} is an instance of an "
                                      f"unknown concept {safe_text(c, 60)}")
        for fact in self.relations:
            for end in (fact.head, fact.tail):
                if end not in self.entities and end not in self.concepts:
                    raise ConfigError(f"{where}: relation {safe_text(fact.relation, 60)} names an "
                                      f"unknown object {safe_text(end, 60)}")

    def to_json(self, *, backward: bool = True) -> dict:
        """KQA Pro's KB JSON, in a canonical order (the same KB gives the same bytes)."""
        rels: dict[str, list] = defaultdict(list)
        for fact in self.relations:
            q = qualifiers_json(fact.qualifiers)
            rels[fact.head].append({"relation": fact.relation, "direction": "forward",
                                    "object": fact.tail, "qualifiers": q})
            if backward and fact.tail in self.entities:
                # a dict of its own: kopl parses qualifier values in place, and a shared
                # dict would be parsed twice
                rels[fact.tail].append({"relation": fact.relation, "direction": "backward",
                                        "object": fact.head, "qualifiers": qualifiers_json(fact.qualifiers)})
        concepts = {cid: {"name": c.name, "subclassOf": list(c.parents)}
                    for cid, c in sorted(self.concepts.items())}
        entities = {}
        for eid, e in sorted(self.entities.items()):
            attrs = [{"key": a.key, "value": a.value.to_json(), "qualifiers": qualifiers_json(a.qualifiers)}
                     for a in sorted(e.attributes, key=AttributeFact.sort_key)]
            entities[eid] = {"name": e.name, "instanceOf": list(e.concepts), "attributes": attrs,
                             "relations": sorted(rels.get(eid, []), key=lambda r: (
                                 r["relation"], r["direction"], r["object"], _dump(r["qualifiers"])))}
        return {"concepts": concepts, "entities": entities}

    # ---- vocabulary -----------------------------------------------------------------------
    @cached_property
    def attribute_keys(self) -> dict[str, frozenset[str]]:
        """Attribute key -> the value types it has."""
        out: dict[str, set] = defaultdict(set)
        for e in self.entities.values():
            for a in e.attributes:
                out[a.key].add(a.value.type)
        return {k: frozenset(v) for k, v in sorted(out.items())}

    @cached_property
    def qualifier_keys(self) -> dict[str, frozenset[str]]:
        """Qualifier key -> the value types it has (on attributes and relations)."""
        out: dict[str, set] = defaultdict(set)
        facts: Iterable = [a for e in self.entities.values() for a in e.attributes]
        for fact in list(facts) + self.relations:
            for k, values in fact.qualifiers:
                out[k].update(v.type for v in values)
        return {k: frozenset(v) for k, v in sorted(out.items())}

    @cached_property
    def relation_names(self) -> tuple[str, ...]:
        return tuple(sorted({f.relation for f in self.relations}))

    def key_type(self, key: str) -> str | None:
        """How a value for ``key`` is read in a program: ``string``, ``quantity`` or ``date``
        (a key with years or dates; the text decides which, as in ``kopl``)."""
        types = self.attribute_keys.get(key, frozenset()) | self.qualifier_keys.get(key, frozenset())
        if not types:
            return None
        if types <= {"year", "date"}:
            return "date"
        return sorted(types)[0] if len(types) == 1 else "mixed"

    # ---- indexes ---------------------------------------------------------------------------
    @cached_property
    def entity_ids(self) -> frozenset[str]:
        return frozenset(self.entities)

    @cached_property
    def by_name(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list] = defaultdict(list)
        for eid, e in self.entities.items():
            out[e.name].append(eid)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    @cached_property
    def concepts_by_name(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list] = defaultdict(list)
        for cid, c in self.concepts.items():
            out[c.name].append(cid)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    @cached_property
    def ancestors(self) -> dict[str, frozenset[str]]:
        """Concept id -> itself and every concept above it (cycles tolerated)."""
        out = {}
        for cid in self.concepts:
            seen, todo = set(), [cid]
            while todo:
                c = todo.pop()
                if c in seen or c not in self.concepts:
                    continue
                seen.add(c)
                todo.extend(self.concepts[c].parents)
            out[cid] = frozenset(seen)
        return out

    def entity_concepts(self, eid: str) -> frozenset[str]:
        """Every concept ``eid`` is an instance of, directly or through subclasses."""
        out: set = set()
        for c in self.entities[eid].concepts:
            out |= self.ancestors.get(c, frozenset())
        return frozenset(out)

    @cached_property
    def members(self) -> dict[str, frozenset[str]]:
        """Concept id -> the entities that are instances of it or of a concept below it."""
        out: dict[str, set] = defaultdict(set)
        for eid in self.entities:
            for c in self.entity_concepts(eid):
                out[c].add(eid)
        return {k: frozenset(v) for k, v in out.items()}

    @cached_property
    def attributes_by_key(self) -> dict[str, dict[str, list[int]]]:
        """Key -> entity -> indexes into the entity's attribute list."""
        out: dict[str, dict] = defaultdict(lambda: defaultdict(list))
        for eid, e in self.entities.items():
            for i, a in enumerate(e.attributes):
                out[a.key][eid].append(i)
        return {k: dict(v) for k, v in out.items()}

    def _relation_index(self, key) -> dict[tuple[str, str], list[int]]:
        out: dict = defaultdict(list)
        for i, f in enumerate(self.relations):
            out[key(f)].append(i)
        return dict(out)

    @cached_property
    def outgoing(self) -> dict[tuple[str, str], list[int]]:
        """(relation, head) -> indexes into :attr:`relations`."""
        return self._relation_index(lambda f: (f.relation, f.head))

    @cached_property
    def incoming(self) -> dict[tuple[str, str], list[int]]:
        """(relation, tail) -> indexes into :attr:`relations`."""
        return self._relation_index(lambda f: (f.relation, f.tail))

    @cached_property
    def between(self) -> dict[tuple[str, str], list[int]]:
        """(head, tail) -> indexes into :attr:`relations`."""
        return self._relation_index(lambda f: (f.head, f.tail))

    def name_of(self, node: str) -> str:
        if node in self.entities:
            return self.entities[node].name
        return self.concepts[node].name

    def counts(self) -> dict[str, int]:
        return {
            "concepts": len(self.concepts), "entities": len(self.entities),
            "relations": len(self.relation_names), "attribute_keys": len(self.attribute_keys),
            "qualifier_keys": len(self.qualifier_keys),
            "attribute_facts": sum(len(e.attributes) for e in self.entities.values()),
            "relation_facts": len(self.relations),
            "qualifier_values": sum(len(vs) for e in self.entities.values() for a in e.attributes
                                    for _, vs in a.qualifiers)
            + sum(len(vs) for f in self.relations for _, vs in f.qualifiers),
        }
