"""KoPL -> SPARQL: one readable query per program (or program prefix), aligned with the paper.

How each operator compiles (``A``/``B`` are the graph patterns of the operand sets):

==================  ===============================================================
Find(e)             the constant ``ske:e``; when a variable is needed,
                    ``?x a sk:Class . VALUES ?x { ske:e }``
Relate(r)           ``?a sk:r ?b .``            RelateInv(r): ``?b sk:r ?a .``
And                 join on a shared variable; with an entity ``e``: the other set's
                    triples with ``ske:e`` in place of its variable
Or                  ``{ A } UNION { B }`` (plain entities merged into one VALUES)
Diff                ``A MINUS { B }``; entities of B: ``FILTER(?x != ske:a && ...)``;
                    an Or is removed operand by operand; details below
Argmax(a)           ``ORDER BY DESC(?a) ?x LIMIT 1`` (a sub-SELECT when not last); Argmin ASC;
                    of one entity: the entity and its ``sk:a`` triple
FilterNum(a,op,n)   ``?x sk:a ?a . FILTER(?a op n)``
Count               ``SELECT (COUNT(DISTINCT ?x) AS ?count)`` (a sub-SELECT inside comparisons)
QueryAttr(a)        ``?x sk:a ?a .``
Compare / VerifyNum ``ASK { ... FILTER(?left op ?right) }``
VerifyRel(r, e)     ``ASK { ... ?x sk:r ske:e . }``
==================  ===============================================================

A set built from one entity stays that constant through FilterNum, Argmax, And and Diff:
it is ``e`` when a *closed* condition holds (patterns sharing no variable with the rest of
the query), e.g. ``ske:e sk:height_cm ?h . FILTER(?h > 180)``. Relate, RelateInv,
FilterNum, And and Diff on an Or with entities among its operands apply to each operand, and
to each entity (``Relate`` of ``Or(e, X)`` is ``{ ske:e sk:r ?y } UNION { X . ?x sk:r ?y }``).
So a variable is bound to entities only where the set itself is needed: the answer, Count,
QueryAttr, VerifyRel, or Argmax's candidates.

Portable forms, and why. Each rule below avoids a wrong answer, an error or a hang of
Virtuoso 7.2.5 (found by ``tests/test_endpoints.py``, which compares native, embedded
Oxigraph, Oxigraph server and Virtuoso on random programs, and checked against Oxigraph on
the live server). They are plain SPARQL 1.1 with the same meaning on every engine, so one
query text serves every backend:

- A VALUES of entities always comes after its class triple (``?x a sk:Person .``):
  Virtuoso returns nothing for a UNION branch made only of VALUES, and ignores a FILTER
  between a lone VALUES and an OPTIONAL.
- No variable bound to one entity (by VALUES, ``=`` or BIND) inside a MINUS or NOT EXISTS
  that shares it with the outer query: Virtuoso drops the link (every row is removed) or
  fails (SP031). Entities of B are removed by ``FILTER(?x != ske:a && ...)`` in the outer
  group (not ``NOT IN``, on which its cost model overflows inside a MINUS); an entity
  under a condition C by ``FILTER(?x != ske:e || NOT EXISTS { C })``; an Or is removed
  operand by operand.
- No sub-SELECT inside a MINUS: Virtuoso removes every row when the sub-SELECT repeats a
  triple pattern of the outer query ("the employees minus the tallest employee"). An
  Argmax B is removed by ``OPTIONAL { B(?x2) } FILTER(!BOUND(?x2) || ?x2 != ?x)``, with
  nothing after the sub-SELECT in that OPTIONAL (Virtuoso moves a FILTER there into the
  sub-SELECT); any other B with an Argmax inside by ``FILTER NOT EXISTS { B(?x2)
  FILTER(?x2 = ?x) }`` (slower on Oxigraph, which evaluates it again for every row).
- No sub-SELECT over a single constant: Virtuoso cannot compile one followed by an
  OPTIONAL (SP031). Argmax of one entity is the entity if it has the value.
- No (NOT) EXISTS group of FILTERs alone: Virtuoso answers ``NOT EXISTS { FILTER NOT
  EXISTS { ... } }`` wrongly, so such a group gets the entity's class triple.
- An integer value compared with a decimal (a fractional bound, a decimal attribute) is
  written ``xsd:decimal(?v)``: Virtuoso compares an ``xsd:integer`` with a fractional
  decimal wrongly when it answers the comparison from an index (``186 <= 150.5`` holds,
  also for a FILTER just outside an Argmax sub-SELECT). Integer-to-integer and decimal
  comparisons are written as they are.

The nine template shapes use none of these special forms: their queries are unchanged.

The native interpreter raises errors SPARQL cannot express: an unknown entity, and
``QueryAttr`` on anything but exactly one entity having the attribute. So that both
engines raise the same errors, a compiled query carries *guards* the executor checks first:
:class:`EntityGuard` (the entity exists) for every entity a program names,
:class:`AttributeGuard` (the entity has the attribute) for ``QueryAttr`` directly on a
``Find``, and :class:`SingletonGuard` (a COUNT query) for each ``QueryAttr`` whose operand
is not statically one entity. The first two are facts about the KB, checked in one batched
query and remembered by the executor; so the nine templates cost one query once their
entities are known. A final ``QueryAttr`` needs no guard: its SELECT returns the operand's
members and the executor checks them (:class:`AttrCheck`).

Every name that enters a query is validated: entity names must match ``[A-Za-z0-9_]+``,
relations and attributes must be names of the ontology, comparators one of six symbols,
numbers plain decimal literals (re-rendered canonically). A program cannot inject SPARQL.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal, Union

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ProgramError, ProgramTypeError, unknown_name_message
from kopl2sparql.interpreter import VALUE_WORDS, parse_number
from kopl2sparql.program import COMPARATORS, OPERATORS, ArgKind, Program, Step, ValueType
from ontology import Schema

QueryForm = Literal["select-entities", "select-number", "ask"]

XSD_PREFIX_LINE = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"   # only in queries with a Cast
_NAME = re.compile(r"[A-Za-z0-9_]+\Z")

_SCHEMA: ContextVar[Schema] = ContextVar("schema")
"""The schema of the program being compiled: set by :class:`Compiler` for the duration of
one compilation, read by the set-algebra helpers below for class and variable names."""


def _entity_class(name: str) -> str | None:
    """One class of an entity for its class triple: the first in name order, if it has any."""
    types = _SCHEMA.get().entity_classes(name)
    return min(types) if types else None


def _base(classes: frozenset) -> str:
    return _SCHEMA.get().variable(classes)


# ---- the compiled query ------------------------------------------------------------------

@dataclass(frozen=True)
class EntityGuard:
    """The entity ``name`` (first named at ``step``) must exist in the KB."""

    step: int
    name: str
    iri: str | None = field(default=None, compare=False)   # None: no entity can have this name


@dataclass(frozen=True)
class AttributeGuard:
    """The entity ``name`` must have a value of ``attribute`` (QueryAttr at ``step`` on Find)."""

    step: int
    name: str
    attribute: str
    iri: str | None = field(default=None, compare=False)      # the entity's
    attribute_iri: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SingletonGuard:
    """The operand of ``QueryAttr(attribute)`` at ``step`` must be one entity having it.

    ``sparql`` selects ``?members`` (distinct entities), ``?values`` (bound values) and
    ``?member`` (one of the entities, for the message).
    """

    step: int
    attribute: str
    sparql: str


Guard = Union[EntityGuard, AttributeGuard, SingletonGuard]


@dataclass(frozen=True)
class AttrCheck:
    """How to check the rows of a final ``QueryAttr``.

    With ``member_variable`` the query returns the operand's members beside the value and
    exactly one distinct member is required; otherwise the operand is the single entity
    ``entity`` and exactly one row is required.
    """

    step: int
    attribute: str
    member_variable: str | None = None
    entity: str | None = None


@dataclass(frozen=True)
class CompiledQuery:
    """A program compiled to SPARQL, with what the executor needs to decode the result.

    ``form`` is ``select-entities`` (column ``variable`` holds entity IRIs),
    ``select-number`` (one number in ``variable``; ``check`` set for QueryAttr) or ``ask``.
    ``guards`` are ordered by step.
    """

    sparql: str
    form: QueryForm
    variable: str | None
    guards: tuple[Guard, ...] = ()
    check: AttrCheck | None = None
    steps: int = 0
    prepared: "Prepared | None" = field(default=None, compare=False, repr=False)
    labels: bool = False          # QueryName at the top: the answer shows labels, not names

    def describe_guards(self) -> str:
        """One line for the checks made before the query, e.g.
        ``entity City_0880 @1, value City_0880.population @2, singleton height_cm @3``."""
        parts = []
        for g in self.guards:
            if isinstance(g, EntityGuard):
                parts.append(f"entity {g.name} @{g.step}")
            elif isinstance(g, AttributeGuard):
                parts.append(f"value {g.name}.{g.attribute} @{g.step}")
            else:
                parts.append(f"singleton {g.attribute} @{g.step}")
        return ", ".join(parts)

    def entity_names(self) -> tuple[str, ...]:
        """Entities whose existence the executor must confirm, in step order."""
        return tuple(g.name for g in self.guards if isinstance(g, EntityGuard))


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
    """``FILTER(?x != ske:a && ?x != ske:b)``: not ``NOT IN``, on which Virtuoso 7.2's cost
    model overflows its stack inside a MINUS."""

    var: Var
    names: tuple[str, ...]


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


def _subst(node, m: dict):
    """``node`` with variables replaced through ``m`` (Var -> Var, or Var -> Entity in plain patterns)."""
    if isinstance(node, Var):
        return m.get(node, node)
    if isinstance(node, tuple):
        return tuple(_subst(n, m) for n in node)
    if isinstance(node, Triple):
        return Triple(_subst(node.s, m), node.p, _subst(node.o, m))
    if isinstance(node, Values):
        return Values(_subst(node.var, m), node.names)
    if isinstance(node, Filter):
        return Filter(_subst(node.left, m), node.op, _subst(node.right, m))
    if isinstance(node, Optional_):
        return Optional_(_subst(node.patterns, m))
    if isinstance(node, Union_):
        return Union_(_subst(node.branches, m))
    if isinstance(node, Minus):
        return Minus(_subst(node.patterns, m))
    if isinstance(node, Agg):
        return Agg(node.func, _subst(node.var, m), _subst(node.alias, m), node.distinct)
    if isinstance(node, Select):
        return Select(_subst(node.projection, m), _subst(node.where, m), node.distinct,
                      tuple((_subst(v, m), d) for v, d in node.order), node.limit)
    if isinstance(node, SubSelect):
        return SubSelect(_subst(node.select, m))
    if isinstance(node, Cast):
        return Cast(_subst(node.var, m))
    if isinstance(node, IsA):
        return IsA(_subst(node.var, m), node.cls)
    if isinstance(node, NotIn):
        return NotIn(_subst(node.var, m), node.names)
    if isinstance(node, Exists):
        return Exists(_subst(node.patterns, m), node.negated)
    if isinstance(node, Unless):
        return Unless(_subst(node.var, m), node.entity, _subst(node.patterns, m))
    if isinstance(node, Apart):
        return Apart(_subst(node.var, m), _subst(node.member, m), _subst(node.patterns, m))
    return node          # Entity, Num, Never


class _Renderer:
    """Text of a query; variable names are assigned on first appearance."""

    def __init__(self, schema: Schema):
        self.names: dict[Var, str] = {}
        self.taken: set[str] = set()
        self.uses_xsd = False                 # a Cast was written: the query needs PREFIX xsd:
        self.schema = schema
        self.pred = _predicate_terms(schema)

    def entity(self, name: str) -> str:
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
                lines.append(f"{ind}FILTER(" + " && ".join(f"{var} != {self.entity(n)}" for n in node.names) + ")")
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
            else:
                items.append(self.var(item))
        head = "SELECT " + ("DISTINCT " if sel.distinct else "") + " ".join(items) + " WHERE {"
        lines = [ind + head, *self.patterns(sel.where, ind + "  "), ind + "}"]
        if sel.order:
            # The first key is explicit (DESC/ASC); the tie-breaker is written bare: ?city.
            keys = [f"DESC({self.var(v)})" if desc else f"ASC({self.var(v)})" if k == 0 else self.var(v)
                    for k, (v, desc) in enumerate(sel.order)]
            lines.append(ind + "ORDER BY " + " ".join(keys))
        if sel.limit is not None:
            lines.append(f"{ind}LIMIT {sel.limit}")
        return lines


_PREDICATE_TERMS: dict[int, tuple[Schema, dict[str, str]]] = {}


def _predicate_terms(schema: Schema) -> dict[str, str]:
    """Relation/attribute name -> its SPARQL text (``sk:born_in``), once per schema."""
    entry = _PREDICATE_TERMS.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_PREDICATE_TERMS) > 64:
            _PREDICATE_TERMS.clear()
        terms = {name: schema.term(info.iri)
                 for table in (schema.relations, schema.attributes) for name, info in table.items()}
        entry = _PREDICATE_TERMS[id(schema)] = (schema, terms)
    return entry[1]


def _prefixes(r: _Renderer) -> str:
    return r.schema.prefix_lines() + (XSD_PREFIX_LINE if r.uses_xsd else "")


def render_select(sel: Select) -> tuple[str, _Renderer]:
    r = _Renderer(_SCHEMA.get())
    body = "\n".join(r.select(sel))
    return f"{_prefixes(r)}\n{body}\n", r


def render_ask(patterns: tuple) -> str:
    r = _Renderer(_SCHEMA.get())
    body = "\n".join(["ASK {", *r.patterns(patterns, "  "), "}"])
    return f"{_prefixes(r)}\n{body}\n"


# ---- fragments: what each stack value compiles to -------------------------------------------

class Card(IntEnum):
    """Static cardinality of a set: exactly one, at most one, any number."""

    ONE = 1
    OPT = 2
    MANY = 3


@dataclass(frozen=True)
class SetFrag:
    """An entity set: the solutions of ``patterns`` bind ``term`` to its members.

    A constant ``term`` (from Find) stands for ``{e}`` when ``patterns`` have a solution;
    those patterns are then *closed* (no variable they bind is shared with the rest of the
    query), and a constant stays a constant through FilterNum, Argmax, And and Diff.
    ``hoist`` is set when the fragment is exactly one sub-SELECT that may become the
    outer query (Argmax as the last operator). ``alts`` are the operands of an Or
    (flattened; pure constants merged), which Diff removes one by one.
    """

    patterns: tuple
    term: Term
    classes: frozenset
    card: Card
    hoist: Select | None = None
    alts: tuple = ()


@dataclass(frozen=True)
class NamesFrag:
    set: SetFrag


@dataclass(frozen=True)
class NumFrag:
    """A number bound to ``var`` by ``patterns`` (one solution when defined)."""

    patterns: tuple
    var: Var
    hoist: Select | None = None                 # Count: the aggregate query itself
    attr: tuple | None = None                   # QueryAttr: (operand SetFrag, attribute, step)
    datatype: str = "integer"                   # of the value: "integer" or "decimal"


@dataclass(frozen=True)
class BoolFrag:
    patterns: tuple


_FRAG_TYPE = {SetFrag: ValueType.ENTITIES, NamesFrag: ValueType.NAMES, NumFrag: ValueType.NUMBER,
              BoolFrag: ValueType.BOOL}
_ANY: frozenset = frozenset()         # classes not known statically (variables get "entity")


def _values(var: Var, names: tuple[str, ...]) -> tuple:
    """``?x a sk:C . VALUES ?x { ske:a ... }``: entities bound to a variable, after their class.

    The class triple (true of every entity the guards let through) keeps the group from
    being VALUES alone: Virtuoso 7.2 returns nothing for a UNION branch made only of VALUES,
    and ignores a FILTER between such a VALUES and an OPTIONAL. Written first, it also keeps
    Oxigraph from scanning the whole class inside EXISTS.
    """
    schema = _SCHEMA.get()
    shared = None
    for n in names:
        types = schema.entity_classes(n) or frozenset()
        shared = types if shared is None else shared & types
    if not shared:            # unchecked programs (Or splits classes), untyped entities
        return (Values(var, names),)
    return IsA(var, min(shared)), Values(var, names)


def _as_var(frag: SetFrag) -> tuple[tuple, Var]:
    """Patterns and a variable bound to the set's members (a constant becomes VALUES)."""
    if isinstance(frag.term, Var):
        return frag.patterns, frag.term
    var = Var(_base(frag.classes))
    return (*_values(var, (frag.term.name,)), *frag.patterns), var


def _bound_to(frag: SetFrag, var: Var) -> tuple:
    """Patterns binding ``var`` (instead of the fragment's own variable) to the members."""
    if isinstance(frag.term, Var):
        return _subst(frag.patterns, {frag.term: var})
    return (*_values(var, (frag.term.name,)), *frag.patterns)


def _pure_constants(frag: SetFrag) -> tuple[str, ...] | None:
    """The members when the set is a plain list of entities (Find, Or of Finds), else None."""
    if isinstance(frag.term, Entity) and not frag.patterns:
        return (frag.term.name,)
    if isinstance(frag.term, Var) and frag.patterns and isinstance(frag.patterns[-1], Values) \
            and frag.patterns[-1].var is frag.term and frag.patterns == _values(frag.term, frag.patterns[-1].names):
        return frag.patterns[-1].names
    return None


def _alternatives(frag: SetFrag) -> tuple[SetFrag, ...]:
    """The operands of an Or (flattened), or the set itself."""
    return frag.alts or (frag,)


def _merge_alternatives(alts: tuple[SetFrag, ...]) -> tuple[SetFrag, ...]:
    """Or operands, simplified: plain entities merged into one VALUES per class (at the place
    of the first), an entity's conditional copies merged into one (dropped when the entity
    is there unconditionally), the rest kept in order."""
    pure: dict[str, None] = {}
    conditional: dict[Entity, list[SetFrag]] = {}
    order: list = []                      # "pure", an Entity, or a SetFrag with a variable
    for alt in alts:
        names = _pure_constants(alt)
        if names is not None:
            if "pure" not in order:
                order.append("pure")
            pure.update(dict.fromkeys(names))
        elif isinstance(alt.term, Entity):
            if alt.term not in conditional:
                order.append(alt.term)
            conditional.setdefault(alt.term, []).append(alt)
        else:
            order.append(alt)
    out: list[SetFrag] = []
    for item in order:
        if item == "pure":
            by_class: dict = {}
            for name in sorted(pure):
                by_class.setdefault(_entity_class(name), []).append(name)
            for cls, names in sorted(by_class.items(), key=lambda kv: kv[0] or ""):
                classes = frozenset((cls,)) if cls else _ANY
                if len(names) == 1:
                    out.append(SetFrag((), Entity(names[0]), classes, Card.ONE))
                else:
                    var = Var(_base(classes))
                    out.append(SetFrag(_values(var, tuple(names)), var, classes, Card.MANY))
        elif isinstance(item, Entity):
            if item.name in pure:
                continue
            group = conditional[item]
            if len(group) == 1:
                out.append(group[0])
            else:                          # e if C1 or e if C2: e if (C1 or C2)
                out.append(SetFrag((Union_(tuple(_grounded(item, g.patterns) for g in group)),), item,
                                   group[0].classes, Card.OPT))
        else:
            out.append(item)
    return tuple(out)


def _plain(patterns: tuple) -> bool:
    """Only triples and comparisons (possibly in UNION branches): a constant may replace a variable."""
    return all(isinstance(n, (Triple, Filter)) or (isinstance(n, Union_) and all(map(_plain, n.branches)))
               for n in patterns)


def _membership(frag: SetFrag, entity: Entity) -> tuple:
    """A closed group of patterns that has a solution exactly when ``entity`` is in ``frag``
    (a set with a variable term): the patterns with the constant in place of the variable
    when they are plain, else the patterns and ``FILTER(?x = ske:e)``."""
    if _plain(frag.patterns):
        return _subst(frag.patterns, {frag.term: entity})
    return (*frag.patterns, Filter(frag.term, "=", entity))


def _num_type(num: Num) -> str:
    return "decimal" if "." in num.text else "integer"


def _compare(left, left_type: str, op: str, right, right_type: str) -> Filter:
    """``FILTER(left op right)``; an integer variable compared with a decimal is cast to decimal.

    Virtuoso 7.2 compares an ``xsd:integer`` value with a fractional ``xsd:decimal`` wrongly
    when it can use an index range (``186 <= 150.5`` holds there); the cast leaves the value
    unchanged everywhere and keeps Virtuoso from the index range.
    """
    if left_type != right_type:
        if left_type == "integer" and isinstance(left, Var):
            left = Cast(left)
        if right_type == "integer" and isinstance(right, Var):
            right = Cast(right)
    return Filter(left, op, right)


# ---- set algebra on fragments ---------------------------------------------------------------

def _empty(frag: SetFrag) -> bool:
    """Empty whatever the KB (And of two different entities)."""
    return any(isinstance(n, Never) for n in frag.patterns)


def _minus_safe(patterns) -> bool:
    """May ``patterns`` go inside a MINUS? Not with a sub-SELECT (Virtuoso 7.2 removes every
    row when the sub-SELECT repeats a triple pattern of the outer query, as in "the set
    minus its Argmax") nor with a variable bound to a single entity by VALUES."""
    for n in patterns:
        if isinstance(n, SubSelect) or (isinstance(n, Values) and len(n.names) == 1):
            return False
        inner = (n.branches if isinstance(n, Union_) else
                 (n.patterns,) if isinstance(n, (Minus, Exists, Optional_, Unless, Apart)) else ())
        if not all(_minus_safe(b) for b in inner):
            return False
    return True


def _either(alts, classes: frozenset) -> SetFrag:
    """The Or of ``alts``: one of them when the others are empty or the same entity, else a
    UNION binding one variable (with ``alts`` kept for Diff and for operators to map over)."""
    alts = tuple(x for alt in alts for x in _alternatives(alt))
    alts = _merge_alternatives(tuple(alt for alt in alts if not _empty(alt)) or alts[:1])
    if len(alts) == 1:
        return alts[0]
    var = next((alt.term for alt in alts if isinstance(alt.term, Var) and _pure_constants(alt) is None),
               None) or Var(_base(classes))
    return SetFrag((Union_(tuple(_bound_to(alt, var) for alt in alts)),), var, classes, Card.MANY, alts=alts)


def _distribute(frag: SetFrag, operator) -> SetFrag:
    """``operator(frag)``; for an Or with entities among its operands (a list of entities
    included), the Or of ``operator`` on each operand and each entity, so that an entity
    stays a constant rather than a variable that VALUES binds to it (which Virtuoso 7.2
    mishandles once nested in a MINUS, NOT EXISTS or sub-SELECT)."""
    if not frag.alts and (isinstance(frag.term, Entity) or not frag.patterns
                          or not isinstance(frag.patterns[-1], Values)):
        return operator(frag)                  # not an Or: the common case, kept cheap
    alts = [one for alt in _alternatives(frag) for one in _one_by_one(alt)]
    if not any(isinstance(alt.term, Entity) for alt in alts):
        return operator(frag)
    results = [operator(alt) for alt in alts]
    return _either(results, frozenset().union(*(r.classes for r in results)))


def _one_by_one(frag: SetFrag) -> tuple[SetFrag, ...]:
    """A list of entities (Or of Finds) as one constant each; any other set as it is."""
    names = _pure_constants(frag)
    if names is None or isinstance(frag.term, Entity):
        return (frag,)
    return tuple(SetFrag((), Entity(n), frag.classes, Card.ONE) for n in names)


def _grounded(entity: Entity, patterns: tuple) -> tuple:
    """A closed condition of ``entity`` as a group of its own, with a triple pattern in it:
    the entity's class triple when it has none (Virtuoso 7.2 answers a NOT EXISTS whose
    group holds only FILTERs wrongly)."""
    if any(isinstance(n, (Triple, IsA, SubSelect)) for n in patterns):
        return patterns
    cls = _entity_class(entity.name)
    return (IsA(entity, cls), *patterns) if cls else patterns


def _narrow(classes: frozenset, cls: str | None) -> frozenset:
    """Classes of the members that have an attribute of ``cls`` (unknown stays unknown)."""
    return classes if cls is None else classes & {cls}


def _intersect(a: SetFrag, b: SetFrag) -> SetFrag:
    """And of two sets, neither an Or with an entity among its operands."""
    classes = a.classes & b.classes
    card = Card.OPT if min(a.card, b.card) <= Card.OPT else Card.MANY
    if isinstance(a.term, Entity) and isinstance(b.term, Entity):
        empty = () if a.term == b.term else (Never(),)
        return SetFrag((*a.patterns, *b.patterns, *empty), a.term, classes, card)
    if isinstance(a.term, Entity) or isinstance(b.term, Entity):
        # The constant stays a constant: e if (its own conditions and) e is in the other set.
        const, other = (a, b) if isinstance(a.term, Entity) else (b, a)
        names = _pure_constants(other)
        if names is not None:
            member = () if const.term.name in names else (Never(),)
        elif _plain(other.patterns):
            member = _membership(other, const.term)
        else:
            member = (Exists(_membership(other, const.term)),)
        patterns = (*const.patterns, *member) if const is a else (*member, *const.patterns)
        return SetFrag(patterns, const.term, classes, card)
    return SetFrag((*a.patterns, *_bound_to(b, a.term)), a.term, classes, card)


def _difference(a: SetFrag, b: SetFrag) -> SetFrag:
    """Diff ``a`` minus ``b`` (``a`` not an Or with an entity among its operands); ``b`` is
    removed one Or operand at a time: A - (B1 | B2) = A - B1 - B2."""
    return _difference_of(a, [alt for alt in _alternatives(b) if not _empty(alt)])


def _difference_of(a: SetFrag, alts: list[SetFrag]) -> SetFrag:
    card = max(a.card, Card.OPT)
    own = _pure_constants(a)
    if own is not None and isinstance(a.term, Var):
        # A list of entities minus entities is worked out here: {a, b} - {a} is b.
        removed = {n for alt in alts for n in (_pure_constants(alt) or ())}
        if removed:
            kept = [SetFrag((), Entity(n), a.classes, Card.ONE) for n in own if n not in removed]
            rest = [alt for alt in alts if _pure_constants(alt) is None]
            if not kept:
                return SetFrag((*a.patterns, Never()), a.term, a.classes, card)
            return _difference_of(_either(kept, a.classes), rest)
    if isinstance(a.term, Entity):
        # e minus B: e if (its own conditions and) e is not in B.
        absent = []
        for alt in alts:
            names = _pure_constants(alt)
            if names is not None:
                if a.term.name in names:
                    absent.append(Never())
            elif isinstance(alt.term, Entity):
                if alt.term == a.term:
                    absent.append(Exists(_grounded(alt.term, alt.patterns), negated=True))
            else:
                absent.append(Exists(_membership(alt, a.term), negated=True))
        return SetFrag((*a.patterns, *absent), a.term, a.classes, card)
    var = a.term
    removed: set[str] = set()
    absent = []
    for alt in alts:
        names = _pure_constants(alt)
        if names is not None:
            removed.update(names)
        elif isinstance(alt.term, Entity):
            absent.append(Unless(var, alt.term, _grounded(alt.term, alt.patterns)))
        elif _minus_safe(alt.patterns):
            absent.append(Minus(_bound_to(alt, var)))
        elif len(alt.patterns) == 1 and isinstance(alt.patterns[0], SubSelect):
            # An Argmax: its one member, if any, is not ?x. (Nothing may follow the sub-SELECT
            # inside that OPTIONAL: Virtuoso 7.2 moves such a FILTER into the sub-SELECT.)
            other = Var(var.base)
            absent.append(Apart(var, other, _bound_to(alt, other)))
        else:
            other = Var(var.base)
            absent.append(Exists((*_bound_to(alt, other), Filter(other, "=", var)), negated=True))
    if len(removed) == 1:
        absent.insert(0, Filter(var, "!=", Entity(removed.pop())))
    elif removed:
        absent.insert(0, NotIn(var, tuple(sorted(removed))))
    return SetFrag((*a.patterns, *absent), var, a.classes, card)


class _Compiler:
    """One compilation (run with ``_SCHEMA`` set to ``schema``)."""

    def __init__(self, steps: tuple[Step, ...], schema: Schema):
        self.steps = steps
        self.schema = schema
        self.guards: list[Guard] = []
        self.seen_entities: set[str] = set()

    # -- validation --------------------------------------------------------------------

    def fail(self, message: str, step: Step, i: int):
        raise ProgramTypeError(message, span=step.span, step=i)

    def entities(self, text: str, step: Step, i: int) -> tuple[str, ...] | None:
        """Names of the entities ``text`` names, each guarded (must exist); ``None`` when
        no entity can have that name (the guard then fails before any query)."""
        if not isinstance(text, str) or not text:
            self.fail(f"not an entity name: {text!r}", step, i)
        names = self.schema.resolve(text)
        if not names:
            names = (text,)          # unknown here: the guard asks the store
        iris = [self.schema.entity_iri(n) for n in names]
        for name, iri in zip(names, iris):
            if name not in self.seen_entities:
                self.seen_entities.add(name)
                self.guards.append(EntityGuard(i, name, iri))
        return None if None in iris else names

    def entity_set(self, text: str, step: Step, i: int) -> SetFrag:
        """The set ``Find(text)`` stands for: a constant for one entity, else VALUES."""
        names = self.entities(text, step, i)
        if names is None:
            return SetFrag((Never(),), Var("entity"), _ANY, Card.OPT)
        if len(names) == 1:
            cls = self.schema.entity_classes(names[0])
            return SetFrag((), Entity(names[0]), cls or _ANY, Card.ONE)
        classes = frozenset().union(*(self.schema.entity_classes(n) or () for n in names))
        var = Var(_base(classes))
        return SetFrag(_values(var, names), var, classes, Card.MANY)

    def relation(self, name: str, step: Step, i: int):
        info = self.schema.relations.get(name)
        if info is None:
            self.fail(unknown_name_message("relation", name, self.schema.relations, self._synonyms("relations")),
                      step, i)
        return info

    def attribute(self, name: str, step: Step, i: int):
        info = self.schema.attributes.get(name)
        if info is None:
            self.fail(unknown_name_message("attribute", name, self.schema.attributes, self._synonyms("attributes")),
                      step, i)
        return info

    def _synonyms(self, table: str) -> dict[str, str]:
        return {w: name for name, info in getattr(self.schema, table).items() for w in (info.label, *info.alt_labels)}

    def comparator(self, symbol: str, step: Step, i: int) -> str:
        if symbol not in COMPARATORS:
            self.fail(f"unknown comparator '{symbol}'; use one of {' '.join(COMPARATORS)}", step, i)
        return symbol

    def number(self, text: str, step: Step, i: int) -> Num:
        return Num(format_number(parse_number(text, i)))

    def pop(self, stack: list, want: ValueType, step: Step, i: int):
        if not stack:
            self.fail(f"{step.op} needs {VALUE_WORDS[want]} but the stack is empty", step, i)
        frag = stack.pop()
        got = _FRAG_TYPE[type(frag)]
        if got is not want:
            self.fail(f"{step.op} needs {VALUE_WORDS[want]}, got {VALUE_WORDS[got]}", step, i)
        return frag

    # -- the stack machine ---------------------------------------------------------------

    def run(self) -> list:
        if not self.steps:
            raise ProgramTypeError("empty program")
        stack: list = []
        for i, step in enumerate(self.steps, 1):
            op = OPERATORS.get(step.op)
            if op is None:
                self.fail(unknown_name_message("function", step.op, OPERATORS), step, i)
            if len(step.args) != len(op.args):
                self.fail(f"{step.op} takes {len(op.args)} argument(s), got {len(step.args)}", step, i)
            if not all(isinstance(a, str) for a in step.args):
                self.fail(f"{step.op}: arguments must be text, got {step.args!r}", step, i)
            stack.append(getattr(self, "op_" + step.op)(step, stack, i))
        return stack

    def op_Find(self, step, stack, i):
        return self.entity_set(step.args[0], step, i)

    def op_Relate(self, step, stack, i):
        info = self.relation(step.args[0], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)

        def relate(s: SetFrag) -> SetFrag:
            classes = frozenset((info.range,)) if info.range else _ANY
            b = Var(_base(classes))
            card = Card.OPT if info.functional and s.card <= Card.OPT else Card.MANY
            return SetFrag((*s.patterns, Triple(s.term, info.name, b)), b, classes, card)
        return _distribute(a, relate)

    def op_RelateInv(self, step, stack, i):
        info = self.relation(step.args[0], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)

        def relate_inv(s: SetFrag) -> SetFrag:
            classes = frozenset((info.domain,)) if info.domain else _ANY
            b = Var(_base(classes))
            return SetFrag((*s.patterns, Triple(b, info.name, s.term)), b, classes, Card.MANY)
        return _distribute(a, relate_inv)

    def op_QueryName(self, step, stack, i):
        return NamesFrag(self.pop(stack, ValueType.ENTITIES, step, i))

    def op_Count(self, step, stack, i):
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        patterns, var = _as_var(a)
        count = Var("count")
        sel = Select((Agg("COUNT", var, count, distinct=True),), patterns)
        return NumFrag((SubSelect(sel),), count, hoist=sel)

    def op_QueryAttr(self, step, stack, i):
        info = self.attribute(step.args[0], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        value = Var(info.name)
        if a.card is Card.ONE and isinstance(a.term, Entity):
            # Without this, ASK would answer "no" for an entity lacking the value.
            self.guards.append(AttributeGuard(i, a.term.name, info.name, self.schema.entity_iri(a.term.name),
                                              info.iri))
        else:
            patterns, var = _as_var(a)
            probe = Var(info.name)
            sel = Select((Agg("COUNT", var, Var("members"), distinct=True),
                          Agg("COUNT", probe, Var("values")), Agg("SAMPLE", var, Var("member"))),
                         (*patterns, Optional_((Triple(var, info.name, probe),))))
            self.guards.append(SingletonGuard(i, info.name, render_select(sel)[0]))
        return NumFrag((*a.patterns, Triple(a.term, info.name, value)), value, attr=(a, info.name, i),
                       datatype=info.datatype)

    def op_Compare(self, step, stack, i):
        op = self.comparator(step.args[0], step, i)
        right = self.pop(stack, ValueType.NUMBER, step, i)
        left = self.pop(stack, ValueType.NUMBER, step, i)
        return BoolFrag((*left.patterns, *right.patterns, _compare(left.var, left.datatype, op, right.var,
                                                                   right.datatype)))

    def op_VerifyNum(self, step, stack, i):
        op = self.comparator(step.args[0], step, i)
        bound = self.number(step.args[1], step, i)
        a = self.pop(stack, ValueType.NUMBER, step, i)
        return BoolFrag((*a.patterns, _compare(a.var, a.datatype, op, bound, _num_type(bound))))

    def op_VerifyRel(self, step, stack, i):
        info = self.relation(step.args[0], step, i)
        target = self.entity_set(step.args[1], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        if isinstance(target.term, Entity):
            return BoolFrag((*a.patterns, Triple(a.term, info.name, target.term)))
        return BoolFrag((*a.patterns, Triple(a.term, info.name, target.term), *target.patterns))

    def op_FilterNum(self, step, stack, i):
        info = self.attribute(step.args[0], step, i)
        op = self.comparator(step.args[1], step, i)
        bound = self.number(step.args[2], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)

        def filter_num(s: SetFrag) -> SetFrag:
            value = Var(info.name)
            return SetFrag((*s.patterns, Triple(s.term, info.name, value),
                            _compare(value, info.datatype, op, bound, _num_type(bound))), s.term,
                           _narrow(s.classes, info.domain), max(s.card, Card.OPT))
        return _distribute(a, filter_num)

    def op_Argmax(self, step, stack, i, descending: bool = True):
        info = self.attribute(step.args[0], step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        value = Var(info.name)
        if isinstance(a.term, Entity):
            # The one candidate wins when it has the value: no sub-SELECT (Virtuoso 7.2 cannot
            # compile a sub-SELECT over one constant followed by an OPTIONAL).
            return SetFrag((*a.patterns, Triple(a.term, info.name, value)), a.term, _narrow(a.classes, info.domain),
                           Card.OPT)
        patterns, var = a.patterns, a.term
        sel = Select((var,), (*patterns, Triple(var, info.name, value)),
                     order=((value, descending), (var, False)), limit=1)
        return SetFrag((SubSelect(sel),), var, _narrow(a.classes, info.domain), Card.OPT, hoist=sel)

    def op_Argmin(self, step, stack, i):
        return self.op_Argmax(step, stack, i, descending=False)

    def op_And(self, step, stack, i):
        b = self.pop(stack, ValueType.ENTITIES, step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        return _distribute(a, lambda x: _distribute(b, lambda y: _intersect(x, y)))

    def op_Or(self, step, stack, i):
        b = self.pop(stack, ValueType.ENTITIES, step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        return _either((*_alternatives(a), *_alternatives(b)), a.classes | b.classes)

    def op_Diff(self, step, stack, i):
        b = self.pop(stack, ValueType.ENTITIES, step, i)
        a = self.pop(stack, ValueType.ENTITIES, step, i)
        return _distribute(a, lambda x: _difference(x, b))

    # -- the final value ------------------------------------------------------------------

    def finish(self, stack: list) -> CompiledQuery:
        top = stack[-1]
        n = len(self.steps)
        guards = self.guards
        labels = isinstance(top, NamesFrag)
        if labels:
            top = top.set
        if isinstance(top, SetFrag):
            if top.hoist is not None:
                sel = top.hoist
                var = sel.projection[0]
            else:
                patterns, var = _as_var(top)
                sel = Select((var,), patterns, distinct=True)
            text, r = render_select(sel)
            return CompiledQuery(text, "select-entities", r.var(var)[1:], self._ordered(guards), steps=n,
                                 labels=labels)
        if isinstance(top, BoolFrag):
            return CompiledQuery(render_ask(top.patterns), "ask", None, self._ordered(guards), steps=n)
        if top.hoist is not None:                                  # Count
            text, r = render_select(top.hoist)
            return CompiledQuery(text, "select-number", r.var(top.var)[1:], self._ordered(guards), steps=n)
        operand, attribute, step = top.attr
        # The last QueryAttr is checked on its own rows, not by a guard query.
        guards = [g for g in guards if not (isinstance(g, (SingletonGuard, AttributeGuard)) and g.step == step)]
        if operand.card is Card.ONE and isinstance(operand.term, Entity):
            sel = Select((top.var,), top.patterns)
            text, r = render_select(sel)
            check = AttrCheck(step, attribute, entity=operand.term.name)
        else:
            patterns, var = _as_var(operand)
            sel = Select((var, top.var), (*patterns, Optional_((Triple(var, attribute, top.var),))),
                         distinct=True)
            text, r = render_select(sel)
            check = AttrCheck(step, attribute, member_variable=r.var(var)[1:])
        return CompiledQuery(text, "select-number", r.var(top.var)[1:], self._ordered(guards), check, steps=n)

    @staticmethod
    def _ordered(guards: list[Guard]) -> tuple[Guard, ...]:
        return tuple(sorted(guards, key=lambda g: g.step))


# ---- prepared queries: compile one program per shape, substitute names for the rest ---------

_ENTITY_ARGS = {name: tuple(i for i, kind in enumerate(op.args) if kind is ArgKind.ENTITY)
                for name, op in OPERATORS.items()}


@dataclass(frozen=True)
class Prepared:
    """A compiled query with its entity names cut out: ``pieces`` interleaved with names.

    ``slots[k]`` says which of ``names`` goes between ``pieces[k]`` and ``pieces[k + 1]``
    (names are numbered in order of first appearance in the program). Programs of the same
    shape share one ``pieces`` tuple, so it is also what batches are grouped by.
    """

    pieces: tuple[str, ...]
    slots: tuple[int, ...]
    names: tuple[str, ...]

    def text(self, names: tuple[str, ...] | None = None) -> str:
        """The query text with ``names`` (default: this program's own) in the slots."""
        names = self.names if names is None else names
        out = [self.pieces[0]]
        for slot, piece in zip(self.slots, self.pieces[1:]):
            out.append(names[slot])
            out.append(piece)
        return "".join(out)


def program_shape(steps: tuple[Step, ...], schema: Schema) -> tuple[tuple, tuple[str, ...]] | None:
    """``(key, names)``: the program with its entity names abstracted, and the names.

    Everything the compiler's output depends on stays in the key: the operators and their
    other arguments, each entity's classes (they pick variable names), which entity arguments
    are the same entity (And of one entity twice, guard de-duplication) and the order of
    the distinct names (Or of constants sorts them). ``None`` when an argument is not the
    name of an entity of the schema written plainly in its entity namespace: such programs
    are compiled directly.
    """
    names: list[str] = []
    index: dict[str, int] = {}
    key = []
    types = schema.entity_types
    iris = schema.entity_iris
    namespace = schema.entity_namespace
    for step in steps:
        positions = _ENTITY_ARGS.get(step.op)
        if not positions:
            key.append((step.op, step.args))
            continue
        args = list(step.args)
        for i in positions:
            if i >= len(args):
                return None
            name = args[i]
            if not isinstance(name, str):
                return None
            k = index.get(name)
            if k is None:
                cls = types.get(name)
                if cls is None or not _NAME.match(name) or iris[name] != namespace + name:
                    return None
                k = index[name] = len(names)
                names.append(name)
            else:
                cls = None                      # the classes are in the key at first appearance
            args[i] = (k, cls)
        key.append((step.op, tuple(args)))
    order = tuple(sorted(range(len(names)), key=names.__getitem__))
    return (tuple(key), order), tuple(names)


def _cut(text: str, names: tuple[str, ...], token: re.Pattern) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """Split ``text`` at every ``ske:<name>`` of a program entity (``None`` if a token is not one)."""
    slot_of = {name: k for k, name in enumerate(names)}
    pieces, slots, last = [], [], 0
    for m in token.finditer(text):
        k = slot_of.get(m.group(1))
        if k is None:
            return None
        pieces.append(text[last:m.start(1)])
        slots.append(k)
        last = m.end(1)
    pieces.append(text[last:])
    return tuple(pieces), tuple(slots)


class Compiler:
    """Compiles programs for one KB's schema, remembering compiled queries and prepared shapes."""

    CACHE_MAX = 65536        # bounded: shapes with numbers in them are unbounded

    def __init__(self, schema: Schema):
        self.schema = schema
        prefix = schema.term(schema.entity_namespace + "x")[:-1]     # "ske:" (or "<" without a prefix)
        self.entity_prefix = prefix if prefix.endswith(":") else None
        self.token = re.compile(re.escape(prefix) + r"([A-Za-z0-9_]+)") if self.entity_prefix else None
        self.prepared: dict[tuple, tuple] = {}
        self.compiled: dict[tuple, CompiledQuery] = {}

    def clear(self) -> None:
        self.prepared.clear()
        self.compiled.clear()

    def compile(self, steps: tuple[Step, ...]) -> CompiledQuery:
        found = self.compiled.get(steps)
        if found is None:
            token = _SCHEMA.set(self.schema)
            try:
                found = self._compile(steps)
            finally:
                _SCHEMA.reset(token)
            if len(self.compiled) >= self.CACHE_MAX:
                self.compiled.clear()
            self.compiled[steps] = found
        return found

    def direct(self, steps: tuple[Step, ...]) -> CompiledQuery:
        """Compile without any cache or prepared shape (what the prepared path must equal)."""
        token = _SCHEMA.set(self.schema)
        try:
            compiler = _Compiler(steps, self.schema)
            return compiler.finish(compiler.run())
        finally:
            _SCHEMA.reset(token)

    def _compile(self, steps: tuple[Step, ...]) -> CompiledQuery:
        shape = program_shape(steps, self.schema) if self.token is not None else None
        if shape is not None:
            key, names = shape
            prototype = self.prepared.get(key)
            if prototype is not None:
                return self._instantiate(prototype, names)
        compiler = _Compiler(steps, self.schema)
        compiled = compiler.finish(compiler.run())
        if shape is None:
            return compiled
        prototype = self._prepare(compiled, names)
        if prototype is None:
            return compiled
        if len(self.prepared) >= self.CACHE_MAX:
            self.prepared.clear()
        self.prepared[key] = prototype
        # The prototype program itself gets the same record its siblings get.
        return self._instantiate(prototype, names)

    def _prepare(self, compiled: CompiledQuery, names: tuple[str, ...]):
        """The reusable parts of ``compiled``: query and singleton-guard texts cut at the names."""
        main = _cut(compiled.sparql, names, self.token)
        if main is None:
            return None
        guards = []
        for g in compiled.guards:
            if isinstance(g, SingletonGuard):
                cut = _cut(g.sparql, names, self.token)
                if cut is None:
                    return None
                guards.append(cut)
            else:
                guards.append(None)
        return compiled, names, main, tuple(guards)

    def _instantiate(self, prototype, names: tuple[str, ...]) -> CompiledQuery:
        """The prototype's compiled query for another program of the same shape."""
        compiled, old, (pieces, slots), guard_cuts = prototype
        rename = dict(zip(old, names))
        iris = self.schema.entity_iris
        guards = []
        for g, cut in zip(compiled.guards, guard_cuts):
            if isinstance(g, EntityGuard):
                new = rename[g.name]
                guards.append(EntityGuard(g.step, new, iris[new]))
            elif isinstance(g, AttributeGuard):
                new = rename[g.name]
                guards.append(AttributeGuard(g.step, new, g.attribute, iris[new], g.attribute_iri))
            else:
                guards.append(SingletonGuard(g.step, g.attribute, Prepared(cut[0], cut[1], names).text()))
        check = compiled.check
        if check is not None and check.entity is not None:
            check = AttrCheck(check.step, check.attribute, check.member_variable, rename[check.entity])
        prepared = Prepared(pieces, slots, names)
        return CompiledQuery(prepared.text(), compiled.form, compiled.variable, tuple(guards), check,
                             compiled.steps, prepared, compiled.labels)


_COMPILERS: dict[int, Compiler] = {}


def compiler_for(schema: Schema) -> Compiler:
    """The (cached) :class:`Compiler` of a schema."""
    found = _COMPILERS.get(id(schema))
    if found is None or found.schema is not schema:
        if len(_COMPILERS) > 64:
            _COMPILERS.clear()
        found = _COMPILERS[id(schema)] = Compiler(schema)
    return found


def clear_caches() -> None:
    """Forget compiled queries and prepared shapes (benchmarks measure cold compilation)."""
    for compiler in _COMPILERS.values():
        compiler.clear()


def compile_program(program: Program, schema: Schema) -> CompiledQuery:
    """Compile a program (or a program prefix: its top-of-stack value) to one SPARQL query
    for the KB ``schema`` describes.

    Results are cached per schema by the program's steps (equivalently, its canonical text).

    :raises ProgramTypeError: for a program that breaks the stack discipline or names an
        unknown function, relation, attribute or comparator, or a malformed entity/number.
    """
    try:
        hash(program.steps)
    except TypeError:                      # e.g. a list as an argument of a hand-built Step
        raise ProgramTypeError(f"program steps must hold text arguments: {program.steps!r}") from None
    try:
        return compiler_for(schema).compile(program.steps)
    except ProgramError as exc:
        if exc.source is None:
            exc.source = program.source
        raise


__all__ = ["compile_program", "Compiler", "compiler_for", "CompiledQuery", "EntityGuard", "AttributeGuard",
           "SingletonGuard", "AttrCheck", "Guard", "Prepared", "clear_caches", "program_shape"]
