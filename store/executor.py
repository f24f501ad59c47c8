"""Executors: one protocol, the native engine and SPARQL on a store, and a cross-check of two.

Every executor returns the same :class:`~kopl2sparql.answer.Answer` (kind + canonical
values) and raises the same errors: :class:`ProgramError` for programs that are not well
typed, :class:`ExecutionError` for well-typed programs the KB cannot answer (unknown
entity, ``QueryAttr`` on anything but one entity having the attribute).

Executors are built for one KB: its :class:`~ontology.Schema` and its data (an index, a
store or an endpoint). ``synkqa.benchmark.executors.get_executor`` builds them for the SynKQA-Pro KB
or any Turtle file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Union, runtime_checkable

import pyoxigraph as ox

from kopl2sparql.answer import Answer
from kopl2sparql.batch import BatchPlan
from kopl2sparql.dialects import PORTABLE, Dialect
from kopl2sparql.compiler import AttributeGuard, CompiledQuery, EntityGuard, SingletonGuard, compile_program
from kopl2sparql.errors import EngineDisagreement, ExecutionError, ProgramError, StoreError
from kopl2sparql.interpreter import Interpreter, TraceStep
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.program import Program
from kopl2sparql.typecheck import clear_check_cache, ensure_checked
from ontology import RDF_TYPE, Schema
from store.oxigraph import OxigraphStore
from store.results import SelectResult, term_value

BACKENDS = ("native", "oxigraph")

OCCURS = "occurs"
"""The fact "the entity occurs in some triple" (for entities the schema knows without a type)."""

BATCH_SIZE = 256
"""Programs per batched query: big enough to spread the per-query cost (about 15 µs in
pyoxigraph, a round trip over HTTP), small enough to keep VALUES joins cheap."""
FACTS_PER_QUERY = 500
"""Facts per fact-check query against an endpoint (keeps requests to a few kB)."""


@runtime_checkable
class Executor(Protocol):
    """Runs programs on some engine. ``name`` says which (``native``, ``oxigraph``, a URL)."""

    name: str

    def execute(self, program: Program) -> Answer:
        """The program's answer. :raises ProgramError, ExecutionError:"""
        ...

    def trace(self, program: Program) -> list[TraceStep]:
        """Every step's value (on ExecutionError the steps done so far are on ``error.trace``)."""
        ...

    def fresh(self) -> "Executor":
        """A new executor on the same KB that remembers nothing from earlier programs."""
        ...


# ---- type checking before execution ------------------------------------------------------

typecheck = ensure_checked
"""The type checker, cached per program shape (:func:`kopl2sparql.typecheck.ensure_checked`)."""
clear_typecheck_cache = clear_check_cache


class NativeExecutor:
    """The Python interpreter over a :class:`KBIndex` read from RDF."""

    name = "native"

    def __init__(self, index: KBIndex, schema: Schema):
        self.index = index
        self.schema = schema
        self.interpreter = Interpreter(index, schema)

    def fresh(self) -> "NativeExecutor":
        """A new executor over the same KB with nothing remembered (for timed runs)."""
        return NativeExecutor(self.index, self.schema)

    def execute(self, program: Program) -> Answer:
        return self.interpreter.run(program)          # the interpreter type-checks first

    def trace(self, program: Program) -> list[TraceStep]:
        return self.interpreter.trace(program)

    def execute_many(self, programs: Sequence[Program], *, workers: int = 1) -> list[Outcome]:
        """Every program's outcome, in order: its Answer, or the error it raises.

        ``workers > 1`` splits the list over that many forked processes (Linux/macOS),
        which share the index copy-on-write; below :data:`PARALLEL_MIN` programs, or where
        fork is unavailable, it runs here.
        """
        if workers > 1 and len(programs) >= PARALLEL_MIN and _can_fork():
            return _forked(self, list(programs), workers)
        return [_outcome_of(self.execute, p) for p in programs]


Outcome = Union[Answer, ExecutionError, ProgramError]
"""What ``execute_many`` returns per program: the answer, or the error ``execute`` raises."""

PARALLEL_MIN = 2000
"""Below this many programs a batch is not worth forking for (a pool costs ~30 ms)."""


def _outcome_of(run, program) -> Outcome:
    try:
        return run(program)
    except (ExecutionError, ProgramError) as exc:
        return exc


def _can_fork() -> bool:
    import multiprocessing
    return "fork" in multiprocessing.get_all_start_methods()


_FORKED = None   # (executor, programs) a forked worker reads: inherited, never pickled


def _forked_range(bounds: tuple[int, int]) -> list[Outcome]:
    executor, programs = _FORKED
    return executor.execute_many(programs[bounds[0]:bounds[1]])    # outcomes pickle, errors too


def _forked(executor, programs: list[Program], workers: int) -> list[Outcome]:
    """Run ``executor.execute_many`` on ``workers`` forked processes, one contiguous range each.

    The children inherit the executor and the programs (copy-on-write); only the ranges go
    to them and only the outcomes come back.
    """
    import multiprocessing

    global _FORKED
    size = -(-len(programs) // workers)
    ranges = [(i, min(i + size, len(programs))) for i in range(0, len(programs), size)]
    _FORKED = (executor, programs)
    try:
        with multiprocessing.get_context("fork").Pool(len(ranges)) as pool:
            parts = pool.map(_forked_range, ranges)
    finally:
        _FORKED = None
    return [outcome for part in parts for outcome in part]


# ---- SPARQL on a store ---------------------------------------------------------------------

class SparqlExecutor:
    """Compiles programs to SPARQL and runs them on ``store``.

    ``store`` is anything with ``query(sparql) -> SelectResult | bool``: an
    :class:`~store.oxigraph.OxigraphStore` or a remote ``EndpointStore``. Facts the guards
    establish (an entity exists, an entity has an attribute) are remembered, since the KB is
    read-only: once its entities are known a template program costs one query.
    """

    def __init__(self, store, schema: Schema, name: str = "oxigraph", dialect: Dialect = PORTABLE):
        self.store = store
        self.schema = schema
        self.name = name
        self.dialect = dialect           # the SPARQL forms this engine gets (kopl2sparql.dialects)
        self._known: set[tuple[str, str]] = set()     # (entity IRI, property IRI) found
        # An in-process pyoxigraph store is queried directly: the compiler only emits
        # read-only SELECT/ASK text, so OxigraphStore.query's update screening and row
        # limits are not needed, and a fact is one triple-index lookup instead of a query.
        self._raw = store.raw if isinstance(store, OxigraphStore) else None
        self._batch_plans: dict[tuple, _BatchPlan | None] = {}

    def fresh(self) -> "SparqlExecutor":
        """A new executor over the same store with no remembered facts or batch plans."""
        return SparqlExecutor(self.store, self.schema, name=self.name, dialect=self.dialect)

    def compile(self, program: Program) -> CompiledQuery:
        """The program's query for this executor's KB and dialect."""
        return compile_program(program, self.schema, self.dialect)

    def execute(self, program: Program) -> Answer:
        typecheck(program, self.schema)
        return self.run_compiled(compile_program(program, self.schema, self.dialect))

    def trace(self, program: Program) -> list[TraceStep]:
        typecheck(program, self.schema)
        steps: list[TraceStep] = []
        try:
            for n, step in enumerate(program.steps, 1):
                value = self.run_compiled(compile_program(program.prefix(n), self.schema, self.dialect))
                steps.append(TraceStep(n, step.text(), value))
        except ExecutionError as exc:
            exc.trace = steps
            raise
        return steps

    def run_compiled(self, compiled: CompiledQuery) -> Answer:
        """Check the guards in step order, run the query, decode the result.

        Errors come from the earliest failing step, as in the native engine: a missing
        fact at step k is reported only after the singleton guards of steps before k pass.
        """
        missing = self._missing_fact(compiled)
        for guard in compiled.guards:
            if isinstance(guard, SingletonGuard):
                if missing is not None and guard.step >= missing.step:
                    break
                self._check_singleton(guard)
        if missing is not None:
            raise _fact_error(missing)
        result = self._query(compiled.sparql)
        return decode(compiled, result, self.schema)

    def _query(self, sparql: str):
        raw = self._raw
        if raw is None:
            return self.store.query(sparql)
        try:
            result = raw.query(sparql)
            if isinstance(result, ox.QueryBoolean):
                return bool(result)
            variables = tuple(v.value for v in result.variables)
            return SelectResult(variables, [tuple(map(term_value, solution)) for solution in result])
        except (SyntaxError, OSError, RuntimeError) as exc:
            raise StoreError(f"query failed: {exc}") from None

    def _fact(self, guard) -> tuple[str | None, str] | None:
        """The fact a guard needs: ``(entity IRI, property IRI)``, or ``(IRI, OCCURS)`` for an
        entity the schema knows without a type (it exists where it occurs, as the native index
        has it); ``None`` for guards that are queries of their own."""
        if isinstance(guard, EntityGuard):
            untyped = self.schema.entity_types.get(guard.name) == frozenset()
            return guard.iri, OCCURS if untyped else RDF_TYPE
        if isinstance(guard, AttributeGuard):
            return guard.iri, guard.attribute_iri
        return None

    def _facts(self, compiled: CompiledQuery):
        return (f for f in map(self._fact, compiled.guards) if f is not None)

    def _facts_found(self, facts) -> set[tuple[str, str]]:
        """Which (entity IRI, property IRI) facts hold: one query (or index lookups) for all.

        A fact about an entity the KB cannot name (IRI ``None``) never holds.
        """
        facts = [f for f in facts if f[0] is not None]
        if not facts:
            return set()
        raw = self._raw
        if raw is not None:
            graph = ox.DefaultGraph()

            def holds(iri: str, prop: str) -> bool:
                node = ox.NamedNode(iri)
                if prop == OCCURS:
                    return (next(iter(raw.quads_for_pattern(node, None, None, graph)), None) is not None or
                            next(iter(raw.quads_for_pattern(None, None, node, graph)), None) is not None)
                return next(iter(raw.quads_for_pattern(node, ox.NamedNode(prop), None, graph)), None) is not None
            return {(iri, prop) for iri, prop in facts if holds(iri, prop)}
        found: set[tuple[str, str]] = set()
        occurs = [iri for iri, prop in facts if prop == OCCURS]
        facts = [f for f in facts if f[1] != OCCURS]
        for start in range(0, len(occurs), FACTS_PER_QUERY):
            values = " ".join(f"<{iri}>" for iri in occurs[start:start + FACTS_PER_QUERY])
            result = self.store.query("SELECT DISTINCT ?entity WHERE {\n"
                                      f"  VALUES ?entity {{ {values} }}\n"
                                      "  { ?entity ?p ?o } UNION { ?s ?p ?entity }\n}")
            found |= {(str(row[0]), OCCURS) for row in _select(result).rows}
        for start in range(0, len(facts), FACTS_PER_QUERY):
            # IRIs come from the schema (parsed RDF) or a name the compiler found plain
            # ([A-Za-z0-9_]+) in the entity namespace, so they are safe between < and >.
            rows = " ".join(f"(<{iri}> <{prop}>)" for iri, prop in facts[start:start + FACTS_PER_QUERY])
            result = self.store.query("SELECT DISTINCT ?entity ?property WHERE {\n"
                                      f"  VALUES (?entity ?property) {{ {rows} }}\n"
                                      "  ?entity ?property ?value .\n}")
            found |= {(str(e), p) for e, p in _select(result).rows}
        return found

    def _missing_fact(self, compiled: CompiledQuery) -> EntityGuard | AttributeGuard | None:
        """The first entity or attribute guard that fails (one query for all unknown facts)."""
        pending = {}
        for g in compiled.guards:
            fact = self._fact(g)
            if fact is None:
                continue
            if fact not in self._known:
                pending.setdefault(fact, g)
        if not pending:
            return None
        found = self._facts_found(pending)
        self._known |= found
        return min((g for fact, g in pending.items() if fact not in found), key=lambda g: g.step, default=None)

    # ---- many programs at once ----------------------------------------------------------

    def execute_many(self, programs: Sequence[Program], *, batch_size: int = BATCH_SIZE,
                     workers: int = 1) -> list[Outcome]:
        """Every program's outcome, in order: its Answer, or the error it raises.

        The same answers and errors as :meth:`execute`, with fewer queries: the facts all
        programs need are checked together, and programs of one prepared shape (the same
        template with other entities) run as one query per ``batch_size`` programs, their
        entities bound by ``VALUES`` and the rows split by entity again (see
        :class:`_BatchPlan` for which shapes qualify; the others run one by one).
        ``workers > 1`` runs the queries from that many threads (pyoxigraph evaluates
        without holding the GIL; an endpoint answers several requests at once).
        """
        outcomes: list[Outcome | None] = [None] * len(programs)
        compiled: list[tuple[int, CompiledQuery]] = []
        for i, program in enumerate(programs):
            try:
                typecheck(program, self.schema)
                compiled.append((i, compile_program(program, self.schema, self.dialect)))
            except ProgramError as exc:
                outcomes[i] = exc
        # Every fact any program needs, known or not, in one go.
        pending = {fact for _, c in compiled for fact in self._facts(c) if fact not in self._known}
        found = self._facts_found(sorted(pending))
        self._known |= found
        missing = pending - found
        groups: dict[tuple, list[tuple[int, CompiledQuery]]] = {}
        singles: list[tuple[int, CompiledQuery]] = []
        for i, c in compiled:
            plan = self._batch_plan(c)
            if plan is None:
                singles.append((i, c))
                continue
            failed = min((g for g in c.guards if self._fact(g) in missing), key=lambda g: g.step, default=None)
            if failed is not None:
                outcomes[i] = _fact_error(failed)
            else:
                groups.setdefault(plan.key, []).append((i, c))
        jobs = [(self._batch_plans[key], members[start:start + batch_size])
                for key, members in groups.items() for start in range(0, len(members), batch_size)]

        def run_job(job):
            plan, members = job
            return members, plan.run(self._query, members, self.schema)

        def run_single(item):
            i, c = item
            return [(i, c)], [_outcome_of(self.run_compiled, c)]

        work = [(run_job, j) for j in jobs] + [(run_single, item) for item in singles]
        if workers > 1 and len(work) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(lambda w: w[0](w[1]), work))
        else:
            results = [fn(arg) for fn, arg in work]
        for members, answers in results:
            for (i, _), outcome in zip(members, answers):
                outcomes[i] = outcome
        return outcomes

    def _batch_plan(self, compiled: CompiledQuery) -> "_BatchPlan | None":
        prepared = compiled.prepared
        if prepared is None:
            return None
        key = (prepared.pieces, prepared.slots, compiled.form, compiled.variable)
        try:
            return self._batch_plans[key]
        except KeyError:
            plan = self._batch_plans[key] = _BatchPlan.make(key, compiled, self.schema)
            return plan

    def _check_singleton(self, guard: SingletonGuard) -> None:
        row = _select(self._query(guard.sparql)).as_dicts()
        row = row[0] if row else {}
        members, values = int(row.get("members") or 0), int(row.get("values") or 0)
        if members != 1:
            got = "none" if members == 0 else str(members)
            raise ExecutionError(f"QueryAttr({guard.attribute}) needs exactly one entity, got {got}",
                                 step=guard.step)
        if values == 0:
            raise ExecutionError(f"{self.schema.entity_name(row['member'])} has no {guard.attribute}",
                                 step=guard.step)


def _fact_error(guard) -> ExecutionError:
    if isinstance(guard, EntityGuard):
        return ExecutionError(f"unknown entity '{guard.name}'", step=guard.step)
    return ExecutionError(f"{guard.name} has no {guard.attribute}", step=guard.step)


class _BatchPlan:
    """A :class:`~kopl2sparql.batch.BatchPlan` (one query for many programs of one shape) and
    how its rows go back to each program."""

    def __init__(self, key: tuple, plan: BatchPlan):
        self.key, self.plan = key, plan
        self.keys, self.form, self.aggregate = plan.keys, plan.form, plan.aggregate

    @classmethod
    def make(cls, key: tuple, compiled: CompiledQuery, schema: Schema) -> "_BatchPlan | None":
        plan = BatchPlan.make(compiled, schema)
        return None if plan is None else cls(key, plan)

    def run(self, query, members: list[tuple[int, CompiledQuery]], schema: Schema) -> list[Outcome]:
        """Query once for ``members`` (index, compiled) and decode each program's rows."""
        keys = self.keys
        rows = {tuple(c.prepared.names[k] for k in keys): None for _, c in members}
        result = _select(query(self.plan.query(rows, schema)))
        width = len(keys)
        split: dict[tuple, list[tuple]] = {}
        name_of = schema.entity_name
        for row in result.rows:
            split.setdefault(tuple(name_of(v) for v in row[:width]), []).append(row[width:])
        variables = result.variables[width:]
        outcomes: list[Outcome] = []
        for _, c in members:
            own = split.get(tuple(c.prepared.names[k] for k in keys), [])
            if self.form == "ask":
                value = bool(own)
            elif self.aggregate:
                value = SelectResult(variables, own or [(0,)])
            else:
                value = SelectResult(variables, own)
            outcomes.append(_outcome_of(lambda v: decode(c, v, schema), value))
        return outcomes


def _select(result) -> SelectResult:
    if not isinstance(result, SelectResult):
        raise StoreError(f"expected SELECT results, got {type(result).__name__}")
    return result


def decode(compiled: CompiledQuery, result, schema: Schema) -> Answer:
    """Turn a query result into an :class:`Answer` following ``compiled.form``; entity IRIs
    are named (or labelled, for ``QueryName``) through ``schema``.

    :raises ExecutionError: for a final QueryAttr whose operand is not one entity having
        the attribute (the same error the native engine raises).
    """
    if compiled.form == "ask":
        if not isinstance(result, bool):
            raise StoreError(f"expected an ASK result, got {type(result).__name__}")
        return Answer.boolean(result)
    rows = _select(result)
    if compiled.form == "select-entities":
        names = sorted({schema.entity_name(str(v)) for v in rows.column(compiled.variable) if v is not None})
        if compiled.labels:
            return Answer("entities", tuple(schema.label(n) for n in names))
        return Answer("entities", tuple(names))
    values = rows.column(compiled.variable)
    check = compiled.check
    if check is None:                                   # COUNT: exactly one row
        if len(values) != 1 or values[0] is None:
            raise StoreError(f"expected one number, got {len(values)} rows")
        return Answer.number(values[0])
    if check.member_variable is not None:
        members = {}
        for member, value in zip(rows.column(check.member_variable), values):
            members.setdefault(member, set())
            if value is not None:
                members[member].add(value)
        if len(members) != 1:
            got = "none" if not members else str(len(members))
            raise ExecutionError(f"QueryAttr({check.attribute}) needs exactly one entity, got {got}",
                                 step=check.step)
        ((member, found),) = members.items()
        entity = schema.entity_name(str(member))
        values = sorted(found, key=str)
    else:
        entity = check.entity
    if not values:
        raise ExecutionError(f"{entity} has no {check.attribute}", step=check.step)
    if len(set(values)) > 1:
        raise ExecutionError(f"{entity} has {len(set(values))} values of {check.attribute}", step=check.step)
    return _value_answer(values[0], schema.attributes.get(check.attribute))


def _value_answer(value, attribute) -> Answer:
    """An attribute value as an Answer: a number for numeric attributes, else the lexical form."""
    if attribute is not None and not attribute.numeric:
        return Answer.string(str(value))
    return Answer.number(value)


# ---- cross-check -----------------------------------------------------------------------------

def _outcome(run):
    """("answer", Answer) or ("error", the SynKQAError) of one engine."""
    try:
        return "answer", run()
    except (ExecutionError, ProgramError) as exc:
        return "error", exc


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "answer":
        return a[1] == b[1]
    # Both failed: agreement when both say "cannot execute" or both say "ill-typed".
    return isinstance(a[1], ExecutionError) == isinstance(b[1], ExecutionError)


def _show(outcome) -> str:
    kind, value = outcome
    if kind == "error":
        return f"error: {str(value).splitlines()[0]}"
    if isinstance(value, list):
        return " ; ".join(f"{t.index}:{t.value.canonical()[:60]}" for t in value)
    return f"{value.canonical()!r} ({value.kind})"


class CrossCheckExecutor:
    """Runs every program on two executors; any difference is an :class:`EngineDisagreement`.

    Both raising :class:`ExecutionError` counts as agreement (the first engine's error is
    raised); one raising and the other answering is a disagreement.
    """

    def __init__(self, first: Executor, second: Executor):
        self.first, self.second = first, second
        self.name = f"{first.name}+{second.name}"

    def fresh(self) -> "CrossCheckExecutor":
        """A new pair of fresh executors."""
        return CrossCheckExecutor(self.first.fresh(), self.second.fresh())

    @property
    def schema(self) -> Schema:
        return self.first.schema

    def execute(self, program: Program) -> Answer:
        typecheck(program, self.first.schema)
        return self._both(program, lambda ex: ex.execute(program))

    def trace(self, program: Program) -> list[TraceStep]:
        typecheck(program, self.first.schema)
        return self._both(program, lambda ex: ex.trace(program))

    def _both(self, program: Program, call):
        a = _outcome(lambda: call(self.first))
        b = _outcome(lambda: call(self.second))
        if not _same(a, b):
            width = max(len(self.first.name), len(self.second.name)) + 1
            raise EngineDisagreement(
                f"engines disagree on {program.canonical()}\n"
                f"  {(self.first.name + ':').ljust(width)} {_show(a)}\n"
                f"  {(self.second.name + ':').ljust(width)} {_show(b)}")
        if a[0] == "error":
            raise a[1]
        return a[1]


__all__ = ["Executor", "NativeExecutor", "SparqlExecutor", "CrossCheckExecutor",
           "decode", "typecheck", "BACKENDS", "Outcome", "BATCH_SIZE"]
