"""Operators that make and combine entity sets: Find, Relate, RelateInv, And, Or, Diff."""

from __future__ import annotations

from kopl2sparql.fragments import ANY, SetFrag, alternatives, difference, distinct, distribute, either, intersect
from kopl2sparql.operators.base import ENTITY, RELATION, E, Operator
from kopl2sparql.runtime import neighbours
from kopl2sparql.sparqltree import Triple, Var, variable_base
from kopl2sparql.types import MANY, ONE, OPT, Value
from kopl2sparql.program import ValueType


class Find(Operator):
    name, args, pushes = "Find", (ENTITY,), E
    doc = "the entity named so, else every entity with that label"

    def check(self, c, index, step, inputs):
        classes, count = c.entity_classes(step.args[0])
        return Value(ValueType.ENTITIES, index, classes, ONE if count == 1 else MANY)

    def run(self, it, step, i):
        return it.entities(step.args[0], i)

    def lower(self, cc, step, i):
        return cc.entity_set(step.args[0], step, i)


class Relate(Operator):
    name, args, pops, pushes = "Relate", (RELATION,), (E,), E
    doc = "union of outgoing relation neighbours"
    forward = True

    def check(self, c, index, step, inputs):
        schema = c.view.schema
        rel = c.view.relations[step.args[0]]
        source, target = (rel.domain, rel.range) if self.forward else (rel.range, rel.domain)
        operand = inputs[0]
        if not schema.overlaps(operand.classes, source):
            c.fail(f"{self.name}({rel.name}) needs {source} entities ({rel.name}: {rel.domain} -> "
                   f"{rel.range}), but step {operand.step + 1} gives {operand.describe()}: "
                   "the result is always empty", index, 0)
        if self.forward and rel.functional and c.within(operand.classes, source):
            # One neighbour each when every member of the domain has exactly one.
            card = operand.cardinality if rel.total else (OPT if operand.cardinality.at_most_one else MANY)
        else:
            card = MANY
        return Value(ValueType.ENTITIES, index, None if target is None else frozenset((target,)), card)

    def run(self, it, step, i, members):
        return neighbours(it.relation(step, i, it.forward if self.forward else it.inverse), members)

    def lower(self, cc, step, i, a):
        info = cc.relation(step.args[0], step, i)
        forward = self.forward
        target = info.range if forward else info.domain
        classes = frozenset((target,)) if target else ANY

        def relate(s: SetFrag) -> SetFrag:
            s = distinct(s)
            b = Var(variable_base(classes))
            triple = Triple(s.term, info.name, b) if forward else Triple(b, info.name, s.term)
            return SetFrag((*s.patterns, triple), b, classes, hops=s.hops + 1 if isinstance(s.term, Var) else 0)
        return distribute(a, relate)


class RelateInv(Relate):
    name = "RelateInv"
    doc = "union of incoming relation neighbours"
    forward = False


class And(Operator):
    name, pops, pushes = "And", (E, E), E
    doc = "intersection"

    def check(self, c, index, step, inputs):
        left, right = inputs
        common = _disjoint_check(c, index, self.name, left, right, "the intersection is always empty")
        card = OPT if (left.cardinality.at_most_one or right.cardinality.at_most_one) else MANY
        return Value(ValueType.ENTITIES, index, common, card)

    def run(self, it, step, i, left, right):
        return left & right

    def lower(self, cc, step, i, a, b):
        return distribute(a, lambda x: distribute(b, lambda y: intersect(x, y)))


class Or(Operator):
    name, pops, pushes = "Or", (E, E), E
    doc = "union"

    def check(self, c, index, step, inputs):
        left, right = inputs
        classes = None if left.classes is None or right.classes is None else left.classes | right.classes
        return Value(ValueType.ENTITIES, index, classes, MANY)

    def run(self, it, step, i, left, right):
        return left | right

    def lower(self, cc, step, i, a, b):
        return either((*alternatives(a), *alternatives(b)), a.classes | b.classes)


class Diff(Operator):
    name, pops, pushes = "Diff", (E, E), E
    doc = "members of the first set not in the second"

    def check(self, c, index, step, inputs):
        left, right = inputs
        _disjoint_check(c, index, self.name, left, right,
                        "nothing is ever removed, the result is always the first set")
        card = OPT if left.cardinality.at_most_one else MANY
        return Value(ValueType.ENTITIES, index, left.classes, card)

    def run(self, it, step, i, left, right):
        return left - right

    def lower(self, cc, step, i, a, b):
        return distribute(a, lambda x: difference(x, b))


def _disjoint_check(c, index, op, left, right, outcome):
    """The classes both sets may share; a type error when they can share none."""
    common = c.view.schema.common(left.classes, right.classes)
    if common is not None and not common:
        c.fail(f"{op} of {left.describe()} (step {left.step + 1}) and "
               f"{right.describe()} (step {right.step + 1}): {outcome}", index)
    return common


__all__ = ["Find", "Relate", "RelateInv", "And", "Or", "Diff"]
