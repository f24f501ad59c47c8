"""The two engines agree: random well-typed programs on the native interpreter and on
SPARQL over Oxigraph give the same answer, or both raise an ExecutionError.

Programs are drawn by hypothesis from a typed grammar that respects the ontology's
domains and ranges, with nesting well beyond the nine templates: chains in both
directions, And/Or/Diff of arbitrary branches, Argmax/Argmin followed by more hops,
FilterNum, Count against Count, VerifyNum, and QueryAttr on sets that are often not
singletons (so the error paths are compared too). Entities are drawn from the KB, plus a
few that do not exist. The run is derandomized: the same programs on every CI run.
"""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopl2sparql.errors import EngineDisagreement, ExecutionError
from kopl2sparql.interpreter import Interpreter
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import COMPARATORS, Program
from kopl2sparql.typecheck import check
from ontology import Schema
from store.executor import CrossCheckExecutor, NativeExecutor, SparqlExecutor

EXAMPLES = 10_500                  # one program per example: hypothesis shrinks a failure to it
TRACE_EVERY = 25                   # also compare full traces on one program in 25
PREFIX = {"Person": "Person", "City": "City", "Country": "Country", "Organization": "Org"}


@pytest.fixture(scope="module")
def index(kb_turtle, kb_schema):
    return KBIndex.from_turtle(kb_turtle, kb_schema)


@pytest.fixture(scope="module")
def engines(index, kb_store, kb_schema):
    return CrossCheckExecutor(NativeExecutor(index, kb_schema), SparqlExecutor(kb_store, kb_schema))


class Grammar:
    """Strategies for well-typed programs over one KB (lists of ``(op, *args)`` tuples).

    Each choice is one hypothesis draw from a precomputed list of productions (operator and
    its schema arguments together): draws are what generation costs.
    """

    def __init__(self, index: KBIndex, sch: Schema, max_depth: int = 3):
        self.index = index
        self.native = Interpreter(index, sch)
        self.max_depth = max_depth
        relations = list(sch.relations.values())
        attributes = list(sch.attributes.values())
        self.names = {cls: index.members[cls] for cls in PREFIX}
        # A name of the right form that the KB does not have (the largest id of its width).
        self.missing = {cls: f"{PREFIX[cls]}_{'9' * len(names[-1].split('_')[1])}"
                        for cls, names in self.names.items()}
        assert not any(m in index for m in self.missing.values())
        # One draw per entity: indices past the end (about 1 in 80) name a missing entity.
        self.entity_index = {cls: st.integers(0, len(names) + len(names) // 80)
                             for cls, names in self.names.items()}
        self.values = {a.name: st.sampled_from(sorted(set(index.values[a.name].values())))
                       for a in attributes}
        deltas = [0, 0, 1, -1, Decimal("0.5")]
        self.condition = st.sampled_from([(op, d) for op in COMPARATORS for d in deltas])
        self.comparator = st.sampled_from(COMPARATORS)
        self.coin = st.booleans()
        self.small = st.integers(0, 3000)

        def productions(cls: str, deep: bool) -> list[tuple]:
            out = [("Find",)] * 3
            if deep:
                out += [("Relate", r) for r in relations if r.range == cls] * 2
                out += [("RelateInv", r) for r in relations if r.domain == cls] * 2
                out += [("And",), ("Or",), ("Diff",)]
                for a in attributes:
                    if a.domain == cls:
                        out += [("Argmax", a), ("Argmin", a), ("FilterNum", a)]
            return out

        self.set_rules = {(cls, deep): st.sampled_from(productions(cls, deep))
                          for cls in PREFIX for deep in (False, True)}
        self.number_rules = st.sampled_from([("Count", cls) for cls in PREFIX]
                                            + [("QueryAttr", a) for a in attributes])
        self.bool_rules = st.sampled_from([("Compare",), ("Compare",), ("VerifyNum",)]
                                          + [("VerifyRel", r) for r in relations])
        self.top = st.sampled_from([(depth, kind) for depth in range(1, max_depth + 1)
                                    for kind in ("entities", "names", "number", "bool")])
        self.classes = st.sampled_from(list(PREFIX))

    def entity(self, draw, cls: str) -> str:
        names = self.names[cls]
        k = draw(self.entity_index[cls])
        return names[k] if k < len(names) else self.missing[cls]

    def _value_of(self, steps):
        try:
            return self.native.value(Program.of(*steps))
        except ExecutionError:
            return None

    # -- typed values ------------------------------------------------------------------

    def entity_set(self, draw, cls: str, depth: int) -> list[tuple]:
        rule = draw(self.set_rules[cls, depth > 0])
        op = rule[0]
        if op == "Find":
            return [("Find", self.entity(draw, cls))]
        if op == "Relate":
            return [*self.entity_set(draw, rule[1].domain, depth - 1), ("Relate", rule[1].name)]
        if op == "RelateInv":
            return [*self.entity_set(draw, rule[1].range, depth - 1), ("RelateInv", rule[1].name)]
        if op in ("And", "Or", "Diff"):
            return [*self.entity_set(draw, cls, depth - 1), *self.entity_set(draw, cls, depth - 1), (op,)]
        attr = rule[1]
        inner = self.entity_set(draw, cls, depth - 1)
        if op == "FilterNum":
            comparator, delta = draw(self.condition)
            bound = str(Decimal(draw(self.values[attr.name])) + delta)
            return [*inner, ("FilterNum", attr.name, comparator, bound)]
        return [*inner, (op, attr.name)]

    def number(self, draw, depth: int) -> list[tuple]:
        op, what = draw(self.number_rules)
        if op == "Count":
            return [*self.entity_set(draw, what, depth - 1), ("Count",)]
        return [*self.entity_set(draw, what.domain, depth - 1), ("QueryAttr", what.name)]

    def boolean(self, draw, depth: int) -> list[tuple]:
        rule = draw(self.bool_rules)
        if rule[0] == "Compare":
            return [*self.number(draw, depth), *self.number(draw, depth), ("Compare", draw(self.comparator))]
        if rule[0] == "VerifyNum":
            inner = self.number(draw, depth)
            comparator, delta = draw(self.condition)
            # Half the time the bound is at the true value, so =, >= and <= edges are hit.
            value = self._value_of(inner) if draw(self.coin) else None
            bound = str(Decimal(value) + delta) if value is not None else str(draw(self.small))
            return [*inner, ("VerifyNum", comparator, bound)]
        rel = rule[1]
        inner = self.entity_set(draw, rel.domain, depth - 1)
        target = None
        if draw(self.coin):              # half the time, a target that makes the answer yes
            members = self._value_of(inner) or ()
            neighbours = sorted({o for e in members for o in self.index.forward[rel.name].get(e, ())})
            if neighbours:
                target = draw(st.sampled_from(neighbours))
        return [*inner, ("VerifyRel", rel.name, target or self.entity(draw, rel.range))]

    def program(self) -> st.SearchStrategy[Program]:
        @st.composite
        def build(draw):
            depth, kind = draw(self.top)
            if kind == "number":
                steps = self.number(draw, depth)
            elif kind == "bool":
                steps = self.boolean(draw, depth)
            else:
                steps = self.entity_set(draw, draw(self.classes), depth)
                if kind == "names":
                    steps.append(("QueryName",))
            return Program.of(*steps)
        return build()


@pytest.mark.slow
def test_random_programs_agree_on_both_engines(index, engines, kb_schema):
    grammar = Grammar(index, kb_schema)
    stats: Counter = Counter()
    operators: Counter = Counter()
    distinct: set[str] = set()
    started = time.perf_counter()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(grammar.program())
    def agree(program):
        check(program, kb_schema)               # the grammar only makes well-typed programs
        stats["programs"] += 1
        distinct.add(program.canonical())
        operators.update(step.op for step in program)
        try:
            answer = engines.execute(program)   # raises EngineDisagreement on any difference
            stats[answer.kind] += 1
            stats["empty" if answer.is_empty() else "non-empty"] += 1
        except ExecutionError as exc:
            stats["error:" + ("unknown" if "unknown entity" in str(exc) else "queryattr")] += 1
        if stats["programs"] % TRACE_EVERY == 0:
            try:
                engines.trace(program)
            except ExecutionError:
                pass
            stats["traces"] += 1

    agree()
    elapsed = time.perf_counter() - started
    print(f"\ncross-checked {stats['programs']} random programs ({len(distinct)} distinct) "
          f"in {elapsed:.1f}s: {dict(stats)}")
    assert stats["programs"] >= 10_000 and len(distinct) >= 8_000
    # The generator really exercises every operator and every outcome.
    assert set(operators) == set(OPERATORS), set(OPERATORS) - set(operators)
    for key in ("entities", "number", "bool", "empty", "non-empty", "error:unknown", "error:queryattr"):
        assert stats[key] >= 50, (key, dict(stats))


def test_disagreement_shows_both_answers(index, kb_store, kb_schema):
    """A deliberately broken engine is caught, with both answers in the message."""

    class OffByOne(NativeExecutor):
        name = "broken"

        def execute(self, program):
            answer = super().execute(program)
            return type(answer).number(int(answer.values[0]) + 1) if answer.kind == "number" else answer

    engines = CrossCheckExecutor(OffByOne(index, kb_schema), SparqlExecutor(kb_store, kb_schema))
    program = Program.of(("Find", "City_0736"), ("RelateInv", "born_in"), ("Count",))
    truth = SparqlExecutor(kb_store, kb_schema).execute(program).canonical()
    with pytest.raises(EngineDisagreement) as info:
        engines.execute(program)
    message = str(info.value)
    assert "Find(City_0736);RelateInv(born_in);Count()" in message
    assert f"'{int(truth) + 1}'" in message and f"'{truth}'" in message


def test_error_on_one_side_only_is_a_disagreement(index, kb_store, kb_schema):
    class Refuses(NativeExecutor):
        name = "refuses"

        def execute(self, program):
            raise ExecutionError("no", step=1)

    engines = CrossCheckExecutor(Refuses(index, kb_schema), SparqlExecutor(kb_store, kb_schema))
    with pytest.raises(EngineDisagreement, match="error: execution error at step 1"):
        engines.execute(Program.of(("Find", "Person_00371"), ("QueryAttr", "birth_year")))


def test_both_raising_execution_error_is_agreement(engines):
    program = Program.of(("Find", "Org_0001"), ("RelateInv", "works_at"), ("QueryAttr", "birth_year"))
    with pytest.raises(ExecutionError, match="step 3: QueryAttr\\(birth_year\\) needs exactly one entity"):
        engines.execute(program)


def test_argmax_ties_go_to_the_smallest_id_on_both_engines(index, engines):
    """Ties are rare in random programs, so every country's natives are ranked here:
    birth years and heights take few values, so many maxima and minima are shared."""
    values = index.values
    ties = 0
    for country in index.members["Country"]:
        people = [p for c in index.inverse["located_in"].get(country, ()) for p in index.inverse["born_in"].get(c, ())]
        for attr in ("birth_year", "height_cm"):
            for op, pick in (("Argmax", max), ("Argmin", min)):
                best = pick(values[attr][p] for p in people)
                tied = sorted(p for p in people if values[attr][p] == best)
                ties += len(tied) > 1
                program = Program.of(("Find", country), ("RelateInv", "located_in"), ("RelateInv", "born_in"),
                                     (op, attr), ("QueryName",))
                assert engines.execute(program).canonical() == tied[0], program
    assert ties >= 100, ties
