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
from kopl2sparql.program import COMPARATORS, OPERATORS, Program
from kopl2sparql.typecheck import check
from ontology import schema
from store.executor import CrossCheckExecutor, NativeExecutor, SparqlExecutor

PROGRAMS_PER_EXAMPLE = 25
EXAMPLES = 420                     # 420 x 25 = 10,500 programs per run
TRACE_EVERY = 25                   # also compare full traces on one program in 25
PREFIX = {"Person": "Person", "City": "City", "Country": "Country", "Organization": "Org"}


@pytest.fixture(scope="module")
def index(kb_turtle):
    return KBIndex.from_turtle(kb_turtle)


@pytest.fixture(scope="module")
def engines(index, kb_store):
    return CrossCheckExecutor(NativeExecutor(index), SparqlExecutor(kb_store))


class Grammar:
    """Strategies for well-typed programs over one KB (lists of ``(op, *args)`` tuples)."""

    def __init__(self, index: KBIndex, max_depth: int = 3):
        self.index = index
        self.native = Interpreter(index)
        self.max_depth = max_depth
        sch = schema()
        self.relations = list(sch.relations.values())
        self.attributes = list(sch.attributes.values())
        self.names = {cls: index.members[cls] for cls in PREFIX}
        # A name of the right form that the KB does not have (one past the last id).
        self.missing = {cls: f"{PREFIX[cls]}_{'9' * len(names[-1].split('_')[1])}"
                        for cls, names in self.names.items()}
        assert not any(m in index for m in self.missing.values())
        self.values = {a.name: sorted(set(index.values[a.name].values())) for a in self.attributes}
        self._entity_index = {cls: st.integers(0, len(names) + len(names) // 80)
                              for cls, names in self.names.items()}

    # -- leaves ------------------------------------------------------------------------

    def entity(self, draw, cls: str) -> str:
        names = self.names[cls]
        # One draw: indices past the end (about 1 in 80) name an entity the KB lacks.
        k = draw(self._entity_index[cls])
        return names[k] if k < len(names) else self.missing[cls]

    def near(self, draw, value) -> str:
        """A number literal at, just above or just below ``value`` (hits =, >= and <= edges)."""
        delta = draw(st.sampled_from([0, 0, 1, -1, Decimal("0.5")]))
        return str(Decimal(value) + delta)

    def _value_of(self, steps):
        try:
            return self.native.value(Program.of(*steps))
        except ExecutionError:
            return None

    # -- typed values ------------------------------------------------------------------

    def entity_set(self, draw, cls: str, depth: int) -> list[tuple]:
        options = ["Find", "Find", "Find"]
        if depth > 0:
            if any(r.range == cls for r in self.relations):
                options += ["Relate", "Relate"]
            if any(r.domain == cls for r in self.relations):
                options += ["RelateInv", "RelateInv"]
            options += ["And", "Or", "Diff"]
            if any(a.domain == cls for a in self.attributes):
                options += ["Argmax", "Argmin", "FilterNum"]
        op = draw(st.sampled_from(options))
        if op == "Find":
            return [("Find", self.entity(draw, cls))]
        if op == "Relate":
            rel = draw(st.sampled_from([r for r in self.relations if r.range == cls]))
            return [*self.entity_set(draw, rel.domain, depth - 1), ("Relate", rel.name)]
        if op == "RelateInv":
            rel = draw(st.sampled_from([r for r in self.relations if r.domain == cls]))
            return [*self.entity_set(draw, rel.range, depth - 1), ("RelateInv", rel.name)]
        if op in ("And", "Or", "Diff"):
            return [*self.entity_set(draw, cls, depth - 1), *self.entity_set(draw, cls, depth - 1), (op,)]
        attr = draw(st.sampled_from([a for a in self.attributes if a.domain == cls]))
        inner = self.entity_set(draw, cls, depth - 1)
        if op == "FilterNum":
            bound = self.near(draw, draw(st.sampled_from(self.values[attr.name])))
            return [*inner, ("FilterNum", attr.name, draw(st.sampled_from(COMPARATORS)), bound)]
        return [*inner, (op, attr.name)]

    def number(self, draw, depth: int) -> list[tuple]:
        if draw(st.booleans()):
            cls = draw(st.sampled_from(list(PREFIX)))
            return [*self.entity_set(draw, cls, depth - 1), ("Count",)]
        attr = draw(st.sampled_from(self.attributes))
        return [*self.entity_set(draw, attr.domain, depth - 1), ("QueryAttr", attr.name)]

    def boolean(self, draw, depth: int) -> list[tuple]:
        op = draw(st.sampled_from(["Compare", "Compare", "VerifyNum", "VerifyRel"]))
        if op == "Compare":
            return [*self.number(draw, depth), *self.number(draw, depth),
                    ("Compare", draw(st.sampled_from(COMPARATORS)))]
        if op == "VerifyNum":
            inner = self.number(draw, depth)
            value = self._value_of(inner) if draw(st.booleans()) else None
            bound = self.near(draw, value) if value is not None else str(draw(st.integers(0, 3000)))
            return [*inner, ("VerifyNum", draw(st.sampled_from(COMPARATORS)), bound)]
        rel = draw(st.sampled_from(self.relations))
        inner = self.entity_set(draw, rel.domain, depth - 1)
        target = None
        if draw(st.booleans()):          # half the time, a target that makes the answer yes
            members = self._value_of(inner) or ()
            neighbours = sorted({o for e in members for o in self.index.forward[rel.name].get(e, ())})
            if neighbours:
                target = draw(st.sampled_from(neighbours))
        return [*inner, ("VerifyRel", rel.name, target or self.entity(draw, rel.range))]

    def program(self) -> st.SearchStrategy[Program]:
        @st.composite
        def build(draw):
            depth = draw(st.integers(1, self.max_depth))
            kind = draw(st.sampled_from(["entities", "names", "number", "bool"]))
            if kind in ("entities", "names"):
                steps = self.entity_set(draw, draw(st.sampled_from(list(PREFIX))), depth)
                if kind == "names":
                    steps.append(("QueryName",))
            elif kind == "number":
                steps = self.number(draw, depth)
            else:
                steps = self.boolean(draw, depth)
            return Program.of(*steps)
        return build()


def test_random_programs_agree_on_both_engines(index, engines):
    grammar = Grammar(index)
    stats: Counter = Counter()
    operators: Counter = Counter()
    started = time.perf_counter()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(grammar.program(), min_size=PROGRAMS_PER_EXAMPLE, max_size=PROGRAMS_PER_EXAMPLE,
                    unique_by=Program.canonical))
    def agree(programs):
        for program in programs:
            check(program)                      # the grammar only makes well-typed programs
            stats["programs"] += 1
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
                    stats["traces"] += 1
                except ExecutionError:
                    stats["traces"] += 1

    agree()
    elapsed = time.perf_counter() - started
    print(f"\ncross-checked {stats['programs']} random programs in {elapsed:.1f}s: {dict(stats)}")
    assert stats["programs"] >= 10_000
    # The generator really exercises every operator and every outcome.
    assert set(operators) == set(OPERATORS), set(OPERATORS) - set(operators)
    for key in ("entities", "number", "bool", "empty", "non-empty", "error:unknown", "error:queryattr"):
        assert stats[key] >= 50, (key, dict(stats))


def test_disagreement_shows_both_answers(index, kb_store):
    """A deliberately broken engine is caught, with both answers in the message."""

    class OffByOne(NativeExecutor):
        name = "broken"

        def execute(self, program):
            answer = super().execute(program)
            return type(answer).number(int(answer.values[0]) + 1) if answer.kind == "number" else answer

    engines = CrossCheckExecutor(OffByOne(index), SparqlExecutor(kb_store))
    program = Program.of(("Find", "City_0736"), ("RelateInv", "born_in"), ("Count",))
    truth = SparqlExecutor(kb_store).execute(program).canonical()
    with pytest.raises(EngineDisagreement) as info:
        engines.execute(program)
    message = str(info.value)
    assert "Find(City_0736);RelateInv(born_in);Count()" in message
    assert f"'{int(truth) + 1}'" in message and f"'{truth}'" in message


def test_error_on_one_side_only_is_a_disagreement(index, kb_store):
    class Refuses(NativeExecutor):
        name = "refuses"

        def execute(self, program):
            raise ExecutionError("no", step=1)

    engines = CrossCheckExecutor(Refuses(index), SparqlExecutor(kb_store))
    with pytest.raises(EngineDisagreement, match="error: execution error at step 1"):
        engines.execute(Program.of(("Find", "Person_00371"), ("QueryAttr", "birth_year")))


def test_both_raising_execution_error_is_agreement(engines):
    program = Program.of(("Find", "Org_0001"), ("RelateInv", "works_at"), ("QueryAttr", "birth_year"))
    with pytest.raises(ExecutionError, match="step 3: QueryAttr\\(birth_year\\) needs exactly one entity"):
        engines.execute(program)
