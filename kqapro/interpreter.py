"""The native full-KoPL interpreter: a program run on an in-memory :class:`~kqapro.kb.KB`.

Semantics are ``kopl``'s (:mod:`kqapro.values` for comparisons) except where a rule in
docs/FULL_KOPL.md says otherwise: sets not lists (``answers-are-sets``, ``count-distinct``),
entities only from Find/FindAll (``entities-only``), ties kept by SelectBetween
(``ties-kept``), one unit chosen by vote in SelectBetween/SelectAmong (``unit-vote``), an
empty set rather than an error when nothing can be selected (``empty-select``), backward
relations read off forward facts (``backward-derived``).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

from kqapro.answers import Answer
from kqapro.functions import FUNCTIONS
from kqapro.kb import KB
from kqapro.program import Program
from kqapro.typecheck import check
from kqapro.values import Value, compare

FactRef = tuple
"""``("a", entity, index)`` for an attribute fact, ``("r", index)`` for a relation fact."""


@dataclass
class Facts:
    """Entities, each with the facts that reached it."""

    pairs: set[tuple[str, FactRef]]

    @property
    def entities(self) -> frozenset[str]:
        return frozenset(e for e, _ in self.pairs)


@dataclass
class TraceStep:
    index: int
    function: str
    inputs: tuple[str, ...]
    dependencies: tuple[int, ...]
    kind: str
    size: int
    preview: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"step": self.index + 1, "function": self.function, "inputs": list(self.inputs),
                "dependencies": list(self.dependencies), "kind": self.kind, "size": self.size,
                "preview": self.preview}


PREVIEW = 10


class Interpreter:
    def __init__(self, kb: KB):
        self.kb = kb

    # ---- public ---------------------------------------------------------------------------
    def run(self, program: Program) -> Answer:
        return self._execute(program, None)

    def trace(self, program: Program, preview: int = PREVIEW) -> tuple[Answer, list[TraceStep]]:
        """The answer and every step's output, each with at most ``preview`` items."""
        steps: list[TraceStep] = []
        return self._execute(program, steps, preview), steps

    def _execute(self, program: Program, trace: list[TraceStep] | None, preview: int = PREVIEW) -> Answer:
        check(program, self.kb)
        memory: list[object] = []
        for i, step in enumerate(program.steps):
            args = [memory[d] for d in step.dependencies]
            out = getattr(self, "_" + step.function)(*args, *step.inputs)
            memory.append(out)
            if trace is not None:
                trace.append(self._describe(i, step, out, preview))
        out = memory[-1]
        # a program ending in QueryAttr* / Query*Qualifier answers with the value texts
        return out if isinstance(out, Answer) else value_answer(out)

    # ---- helpers --------------------------------------------------------------------------
    def _describe(self, i, step, out, preview: int = PREVIEW) -> TraceStep:
        """The step's output for a trace: its size and at most ``preview`` items (of a
        large set, the entities with the smallest ids: naming and sorting all of FindAll's
        tens of thousands would cost more than running the program)."""
        if isinstance(out, Answer):
            kind, items = out.kind, list(out.items)
        elif isinstance(out, (Facts, frozenset)):
            kind = "facts" if isinstance(out, Facts) else "entities"
            ids = out.entities if isinstance(out, Facts) else out
            chosen = ids if len(ids) <= 10 * preview else heapq.nsmallest(preview, ids)
            items = sorted({self.kb.name_of(e) for e in chosen})
            return TraceStep(i, step.function, step.inputs, step.dependencies, kind, len(ids), items[:preview])
        else:
            kind, items = "values", sorted({v.text() for v in out})
        return TraceStep(i, step.function, step.inputs, step.dependencies, kind, len(items), items[:preview])

    @staticmethod
    def _ids(x) -> frozenset[str]:
        return x.entities if isinstance(x, Facts) else x

    def _fact(self, ref: FactRef):
        if ref[0] == "a":
            return self.kb.entities[ref[1]].attributes[ref[2]]
        return self.kb.relations[ref[1]]

    def _attr_refs(self, ids, key):
        index = self.kb.attributes_by_key.get(key, {})
        for e in ids:
            for i in index.get(e, ()):
                yield e, ("a", e, i)

    def _key_type(self, key: str) -> str:
        kind = self.kb.key_type(key)
        return "string" if kind in (None, "mixed") else kind

    # ---- the 27 functions -------------------------------------------------------------------
    def _FindAll(self):
        return self.kb.entity_ids

    def _Find(self, name):
        return frozenset(self.kb.by_name.get(name, ()))

    def _FilterConcept(self, x, concept):
        members: set = set()
        for cid in self.kb.concepts_by_name.get(concept, ()):
            members |= self.kb.members.get(cid, frozenset())
        return self._ids(x) & members

    def _filter(self, x, key, text, op, kind):
        target = Value.parse(text, kind)
        return Facts({(e, ref) for e, ref in self._attr_refs(self._ids(x), key)
                      if compare(self._fact(ref).value, target, op)})

    def _FilterStr(self, x, key, value):
        return self._filter(x, key, value, "=", "string")

    def _FilterNum(self, x, key, value, op):
        return self._filter(x, key, value, op, "quantity")

    def _FilterYear(self, x, key, value, op):
        return self._filter(x, key, value, op, "year")

    def _FilterDate(self, x, key, value, op):
        return self._filter(x, key, value, op, "date")

    def _qfilter(self, x: Facts, qkey, text, op, kind):
        target = Value.parse(text, kind)
        return Facts({(e, ref) for e, ref in x.pairs
                      if any(compare(q, target, op) for q in self._fact(ref).qualifier(qkey))})

    def _QFilterStr(self, x, qkey, qvalue):
        return self._qfilter(x, qkey, qvalue, "=", "string")

    def _QFilterNum(self, x, qkey, qvalue, op):
        return self._qfilter(x, qkey, qvalue, op, "quantity")

    def _QFilterYear(self, x, qkey, qvalue, op):
        return self._qfilter(x, qkey, qvalue, op, "year")

    def _QFilterDate(self, x, qkey, qvalue, op):
        return self._qfilter(x, qkey, qvalue, op, "date")

    def _Relate(self, x, relation, direction):
        pairs = set()
        if direction == "forward":
            for e in self._ids(x):
                for i in self.kb.outgoing.get((relation, e), ()):
                    pairs.add((self.kb.relations[i].tail, ("r", i)))
        else:
            for e in self._ids(x):
                for i in self.kb.incoming.get((relation, e), ()):
                    pairs.add((self.kb.relations[i].head, ("r", i)))
        return Facts(pairs)

    def _And(self, a, b):
        return self._ids(a) & self._ids(b)

    def _Or(self, a, b):
        return self._ids(a) | self._ids(b)

    def _What(self, x):
        return Answer.of("names", (self.kb.name_of(e) for e in self._ids(x)))

    def _Count(self, x):
        return Answer.count(len(self._ids(x)))

    def _select(self, ids, key, largest: bool) -> Answer:
        candidates = [(e, self._fact(ref).value) for e, ref in self._attr_refs(ids, key)]
        candidates = [(e, v) for e, v in candidates if v.type == "quantity"]
        if not candidates:
            return Answer.of("names", ())
        votes = Counter(v.unit for _, v in candidates)
        unit = min(votes, key=lambda u: (-votes[u], u))
        numbers = [(e, float(v.value)) for e, v in candidates if v.unit == unit]
        best = (max if largest else min)(n for _, n in numbers)
        return Answer.of("names", (self.kb.name_of(e) for e, n in numbers if n == best))

    def _SelectBetween(self, a, b, key, op):
        return self._select(self._ids(a) | self._ids(b), key, op == "greater")

    def _SelectAmong(self, x, key, op):
        return self._select(self._ids(x), key, op == "largest")

    def _QueryAttr(self, x, key):
        return {self._fact(ref).value for _, ref in self._attr_refs(self._ids(x), key)}

    def _QueryAttrUnderCondition(self, x, key, qkey, qvalue):
        target = Value.parse(qvalue, self._key_type(qkey))
        out = set()
        for _, ref in self._attr_refs(self._ids(x), key):
            fact = self._fact(ref)
            if any(compare(q, target, "=") for q in fact.qualifier(qkey)):
                out.add(fact.value)
        return out

    def _QueryRelation(self, a, b):
        names = set()
        tails = self._ids(b)
        for h in self._ids(a):
            for t in tails:
                for i in self.kb.between.get((h, t), ()):
                    names.add(self.kb.relations[i].relation)
        return Answer.of("relations", names)

    def _QueryAttrQualifier(self, x, key, value, qkey):
        target = Value.parse(value, self._key_type(key))
        out = set()
        for _, ref in self._attr_refs(self._ids(x), key):
            fact = self._fact(ref)
            if compare(fact.value, target, "="):
                out.update(fact.qualifier(qkey))
        return out

    def _QueryRelationQualifier(self, a, b, relation, qkey):
        out = set()
        tails = self._ids(b)
        for h in self._ids(a):
            for t in tails:
                for i in self.kb.between.get((h, t), ()):
                    fact = self.kb.relations[i]
                    if fact.relation == relation:
                        out.update(fact.qualifier(qkey))
        return out

    def _verify(self, values, text, op, kind) -> Answer:
        target = Value.parse(text, kind)
        hits = [compare(v, target, op) for v in values]
        if hits and all(hits):
            return Answer.verdict("yes")
        return Answer.verdict("no" if not any(hits) else "not sure")

    def _VerifyStr(self, values, value):
        return self._verify(values, value, "=", "string")

    def _VerifyNum(self, values, value, op):
        return self._verify(values, value, op, "quantity")

    def _VerifyYear(self, values, value, op):
        return self._verify(values, value, op, "year")

    def _VerifyDate(self, values, value, op):
        return self._verify(values, value, op, "date")


def value_answer(values) -> Answer:
    return Answer.of("values", (v.text() for v in values))


assert all(hasattr(Interpreter, "_" + name) for name in FUNCTIONS)
