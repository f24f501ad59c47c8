"""A small SPARQL syntax tree and its rendering: the nodes the compiler builds, variable
substitution, and the text (variables named on first appearance, IRIs through the KB's
schema and prefixes).

The lowering of each operator (:mod:`kopl2sparql.operators`) builds these nodes through the
set algebra of :mod:`kopl2sparql.fragments`; :mod:`kopl2sparql.compiler` renders the result.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Union

from ontology import Schema

XSD_PREFIX_LINE = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"   # only in queries with a Cast
SCHEMA: ContextVar[Schema] = ContextVar("schema")
"""The schema of the program being compiled: set by :class:`Compiler` for the duration of
one compilation, read by the renderer and the set algebra (:mod:`kopl2sparql.fragments`) for class,
variable and IRI names."""


def entity_class(name: str) -> str | None:
    """One class of an entity for its class triple: the first in name order, if it has any."""
    types = SCHEMA.get().entity_classes(name)
    return min(types) if types else None


def variable_base(classes: frozenset) -> str:
    return SCHEMA.get().variable(classes)


# ---- a small SPARQL syntax tree ----------------------------------------------------------

class Var:
    """A query variable. Identity matters, not the name: names are given at rendering,
    in order of first appearance (``?city``, ``?city2``...), so renaming is substitution."""

    __slots__ = ("base",)

    def __init__(self, base: str):
        self.base = base

    def __repr__(self):
        return f"Var({self.base})"


@dataclass(frozen=True)
class Entity:
    name: str


@dataclass(frozen=True)
class Key:
    """``?_k3``: the variable a batch query binds, row by row, to the entity of slot 3
    (see :mod:`kopl2sparql.batch`)."""

    slot: int


@dataclass(frozen=True)
class KeyRows:
    """``VALUES (?_k0 ?_k1) { ... }``: where a batch query's rows go (rendered as a gap)."""

    slots: tuple[int, ...]


ROWS_GAP = "\x00"
"""What :class:`KeyRows` renders its rows as: the batch planner cuts the text there."""


@dataclass(frozen=True)
class Num:
    text: str            # canonical decimal text


Term = Union[Var, Entity]


@dataclass(frozen=True)
class Triple:
    s: Term
    p: str               # relation or attribute name (rendered through the schema)
    o: Term


@dataclass(frozen=True)
class Values:
    var: Var
    names: tuple[str, ...]


@dataclass(frozen=True)
class Filter:
    left: Union[Var, Entity, Num]
    op: str
    right: Union[Var, Entity, Num]
    types: tuple | None = field(default=None, compare=False)   # a comparison's (left, right) datatypes


@dataclass(frozen=True)
class Optional_:
    patterns: tuple


@dataclass(frozen=True)
class Union_:
    branches: tuple      # tuple of pattern tuples


@dataclass(frozen=True)
class Minus:
    patterns: tuple


@dataclass(frozen=True)
class Agg:
    func: str            # COUNT, SAMPLE
    var: Var
    alias: Var
    distinct: bool = False


@dataclass(frozen=True)
class Select:
    projection: tuple    # Vars and Aggs
    where: tuple
    distinct: bool = False
    order: tuple = ()    # (Var, descending) pairs
    limit: int | None = None
    group_by: tuple = ()  # Keys (batch queries of COUNT)


@dataclass(frozen=True)
class SubSelect:
    select: Select


@dataclass(frozen=True)
class Cast:
    """``xsd:decimal(?v)``: an integer value compared with a decimal one (see the module docstring)."""

    var: Var


@dataclass(frozen=True)
class IsA:
    """``?x a sk:Class .``: the class triple written beside every VALUES of entities (or of
    an entity, to give a group of FILTERs a triple pattern)."""

    var: Var | Entity
    cls: str


@dataclass(frozen=True)
class NotIn:
    """``FILTER(?x NOT IN (ske:a, ske:b))``; written ``FILTER(?x != ske:a && ?x != ske:b)``
    when ``conjunction`` (the portable dialect's spelling, see :mod:`kopl2sparql.dialects`)."""

    var: Var
    names: tuple[str, ...]
    conjunction: bool = True


@dataclass(frozen=True)
class Exists:
    """``FILTER EXISTS { ... }`` (``NOT EXISTS`` when ``negated``)."""

    patterns: tuple
    negated: bool = False


@dataclass(frozen=True)
class Unless:
    """``FILTER(?x != ske:e || NOT EXISTS { C })``: drops ``e`` when the closed condition C holds."""

    var: Var
    entity: Entity
    patterns: tuple


@dataclass(frozen=True)
class Apart:
    """``OPTIONAL { B(?m) } FILTER(!BOUND(?m) || ?m != ?x)``: ``?x`` is not the one member
    ``?m`` of an Argmax B (Diff of an Argmax)."""

    var: Var
    member: Var
    patterns: tuple


@dataclass(frozen=True)
class Never:
    """``FILTER(false)``: a set that is empty whatever the KB (And of two different entities)."""


def subst(node, m: dict):
    """``node`` with variables replaced through ``m`` (Var -> Var, or Var -> Entity in plain patterns)."""
    if isinstance(node, Var):
        return m.get(node, node)
    if isinstance(node, tuple):
        return tuple(subst(n, m) for n in node)
    if isinstance(node, Triple):
        return Triple(subst(node.s, m), node.p, subst(node.o, m))
    if isinstance(node, Values):
        return Values(subst(node.var, m), node.names)
    if isinstance(node, Filter):
        return Filter(subst(node.left, m), node.op, subst(node.right, m), node.types)
    if isinstance(node, Optional_):
        return Optional_(subst(node.patterns, m))
    if isinstance(node, Union_):
        return Union_(subst(node.branches, m))
    if isinstance(node, Minus):
        return Minus(subst(node.patterns, m))
    if isinstance(node, Agg):
        return Agg(node.func, subst(node.var, m), subst(node.alias, m), node.distinct)
    if isinstance(node, Select):
        return Select(subst(node.projection, m), subst(node.where, m), node.distinct,
                      tuple((subst(v, m), d) for v, d in node.order), node.limit)
    if isinstance(node, SubSelect):
        return SubSelect(subst(node.select, m))
    if isinstance(node, Cast):
        return Cast(subst(node.var, m))
    if isinstance(node, IsA):
        return IsA(subst(node.var, m), node.cls)
    if isinstance(node, NotIn):
        return NotIn(subst(node.var, m), node.names, node.conjunction)
    if isinstance(node, Exists):
        return Exists(subst(node.patterns, m), node.negated)
    if isinstance(node, Unless):
        return Unless(subst(node.var, m), node.entity, subst(node.patterns, m))
    if isinstance(node, Apart):
        return Apart(subst(node.var, m), subst(node.member, m), subst(node.patterns, m))
    return node          # Entity, Num, Never


class Renderer:
    """Text of a query; variable names are assigned on first appearance."""

    def __init__(self, schema: Schema):
        self.names: dict[Var, str] = {}
        self.taken: set[str] = set()
        self.uses_xsd = False                 # a Cast was written: the query needs PREFIX xsd:
        self.schema = schema
        self.pred = predicate_terms(schema)

    def entity(self, name) -> str:
        if isinstance(name, Key):
            return f"?_k{name.slot}"
        iri = self.schema.entity_iri(name)
        if iri is None:        # no entity has this name: the guard fails before any query runs
            raise ValueError(f"no IRI for entity {name!r}")
        return self.schema.term(iri)

    def var(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            sep = "_" if v.base[-1].isdigit() else ""
            name, n = v.base, 1
            while name in self.taken:
                n += 1
                name = f"{v.base}{sep}{n}"
            self.taken.add(name)
            self.names[v] = name
        return "?" + name

    def term(self, t) -> str:
        if isinstance(t, Var):
            return self.var(t)
        if isinstance(t, Entity):
            return self.entity(t.name)
        if isinstance(t, Key):
            return f"?_k{t.slot}"
        if isinstance(t, Cast):
            self.uses_xsd = True
            return f"xsd:decimal({self.term(t.var)})"
        return t.text

    def patterns(self, patterns, ind: str) -> list[str]:
        lines: list[str] = []
        for node in patterns:
            if isinstance(node, Triple):
                lines.append(f"{ind}{self.term(node.s)} {self.pred[node.p]} {self.term(node.o)} .")
            elif isinstance(node, Values):
                lines.append(f"{ind}VALUES {self.var(node.var)} {{ "
                             + " ".join(self.entity(n) for n in node.names) + " }")
            elif isinstance(node, Filter):
                lines.append(f"{ind}FILTER({self.term(node.left)} {node.op} {self.term(node.right)})")
            elif isinstance(node, Optional_):
                if len(node.patterns) == 1 and isinstance(node.patterns[0], Triple):
                    t = node.patterns[0]
                    lines.append(f"{ind}OPTIONAL {{ {self.term(t.s)} {self.pred[t.p]} {self.term(t.o)} }}")
                else:
                    lines.append(f"{ind}OPTIONAL {{")
                    lines += self.patterns(node.patterns, ind + "  ")
                    lines.append(f"{ind}}}")
            elif isinstance(node, Union_):
                for k, branch in enumerate(node.branches):
                    if k:
                        lines.append(f"{ind}UNION")
                    lines.append(f"{ind}{{")
                    lines += self.patterns(branch, ind + "  ")
                    lines.append(f"{ind}}}")
            elif isinstance(node, Minus):
                lines.append(f"{ind}MINUS {{")
                lines += self.patterns(node.patterns, ind + "  ")
                lines.append(f"{ind}}}")
            elif isinstance(node, SubSelect):
                lines.append(f"{ind}{{")
                lines += self.select(node.select, ind + "  ")
                lines.append(f"{ind}}}")
            elif isinstance(node, IsA):
                lines.append(f"{ind}{self.term(node.var)} a {self.schema.term(self.schema.classes[node.cls].iri)} .")
            elif isinstance(node, NotIn):
                var = self.var(node.var)
                if node.conjunction:
                    lines.append(f"{ind}FILTER(" + " && ".join(f"{var} != {self.entity(n)}" for n in node.names) + ")")
                else:
                    lines.append(f"{ind}FILTER({var} NOT IN (" + ", ".join(self.entity(n) for n in node.names) + "))")
            elif isinstance(node, Exists):
                lines += self.group(f"{ind}FILTER {'NOT ' if node.negated else ''}EXISTS", node.patterns, ind)
            elif isinstance(node, Unless):
                head = f"{ind}FILTER({self.var(node.var)} != {self.term(node.entity)} || NOT EXISTS"
                lines += self.group(head, node.patterns, ind, close=")")
            elif isinstance(node, Apart):
                lines += self.group(f"{ind}OPTIONAL", node.patterns, ind)
                member = self.var(node.member)
                lines.append(f"{ind}FILTER(!BOUND({member}) || {member} != {self.var(node.var)})")
            elif isinstance(node, Never):
                lines.append(f"{ind}FILTER(false)")
            elif isinstance(node, KeyRows):
                keys = " ".join(f"?_k{k}" for k in node.slots)
                lines.append(f"{ind}VALUES ({keys}) {{ {ROWS_GAP} }}")
            else:  # pragma: no cover - the compiler builds only the nodes above
                raise TypeError(node)
        return lines

    def group(self, head: str, patterns, ind: str, close: str = "") -> list[str]:
        """``head { ... }``: on one line when the group is a single triple."""
        if len(patterns) == 1 and isinstance(patterns[0], Triple):
            t = patterns[0]
            return [f"{head} {{ {self.term(t.s)} {self.pred[t.p]} {self.term(t.o)} }}{close}"]
        return [f"{head} {{", *self.patterns(patterns, ind + "  "), f"{ind}}}{close}"]

    def select(self, sel: Select, ind: str = "") -> list[str]:
        items = []
        for item in sel.projection:
            if isinstance(item, Agg):
                inner = ("DISTINCT " if item.distinct else "") + self.var(item.var)
                items.append(f"({item.func}({inner}) AS {self.var(item.alias)})")
            elif isinstance(item, Key):
                items.append(f"?_k{item.slot}")
            else:
                items.append(self.var(item))
        head = "SELECT " + ("DISTINCT " if sel.distinct else "") + " ".join(items) + " WHERE {"
        lines = [ind + head, *self.patterns(sel.where, ind + "  "), ind + "}"]
        if sel.group_by:
            lines.append(ind + "GROUP BY " + " ".join(f"?_k{k.slot}" for k in sel.group_by))
        if sel.order:
            # The first key is explicit (DESC/ASC); the tie-breaker is written bare: ?city.
            keys = [f"DESC({self.var(v)})" if desc else f"ASC({self.var(v)})" if k == 0 else self.var(v)
                    for k, (v, desc) in enumerate(sel.order)]
            lines.append(ind + "ORDER BY " + " ".join(keys))
        if sel.limit is not None:
            lines.append(f"{ind}LIMIT {sel.limit}")
        return lines


_PREDICATE_TERMS: dict[int, tuple[Schema, dict[str, str]]] = {}


def predicate_terms(schema: Schema) -> dict[str, str]:
    """Relation/attribute name -> its SPARQL text (``sk:born_in``), once per schema."""
    entry = _PREDICATE_TERMS.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_PREDICATE_TERMS) > 64:
            _PREDICATE_TERMS.clear()
        terms = {name: schema.term(info.iri)
                 for table in (schema.relations, schema.attributes) for name, info in table.items()}
        entry = _PREDICATE_TERMS[id(schema)] = (schema, terms)
    return entry[1]


def prefixes_of(r: Renderer) -> str:
    return r.schema.prefix_lines() + (XSD_PREFIX_LINE if r.uses_xsd else "")


def render_select(sel: Select) -> tuple[str, Renderer]:
    r = Renderer(SCHEMA.get())
    body = "\n".join(r.select(sel))
    return f"{prefixes_of(r)}\n{body}\n", r


def render_ask(patterns: tuple) -> str:
    r = Renderer(SCHEMA.get())
    body = "\n".join(["ASK {", *r.patterns(patterns, "  "), "}"])
    return f"{prefixes_of(r)}\n{body}\n"



__all__ = ["SCHEMA", "XSD_PREFIX_LINE", "Var", "Entity", "Num", "Term", "Triple", "Values", "Filter", "Optional_",
           "Union_", "Minus", "Agg", "Select", "SubSelect", "Cast", "IsA", "NotIn", "Exists", "Unless", "Apart",
           "Never", "Key", "KeyRows", "ROWS_GAP", "subst", "Renderer", "render_select", "render_ask", "predicate_terms", "entity_class",
           "variable_base"]
