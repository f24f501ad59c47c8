"""Executors: one protocol, the native engine and SPARQL on a store, and a cross-check of two.

Every executor returns the same :class:`~kopl2sparql.answer.Answer` (kind + canonical
values) and raises the same errors: :class:`ProgramError` for programs that are not well
typed, :class:`ExecutionError` for well-typed programs the KB cannot answer (unknown
entity, ``QueryAttr`` on anything but one entity having the attribute).

>>> ex = get_executor("native")                      # doctest: +SKIP
>>> ex.execute(parse("Find(Person_00371);Relate(born_in);QueryName()")).canonical()  # doctest: +SKIP
'City_0736'
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kopl2sparql.answer import Answer
from kopl2sparql.compiler import AttributeGuard, CompiledQuery, EntityGuard, SingletonGuard, compile_program
from kopl2sparql.errors import (ConfigError, EngineDisagreement, ExecutionError, ProgramError,
                                StoreError, unknown_name_message)
from kopl2sparql.interpreter import Interpreter, TraceStep
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.program import Program
from ontology import ENTITY_NS, NS, RDF_TYPE
from store.results import SelectResult

BACKENDS = ("native", "oxigraph")


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


# ---- type checking before execution ------------------------------------------------------

_checker = None            # the type checker's ``check``, resolved on first use; False if absent
_checked_ok: set = set()   # steps of programs that passed (passing does not depend on spans)


def typecheck(program: Program) -> None:
    """Run ``kopl2sparql.typecheck.check`` on ``program`` when that module exists.

    :raises ProgramError: for an ill-typed program.
    """
    global _checker
    if _checker is None:
        try:
            from kopl2sparql.typecheck import check
            _checker = check
        except ImportError:
            _checker = False
    if _checker is False or program.steps in _checked_ok:
        return
    _checker(program)
    if len(_checked_ok) > 200_000:           # bound the memory of a long-running process
        _checked_ok.clear()
    _checked_ok.add(program.steps)


# ---- the native engine ---------------------------------------------------------------------

class NativeExecutor:
    """The Python interpreter over a :class:`KBIndex` read from RDF."""

    name = "native"

    def __init__(self, index: KBIndex):
        self.index = index
        self.interpreter = Interpreter(index)

    def execute(self, program: Program) -> Answer:
        typecheck(program)
        return self.interpreter.run(program)

    def trace(self, program: Program) -> list[TraceStep]:
        typecheck(program)
        return self.interpreter.trace(program)


# ---- SPARQL on a store ---------------------------------------------------------------------

class SparqlExecutor:
    """Compiles programs to SPARQL and runs them on ``store``.

    ``store`` is anything with ``query(sparql) -> SelectResult | bool``: an
    :class:`~store.oxigraph.OxigraphStore` or a remote ``EndpointStore``. Facts the guards
    establish (an entity exists, an entity has an attribute) are remembered, since the KB is
    read-only: once its entities are known a template program costs one query.
    """

    def __init__(self, store, name: str = "oxigraph"):
        self.store = store
        self.name = name
        self._known: set[tuple[str, str]] = set()     # (entity name, property IRI) found

    def execute(self, program: Program) -> Answer:
        typecheck(program)
        return self.run_compiled(compile_program(program))

    def trace(self, program: Program) -> list[TraceStep]:
        typecheck(program)
        steps: list[TraceStep] = []
        try:
            for n, step in enumerate(program.steps, 1):
                value = self.run_compiled(compile_program(program.prefix(n)))
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
        if isinstance(missing, EntityGuard):
            raise ExecutionError(f"unknown entity '{missing.name}'", step=missing.step)
        if isinstance(missing, AttributeGuard):
            raise ExecutionError(f"{missing.name} has no {missing.attribute}", step=missing.step)
        result = self.store.query(compiled.sparql)
        return decode(compiled, result)

    def _missing_fact(self, compiled: CompiledQuery) -> EntityGuard | AttributeGuard | None:
        """The first entity or attribute guard that fails (one query for all unknown facts)."""
        pending = {}
        for g in compiled.guards:
            if isinstance(g, EntityGuard):
                fact = (g.name, RDF_TYPE)
            elif isinstance(g, AttributeGuard):
                fact = (g.name, NS + g.attribute)
            else:
                continue
            if fact not in self._known:
                pending.setdefault(fact, g)
        if not pending:
            return None
        # Names were validated by the compiler ([A-Za-z0-9_]+), so they are safe here.
        rows = " ".join(f"(<{ENTITY_NS}{name}> <{prop}>)" for name, prop in pending)
        result = self.store.query("SELECT DISTINCT ?entity ?property WHERE {\n"
                                  f"  VALUES (?entity ?property) {{ {rows} }}\n"
                                  "  ?entity ?property ?value .\n}")
        found = {(_entity_name(e), p) for e, p in _select(result).rows}
        self._known |= found
        return min((g for fact, g in pending.items() if fact not in found), key=lambda g: g.step, default=None)

    def _check_singleton(self, guard: SingletonGuard) -> None:
        row = _select(self.store.query(guard.sparql)).as_dicts()
        row = row[0] if row else {}
        members, values = int(row.get("members") or 0), int(row.get("values") or 0)
        if members != 1:
            got = "none" if members == 0 else str(members)
            raise ExecutionError(f"QueryAttr({guard.attribute}) needs exactly one entity, got {got}",
                                 step=guard.step)
        if values == 0:
            raise ExecutionError(f"{_entity_name(row['member'])} has no {guard.attribute}", step=guard.step)


def _select(result) -> SelectResult:
    if not isinstance(result, SelectResult):
        raise StoreError(f"expected SELECT results, got {type(result).__name__}")
    return result


def _entity_name(iri) -> str:
    text = str(iri)
    return text[len(ENTITY_NS):] if text.startswith(ENTITY_NS) else text


def decode(compiled: CompiledQuery, result) -> Answer:
    """Turn a query result into an :class:`Answer` following ``compiled.form``.

    :raises ExecutionError: for a final QueryAttr whose operand is not one entity having
        the attribute (the same error the native engine raises).
    """
    if compiled.form == "ask":
        if not isinstance(result, bool):
            raise StoreError(f"expected an ASK result, got {type(result).__name__}")
        return Answer.boolean(result)
    rows = _select(result)
    if compiled.form == "select-entities":
        return Answer.entities(_entity_name(v) for v in rows.column(compiled.variable) if v is not None)
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
        entity = _entity_name(member)
        values = sorted(found)
    else:
        entity = check.entity
    if not values:
        raise ExecutionError(f"{entity} has no {check.attribute}", step=check.step)
    if len(set(values)) > 1:
        raise ExecutionError(f"{entity} has {len(set(values))} values of {check.attribute}", step=check.step)
    return Answer.number(values[0])


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

    def execute(self, program: Program) -> Answer:
        typecheck(program)
        return self._both(program, lambda ex: ex.execute(program))

    def trace(self, program: Program) -> list[TraceStep]:
        typecheck(program)
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


# ---- choosing a backend ----------------------------------------------------------------------

_EXECUTORS: dict[tuple, Executor] = {}


def get_executor(backend: str = "native", seed: int = 42, scale: int = 1, *,
                 cross_check: bool = False, progress: bool = False) -> Executor:
    """The executor for ``backend`` (``native``, ``oxigraph`` or an ``http(s)://`` endpoint URL).

    The KB for (seed, scale) is built on first use (``progress``: show progress bars on
    stderr while building); executors are cached per process. With ``cross_check`` every
    program also runs on the other engine (native against the backend, or native against
    oxigraph when the backend is native) and any difference raises EngineDisagreement.

    :raises ConfigError: for an unknown backend name.
    """
    key = (backend, seed, scale, cross_check)
    executor = _EXECUTORS.get(key)
    if executor is None:
        executor = _EXECUTORS[key] = _build_executor(backend, seed, scale, cross_check, progress)
    return executor


def _build_executor(backend: str, seed: int, scale: int, cross_check: bool, progress: bool) -> Executor:
    from synkqa.world import ensure_turtle, open_store

    if cross_check:
        other = "oxigraph" if backend == "native" else backend
        return CrossCheckExecutor(get_executor("native", seed, scale, progress=progress),
                                  get_executor(other, seed, scale, progress=progress))
    if backend == "native":
        return NativeExecutor(KBIndex.from_turtle(ensure_turtle(seed, scale, progress=progress)))
    if backend == "oxigraph":
        return SparqlExecutor(open_store(seed, scale, progress=progress), name="oxigraph")
    if backend.startswith(("http://", "https://")):
        from store.remote import EndpointStore       # the seam for remote endpoints, loaded lazily
        return SparqlExecutor(EndpointStore(backend), name=backend)
    raise ConfigError(unknown_name_message("backend", backend, BACKENDS)
                      + " (or an http:// or https:// SPARQL endpoint URL)")


__all__ = ["Executor", "NativeExecutor", "SparqlExecutor", "CrossCheckExecutor", "get_executor",
           "decode", "typecheck", "BACKENDS"]
