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

The compiler compiles what the type checker accepts (it runs the checker on every program
it has not seen) and takes the checker's verdicts rather than judging again: names, did-you-
mean, domains and cardinality are the checker's alone.

The native interpreter raises errors SPARQL cannot express: an unknown entity, and
``QueryAttr`` on anything but exactly one entity having exactly one value. So that both
engines raise the same errors, a compiled query carries *guards* the executor checks first:
:class:`EntityGuard` (the entity exists) for every entity a program names, and for each
``QueryAttr`` whose value the checker cannot prove defined
(:attr:`~kopl2sparql.types.StepType.needs_singleton_guard`: one entity, of a class whose
every member has exactly one value) an :class:`AttributeGuard` (the entity has the
attribute) when the operand is a ``Find``, a :class:`SingletonGuard` (a COUNT query)
otherwise. The first two are facts about the KB, checked in one batched query and
remembered by the executor; so the nine templates cost one query once their entities are
known. A final ``QueryAttr`` needs no guard: its SELECT returns the operand's members and
the executor checks them (:class:`AttrCheck`).

Nothing from a program enters a query unchecked: an entity argument is resolved through
the KB's schema to IRIs read from its RDF (a plain name ``[A-Za-z0-9_]+`` the KB lacks gets
the entity namespace, and its guard reports it unknown; any other text never reaches the
query text, its guard fails first), relations and attributes must be the schema's,
comparators one of six symbols, numbers plain decimal literals (re-rendered canonically).
A program cannot inject SPARQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from kopl2sparql.answer import format_number
from kopl2sparql.dialects import PORTABLE, Dialect
from kopl2sparql.errors import ProgramError, ProgramTypeError
from kopl2sparql.fragments import (ANY, AttributeGuard, BoolFrag, EntityGuard, Guard, NamesFrag,
                                   SetFrag, SingletonGuard, as_var, entity_values)
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step
from kopl2sparql.runtime import parse_number
from kopl2sparql.shapes import program_shape
from kopl2sparql.typecheck import check
from kopl2sparql.sparqltree import SCHEMA, Entity, Never, Num, Optional_, Select, Triple, Var, render_ask, render_select, variable_base
from ontology import Schema

QueryForm = Literal["select-entities", "select-number", "ask"]
_NAME = re.compile(r"[A-Za-z0-9_]+\Z")


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
    tree: tuple | None = field(default=None, compare=False, repr=False)
    """``("select", Select)`` or ``("ask", patterns)``: the query before rendering; with a
    prepared query, ``(..., names)`` too: the entity names that tree holds in slot order
    (the shape's first program's), for the batch planner."""

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


class _Compiler:
    """One compilation of a program the type checker accepted (``types``: its
    :class:`~kopl2sparql.types.StepType` per step), run with ``SCHEMA`` set to ``schema``.

    Validation, names, did-you-mean and cardinality are the checker's: lowering trusts them
    and reads the checker's verdicts (e.g. whether a QueryAttr needs a run-time check).
    """

    def __init__(self, steps: tuple[Step, ...], schema: Schema, dialect: Dialect, types: tuple):
        self.steps = steps
        self.schema = schema
        self.dialect = dialect
        self.types = types
        self.guards: list[Guard] = []
        self.seen_entities: set[str] = set()

    # -- what the operators' lowering reads -------------------------------------------------

    def entities(self, text: str, step: Step, i: int) -> tuple[str, ...] | None:
        """Names of the entities ``text`` names, each guarded (must exist); ``None`` when
        no entity can have that name (the guard then fails before any query)."""
        names = self.schema.resolve(text) or (text,)      # unknown here: the guard asks the store
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
            return SetFrag((Never(),), Var("entity"), ANY)
        if len(names) == 1:
            cls = self.schema.entity_classes(names[0])
            return SetFrag((), Entity(names[0]), cls or ANY)
        classes = frozenset().union(*(self.schema.entity_classes(n) or () for n in names))
        var = Var(variable_base(classes))
        return SetFrag(entity_values(var, names), var, classes)

    def relation(self, name: str, step: Step, i: int):
        return self.schema.relations[name]

    def attribute(self, name: str, step: Step, i: int):
        return self.schema.attributes[name]

    def comparator(self, symbol: str, step: Step, i: int) -> str:
        return symbol

    def number(self, text: str, step: Step, i: int) -> Num:
        return Num(format_number(parse_number(text, i)))

    # -- the stack machine ---------------------------------------------------------------

    def run(self) -> list:
        stack: list = []
        for i, step in enumerate(self.steps, 1):
            op = OPERATORS[step.op]
            need = len(op.pops)
            operands = stack[len(stack) - need:] if need else []
            if need:
                del stack[len(stack) - need:]
            stack.append(op.lower(self, step, i, *operands))
        return stack

    # -- rendering: the dialect pass, then the text -----------------------------------------

    def render_select(self, sel: Select) -> tuple[str, object, Select]:
        """(text, renderer, the rewritten tree) of a SELECT in this compilation's dialect."""
        sel = self.dialect.apply(sel)
        text, r = render_select(sel)
        return text, r, sel

    def render_ask(self, patterns: tuple) -> tuple[str, tuple]:
        patterns = self.dialect.apply(patterns)
        return render_ask(patterns), patterns

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
                patterns, var = as_var(top)
                sel = Select((var,), patterns, distinct=True)
            text, r, sel = self.render_select(sel)
            return CompiledQuery(text, "select-entities", r.var(var)[1:], self._ordered(guards), steps=n,
                                 labels=labels, tree=("select", sel))
        if isinstance(top, BoolFrag):
            text, patterns = self.render_ask(top.patterns)
            return CompiledQuery(text, "ask", None, self._ordered(guards), steps=n, tree=("ask", patterns))
        if top.hoist is not None:                                  # Count
            text, r, sel = self.render_select(top.hoist)
            return CompiledQuery(text, "select-number", r.var(top.var)[1:], self._ordered(guards), steps=n,
                                 tree=("select", sel))
        operand, attribute, step = top.attr
        # The last QueryAttr is checked on its own rows, not by a guard query.
        guards = [g for g in guards if not (isinstance(g, (SingletonGuard, AttributeGuard)) and g.step == step)]
        if operand.constant:
            text, r, sel = self.render_select(Select((top.var,), top.patterns))
            check = AttrCheck(step, attribute, entity=operand.term.name)
        else:
            patterns, var = as_var(operand)
            text, r, sel = self.render_select(Select((var, top.var), (*patterns, Optional_((Triple(var, attribute,
                                                                                                       top.var),))),
                                                     distinct=True))
            check = AttrCheck(step, attribute, member_variable=r.var(var)[1:])
        return CompiledQuery(text, "select-number", r.var(top.var)[1:], self._ordered(guards), check, steps=n,
                             tree=("select", sel))

    @staticmethod
    def _ordered(guards: list[Guard]) -> tuple[Guard, ...]:
        return tuple(sorted(guards, key=lambda g: g.step))


# ---- prepared queries: compile one program per shape, substitute names for the rest ---------

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

    def __init__(self, schema: Schema, dialect: Dialect = PORTABLE):
        self.schema = schema
        self.dialect = dialect
        prefix = schema.term(schema.entity_namespace + "x")[:-1]     # "ske:" (or "<" without a prefix)
        self.entity_prefix = prefix if prefix.endswith(":") else None
        self.token = re.compile(re.escape(prefix) + r"([A-Za-z0-9_]+)") if self.entity_prefix else None
        self.prepared: dict[tuple, tuple] = {}
        self.compiled: dict[tuple, CompiledQuery] = {}

    def clear(self) -> None:
        self.prepared.clear()
        self.compiled.clear()

    def compile(self, steps: tuple[Step, ...], source: str | None = None) -> CompiledQuery:
        """The query of a program (or prefix) given as its steps; ``source`` locates errors.

        :raises ProgramError: from the type checker, for a program it refuses.
        """
        found = self.compiled.get(steps)
        if found is None:
            token = SCHEMA.set(self.schema)
            try:
                found = self._compile(steps, source)
            finally:
                SCHEMA.reset(token)
            if len(self.compiled) >= self.CACHE_MAX:
                self.compiled.clear()
            self.compiled[steps] = found
        return found

    def direct(self, steps: tuple[Step, ...]) -> CompiledQuery:
        """Compile without any cache or prepared shape (what the prepared path must equal)."""
        token = SCHEMA.set(self.schema)
        try:
            return self._lower(steps, None)
        finally:
            SCHEMA.reset(token)

    def _lower(self, steps: tuple[Step, ...], source: str | None) -> CompiledQuery:
        if not steps:
            raise ProgramTypeError("empty program", source)
        checked = check(Program(steps, source), self.schema, allow_prefix=True)
        compiler = _Compiler(steps, self.schema, self.dialect, checked.steps)
        return compiler.finish(compiler.run())

    def _compile(self, steps: tuple[Step, ...], source: str | None) -> CompiledQuery:
        shape = program_shape(steps, self.schema) if self.token is not None else None
        if shape is not None:
            key, names = shape
            prototype = self.prepared.get(key)
            if prototype is not None:
                return self._instantiate(prototype, names)
        compiled = self._lower(steps, source)
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
        tree = None if compiled.tree is None else (*compiled.tree[:2], old)
        return CompiledQuery(prepared.text(), compiled.form, compiled.variable, tuple(guards), check,
                             compiled.steps, prepared, compiled.labels, tree)


_COMPILERS: dict[tuple[int, str], Compiler] = {}


def compiler_for(schema: Schema, dialect: Dialect = PORTABLE) -> Compiler:
    """The (cached) :class:`Compiler` of a schema and a dialect."""
    key = (id(schema), dialect.name)
    found = _COMPILERS.get(key)
    if found is None or found.schema is not schema or found.dialect != dialect:
        if len(_COMPILERS) > 64:
            _COMPILERS.clear()
        found = _COMPILERS[key] = Compiler(schema, dialect)
    return found


def clear_caches() -> None:
    """Forget compiled queries and prepared shapes (benchmarks measure cold compilation)."""
    for compiler in _COMPILERS.values():
        compiler.clear()


def compile_program(program: Program, schema: Schema, dialect: Dialect = PORTABLE) -> CompiledQuery:
    """Compile a program (or a program prefix: its top-of-stack value) to one SPARQL query
    for the KB ``schema`` describes, in ``dialect`` (default: the portable text every
    engine answers correctly; :mod:`kopl2sparql.dialects`).

    Results are cached per schema by the program's steps (equivalently, its canonical text).

    :raises ProgramError: the type checker's verdict on a program it refuses (stack
        discipline, unknown names with a suggestion, domains and ranges), located in the
        program's text.
    """
    try:
        hash(program.steps)
    except TypeError:                      # e.g. a list as an argument of a hand-built Step
        raise ProgramTypeError(f"program steps must hold text arguments: {program.steps!r}") from None
    try:
        return compiler_for(schema, dialect).compile(program.steps, program.source)
    except ProgramError as exc:
        if exc.source is None:
            exc.source = program.source
        raise


__all__ = ["compile_program", "Compiler", "compiler_for", "CompiledQuery", "EntityGuard", "AttributeGuard",
           "SingletonGuard", "AttrCheck", "Guard", "Prepared", "clear_caches", "program_shape"]
