"""Operators that keep members of a set by a numeric attribute: FilterNum, Argmax, Argmin."""

from __future__ import annotations

from kopl2sparql.fragments import SetFrag, compare_filter, distribute, narrow, num_type
from kopl2sparql.kbindex import EMPTY, Multi
from kopl2sparql.operators.base import ATTRIBUTE, COMPARATOR, NUMBER, E, Operator
from kopl2sparql.program import ValueType
from kopl2sparql.runtime import parse_number
from kopl2sparql.sparqltree import Entity, Select, SubSelect, Triple, Var
from kopl2sparql.types import MANY, ONE, OPT, Value


class FilterNum(Operator):
    name, args, pops, pushes = "FilterNum", (ATTRIBUTE, COMPARATOR, NUMBER), (E,), E
    doc = "members with a value of the attribute that satisfies <op> number"

    def check(self, c, index, step, inputs):
        operand = inputs[0]
        domain = c.attribute_applies(index, step, operand, "the result is always empty", numeric=True)
        card = OPT if operand.cardinality.at_most_one else MANY
        return Value(ValueType.ENTITIES, index, c.narrow(operand.classes, domain), card)

    def run(self, it, step, i, members):
        _, values = it.attribute(step, i)
        fn = it.comparator(step.args[1], step, i)
        bound = parse_number(step.args[2], i)
        kept = []
        for entity in members:
            value = values.get(entity)
            if value is None:
                continue
            if type(value) is Multi:
                if any(fn(v, bound) for v in value):
                    kept.append(entity)
            elif fn(value, bound):
                kept.append(entity)
        return frozenset(kept)

    def lower(self, cc, step, i, a):
        info = cc.attribute(step.args[0], step, i)
        op = cc.comparator(step.args[1], step, i)
        bound = cc.number(step.args[2], step, i)

        def filter_num(s: SetFrag) -> SetFrag:
            value = Var(info.name)
            return SetFrag((*s.patterns, Triple(s.term, info.name, value),
                            compare_filter(value, info.datatype, op, bound, num_type(bound))), s.term,
                           narrow(s.classes, info.domain))
        return distribute(a, filter_num)


class Argmax(Operator):
    name, args, pops, pushes = "Argmax", (ATTRIBUTE,), (E,), E
    doc = "the member with the largest value (ties: smallest name; several values: its largest)"
    largest = True

    def check(self, c, index, step, inputs):
        operand = inputs[0]
        domain = c.attribute_applies(index, step, operand, "the result is always empty", numeric=True)
        attr = c.view.attributes[step.args[0]]
        # A ONE input keeps its member when every entity of the domain has the value.
        card = ONE if operand.cardinality is ONE and attr.total and c.within(operand.classes, domain) else OPT
        return Value(ValueType.ENTITIES, index, c.narrow(operand.classes, domain), card)

    def run(self, it, step, i, members):
        _, values = it.attribute(step, i)
        largest = self.largest
        best = best_value = None
        for entity in members:
            value = values.get(entity)
            if value is None:
                continue
            if type(value) is Multi:
                value = value[-1] if largest else value[0]
            if (best is None or (value > best_value if largest else value < best_value)
                    or (value == best_value and entity < best)):
                best, best_value = entity, value
        return EMPTY if best is None else frozenset((best,))

    def lower(self, cc, step, i, a):
        info = cc.attribute(step.args[0], step, i)
        value = Var(info.name)
        if isinstance(a.term, Entity):
            # The one candidate wins when it has the value: no sub-SELECT (Virtuoso 7.2 cannot
            # compile a sub-SELECT over one constant followed by an OPTIONAL).
            return SetFrag((*a.patterns, Triple(a.term, info.name, value)), a.term,
                           narrow(a.classes, info.domain))
        patterns, var = a.patterns, a.term
        sel = Select((var,), (*patterns, Triple(var, info.name, value)),
                     order=((value, self.largest), (var, False)), limit=1)
        return SetFrag((SubSelect(sel),), var, narrow(a.classes, info.domain), hoist=sel)


class Argmin(Argmax):
    name = "Argmin"
    doc = "the member with the smallest value (ties: smallest name; several values: its smallest)"
    largest = False


__all__ = ["FilterNum", "Argmax", "Argmin"]
