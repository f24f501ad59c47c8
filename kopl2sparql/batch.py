"""Batch queries: one query for many programs of one prepared shape (the same template
with other entities), planned on the compiled query's tree.

The shape's entities become key variables ``?_k0``, ``?_k1``... bound by a ``VALUES``
block at the top of the outermost group: a join with the inline data, so each program's
solutions are exactly the rows carrying its entities. ASK becomes ``SELECT DISTINCT`` of
the keys (a key present means "yes"), COUNT gets ``GROUP BY`` the keys (a key absent means
0), other SELECTs project the keys first.

Shapes that do not qualify run one by one: singleton guards (a query per program anyway),
sub-SELECTs and ``ORDER BY … LIMIT`` (per program, not per batch), entities inside a
``VALUES`` of their own (Or of Finds, Count of a Find), and entities a nested group uses
outside a triple pattern or under ``EXISTS``: SPARQL evaluates inner groups before the
join with the ``VALUES`` block, so a key in a nested FILTER would be unbound there, and
not every endpoint substitutes outer bindings into ``EXISTS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kopl2sparql.fragments import SingletonGuard
from kopl2sparql.sparqltree import (ROWS_GAP, SCHEMA, Apart, Entity, Exists, Filter, IsA, Key, KeyRows, Minus, NotIn,
                                    Optional_, Renderer, Select, SubSelect, Triple, Union_, Unless, Values)
from ontology import Schema


class _NotBatchable(Exception):
    pass


@dataclass(frozen=True)
class BatchPlan:
    """The text of a batch query around its rows, and how to read its result."""

    head: str
    tail: str
    keys: tuple[int, ...]          # the slots (entity positions of the shape) the rows give
    form: str                      # the programs' form: ask, select-entities, select-number
    aggregate: bool                # COUNT: a program without rows counts 0

    @classmethod
    def make(cls, compiled, schema: Schema) -> "BatchPlan | None":
        """The plan for ``compiled``'s shape, or ``None`` when it must run one by one."""
        if compiled.prepared is None or compiled.tree is None or len(compiled.tree) < 3:
            return None
        if any(isinstance(g, SingletonGuard) for g in compiled.guards):
            return None
        kind, node, names = compiled.tree
        slot_of = {name: k for k, name in enumerate(names)}
        try:
            if kind == "select":
                if node.order or node.limit is not None:
                    return None
                where = _keyed(node.where, slot_of, depth=1, exists=False)
            else:
                where = _keyed(node, slot_of, depth=1, exists=False)
        except _NotBatchable:
            return None
        keys = tuple(sorted(set(compiled.prepared.slots)))
        key_nodes = tuple(Key(k) for k in keys)
        where = (KeyRows(keys), *where)
        aggregate = False
        if kind == "ask":
            select = Select(key_nodes, where, distinct=True)
        elif compiled.form == "select-number" and compiled.check is None:     # COUNT
            select = Select((*key_nodes, *node.projection), where, group_by=key_nodes)
            aggregate = True
        else:
            select = Select((*key_nodes, *node.projection), where, distinct=node.distinct)
        token = SCHEMA.set(schema)
        try:
            renderer = Renderer(schema)
            body = "\n".join(renderer.select(select))
            prefixes = schema.prefix_lines() + ("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
                                                if renderer.uses_xsd else "")
        finally:
            SCHEMA.reset(token)
        head, tail = f"{prefixes}\n{body}\n".split(ROWS_GAP)
        return cls(head, tail, keys, compiled.form, aggregate)

    def query(self, rows: Iterable[tuple[str, ...]], schema: Schema) -> str:
        """The batch query for ``rows`` (one tuple of entity names per program, in key order)."""
        term, iri = schema.term, schema.entity_iri
        data = " ".join("(" + " ".join(term(iri(name)) for name in row) + ")" for row in rows)
        return self.head + data + self.tail


def _keyed(patterns: tuple, slot_of: dict, depth: int, exists: bool) -> tuple:
    """``patterns`` with the shape's entities as keys; raises when a key would be out of scope."""
    return tuple(_node(n, slot_of, depth, exists) for n in patterns)


def _term(t, slot_of: dict, in_triple: bool, depth: int, exists: bool):
    if isinstance(t, Entity) and t.name in slot_of:
        if depth > 1 and (exists or not in_triple):
            raise _NotBatchable
        return Key(slot_of[t.name])
    return t


def _node(n, slot_of: dict, depth: int, exists: bool):
    inner = depth + 1
    if isinstance(n, Triple):
        return Triple(_term(n.s, slot_of, True, depth, exists), n.p, _term(n.o, slot_of, True, depth, exists))
    if isinstance(n, IsA):
        return IsA(_term(n.var, slot_of, True, depth, exists), n.cls)
    if isinstance(n, Filter):
        return Filter(_term(n.left, slot_of, False, depth, exists), n.op, _term(n.right, slot_of, False, depth, exists))
    if isinstance(n, Values):
        if any(name in slot_of for name in n.names):
            raise _NotBatchable
        return n
    if isinstance(n, NotIn):
        return NotIn(n.var, tuple(_key_name(name, slot_of, depth, exists) if name in slot_of else name
                                  for name in n.names), n.conjunction)
    if isinstance(n, Optional_):
        return Optional_(_keyed(n.patterns, slot_of, inner, exists))
    if isinstance(n, Union_):
        return Union_(tuple(_keyed(b, slot_of, inner, exists) for b in n.branches))
    if isinstance(n, Minus):
        return Minus(_keyed(n.patterns, slot_of, inner, exists))
    if isinstance(n, Exists):
        return Exists(_keyed(n.patterns, slot_of, inner, True), n.negated)
    if isinstance(n, Unless):
        return Unless(n.var, _term(n.entity, slot_of, False, depth, exists), _keyed(n.patterns, slot_of, inner, True))
    if isinstance(n, Apart):
        return Apart(n.var, n.member, _keyed(n.patterns, slot_of, inner, exists))
    if isinstance(n, SubSelect):
        raise _NotBatchable
    return n                                            # Never


def _key_name(name: str, slot_of: dict, depth: int, exists: bool):
    if depth > 1 or exists:
        raise _NotBatchable
    return Key(slot_of[name])


__all__ = ["BatchPlan"]
