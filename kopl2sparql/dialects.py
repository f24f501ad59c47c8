"""SPARQL dialects: the rewrites one engine needs and another does not, as a pass over the
finished query tree (lowering → **dialect pass** → rendering), the way sqlglot keeps its
dialects apart from its parser.

Lowering (:mod:`kopl2sparql.operators`, :mod:`kopl2sparql.fragments`) writes comparisons,
``VALUES`` blocks and exclusions in their plain SPARQL 1.1 form. A :class:`Dialect` then says
which of these rewrites to apply:

``cast_mixed_numbers``
    ``xsd:decimal(?v)`` on an integer variable compared with a decimal (a fractional bound,
    a decimal attribute). Virtuoso 7.2.5 compares an ``xsd:integer`` with a fractional
    ``xsd:decimal`` wrongly when it answers from an index range (``186 <= 150.5`` holds).
``class_before_values``
    the entities' class triple (``?x a sk:Person .``) right before every ``VALUES`` of
    entities that share a class. Virtuoso 7.2 returns nothing for a UNION branch made only
    of ``VALUES`` and ignores a FILTER between a lone ``VALUES`` and an OPTIONAL.
``not_in_as_conjunction``
    ``FILTER(?x != ske:a && ?x != ske:b)`` instead of ``FILTER(?x NOT IN (ske:a, ske:b))``,
    on which Virtuoso 7.2's cost model overflows its stack inside a MINUS.

The other portable forms (no entity bound inside MINUS or NOT EXISTS, no sub-SELECT inside
MINUS or over one constant, a class triple in NOT EXISTS groups made of FILTERs alone)
change the algebra of the query, not its spelling, and stay in lowering; the compiler's
module docstring lists them.

:data:`PORTABLE` applies every rewrite: one text that every engine answers correctly
(Virtuoso, Oxigraph, Jena, rdflib); it is the default, what the dataset records and what
endpoints get. :data:`OXIGRAPH` is the embedded store's: the plain forms. Measured on the
embedded store with random programs of every operator (interleaved, best of three; the
numbers are in docs/BENCH.md): without the casts and with ``NOT IN`` 0.98x the portable
time on the programs whose text changes; without the class triples 0.88x (median).
"""

from __future__ import annotations

from dataclasses import dataclass

from kopl2sparql.sparqltree import (SCHEMA, Apart, Cast, Exists, Filter, IsA, Minus, NotIn, Optional_, Select,
                                    SubSelect, Union_, Unless, Values, Var)


@dataclass(frozen=True)
class Dialect:
    """Which rewrites a target engine gets (see the module docstring)."""

    name: str
    cast_mixed_numbers: bool = True
    class_before_values: bool = True
    not_in_as_conjunction: bool = True

    def apply(self, tree):
        """The rewritten tree: a :class:`Select`, or an ASK's pattern tuple (run with ``SCHEMA`` set)."""
        if isinstance(tree, Select):
            return self._select(tree)
        return self._group(tree)

    # ---- the pass ----------------------------------------------------------------------

    def _select(self, sel: Select) -> Select:
        return Select(sel.projection, self._group(sel.where), sel.distinct, sel.order, sel.limit, sel.group_by)

    def _group(self, patterns: tuple) -> tuple:
        out: list = []
        for node in patterns:
            if isinstance(node, Values) and self.class_before_values:
                cls = _shared_class(node.names)
                if cls is not None:
                    out.append(IsA(node.var, cls))
                out.append(node)
            elif isinstance(node, Filter):
                out.append(self._filter(node))
            elif isinstance(node, NotIn):
                out.append(NotIn(node.var, node.names, self.not_in_as_conjunction))
            elif isinstance(node, Optional_):
                out.append(Optional_(self._group(node.patterns)))
            elif isinstance(node, Union_):
                out.append(Union_(tuple(self._group(b) for b in node.branches)))
            elif isinstance(node, Minus):
                out.append(Minus(self._group(node.patterns)))
            elif isinstance(node, SubSelect):
                out.append(SubSelect(self._select(node.select)))
            elif isinstance(node, Exists):
                out.append(Exists(self._group(node.patterns), node.negated))
            elif isinstance(node, Unless):
                out.append(Unless(node.var, node.entity, self._group(node.patterns)))
            elif isinstance(node, Apart):
                out.append(Apart(node.var, node.member, self._group(node.patterns)))
            else:
                out.append(node)
        return tuple(out)

    def _filter(self, node: Filter) -> Filter:
        if not self.cast_mixed_numbers or node.types is None or node.types[0] == node.types[1]:
            return node
        left, right = node.left, node.right
        if node.types[0] == "integer" and isinstance(left, Var):
            left = Cast(left)
        if node.types[1] == "integer" and isinstance(right, Var):
            right = Cast(right)
        return Filter(left, node.op, right, node.types)


def _shared_class(names: tuple[str, ...]) -> str | None:
    """The first (by name) class every entity of ``names`` has, if any."""
    schema = SCHEMA.get()
    shared = None
    for name in names:
        types = schema.entity_classes(name) or frozenset()
        shared = types if shared is None else shared & types
        if not shared:
            return None
    return min(shared) if shared else None


PORTABLE = Dialect("portable")
"""Every rewrite: the text every engine answers correctly (the default)."""

OXIGRAPH = Dialect("oxigraph", cast_mixed_numbers=False, class_before_values=False, not_in_as_conjunction=False)
"""The embedded store's: the plain forms (faster there, same answers)."""

DIALECTS = {d.name: d for d in (PORTABLE, OXIGRAPH)}

__all__ = ["Dialect", "PORTABLE", "OXIGRAPH", "DIALECTS"]
