"""What each stack value compiles to, and the set algebra that combines them.

A program is lowered step by step (each operator's ``lower`` in :mod:`kopl2sparql.operators`)
into *fragments*: an entity set is graph patterns binding a term to its members
(:class:`SetFrag`), a number a variable bound by patterns (:class:`NumFrag`), a yes/no value
patterns that have a solution or not (:class:`BoolFrag`). The helpers below intersect,
unite and subtract sets in the portable forms the compiler's module docstring explains
(:mod:`kopl2sparql.compiler`), keeping single entities as constants wherever they can be.

Guards are the run-time checks a compiled query carries (see the compiler's docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from kopl2sparql.sparqltree import (Apart, Entity, Exists, Filter, IsA, Minus, Never, NotIn, Num,
                                    Optional_, Select, SubSelect, Term, Triple, Union_, Unless, Values, Var,
                                    entity_class, subst, variable_base)

# ---- guards ------------------------------------------------------------------------------

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


# ---- fragments: what each stack value compiles to -------------------------------------------

@dataclass(frozen=True)
class SetFrag:
    """An entity set: the solutions of ``patterns`` bind ``term`` to its members.

    A constant ``term`` (from Find) stands for ``{e}`` when ``patterns`` have a solution;
    those patterns are then *closed* (no variable they bind is shared with the rest of the
    query), and a constant stays a constant through FilterNum, Argmax, And and Diff.
    ``hoist`` is set when the fragment is exactly one sub-SELECT that may become the
    outer query (Argmax as the last operator). ``alts`` are the operands of an Or
    (flattened; pure constants merged), which Diff removes one by one. ``hops`` counts the
    relation steps joined since the members were last made distinct (see :func:`distinct`).
    """

    patterns: tuple
    term: Term
    classes: frozenset
    hoist: Select | None = None
    alts: tuple = ()
    hops: int = field(default=0, compare=False)

    @property
    def constant(self) -> bool:
        """Exactly the one entity ``term``, whatever the KB (a ``Find``, unconditioned)."""
        return isinstance(self.term, Entity) and not self.patterns


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


ANY: frozenset = frozenset()         # classes not known statically (variables get "entity")


def entity_values(var: Var, names: tuple[str, ...]) -> tuple:
    """``VALUES ?x { ske:a ... }``: entities bound to a variable (the portable dialect writes
    their class triple first, see :mod:`kopl2sparql.dialects`)."""
    return (Values(var, names),)


DISTINCT_AFTER = 2
"""Relation steps from a set (not from one entity) a chain may join before its members are
made distinct again. Measured on embedded Oxigraph, 80-step Relate/RelateInv chains: 0.8 s
at 2, 3.9 s at 4 (and no answer within minutes without it)."""


def distinct(frag: SetFrag) -> SetFrag:
    """The same set as one ``SELECT DISTINCT`` sub-query once a chain has joined
    :data:`DISTINCT_AFTER` relation steps (else the set itself).

    A SPARQL join keeps duplicates: ``Relate(born_in);RelateInv(born_in)`` repeated gives
    each person once per path, so the rows grow exponentially with the chain (20 steps took
    50 s) where the set does not. Steps from one entity do not count, so the chains of the
    nine templates (at most two steps from a set) are written as they were.
    """
    if frag.hops < DISTINCT_AFTER or not isinstance(frag.term, Var) or frag.alts:
        return frag
    return SetFrag((SubSelect(Select((frag.term,), frag.patterns, distinct=True)),), frag.term, frag.classes)


def as_var(frag: SetFrag) -> tuple[tuple, Var]:
    """Patterns and a variable bound to the set's members (a constant becomes VALUES)."""
    if isinstance(frag.term, Var):
        return frag.patterns, frag.term
    var = Var(variable_base(frag.classes))
    return (*entity_values(var, (frag.term.name,)), *frag.patterns), var


def bound_to(frag: SetFrag, var: Var) -> tuple:
    """Patterns binding ``var`` (instead of the fragment's own variable) to the members."""
    if isinstance(frag.term, Var):
        return subst(frag.patterns, {frag.term: var})
    return (*entity_values(var, (frag.term.name,)), *frag.patterns)


def pure_constants(frag: SetFrag) -> tuple[str, ...] | None:
    """The members when the set is a plain list of entities (Find, Or of Finds), else None."""
    if isinstance(frag.term, Entity) and not frag.patterns:
        return (frag.term.name,)
    if isinstance(frag.term, Var) and frag.patterns and isinstance(frag.patterns[-1], Values) \
            and frag.patterns[-1].var is frag.term and frag.patterns == entity_values(frag.term, frag.patterns[-1].names):
        return frag.patterns[-1].names
    return None


def alternatives(frag: SetFrag) -> tuple[SetFrag, ...]:
    """The operands of an Or (flattened), or the set itself."""
    return frag.alts or (frag,)


def merge_alternatives(alts: tuple[SetFrag, ...]) -> tuple[SetFrag, ...]:
    """Or operands, simplified: plain entities merged into one VALUES per class (at the place
    of the first), an entity's conditional copies merged into one (dropped when the entity
    is there unconditionally), the rest kept in order."""
    pure: dict[str, None] = {}
    conditional: dict[Entity, list[SetFrag]] = {}
    order: list = []                      # "pure", an Entity, or a SetFrag with a variable
    for alt in alts:
        names = pure_constants(alt)
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
                by_class.setdefault(entity_class(name), []).append(name)
            for cls, names in sorted(by_class.items(), key=lambda kv: kv[0] or ""):
                classes = frozenset((cls,)) if cls else ANY
                if len(names) == 1:
                    out.append(SetFrag((), Entity(names[0]), classes))
                else:
                    var = Var(variable_base(classes))
                    out.append(SetFrag(entity_values(var, tuple(names)), var, classes))
        elif isinstance(item, Entity):
            if item.name in pure:
                continue
            group = conditional[item]
            if len(group) == 1:
                out.append(group[0])
            else:                          # e if C1 or e if C2: e if (C1 or C2)
                out.append(SetFrag((Union_(tuple(grounded(item, g.patterns) for g in group)),), item,
                                   group[0].classes))
        else:
            out.append(item)
    return tuple(out)


def plain(patterns: tuple) -> bool:
    """Only triples and comparisons (possibly in UNION branches): a constant may replace a variable."""
    return all(isinstance(n, (Triple, Filter)) or (isinstance(n, Union_) and all(map(plain, n.branches)))
               for n in patterns)


def membership(frag: SetFrag, entity: Entity) -> tuple:
    """A closed group of patterns that has a solution exactly when ``entity`` is in ``frag``
    (a set with a variable term): the patterns with the constant in place of the variable
    when they are plain, else the patterns and ``FILTER(?x = ske:e)``."""
    if plain(frag.patterns):
        return subst(frag.patterns, {frag.term: entity})
    return (*frag.patterns, Filter(frag.term, "=", entity))


def num_type(num: Num) -> str:
    return "decimal" if "." in num.text else "integer"


def compare_filter(left, left_type: str, op: str, right, right_type: str) -> Filter:
    """``FILTER(left op right)``, with the operands' datatypes (``integer``/``decimal``) for the
    dialect pass (:mod:`kopl2sparql.dialects` casts where a dialect needs it)."""
    return Filter(left, op, right, (left_type, right_type))


# ---- set algebra on fragments ---------------------------------------------------------------

def always_empty(frag: SetFrag) -> bool:
    """Empty whatever the KB (And of two different entities)."""
    return any(isinstance(n, Never) for n in frag.patterns)


def minus_safe(patterns) -> bool:
    """May ``patterns`` go inside a MINUS? Not with a sub-SELECT (Virtuoso 7.2 removes every
    row when the sub-SELECT repeats a triple pattern of the outer query, as in "the set
    minus its Argmax") nor with a variable bound to a single entity by VALUES."""
    for n in patterns:
        if isinstance(n, SubSelect) or (isinstance(n, Values) and len(n.names) == 1):
            return False
        inner = (n.branches if isinstance(n, Union_) else
                 (n.patterns,) if isinstance(n, (Minus, Exists, Optional_, Unless, Apart)) else ())
        if not all(minus_safe(b) for b in inner):
            return False
    return True


def either(alts, classes: frozenset) -> SetFrag:
    """The Or of ``alts``: one of them when the others are empty or the same entity, else a
    UNION binding one variable (with ``alts`` kept for Diff and for operators to map over)."""
    alts = tuple(x for alt in alts for x in alternatives(alt))
    alts = merge_alternatives(tuple(alt for alt in alts if not always_empty(alt)) or alts[:1])
    if len(alts) == 1:
        return alts[0]
    var = next((alt.term for alt in alts if isinstance(alt.term, Var) and pure_constants(alt) is None),
               None) or Var(variable_base(classes))
    return SetFrag((Union_(tuple(bound_to(alt, var) for alt in alts)),), var, classes, alts=alts)


def distribute(frag: SetFrag, operator) -> SetFrag:
    """``operator(frag)``; for an Or with entities among its operands (a list of entities
    included), the Or of ``operator`` on each operand and each entity, so that an entity
    stays a constant rather than a variable that VALUES binds to it (which Virtuoso 7.2
    mishandles once nested in a MINUS, NOT EXISTS or sub-SELECT)."""
    if not frag.alts and (isinstance(frag.term, Entity) or not frag.patterns
                          or not isinstance(frag.patterns[-1], Values)):
        return operator(frag)                  # not an Or: the common case, kept cheap
    alts = [one for alt in alternatives(frag) for one in one_by_one(alt)]
    if not any(isinstance(alt.term, Entity) for alt in alts):
        return operator(frag)
    results = [operator(alt) for alt in alts]
    return either(results, frozenset().union(*(r.classes for r in results)))


def one_by_one(frag: SetFrag) -> tuple[SetFrag, ...]:
    """A list of entities (Or of Finds) as one constant each; any other set as it is."""
    names = pure_constants(frag)
    if names is None or isinstance(frag.term, Entity):
        return (frag,)
    return tuple(SetFrag((), Entity(n), frag.classes) for n in names)


def grounded(entity: Entity, patterns: tuple) -> tuple:
    """A closed condition of ``entity`` as a group of its own, with a triple pattern in it:
    the entity's class triple when it has none (Virtuoso 7.2 answers a NOT EXISTS whose
    group holds only FILTERs wrongly)."""
    if any(isinstance(n, (Triple, IsA, SubSelect)) for n in patterns):
        return patterns
    cls = entity_class(entity.name)
    return (IsA(entity, cls), *patterns) if cls else patterns


def narrow(classes: frozenset, cls: str | None) -> frozenset:
    """Classes of the members that have an attribute of ``cls`` (unknown stays unknown)."""
    return classes if cls is None else classes & {cls}


def intersect(a: SetFrag, b: SetFrag) -> SetFrag:
    """And of two sets, neither an Or with an entity among its operands."""
    classes = a.classes & b.classes
    if isinstance(a.term, Entity) and isinstance(b.term, Entity):
        empty = () if a.term == b.term else (Never(),)
        return SetFrag((*a.patterns, *b.patterns, *empty), a.term, classes)
    if isinstance(a.term, Entity) or isinstance(b.term, Entity):
        # The constant stays a constant: e if (its own conditions and) e is in the other set.
        const, other = (a, b) if isinstance(a.term, Entity) else (b, a)
        names = pure_constants(other)
        if names is not None:
            member = () if const.term.name in names else (Never(),)
        elif plain(other.patterns):
            member = membership(other, const.term)
        else:
            member = (Exists(membership(other, const.term)),)
        patterns = (*const.patterns, *member) if const is a else (*member, *const.patterns)
        return SetFrag(patterns, const.term, classes)
    return SetFrag((*a.patterns, *bound_to(b, a.term)), a.term, classes)


def difference(a: SetFrag, b: SetFrag) -> SetFrag:
    """Diff ``a`` minus ``b`` (``a`` not an Or with an entity among its operands); ``b`` is
    removed one Or operand at a time: A - (B1 | B2) = A - B1 - B2."""
    return difference_of(a, [alt for alt in alternatives(b) if not always_empty(alt)])


def difference_of(a: SetFrag, alts: list[SetFrag]) -> SetFrag:
    own = pure_constants(a)
    if own is not None and isinstance(a.term, Var):
        # A list of entities minus entities is worked out here: {a, b} - {a} is b.
        removed = {n for alt in alts for n in (pure_constants(alt) or ())}
        if removed:
            kept = [SetFrag((), Entity(n), a.classes) for n in own if n not in removed]
            rest = [alt for alt in alts if pure_constants(alt) is None]
            if not kept:
                return SetFrag((*a.patterns, Never()), a.term, a.classes)
            return difference_of(either(kept, a.classes), rest)
    if isinstance(a.term, Entity):
        # e minus B: e if (its own conditions and) e is not in B.
        absent = []
        for alt in alts:
            names = pure_constants(alt)
            if names is not None:
                if a.term.name in names:
                    absent.append(Never())
            elif isinstance(alt.term, Entity):
                if alt.term == a.term:
                    absent.append(Exists(grounded(alt.term, alt.patterns), negated=True))
            else:
                absent.append(Exists(membership(alt, a.term), negated=True))
        return SetFrag((*a.patterns, *absent), a.term, a.classes)
    var = a.term
    removed: set[str] = set()
    absent = []
    for alt in alts:
        names = pure_constants(alt)
        if names is not None:
            removed.update(names)
        elif isinstance(alt.term, Entity):
            absent.append(Unless(var, alt.term, grounded(alt.term, alt.patterns)))
        elif minus_safe(alt.patterns):
            absent.append(Minus(bound_to(alt, var)))
        elif len(alt.patterns) == 1 and isinstance(alt.patterns[0], SubSelect):
            # An Argmax: its one member, if any, is not ?x. (Nothing may follow the sub-SELECT
            # inside that OPTIONAL: Virtuoso 7.2 moves such a FILTER into the sub-SELECT.)
            other = Var(var.base)
            absent.append(Apart(var, other, bound_to(alt, other)))
        else:
            other = Var(var.base)
            absent.append(Exists((*bound_to(alt, other), Filter(other, "=", var)), negated=True))
    if len(removed) == 1:
        absent.insert(0, Filter(var, "!=", Entity(removed.pop())))
    elif removed:
        absent.insert(0, NotIn(var, tuple(sorted(removed))))
    return SetFrag((*a.patterns, *absent), var, a.classes)
