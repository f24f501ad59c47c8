"""Random well-typed full-KoPL programs drawn from a KB, for cross-checking engines.

Programs are anchored in the data so most have non-empty answers: a branch starts from a
real entity (``Find``) or a populated concept (``FindAll;FilterConcept``), follows real
facts (``Relate`` forward or backward), filters on values the current entity has (with
every operator, so some filters keep it and some drop it), tests qualifiers of the fact
that was just followed, and nests (And, Or, SelectBetween, QueryRelation*). Every one of
the 27 functions is drawn. Same KB and seed, same programs.
"""

from __future__ import annotations

import random
from collections import defaultdict

from kqapro.functions import FUNCTIONS
from kqapro.kb import KB
from kqapro.program import Program, Step, _validated
from kqapro.values import NO_UNIT, OPS, Value, format_date, format_number

_SUFFIX = {"string": "Str", "quantity": "Num", "year": "Year", "date": "Date"}


def value_text(value: Value) -> str:
    if value.type == "quantity":
        number = format_number(value.value)
        return number if value.unit == NO_UNIT else f"{number} {value.unit}"
    return value.text()


class _Sampler:
    def __init__(self, kb: KB, rng: random.Random, max_depth: int):
        self.kb, self.rng, self.max_depth = kb, rng, max_depth
        self.entity_ids = sorted(kb.entities)
        self.with_attributes = [e for e in self.entity_ids if kb.entities[e].attributes]
        # concepts small enough that FindAll;FilterConcept stays a modest set
        self.populated = sorted(c for c, members in kb.members.items() if 1 <= len(members) <= 2000)
        self.fact_of_head = defaultdict(list)
        self.fact_of_tail = defaultdict(list)
        for i, f in enumerate(kb.relations):
            if f.head in kb.entities and f.tail in kb.entities:
                self.fact_of_head[f.head].append(i)
                self.fact_of_tail[f.tail].append(i)
        self.qualified_relations = [i for i, f in enumerate(kb.relations) if f.qualifiers
                                    and f.head in kb.entities and f.tail in kb.entities]
        self.qualified_attributes = [(e, a) for e in self.entity_ids
                                     for a in kb.entities[e].attributes if a.qualifiers]
        self.steps: list[Step] = []

    # ---- building --------------------------------------------------------------------------
    def add(self, function: str, inputs, deps=()) -> int:
        self.steps.append(Step(function, tuple(inputs), tuple(deps)))
        return len(self.steps) - 1

    def op(self, kind: str) -> str:
        return "=" if kind == "string" else self.rng.choice(OPS)

    def near(self, value: Value) -> Value:
        """The value itself most of the time, else a neighbour (so comparisons go both ways)."""
        r = self.rng.random()
        if r < 0.6 or value.type == "string":
            return value
        if value.type == "quantity":
            delta = self.rng.choice([-10, -1, 1, 10, 100])
            number = value.value + delta if isinstance(value.value, int) else round(value.value + delta / 4, 2)
            return Value.quantity(number, value.unit)
        if value.type == "year":
            return Value.year(value.value + self.rng.choice([-5, -1, 1, 3]))
        y, m, d = value.value
        return Value.date((y + self.rng.choice([-1, 0, 1]), m, min(d, 28)))

    def maybe_qfilter(self, step: int, fact) -> int:
        """Often, when the fact just followed has qualifiers: test one (twice, sometimes)."""
        for _ in range(2):
            if not fact.qualifiers or self.rng.random() >= 0.55:
                break
            qkey, values = self.rng.choice(fact.qualifiers)
            q = self.rng.choice(values)
            fname = "QFilter" + _SUFFIX[q.type]
            target = self.near(q)
            if q.type == "date" and self.rng.random() < 0.3:
                fname, target = "QFilterYear", Value.year(q.year_of)
            inputs = [qkey, value_text(target)] + ([] if fname == "QFilterStr" else [self.op(q.type)])
            step = self.add(fname, inputs, [step])
        return step

    def start(self) -> tuple[int, str | None]:
        """A branch start: (step, a member of its output)."""
        if self.rng.random() < 0.75 or not self.populated:
            e = self.rng.choice(self.entity_ids)
            return self.add("Find", [self.kb.entities[e].name]), e
        c = self.rng.choice(self.populated)
        all_ = self.add("FindAll", [])
        step = self.add("FilterConcept", [self.kb.concepts[c].name], [all_])
        members = sorted(self.kb.members[c])
        return step, self.rng.choice(members)

    def entities(self, depth: int) -> tuple[int, str | None, str, object]:
        """(step, a member, 'entities'|'facts', the fact that reached the member or None)."""
        step, rep = self.start()
        kind, fact = "entities", None
        for _ in range(self.rng.randint(0, max(0, self.max_depth - depth))):
            r = self.rng.random()
            if r < 0.35 and rep is not None and (self.fact_of_head[rep] or self.fact_of_tail[rep]):
                forward = bool(self.fact_of_head[rep]) and (not self.fact_of_tail[rep] or self.rng.random() < 0.5)
                pool = self.fact_of_head[rep] if forward else self.fact_of_tail[rep]
                qualified = [i for i in pool if self.kb.relations[i].qualifiers]
                # qualified facts are a minority: prefer them half the time, for QFilter*
                i = self.rng.choice(qualified if qualified and self.rng.random() < 0.5 else pool)
                f = self.kb.relations[i]
                step = self.add("Relate", [f.relation, "forward" if forward else "backward"], [step])
                rep, kind, fact = (f.tail if forward else f.head), "facts", f
                step = self.maybe_qfilter(step, fact)
            elif r < 0.6 and rep is not None and self.kb.entities[rep].attributes:
                attributes = self.kb.entities[rep].attributes
                qualified = [a for a in attributes if a.qualifiers]
                a = self.rng.choice(qualified if qualified and self.rng.random() < 0.4 else attributes)
                fname = "Filter" + _SUFFIX[a.value.type]
                target = self.near(a.value)
                if a.value.type == "date" and self.rng.random() < 0.3:
                    fname, target = "FilterYear", Value.year(a.value.year_of)
                op = self.op(a.value.type)
                inputs = [a.key, value_text(target)] + ([] if fname == "FilterStr" else [op])
                step = self.add(fname, inputs, [step])
                kind, fact = "facts", a
                step = self.maybe_qfilter(step, fact)
            elif r < 0.85 and rep is not None and self.kb.entities[rep].concepts:
                concepts = sorted(self.kb.entity_concepts(rep))
                step = self.add("FilterConcept", [self.kb.concepts[self.rng.choice(concepts)].name], [step])
                kind, fact = "entities", None
            elif depth < self.max_depth:
                other, _, _, _ = self.entities(depth + 1)
                step = self.add(self.rng.choice(["And", "Or"]), [], [step, other])
                kind, fact = "entities", None
        return step, rep, kind, fact

    # ---- finishing ------------------------------------------------------------------------------
    def program(self) -> Program:
        self.steps = []
        final = self.rng.choice(["What", "Count", "SelectAmong", "SelectBetween", "QueryAttr",
                                 "QueryAttrUnderCondition", "QueryRelation", "QueryAttrQualifier",
                                 "QueryRelationQualifier", "Verify", "Verify"])
        getattr(self, "_" + final)()
        return _validated(Program(tuple(self.steps)))

    def _What(self):
        step, *_ = self.entities(0)
        self.add("What", [], [step])

    def _Count(self):
        step, *_ = self.entities(0)
        self.add("Count", [], [step])

    def _quantity_key(self, rep: str | None) -> str:
        keys = sorted({a.key for a in self.kb.entities[rep].attributes if a.value.type == "quantity"}) \
            if rep else []
        if not keys:
            keys = sorted(k for k, t in self.kb.attribute_keys.items() if "quantity" in t)
        return self.rng.choice(keys)

    def _SelectAmong(self):
        step, rep, _, _ = self.entities(0)
        self.add("SelectAmong", [self._quantity_key(rep), self.rng.choice(["largest", "smallest"])], [step])

    def _SelectBetween(self):
        a, rep, _, _ = self.entities(1)
        b, _, _, _ = self.entities(1)
        self.add("SelectBetween", [self._quantity_key(rep), self.rng.choice(["greater", "less"])], [a, b])

    def _queried(self) -> tuple[str, int] | None:
        """A values-giving step and the key whose values it gives."""
        r = self.rng.random()
        if r < 0.5:
            step, rep, _, _ = self.entities(0)
            keys = sorted({a.key for a in self.kb.entities[rep].attributes}) if rep else []
            key = self.rng.choice(keys or sorted(self.kb.attribute_keys))
            return key, self.add("QueryAttr", [key], [step])
        if r < 0.7 and self.qualified_attributes:
            e, a = self.rng.choice(self.qualified_attributes)
            qkey, values = self.rng.choice(a.qualifiers)
            find = self.add("Find", [self.kb.entities[e].name])
            return a.key, self.add("QueryAttrUnderCondition", [a.key, qkey, value_text(self.rng.choice(values))],
                                   [find])
        if r < 0.85 and self.qualified_attributes:
            e, a = self.rng.choice(self.qualified_attributes)
            qkey, _ = self.rng.choice(a.qualifiers)
            find = self.add("Find", [self.kb.entities[e].name])
            return qkey, self.add("QueryAttrQualifier", [a.key, value_text(a.value), qkey], [find])
        if self.qualified_relations:
            f = self.kb.relations[self.rng.choice(self.qualified_relations)]
            qkey, _ = self.rng.choice(f.qualifiers)
            h = self.add("Find", [self.kb.entities[f.head].name])
            t = self.add("Find", [self.kb.entities[f.tail].name])
            return qkey, self.add("QueryRelationQualifier", [f.relation, qkey], [h, t])
        return None

    def _QueryAttr(self):
        step, rep, _, _ = self.entities(0)
        keys = sorted({a.key for a in self.kb.entities[rep].attributes}) if rep else []
        self.add("QueryAttr", [self.rng.choice(keys or sorted(self.kb.attribute_keys))], [step])

    def _QueryAttrUnderCondition(self):
        if not self.qualified_attributes:
            return self._QueryAttr()
        e, a = self.rng.choice(self.qualified_attributes)
        qkey, values = self.rng.choice(a.qualifiers)
        step, _, _, _ = self._anchored(e)
        self.add("QueryAttrUnderCondition", [a.key, qkey, value_text(self.near(self.rng.choice(values)))], [step])

    def _QueryAttrQualifier(self):
        if not self.qualified_attributes:
            return self._QueryAttr()
        e, a = self.rng.choice(self.qualified_attributes)
        qkey, _ = self.rng.choice(a.qualifiers)
        step, _, _, _ = self._anchored(e)
        self.add("QueryAttrQualifier", [a.key, value_text(self.near(a.value)), qkey], [step])

    def _anchored(self, e: str):
        """A branch whose output contains ``e`` (most of the time)."""
        find = self.add("Find", [self.kb.entities[e].name])
        if self.rng.random() < 0.3 and self.kb.entities[e].concepts:
            concepts = sorted(self.kb.entity_concepts(e))
            return self.add("FilterConcept", [self.kb.concepts[self.rng.choice(concepts)].name], [find]), e, \
                "entities", None
        return find, e, "entities", None

    def _pair(self, qualified: bool):
        pool = self.qualified_relations if qualified and self.qualified_relations else \
            [i for h in self.fact_of_head.values() for i in h]
        f = self.kb.relations[self.rng.choice(pool)]
        h, _, _, _ = self._anchored(f.head)
        t, _, _, _ = self._anchored(f.tail)
        return f, h, t

    def _QueryRelation(self):
        _, h, t = self._pair(False)
        self.add("QueryRelation", [], [h, t])

    def _QueryRelationQualifier(self):
        f, h, t = self._pair(True)
        qkeys = [k for k, _ in f.qualifiers] or sorted(self.kb.qualifier_keys)
        self.add("QueryRelationQualifier", [f.relation, self.rng.choice(qkeys)], [h, t])

    def _Verify(self):
        got = self._queried()
        if got is None:
            return self._Count()
        key, step = got
        types = self.kb.attribute_keys.get(key) or self.kb.qualifier_keys.get(key)
        kind = sorted(types)[0]
        values = self._values_of(key)
        target = self.near(self.rng.choice(values)) if values else None
        if kind == "string":
            self.add("VerifyStr", [target.value if target else "x"], [step])
            return
        if kind == "quantity":
            self.add("VerifyNum", [value_text(target), self.rng.choice(OPS)], [step])
            return
        if target is not None and target.type == "date" and self.rng.random() < 0.6:
            self.add("VerifyDate", [format_date(target.value), self.rng.choice(OPS)], [step])
        else:
            year = target.year_of if target is not None else 2000
            self.add("VerifyYear", [str(year), self.rng.choice(OPS)], [step])

    def _values_of(self, key: str) -> list[Value]:
        cache = self.__dict__.setdefault("_value_cache", {})
        if key not in cache:
            values = []
            for e in self.entity_ids:
                for a in self.kb.entities[e].attributes:
                    if a.key == key:
                        values.append(a.value)
                    values.extend(v for k, vs in a.qualifiers if k == key for v in vs)
            for f in self.kb.relations:
                values.extend(v for k, vs in f.qualifiers if k == key for v in vs)
            cache[key] = values[:500]
        return cache[key]


def random_programs(kb: KB, n: int, seed: int = 0, max_depth: int = 3) -> list[Program]:
    """``n`` well-typed programs (each checked against ``kb``'s vocabulary by construction)."""
    rng = random.Random(seed)
    sampler = _Sampler(kb, rng, max_depth)
    return [sampler.program() for _ in range(n)]


def function_counts(programs) -> dict[str, int]:
    counts = {name: 0 for name in FUNCTIONS}
    for p in programs:
        for s in p.steps:
            counts[s.function] += 1
    return counts
