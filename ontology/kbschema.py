"""A knowledge base's schema, read from its RDF: the one object the language layers share.

:class:`Schema` is built from the KB's triples (its ontology and its data, in one or several
Turtle files or a store) and passed explicitly to the type checker, the compiler, the
native interpreter, the KB index, the executors and the parsers. Nothing in those layers
knows a particular KB: class names, property names, entity names and SPARQL prefixes all
come from here.

What a KB must provide, and what is inferred when its ontology is silent:

=====================  ==============================================================
entities               IRIs with an ``rdf:type`` (several allowed); IRIs that are only
                       objects of relations are entities with no known type
entity name            the IRI's local name (after the last ``#`` or ``/``); must be
                       unique in the KB
entity label           ``rdfs:label`` (another predicate with ``label=``); the local
                       name where there is none. A label may name several entities
classes                ``owl:Class``/``rdfs:Class`` subjects and every ``rdf:type``
                       object; ``rdfs:subClassOf`` gives the hierarchy
relations              ``owl:ObjectProperty`` subjects, and any predicate whose objects
                       are IRIs
attributes             ``owl:DatatypeProperty`` subjects, and any predicate whose
                       objects are literals; the value type comes from ``rdfs:range``
                       or else from the literals' datatypes (integer/decimal/double ->
                       number, date, gYear -> year, anything else -> string)
domain / range         ``rdfs:domain``/``rdfs:range``, else the most specific class
                       every subject (object) belongs to, else unknown (any class)
functional             declared ``owl:FunctionalProperty``, else no subject has two
                       values in the data
total                  every instance of the domain has a value in the data (the type
                       checker's "exactly one" needs functional *and* total)
labels, altLabels      ``rdfs:label`` and ``skos:altLabel`` of classes and properties
                       (parsers read them); the local name where there is no label
SPARQL variable        a class's ``skos:notation``, else its local name in lower case
prefixes               the ``@prefix`` declarations of the files; undeclared
                       namespaces get ``ns1``, ``ns2``, ...
=====================  ==============================================================

Facts inferred from the data describe the KB as it was read; a KB queried through a
store is read-only, so they stay true.

>>> s = Schema.from_turtle_text('''
... @prefix ex: <http://example.org/> .
... ex:ada a ex:Person ; <http://www.w3.org/2000/01/rdf-schema#label> "Ada" ; ex:knows ex:bob .
... ex:bob a ex:Person ; ex:height 170 .''')
>>> sorted(s.relations), sorted(s.attributes), s.relations["knows"].range
(['knows'], ['height'], 'Person')
>>> s.resolve("Ada"), s.label("bob")
(('ada',), 'bob')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from ontology.errors import ConfigError

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SH = "http://www.w3.org/ns/shacl#"
RDF_TYPE = RDF + "type"
RDFS_LABEL = RDFS + "label"

# Namespaces whose terms describe the schema rather than the KB's content.
_META_NS = (RDF, RDFS, OWL, SKOS, SH, XSD)
_CLASS_TYPES = {OWL + "Class", RDFS + "Class"}
_RELATION_TYPES = {OWL + "ObjectProperty"}
_ATTRIBUTE_TYPES = {OWL + "DatatypeProperty"}
_PROPERTY_TYPES = _RELATION_TYPES | _ATTRIBUTE_TYPES | {RDF + "Property", OWL + "FunctionalProperty",
                                                        OWL + "AnnotationProperty"}

_INTEGER = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                               "positiveInteger", "negativeInteger", "nonPositiveInteger",
                               "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}
_DECIMAL = {XSD + t for t in ("decimal", "double", "float")}
_DATE = {XSD + "date", XSD + "dateTime"}
_YEAR = {XSD + "gYear"}

VALUE_TYPES = ("number", "string", "date", "year")
"""What an attribute's values are (quantities with units come with the full-KoPL model)."""

_SAFE_LOCAL = re.compile(r"[A-Za-z0-9_]+\Z", re.ASCII)


def local_name(iri: str) -> str:
    """The part of an IRI after its last ``#`` or ``/`` (the whole IRI if neither ends it)."""
    cut = max(iri.rfind("#"), iri.rfind("/"))
    return iri[cut + 1:] if 0 <= cut < len(iri) - 1 else iri


def _namespace(iri: str) -> str:
    return iri[:len(iri) - len(local_name(iri))]


def _variable_base(text: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"
    return base if base[0].isalpha() else "v" + base


@dataclass(frozen=True)
class ClassInfo:
    name: str
    label: str
    alt_labels: tuple[str, ...]
    iri: str = ""
    parents: tuple[str, ...] = ()
    variable: str = "entity"        # base name of the SPARQL variables bound to its members


@dataclass(frozen=True)
class RelationInfo:
    """An object property; ``domain``/``range`` are class names or ``None`` (any class)."""

    name: str
    label: str
    alt_labels: tuple[str, ...]
    domain: str | None
    range: str | None
    functional: bool
    iri: str = ""
    total: bool = False


@dataclass(frozen=True)
class AttributeInfo:
    """A datatype property. ``datatype`` is the XSD local name its values are compared as
    (``integer``, ``decimal``, ``string``, ``date``, ``gYear``); ``value_type`` one of
    :data:`VALUE_TYPES`."""

    name: str
    label: str
    alt_labels: tuple[str, ...]
    domain: str | None
    datatype: str
    functional: bool
    iri: str = ""
    value_type: str = "number"
    total: bool = False

    @property
    def numeric(self) -> bool:
        return self.value_type == "number"


class Schema:
    """Classes, relations, attributes and entities of one KB, with its IRI <-> name mapping.

    Build it with :meth:`from_turtle`, :meth:`from_rdf` or :meth:`from_store`. Objects are
    compared by identity (caches key on them); treat them as read-only.
    """

    def __init__(self, classes: dict[str, ClassInfo], relations: dict[str, RelationInfo],
                 attributes: dict[str, AttributeInfo], *, entity_iris: dict[str, str],
                 entity_types: dict[str, frozenset[str]], entity_labels: dict[str, str],
                 prefixes: dict[str, str], entity_namespace: str):
        self.classes = classes
        self.relations = relations
        self.attributes = attributes
        self.entity_iris = entity_iris              # name -> IRI
        self.entity_types = entity_types            # name -> direct classes (may be empty)
        self.entity_labels = entity_labels          # name -> label (only where it differs from the name)
        self.prefixes = prefixes                    # prefix -> namespace, for SPARQL text
        self.entity_namespace = entity_namespace    # where most entities live (unknown names go here)
        self._names_of_iri = {iri: name for name, iri in entity_iris.items()}
        by_label: dict[str, list[str]] = {}
        for name in entity_iris:
            by_label.setdefault(entity_labels.get(name, name), []).append(name)
        self._by_label = {label: tuple(sorted(names)) for label, names in by_label.items()}
        self._ancestors: dict[str, frozenset[str]] = {}
        self._members: dict[str, tuple[str, ...]] = {}
        self._prefix_of = {ns: p for p, ns in prefixes.items()}
        vocab = {_namespace(info.iri) for table in (classes, relations, attributes)
                 for info in table.values() if info.iri}
        ordered = sorted((p for p, ns in prefixes.items() if ns in vocab))
        if entity_namespace in self._prefix_of:
            ordered.append(self._prefix_of[entity_namespace])
        self.query_prefixes: tuple[str, ...] = tuple(dict.fromkeys(ordered))
        """Prefixes every compiled query declares: the vocabulary's, then the entities'."""

    # ---- construction ----------------------------------------------------------------

    @classmethod
    def from_turtle(cls, *paths: Path | str, label: str = RDFS_LABEL) -> "Schema":
        """Read one or several Turtle files (e.g. an ontology and the data).

        :raises ConfigError: a file is missing or not valid Turtle, or the KB breaks a rule
            above (two entities with one local name, a predicate used both ways).
        """
        prefixes: dict[str, str] = {}

        def triples():
            for path in paths:
                try:
                    parser = ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
                    yield from parser
                    for p, ns in parser.prefixes.items():
                        prefixes.setdefault(p, ns)
                except FileNotFoundError:
                    raise ConfigError(f"KB file not found: {path}") from None
                except (SyntaxError, ValueError) as exc:
                    raise ConfigError(f"{path} is not valid Turtle: {exc}") from None
                except OSError as exc:
                    raise ConfigError(f"cannot read {path}: {exc}") from None

        collected = _Collector(label)
        collected.add_all(triples())
        return collected.build(prefixes)

    @classmethod
    def from_turtle_text(cls, text: str, label: str = RDFS_LABEL) -> "Schema":
        """Read Turtle given as a string (tests, small examples)."""
        try:
            parser = ox.parse(input=text.encode(), format=ox.RdfFormat.TURTLE)
            collected = _Collector(label)
            collected.add_all(parser)
        except SyntaxError as exc:
            raise ConfigError(f"not valid Turtle: {exc}") from None
        return collected.build(dict(parser.prefixes))

    @classmethod
    def from_rdf(cls, triples: Iterable, prefixes: Mapping[str, str] | None = None,
                 label: str = RDFS_LABEL) -> "Schema":
        """Read pyoxigraph triples or quads (graph names are ignored)."""
        collected = _Collector(label)
        collected.add_all(triples)
        return collected.build(dict(prefixes or {}))

    @classmethod
    def from_store(cls, store, prefixes: Mapping[str, str] | None = None,
                   label: str = RDFS_LABEL) -> "Schema":
        """Read every graph of a ``pyoxigraph.Store`` (or an ``OxigraphStore``)."""
        raw = getattr(store, "raw", store)
        return cls.from_rdf(raw.quads_for_pattern(None, None, None), prefixes, label)

    # ---- vocabulary --------------------------------------------------------------------

    def words(self, name: str) -> tuple[str, ...]:
        """Label and altLabels of a class, relation or attribute (for suggestions, rankers)."""
        for table in (self.classes, self.relations, self.attributes):
            if name in table:
                info = table[name]
                return (info.label, *info.alt_labels)
        raise KeyError(name)

    def ancestors(self, cls: str) -> frozenset[str]:
        """The class and every class above it (``rdfs:subClassOf``, transitively)."""
        found = self._ancestors.get(cls)
        if found is None:
            seen, todo = set(), [cls]
            while todo:
                c = todo.pop()
                if c not in seen:
                    seen.add(c)
                    info = self.classes.get(c)
                    todo.extend(info.parents if info else ())
            found = self._ancestors[cls] = frozenset(seen)
        return found

    def overlaps(self, classes: frozenset[str] | None, target: str | None) -> bool:
        """May a set of ``classes`` members hold instances of ``target``? (``None``: unknown.)"""
        if classes is None or target is None:
            return True
        return any(target in self.ancestors(c) or c in self.ancestors(target) for c in classes)

    def common(self, left: frozenset[str] | None, right: frozenset[str] | None) -> frozenset[str] | None:
        """Classes an entity in both sets may have (``None``: unknown; empty: no such entity)."""
        if left is None:
            return right
        if right is None:
            return left
        out = set()
        for a in left:
            for b in right:
                if b in self.ancestors(a):
                    out.add(a)
                elif a in self.ancestors(b):
                    out.add(b)
        return frozenset(out)

    def variable(self, classes: frozenset[str] | None) -> str:
        """Base name of a SPARQL variable bound to members of ``classes``."""
        if classes and len(classes) == 1:
            info = self.classes.get(next(iter(classes)))
            if info is not None:
                return info.variable
        return "entity"

    # ---- entities ----------------------------------------------------------------------

    def resolve(self, text: str) -> tuple[str, ...]:
        """Entity names ``text`` stands for: itself if an entity has that name, else every
        entity with that label (in name order), else none."""
        if text in self.entity_iris:
            return (text,)
        return self._by_label.get(text, ())

    def entity_classes(self, name: str) -> frozenset[str] | None:
        """Direct classes of an entity; ``None`` when unknown (no such entity, or untyped)."""
        types = self.entity_types.get(name)
        return types or None

    def label(self, name: str) -> str:
        """What ``QueryName`` prints for an entity: its label, else its name."""
        return self.entity_labels.get(name, name)

    def entity_iri(self, name: str) -> str | None:
        """IRI of an entity name; a name the KB lacks gets the entity namespace when it is
        a plain name (engines then report it unknown), else ``None``."""
        iri = self.entity_iris.get(name)
        if iri is None and _SAFE_LOCAL.match(name):
            iri = self.entity_namespace + name
        return iri

    def entity_name(self, iri: str) -> str:
        """Name of an entity IRI (its local name when the catalogue does not have it)."""
        name = self._names_of_iri.get(iri)
        return name if name is not None else local_name(iri)

    def entity_names(self) -> list[str]:
        return sorted(self.entity_iris)

    def members(self, cls: str) -> list[str]:
        """Entities of ``cls`` or of a class below it, in name order."""
        found = self._members.get(cls)
        if found is None:  # a scan of every entity: remembered (the parsers ask per shape)
            found = self._members[cls] = tuple(sorted(n for n, types in self.entity_types.items()
                                                      if any(cls in self.ancestors(t) for t in types)))
        return list(found)

    # ---- SPARQL text -------------------------------------------------------------------

    def term(self, iri: str) -> str:
        """``sk:born_in`` where a declared prefix covers the IRI and the rest is plain, else ``<iri>``."""
        ns = _namespace(iri)
        prefix = self._prefix_of.get(ns)
        rest = iri[len(ns):]
        if prefix is not None and _SAFE_LOCAL.match(rest):
            return f"{prefix}:{rest}"
        return f"<{iri}>"

    def prefix_lines(self) -> str:
        return "".join(f"PREFIX {p}: <{self.prefixes[p]}>\n" for p in self.query_prefixes)

    def stats(self) -> dict[str, int]:
        return {"classes": len(self.classes), "relations": len(self.relations),
                "attributes": len(self.attributes), "entities": len(self.entity_iris)}


class _Collector:
    """One pass over the triples, then :meth:`build` infers what the ontology left out."""

    def __init__(self, label: str):
        self.label_predicate = label
        self.types: dict[str, set[str]] = {}             # subject IRI -> rdf:type objects
        self.labels: dict[str, list[str]] = {}           # the configured label (entities)
        self.term_labels: dict[str, list[str]] = {}      # rdfs:label (classes, properties)
        self.alt_labels: dict[str, list[str]] = {}
        self.notations: dict[str, str] = {}
        self.parents: dict[str, set[str]] = {}
        self.domains: dict[str, str] = {}
        self.ranges: dict[str, str] = {}
        # predicate -> subject -> number of values; objects of relations; literal datatypes
        self.uses: dict[str, dict[str, int]] = {}
        self.literal_uses: dict[str, dict[str, int]] = {}   # the same, literal objects only
        self.iri_objects: dict[str, set[str]] = {}
        self.datatypes: dict[str, set[str]] = {}

    def add_all(self, triples: Iterable) -> None:
        types, uses, iri_objects, datatypes = self.types, self.uses, self.iri_objects, self.datatypes
        named, literal = ox.NamedNode, ox.Literal
        label_p = self.label_predicate
        for t in triples:
            subject, obj = t.subject, t.object
            if type(subject) is not named:
                continue
            s, p = subject.value, t.predicate.value
            if p == RDF_TYPE:
                if type(obj) is named:
                    types.setdefault(s, set()).add(obj.value)
                continue
            if p == label_p or p == RDFS_LABEL:
                # Entities are named by the configured label; schema terms by rdfs:label.
                if type(obj) is literal:
                    if p == label_p:
                        self.labels.setdefault(s, []).append(obj.value)
                    if p == RDFS_LABEL:
                        self.term_labels.setdefault(s, []).append(obj.value)
                continue
            if p.startswith(_META_NS):
                self._meta(s, p, obj)
                continue
            if type(obj) is not named and type(obj) is not literal:
                continue                      # a blank node (a list, a value node): neither kind of value
            per_subject = uses.get(p)
            if per_subject is None:
                per_subject = uses[p] = {}
            per_subject[s] = per_subject.get(s, 0) + 1
            if type(obj) is named:
                iri_objects.setdefault(p, set()).add(obj.value)
            elif type(obj) is literal:
                datatypes.setdefault(p, set()).add(obj.datatype.value if obj.datatype else XSD + "string")
                counts = self.literal_uses.setdefault(p, {})
                counts[s] = counts.get(s, 0) + 1

    def _meta(self, s: str, p: str, obj) -> None:
        value = obj.value
        if p == SKOS + "altLabel":
            self.alt_labels.setdefault(s, []).append(value)
        elif p == SKOS + "notation":
            self.notations[s] = value
        elif p == RDFS + "subClassOf" and isinstance(obj, ox.NamedNode):
            self.parents.setdefault(s, set()).add(value)
        elif p == RDFS + "domain" and isinstance(obj, ox.NamedNode):
            self.domains[s] = value
        elif p == RDFS + "range" and isinstance(obj, ox.NamedNode):
            self.ranges[s] = value

    # ---- inference ---------------------------------------------------------------------

    def build(self, prefixes: dict[str, str]) -> Schema:
        declared = {s: ts for s, ts in self.types.items()}
        class_iris = {s for s, ts in declared.items() if ts & _CLASS_TYPES}
        class_iris |= set(self.parents) | {p for ps in self.parents.values() for p in ps}
        property_iris = {s for s, ts in declared.items() if ts & _PROPERTY_TYPES}
        schema_terms = class_iris | property_iris | {s for s, ts in declared.items()
                                                     if any(t.startswith(_META_NS) for t in ts)}
        entity_types: dict[str, set[str]] = {}
        for s, ts in declared.items():
            if s in schema_terms:
                continue
            kept = {t for t in ts if not t.startswith(_META_NS)}
            if kept:
                entity_types[s] = kept
                class_iris |= kept

        # Relations and attributes: declared, else by what their objects are.
        relation_iris, attribute_iris = set(), set()
        for p in property_iris:
            ts = declared[p]
            if ts & _RELATION_TYPES:
                relation_iris.add(p)
            elif ts & _ATTRIBUTE_TYPES:
                attribute_iris.add(p)
        for p in self.uses:
            if p in relation_iris or p in attribute_iris or p in class_iris:
                continue
            if p in declared and OWL + "AnnotationProperty" in declared[p]:
                continue
            has_iri, has_lit = p in self.iri_objects, p in self.datatypes
            if has_iri and has_lit:
                raise ConfigError(f"<{p}> has both IRIs and literals as objects; declare it an "
                                  "owl:ObjectProperty or owl:DatatypeProperty")
            (relation_iris if has_iri else attribute_iris).add(p)
        for p in relation_iris:                        # objects of relations are entities too
            for o in self.iri_objects.get(p, ()):
                if o not in entity_types and o not in schema_terms:
                    entity_types[o] = set()
        for s in {s for p in relation_iris | attribute_iris for s in self.uses.get(p, ())}:
            entity_types.setdefault(s, set())

        def names_of(iris: Iterable[str], what: str) -> dict[str, str]:
            out: dict[str, str] = {}
            for iri in sorted(iris):
                name = local_name(iri)
                if name in out:
                    raise ConfigError(f"two {what} share the local name '{name}': <{out[name]}> and "
                                      f"<{iri}>; rename one of them")
                out[name] = iri
            return out

        class_names = names_of(class_iris, "classes")
        class_of_iri = {iri: name for name, iri in class_names.items()}
        entity_names = names_of(entity_types, "entities")
        type_names = {name: frozenset(class_of_iri[t] for t in entity_types[iri])
                      for name, iri in entity_names.items()}

        def words(iri: str, name: str) -> tuple[str, tuple[str, ...]]:
            labels = self.term_labels.get(iri)
            return (sorted(labels)[0] if labels else name.replace("_", " "),
                    tuple(sorted(set(self.alt_labels.get(iri, ())))))

        classes = {}
        for name, iri in class_names.items():
            label, alts = words(iri, name)
            parents = tuple(sorted(class_of_iri[p] for p in self.parents.get(iri, ()) if p in class_of_iri))
            classes[name] = ClassInfo(name, label, alts, iri, parents,
                                      _variable_base(self.notations.get(iri, name.lower())))
        schema = Schema(classes, {}, {}, entity_iris=entity_names, entity_types=type_names,
                        entity_labels={}, prefixes={}, entity_namespace="")
        instances = _Instances(schema, type_names)
        name_of_entity = {iri: name for name, iri in entity_names.items()}

        def infer_class(iris: Iterable[str]) -> str | None:
            return instances.common_class(name_of_entity[i] for i in iris if i in name_of_entity)

        def functional(p: str, relation: bool) -> bool:
            # Values of the property's own kind only: a declared relation's stray literals
            # (or an attribute's IRIs) are not values of it.
            if OWL + "FunctionalProperty" in declared.get(p, ()):
                return True
            literals = self.literal_uses.get(p, {})
            if not relation:
                return all(n <= 1 for n in literals.values())
            return all(n - literals.get(s, 0) <= 1 for s, n in self.uses.get(p, {}).items())

        def total(p: str, domain: str | None) -> bool:
            if domain is None:
                return False
            having = self.uses.get(p, {})
            return all(entity_names[n] in having for n in instances.of(domain))

        relations = {}
        for name, iri in names_of(relation_iris, "relations").items():
            label, alts = words(iri, name)
            domain = class_of_iri.get(self.domains.get(iri, "")) or infer_class(self.uses.get(iri, ()))
            range_ = class_of_iri.get(self.ranges.get(iri, "")) or infer_class(self.iri_objects.get(iri, ()))
            relations[name] = RelationInfo(name, label, alts, domain, range_, functional(iri, True), iri,
                                           total(iri, domain))
        attributes = {}
        for name, iri in names_of(attribute_iris, "attributes").items():
            label, alts = words(iri, name)
            domain = class_of_iri.get(self.domains.get(iri, "")) or infer_class(self.uses.get(iri, ()))
            datatype, value_type = _value_type(self.ranges.get(iri), self.datatypes.get(iri, set()))
            attributes[name] = AttributeInfo(name, label, alts, domain, datatype, functional(iri, False), iri,
                                             value_type, total(iri, domain))
        clash = set(relations) & set(attributes)
        if clash:
            raise ConfigError(f"'{sorted(clash)[0]}' names both a relation and an attribute")

        labels = {}
        for name, iri in entity_names.items():
            found = self.labels.get(iri)
            if found and found[0] != name:
                labels[name] = sorted(found)[0]
        namespaces: dict[str, int] = {}
        for iri in entity_names.values():
            ns = _namespace(iri)
            namespaces[ns] = namespaces.get(ns, 0) + 1
        entity_ns = max(sorted(namespaces), key=namespaces.__getitem__) if namespaces else "urn:entity:"
        used = {_namespace(i.iri) for t in (classes, relations, attributes) for i in t.values()}
        used.add(entity_ns)
        declared_prefixes = {p: ns for p, ns in prefixes.items() if p}
        known = set(declared_prefixes.values())
        n = 0
        for ns in sorted(used - known):
            n += 1
            while f"ns{n}" in declared_prefixes:
                n += 1
            declared_prefixes[f"ns{n}"] = ns
        return Schema(classes, relations, attributes, entity_iris=entity_names, entity_types=type_names,
                      entity_labels=labels, prefixes=declared_prefixes, entity_namespace=entity_ns)


class _Instances:
    """Entities per class (subclasses included), for inferring domains, ranges, totality."""

    def __init__(self, schema: Schema, types: dict[str, frozenset[str]]):
        self.schema = schema
        self.types = types
        self._of: dict[str, list[str]] | None = None

    def of(self, cls: str) -> list[str]:
        if self._of is None:
            of: dict[str, list[str]] = {}
            for name, ts in self.types.items():
                for c in {a for t in ts for a in self.schema.ancestors(t)}:
                    of.setdefault(c, []).append(name)
            self._of = of
        return self._of.get(cls, [])

    def common_class(self, names: Iterable[str]) -> str | None:
        """The most specific class every entity in ``names`` belongs to (None if none or no entity)."""
        shared: set[str] | None = None
        seen: set[frozenset[str]] = set()
        for name in names:
            ts = self.types.get(name, frozenset())
            if ts in seen:
                continue
            seen.add(ts)
            closure = {a for t in ts for a in self.schema.ancestors(t)}
            shared = closure if shared is None else shared & closure
            if not shared:
                return None
        if not shared:
            return None
        # The most specific: the one whose ancestors include all the others.
        for c in sorted(shared):
            if shared <= self.schema.ancestors(c):
                return c
        return None


def _value_type(declared: str | None, datatypes: set[str]) -> tuple[str, str]:
    """(XSD local name values compare as, value type) from ``rdfs:range`` or the literals seen."""
    kinds = {declared} if declared else datatypes
    if kinds and kinds <= _INTEGER:
        return "integer", "number"
    if kinds and kinds <= _INTEGER | _DECIMAL:
        return "decimal", "number"
    if kinds and kinds <= _DATE:
        return "date", "date"
    if kinds and kinds <= _YEAR:
        return "gYear", "year"
    return "string", "string"


__all__ = ["Schema", "ClassInfo", "RelationInfo", "AttributeInfo", "VALUE_TYPES", "local_name", "RDFS_LABEL"]
