"""Operators that read a set: QueryName, QueryAttr, Count."""

from __future__ import annotations

from kopl2sparql.errors import ExecutionError
from kopl2sparql.fragments import AttributeGuard, NamesFrag, NumFrag, SingletonGuard, as_var
from kopl2sparql.kbindex import Multi
from kopl2sparql.operators.base import ATTRIBUTE, NAMES, E, N, Operator
from kopl2sparql.program import ValueType
from kopl2sparql.runtime import Names
from kopl2sparql.sparqltree import Agg, Optional_, Select, SubSelect, Triple, Var
from kopl2sparql.types import ONE, OPT, Value


class QueryName(Operator):
    name, pops, pushes = "QueryName", (E,), NAMES
    doc = "labels of the set (names where there is none) in name order, joined with |"

    def check(self, c, index, step, inputs):
        operand = inputs[0]
        return Value(ValueType.NAMES, index, operand.classes, operand.cardinality)

    def run(self, it, step, i, members):
        labels = it.labels
        ordered = sorted(members)
        return Names([labels.get(m, m) for m in ordered] if labels else ordered)

    def lower(self, cc, step, i, a):
        return NamesFrag(a)


class QueryAttr(Operator):
    name, args, pops, pushes = "QueryAttr", (ATTRIBUTE,), (E,), N
    doc = "the value of the attribute of a set of exactly one entity (a number, or text)"

    def check(self, c, index, step, inputs):
        operand = inputs[0]
        domain = c.attribute_applies(index, step, operand, "the value is undefined")
        attr = c.view.attributes[step.args[0]]
        # The value is defined (ONE) when the operand is one entity of the domain and every
        # entity there has exactly one value; else the engines check at run time (OPT:
        # StepType.needs_singleton_guard).
        defined = (operand.cardinality is ONE and attr.total and attr.functional
                   and c.within(operand.classes, domain))
        return Value(ValueType.NUMBER if attr.numeric else ValueType.STRING, index,
                     cardinality=ONE if defined else OPT)

    def run(self, it, step, i, members):
        attr, values = it.attribute(step, i)
        if len(members) != 1:
            got = "none" if not members else str(len(members))
            raise ExecutionError(f"QueryAttr({attr}) needs exactly one entity, got {got}", step=i)
        (entity,) = members
        value = values.get(entity)
        if value is None:
            raise ExecutionError(f"{entity} has no {attr}", step=i)
        if type(value) is Multi:
            raise ExecutionError(f"{entity} has {len(value)} values of {attr}", step=i)
        return value

    def lower(self, cc, step, i, a):
        info = cc.attribute(step.args[0], step, i)
        value = Var(info.name)
        if not cc.types[i - 1].needs_singleton_guard:
            pass            # the type checker proved the value defined: nothing to check at run time
        elif a.constant:
            # Without this, ASK would answer "no" for an entity lacking the value.
            cc.guards.append(AttributeGuard(i, a.term.name, info.name, cc.schema.entity_iri(a.term.name), info.iri))
        else:
            patterns, var = as_var(a)
            probe = Var(info.name)
            sel = Select((Agg("COUNT", var, Var("members"), distinct=True),
                          Agg("COUNT", probe, Var("values")), Agg("SAMPLE", var, Var("member"))),
                         (*patterns, Optional_((Triple(var, info.name, probe),))))
            cc.guards.append(SingletonGuard(i, info.name, cc.render_select(sel)[0]))
        return NumFrag((*a.patterns, Triple(a.term, info.name, value)), value, attr=(a, info.name, i),
                       datatype=info.datatype)


class Count(Operator):
    name, pops, pushes = "Count", (E,), N
    doc = "the number of distinct entities"

    def check(self, c, index, step, inputs):
        return Value(ValueType.NUMBER, index)

    def run(self, it, step, i, members):
        return len(members)

    def lower(self, cc, step, i, a):
        patterns, var = as_var(a)
        count = Var("count")
        sel = Select((Agg("COUNT", var, count, distinct=True),), patterns)
        return NumFrag((SubSelect(sel),), count, hoist=sel)


__all__ = ["QueryName", "QueryAttr", "Count"]
