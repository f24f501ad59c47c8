"""Operators that answer yes or no: Compare, VerifyNum, VerifyRel."""

from __future__ import annotations

from kopl2sparql.fragments import BoolFrag, compare_filter, num_type
from kopl2sparql.kbindex import EMPTY
from kopl2sparql.operators.base import COMPARATOR, ENTITY, NUMBER, RELATION, B, E, N, Operator
from kopl2sparql.program import ValueType
from kopl2sparql.runtime import parse_number
from kopl2sparql.sparqltree import Entity, Triple
from kopl2sparql.types import Value, a_noun, classes_text


class Compare(Operator):
    name, args, pops, pushes = "Compare", (COMPARATOR,), (N, N), B
    doc = "left <op> right, yes/no"

    def check(self, c, index, step, inputs):
        return Value(ValueType.BOOL, index)

    def run(self, it, step, i, left, right):
        return it.comparator(step.args[0], step, i)(left, right)

    def lower(self, cc, step, i, left, right):
        op = cc.comparator(step.args[0], step, i)
        return BoolFrag((*left.patterns, *right.patterns,
                         compare_filter(left.var, left.datatype, op, right.var, right.datatype)))


class VerifyNum(Operator):
    name, args, pops, pushes = "VerifyNum", (COMPARATOR, NUMBER), (N,), B
    doc = "number <op> value, yes/no"

    def check(self, c, index, step, inputs):
        return Value(ValueType.BOOL, index)

    def run(self, it, step, i, value):
        fn = it.comparator(step.args[0], step, i)
        return fn(value, parse_number(step.args[1], i))

    def lower(self, cc, step, i, a):
        op = cc.comparator(step.args[0], step, i)
        bound = cc.number(step.args[1], step, i)
        return BoolFrag((*a.patterns, compare_filter(a.var, a.datatype, op, bound, num_type(bound))))


class VerifyRel(Operator):
    name, args, pops, pushes = "VerifyRel", (RELATION, ENTITY), (E,), B
    doc = "yes when some member has the relation to the entity (to one of them, for a label)"

    def check(self, c, index, step, inputs):
        schema = c.view.schema
        rel = c.view.relations[step.args[0]]
        operand = inputs[0]
        if not schema.overlaps(operand.classes, rel.domain):
            c.fail(f"VerifyRel({rel.name}, ...) needs {rel.domain} entities "
                   f"({rel.name}: {rel.domain} -> {rel.range}), but step {operand.step + 1} "
                   f"gives {operand.describe()}: the answer is always no", index, 0)
        target, _ = c.entity_classes(step.args[1])
        if not schema.overlaps(target, rel.range):
            c.fail(f"VerifyRel({rel.name}, {step.args[1]}): {rel.name} points to "
                   f"{a_noun(rel.range)}, not {a_noun(classes_text(target))}: the answer is always no",
                   index, 1)
        return Value(ValueType.BOOL, index)

    def run(self, it, step, i, members):
        adjacency = it.relation(step, i, it.forward)
        targets = it.entities(step.args[1], i)
        return any(not targets.isdisjoint(adjacency.get(e, EMPTY)) for e in members)

    def lower(self, cc, step, i, a):
        info = cc.relation(step.args[0], step, i)
        target = cc.entity_set(step.args[1], step, i)
        if isinstance(target.term, Entity):
            return BoolFrag((*a.patterns, Triple(a.term, info.name, target.term)))
        return BoolFrag((*a.patterns, Triple(a.term, info.name, target.term), *target.patterns))


__all__ = ["Compare", "VerifyNum", "VerifyRel"]
