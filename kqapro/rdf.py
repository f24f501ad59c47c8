"""A KQA Pro KB as RDF, in the model KQA Pro's own SPARQL was written for, plus what makes it lossless.

KQA Pro's model (KQAPro_Baselines ``SPARQL/sparql_engine.py``, KOPL.md §3), kept as is so
its published queries run unchanged:

- entities and concepts are IRIs made from their ids, predicates are names with spaces as
  ``_``; KQA Pro wrote them relative (``<Q36159>``, ``<date_of_birth>``), here they live
  under :data:`BASE`, which is the base IRI queries run with, so ``<Q36159>`` in a query
  still names the entity;
- ``<pred:name>`` names every entity and concept; ``<pred:instance_of>`` links an entity to
  EVERY concept above it (the closure, so queries need no property paths);
- an attribute value is a node: ``<pred:value>`` a string, or a number (``xsd:double``)
  with ``<pred:unit>``; ``<pred:year>`` an integer, for years and dates; dates also carry
  ``<pred:date>`` (``xsd:date``);
- a relation is a triple ``head <relation> tail``; every fact (attribute or relation) has a
  fact node with ``<pred:fact_h>``, ``<pred:fact_r>``, ``<pred:fact_t>``, and qualifiers
  are value nodes hanging off the fact node.

Added so the KB round-trips (:func:`kb_from_turtle` reads back exactly what
:func:`kb_to_turtle` wrote), all in standard vocabularies or ours (:data:`VOCAB`), never in
``pred:``, so KQA Pro-style queries see nothing new:

- ``rdf:type kqa:Entity`` / ``kqa:Concept``, direct ``rdf:type`` concepts of an entity,
  ``rdfs:subClassOf`` between concepts (``pred:instance_of`` is a closure: the direct
  concepts cannot be read back from it);
- ``rdf:type kqa:Relation`` / ``kqa:AttributeKey`` / ``kqa:QualifierKey`` and
  ``rdfs:label`` on predicates (the ``_`` spelling is not reversible);
- numbers keep their JSON form in the lexical value: ``"206"^^xsd:double`` was the JSON
  integer 206, ``"206.0"^^xsd:double`` the float.

Blank nodes get deterministic labels, so the same KB gives the same bytes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, unquote

import pyoxigraph as ox

from kqapro.kb import KB, AttributeFact, Concept, Entity, RelationFact, sort_values
from kqapro.values import Value, format_date
from ontology.errors import ConfigError, safe_text

BASE = "http://synkqa.org/kqapro/"
VOCAB = "http://synkqa.org/kqapro/vocab#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"

PRED = {name: ox.NamedNode(f"pred:{name}") for name in
        ("name", "instance_of", "value", "unit", "year", "date", "fact_h", "fact_r", "fact_t")}
TYPE = ox.NamedNode(RDF_TYPE)
LABEL = ox.NamedNode(RDFS + "label")
SUBCLASS = ox.NamedNode(RDFS + "subClassOf")
ENTITY, CONCEPT = ox.NamedNode(VOCAB + "Entity"), ox.NamedNode(VOCAB + "Concept")
RELATION, ATTRIBUTE_KEY, QUALIFIER_KEY = (ox.NamedNode(VOCAB + n) for n in
                                          ("Relation", "AttributeKey", "QualifierKey"))
DOUBLE, INTEGER, DATE = (ox.NamedNode(XSD + n) for n in ("double", "integer", "date"))
# No prefix for BASE: names like "work period (start)" would become prefixed names with
# backslash escapes (kb:work_period_\(start\)), which Virtuoso 7's Turtle loader rejects.
PREFIXES = {"xsd": XSD, "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdfs": RDFS, "kqa": VOCAB}

# Characters kept as they are in an IRI path segment; everything else is percent-encoded.
_SAFE = "!$&'()*+,;=:@-._~"


def node_iri(node_id: str) -> str:
    """The IRI of an entity or concept id."""
    return BASE + quote(node_id, safe=_SAFE)


def predicate_local(name: str) -> str:
    """KQA Pro's spelling of a relation or key as a (relative) IRI: spaces become ``_``."""
    return quote(name.replace(" ", "_"), safe=_SAFE + "/")


class Predicates:
    """Relation and key names <-> predicate IRIs (two names with one spelling get a suffix)."""

    def __init__(self) -> None:
        self.iri: dict[str, ox.NamedNode] = {}
        self.taken: set[str] = set()

    def __call__(self, name: str) -> ox.NamedNode:
        node = self.iri.get(name)
        if node is None:
            local = predicate_local(name)
            candidate, n = local, 1
            while candidate in self.taken or candidate.startswith("pred:"):
                n += 1
                candidate = f"{local}_~{n}"
            self.taken.add(candidate)
            node = self.iri[name] = ox.NamedNode(BASE + candidate)
        return node


@lru_cache(maxsize=16)
def predicate_map(kb: KB) -> dict[str, str]:
    """Relation, attribute-key and qualifier-key name -> predicate IRI, the same for every
    KB with the same vocabulary (a Turtle file and the KB read back from it). Cached per KB
    object (the compiler asks for it on every program); do not mutate the result."""
    preds = Predicates()
    names = set(kb.relation_names) | set(kb.attribute_keys) | set(kb.qualifier_keys)
    return {name: preds(name).value for name in sorted(names)}


def _number(value) -> ox.Literal:
    # KQA Pro types every quantity xsd:double; the lexical form keeps int vs float
    text = str(value) if isinstance(value, int) else repr(float(value))
    return ox.Literal(text, datatype=DOUBLE)


def kb_triples(kb: KB) -> list[ox.Triple]:
    """The KB as triples, in a deterministic order with deterministic blank-node labels."""
    return list(iter_kb_triples(kb))


def iter_kb_triples(kb: KB) -> Iterator[ox.Triple]:
    """The triples of :func:`kb_triples`, one by one: the serialiser takes them as they come,
    so the whole list (about 60 triples per entity, a few hundred bytes each as Python
    objects) is never held; with the KB itself that list was the largest thing in memory."""
    out: list[ox.Triple] = []
    add = out.append

    def flush():
        # Each entity's triples are yielded once it is written; ``out`` stays small.
        yield from out
        out.clear()
    iris = {name: ox.NamedNode(iri) for name, iri in predicate_map(kb).items()}
    preds = iris.__getitem__
    counter = {"v": 0, "f": 0}

    def bnode(kind: str) -> ox.BlankNode:
        counter[kind] += 1
        return ox.BlankNode(f"{kind}{counter[kind]}")

    def value_node(value: Value) -> ox.BlankNode:
        node = bnode("v")
        if value.type == "string":
            add(ox.Triple(node, PRED["value"], ox.Literal(value.value)))
        elif value.type == "quantity":
            add(ox.Triple(node, PRED["value"], _number(value.value)))
            add(ox.Triple(node, PRED["unit"], ox.Literal(value.unit)))
        else:
            add(ox.Triple(node, PRED["year"], ox.Literal(str(value.year_of), datatype=INTEGER)))
            if value.type == "date":
                add(ox.Triple(node, PRED["date"], ox.Literal(format_date(value.value), datatype=DATE)))
        return node

    def fact(head, predicate, tail, qualifiers) -> None:
        node = bnode("f")
        add(ox.Triple(node, PRED["fact_h"], head))
        add(ox.Triple(node, PRED["fact_r"], predicate))
        add(ox.Triple(node, PRED["fact_t"], tail))
        for key, values in qualifiers:
            for value in values:
                add(ox.Triple(node, preds(key), value_node(value)))

    iri = {cid: ox.NamedNode(node_iri(cid)) for cid in kb.concepts}
    iri.update({eid: ox.NamedNode(node_iri(eid)) for eid in kb.entities})
    for cid, c in sorted(kb.concepts.items()):
        add(ox.Triple(iri[cid], TYPE, CONCEPT))
        add(ox.Triple(iri[cid], PRED["name"], ox.Literal(c.name)))
        for parent in c.parents:
            add(ox.Triple(iri[cid], SUBCLASS, iri[parent]))
    yield from flush()
    for eid, e in sorted(kb.entities.items()):
        node = iri[eid]
        add(ox.Triple(node, TYPE, ENTITY))
        add(ox.Triple(node, PRED["name"], ox.Literal(e.name)))
        for c in e.concepts:
            add(ox.Triple(node, TYPE, iri[c]))
        for c in sorted(kb.entity_concepts(eid)):
            add(ox.Triple(node, PRED["instance_of"], iri[c]))
        for a in sorted(e.attributes, key=AttributeFact.sort_key):
            key, value = preds(a.key), value_node(a.value)
            add(ox.Triple(node, key, value))
            fact(node, key, value, a.qualifiers)
        yield from flush()
    for f in kb.relations:
        head, rel, tail = iri[f.head], preds(f.relation), iri[f.tail]
        add(ox.Triple(head, rel, tail))
        fact(head, rel, tail, f.qualifiers)
        yield from flush()
    # what each predicate is, and its name (last: the names were collected on the way)
    kinds = {}
    for key in kb.qualifier_keys:
        kinds[key] = QUALIFIER_KEY
    for key in kb.attribute_keys:
        kinds[key] = ATTRIBUTE_KEY
    for name in kb.relation_names:
        kinds[name] = RELATION
    for name, node in sorted(iris.items()):
        add(ox.Triple(node, TYPE, kinds[name]))
        if name in kb.qualifier_keys and kinds[name] is not QUALIFIER_KEY:
            add(ox.Triple(node, TYPE, QUALIFIER_KEY))
        add(ox.Triple(node, LABEL, ox.Literal(name)))
    yield from flush()


def kb_to_turtle(kb: KB) -> bytes:
    """The KB as Turtle (absolute IRIs under :data:`BASE`)."""
    return ox.serialize(iter_kb_triples(kb), format=ox.RdfFormat.TURTLE, prefixes=PREFIXES)


def write_kb_turtle(kb: KB, path: Path | str) -> Path:
    """:func:`kb_to_turtle` straight into a file (the same bytes, never held in memory)."""
    ox.serialize(iter_kb_triples(kb), output=str(path), format=ox.RdfFormat.TURTLE, prefixes=PREFIXES)
    return Path(path)


def is_kqapro_turtle(head: bytes) -> bool:
    """Whether Turtle (its first bytes) is in this model: it mentions ``pred:name`` and our vocabulary."""
    return b"<pred:name>" in head and VOCAB.encode() in head


# ---- reading back ----------------------------------------------------------------------------

def _value(node, props: dict, where: str) -> Value:
    p = props.get(node, {})
    if "date" in p:
        y, m, d = _date_parts(p["date"][0].value, where)
        return Value.date((y, m, d))
    if "year" in p:
        return Value.year(int(p["year"][0].value))
    if "value" in p:
        literal = p["value"][0]
        if "unit" in p:
            text = literal.value
            number = int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
            return Value.quantity(number, p["unit"][0].value)
        return Value.string(literal.value)
    raise ConfigError(f"{where}: a value node without pred:value, pred:year or pred:date")


def _date_parts(text: str, where: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"(-?\d+)-(\d\d)-(\d\d)", text)
    if not match:
        raise ConfigError(f"{where}: {safe_text(text, 40)!r} is not an xsd:date")
    return int(match[1]), int(match[2]), int(match[3])


def kb_from_triples(triples, where: str = "Turtle") -> KB:
    """Read a KB written by :func:`kb_triples` (from any order of its triples)."""
    by_subject: dict = defaultdict(lambda: defaultdict(list))
    value_props: dict = defaultdict(lambda: defaultdict(list))
    special = {v.value: k for k, v in PRED.items()}
    for t in triples:
        s, p, o = t.subject, t.predicate, t.object
        name = special.get(p.value)
        if name in ("value", "unit", "year", "date"):
            value_props[s][name].append(o)
        else:
            by_subject[s][p.value].append(o)
    label = {}
    kinds: dict = defaultdict(set)
    for s, props in by_subject.items():
        if isinstance(s, ox.NamedNode) and LABEL.value in props:
            label[s.value] = props[LABEL.value][0].value
        for t in props.get(RDF_TYPE, []):
            kinds[s.value].add(t.value)

    def name_of_predicate(iri: str) -> str:
        if iri not in label:
            raise ConfigError(f"{where}: predicate <{safe_text(iri, 80)}> has no rdfs:label")
        return label[iri]

    def local_id(node) -> str:
        if not isinstance(node, ox.NamedNode) or not node.value.startswith(BASE):
            raise ConfigError(f"{where}: {safe_text(str(node), 80)} is not a KB node under {BASE}")
        return unquote(node.value[len(BASE):])

    concepts, entities = {}, {}
    for s, props in by_subject.items():
        if not isinstance(s, ox.NamedNode):
            continue
        types = kinds.get(s.value, set())
        names = props.get(PRED["name"].value, [])
        if CONCEPT.value in types:
            cid = local_id(s)
            concepts[cid] = Concept(cid, names[0].value if names else "",
                                    tuple(sorted(local_id(o) for o in props.get(SUBCLASS.value, []))))
        elif ENTITY.value in types:
            eid = local_id(s)
            entities[eid] = Entity(eid, names[0].value if names else "", ())
    for eid, e in entities.items():
        node = ox.NamedNode(node_iri(eid))
        direct = [local_id(o) for o in by_subject[node].get(RDF_TYPE, [])
                  if o.value not in (ENTITY.value,)]
        e.concepts = tuple(sorted(direct))
    # facts: the fact nodes say which attribute/relation triple they qualify
    relations = []
    attr_qualifiers = {}
    for s, props in by_subject.items():
        if PRED["fact_h"].value not in props:
            continue
        head, pred, tail = (props[PRED[k].value][0] for k in ("fact_h", "fact_r", "fact_t"))
        grouped: dict = defaultdict(list)
        for p, objects in props.items():
            if p in (PRED["fact_h"].value, PRED["fact_r"].value, PRED["fact_t"].value):
                continue
            grouped[name_of_predicate(p)].extend(_value(o, value_props, where) for o in objects)
        qualifiers = tuple((k, sort_values(vs)) for k, vs in sorted(grouped.items()))
        if RELATION.value in kinds.get(pred.value, ()):
            relations.append(RelationFact(local_id(head), name_of_predicate(pred.value),
                                          local_id(tail), qualifiers))
        else:
            attr_qualifiers[tail] = qualifiers
    for eid, e in entities.items():
        node = ox.NamedNode(node_iri(eid))
        for p, objects in by_subject[node].items():
            if ATTRIBUTE_KEY.value not in kinds.get(p, ()):
                continue
            key = name_of_predicate(p)
            for o in objects:
                e.attributes.append(AttributeFact(key, _value(o, value_props, where),
                                                  attr_qualifiers.get(o, ())))
        e.attributes.sort(key=AttributeFact.sort_key)
    relations.sort(key=RelationFact.sort_key)
    kb = KB(concepts, entities, relations)
    kb.check_references(where)
    return kb


def kb_from_turtle(path: Path | str) -> KB:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            triples = list(ox.parse(f, format=ox.RdfFormat.TURTLE, base_iri=BASE))
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}") from e
    except SyntaxError as e:
        raise ConfigError(f"{path}: not valid Turtle: {safe_text(str(e), 300)}") from e
    return kb_from_triples(triples, str(path))
