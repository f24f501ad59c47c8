"""The service behind ``synkqa serve``, without HTTP: programs, completion, questions, SPARQL.

One :class:`Workbench` holds one KB and its engines. Two program languages share the page:
the SynKQA-Pro KoPL (``kopl``: any Turtle KB, :mod:`kopl2sparql`) and KQA Pro's full KoPL
(``kqapro``: a KB in KQA Pro's RDF model, :mod:`kqapro`); which one follows from the KB.

Everything that runs on an engine (programs, SPARQL queries) runs in a pool of forked
worker processes (:class:`~store.deadline.DeadlineWorker`) that are killed at the time
limit, so a runaway query stops and the server goes on; parsing, type checking and
completion are bounded by the program size and run in the server process.
"""

from __future__ import annotations

import asyncio
import threading
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kopl2sparql.errors import (ConfigError, EngineDisagreement, ExecutionError, ExecutionTimeout, ProgramError,
                                StoreError, SynKQAError, safe_text)
from store.deadline import DeadlineWorker
from synkqa.web import results as fmt

ITEMS_SHOWN = 1000
"""Items of one step's value sent to the page (it pages through them); the size is exact."""
COMPLETIONS = 30


class Busy(SynKQAError):
    """Every worker stayed busy for longer than the time limit."""


@dataclass
class Settings:
    kb: Path | None = None               # a Turtle KB (any schema, or KQA Pro's model); None: SynKQA-Pro
    seed: int = 42
    scale: int = 1
    endpoint: str | None = None          # a SPARQL endpoint holding the same KB
    program_timeout: float = 10.0
    query_timeout: float = 10.0
    row_limit: int = 10_000
    workers: int = 2
    questions: bool = True               # answer English questions (SynKQA-Pro KB only)
    extra: dict = field(default_factory=dict)


def _error_json(exc: BaseException) -> dict:
    """An error as the page shows it: kind, message, step and character span when known."""
    out: dict[str, Any] = {"kind": getattr(exc, "kind", None) or type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ProgramError):
        out.update(message=exc.message, text=str(exc), step=exc.step, span=list(exc.span) if exc.span else None)
    elif isinstance(exc, ExecutionTimeout):
        out.update(kind="time limit")
    elif isinstance(exc, Busy):
        out.update(kind="busy")
    elif isinstance(exc, ExecutionError):
        out.update(kind="execution error", step=getattr(exc, "step", None))
    elif isinstance(exc, EngineDisagreement):
        out.update(kind="engines disagree")
    elif isinstance(exc, StoreError):
        out.update(kind="store error")
    return out


def _items(values: list[str] | tuple[str, ...]) -> dict:
    return {"size": len(values), "items": list(values[:ITEMS_SHOWN])}


# ---- the two languages -------------------------------------------------------------------------

class _SynKQA:
    """KoPL as SynKQA-Pro speaks it (15 functions), on any Turtle KB."""

    name = "kopl"

    def __init__(self, settings: Settings):
        from synkqa import api
        self.kb = api.open_kb(settings.kb, seed=settings.seed, scale=settings.scale)
        self.schema = self.kb.schema
        self.engines = {"native": self.kb.executor("native"), "oxigraph": self.kb.executor("oxigraph")}
        if settings.endpoint:
            from store.remote import EndpointStore
            EndpointStore(settings.endpoint).require_data()
            self.engines["endpoint"] = self.kb.executor(settings.endpoint)
        self.raw_store = self.engines["oxigraph"].store.raw     # the OxigraphStore's pyoxigraph Store
        self.prefixes = dict(self.schema.prefixes)
        self.base_iri = None

    def parse(self, text: str):
        from kopl2sparql.typecheck import check
        from synkqa.api import read_program
        program = read_program(text)
        check(program, self.schema)
        return program

    def steps(self, program) -> list[dict]:
        """Each step with the steps it takes its inputs from (the program is a stack machine:
        a step pops as many values as its operator takes)."""
        from kopl2sparql.operators import OPERATORS
        stack: list[int] = []
        out = []
        for i, step in enumerate(program.steps):
            takes = len(OPERATORS[step.op].pops)
            dependencies = stack[len(stack) - takes:] if takes else []
            del stack[len(stack) - takes:]
            stack.append(i)
            out.append({"index": i, "function": step.op, "inputs": list(step.args), "dependencies": dependencies,
                        "span": list(step.span) if step.span else None})
        return out

    def text(self, program) -> str:
        return program.canonical()

    def sparql(self, program, backend: str) -> str:
        from kopl2sparql.compiler import compile_program
        return compile_program(program, self.schema, self.engines[backend if backend != "native" else "oxigraph"]
                               .dialect).sparql

    def run(self, program, backend: str, trace: bool = True) -> tuple[str, str, list[dict] | None]:
        """(answer kind, canonical answer, steps) on ``backend``; the steps come from the same
        engine (on SPARQL engines every prefix of the program is a query of its own)."""
        if not trace:
            answer = self.engines[backend].execute(program)
            return answer.kind, answer.canonical(), None
        steps = self.engines[backend].trace(program)
        last = steps[-1].value
        return last.kind, last.canonical(), [{"kind": s.value.kind, **_items(s.value.values)} for s in steps]

    def answer(self, program, backend: str) -> str:
        return self.engines[backend].execute(program).canonical()

    def functions(self) -> list[dict]:
        from kopl2sparql.operators import OPERATORS
        return [{"name": op.name, "args": [a.value for a in op.args], "takes": [t.value for t in op.pops],
                 "gives": op.pushes.value, "doc": op.doc} for op in OPERATORS.values()]

    def vocabulary(self) -> dict[str, list[tuple[str, str]]]:
        """(completion, detail) pairs by kind."""
        schema = self.schema
        entities = [(schema.label(name), name) for name in schema.entity_names()]
        return {
            "relation": [(n, info.label) for n, info in schema.relations.items()],
            "attribute": [(n, info.label) for n, info in schema.attributes.items()],
            "concept": [(n, info.label) for n, info in schema.classes.items()],
            "entity": entities,
            "comparator": [(c, "") for c in ("=", "!=", "<", ">", "<=", ">=")],
        }


class _KQAPro:
    """KQA Pro's full KoPL (27 functions) on a KB in KQA Pro's RDF model."""

    name = "kqapro"

    def __init__(self, settings: Settings):
        from kqapro.engines import EndpointEngine, NativeEngine, OxigraphEngine
        from kqapro.rdf import BASE, kb_from_turtle
        self.kbmodel = kb_from_turtle(settings.kb)
        native = NativeEngine(self.kbmodel)
        self.engines = {"native": native, "oxigraph": OxigraphEngine(self.kbmodel, Path(settings.kb))}
        if settings.endpoint:
            from store.remote import EndpointStore
            endpoint = EndpointStore(settings.endpoint)
            endpoint.require_data()
            self.engines["endpoint"] = EndpointEngine(self.kbmodel, endpoint, name=settings.endpoint)
        self.raw_store = self.engines["oxigraph"].store          # a pyoxigraph Store
        self.prefixes = {"xsd": "http://www.w3.org/2001/XMLSchema#"}
        self.base_iri = BASE

    def parse(self, text: str):
        from kqapro.program import parse_program
        from kqapro.typecheck import check
        program = parse_program(text)
        check(program, self.kbmodel)
        return program

    def steps(self, program) -> list[dict]:
        return [{"index": i, "function": s["function"], "inputs": list(s["inputs"]),
                 "dependencies": list(s["dependencies"])} for i, s in enumerate(program.to_json())]

    def text(self, program) -> str:
        return program.to_text()

    def sparql(self, program, backend: str) -> str:
        from kqapro.compiler import compile_program
        dialect = "portable" if backend == "endpoint" else "exists"
        return compile_program(program, self.kbmodel, dialect).sparql

    def run(self, program, backend: str, trace: bool = True) -> tuple[str, str, list[dict] | None]:
        # Steps come from the native interpreter (a SPARQL query per step is not offered for
        # full KoPL); the answer from the chosen engine.
        if not trace:
            answer = self.engines[backend].run(program)
            return answer.kind, answer.text, None
        answer, done = self.engines["native"].interpreter.trace(program, preview=ITEMS_SHOWN)
        if backend != "native":
            answer = self.engines[backend].run(program)
        steps = [{"kind": s.kind, "size": s.size, "items": list(s.preview)} for s in done]
        return answer.kind, answer.text, steps

    def answer(self, program, backend: str) -> str:
        return self.engines[backend].run(program).text

    def functions(self) -> list[dict]:
        from kqapro.functions import FUNCTIONS
        return [{"name": f.name, "args": list(f.inputs), "takes": list(f.takes), "gives": f.gives, "doc": ""}
                for f in FUNCTIONS.values()]

    def vocabulary(self) -> dict[str, list[tuple[str, str]]]:
        kb = self.kbmodel
        return {
            "relation": [(r, "") for r in kb.relation_names],
            "attribute": [(k, "") for k in kb.attribute_keys],
            "qualifier": [(k, "") for k in kb.qualifier_keys],
            "concept": [(name, "") for name in kb.concepts_by_name],
            "entity": [(name, f"{len(ids)} entities" if len(ids) > 1 else ids[0])
                       for name, ids in kb.by_name.items()],
            "comparator": [(c, "") for c in ("=", "!=", "<", ">")],
            "direction": [("forward", ""), ("backward", "")],
        }


# ---- worker operations (run in the forked workers) -----------------------------------------------

def _execute_op(language, text: str, backend: str, cross_check: bool, trace: bool = True) -> dict:
    """Parse, check, compile and run one program; every failure is part of the result."""
    started = time.perf_counter()
    out: dict[str, Any] = {"program": None, "steps": None, "sparql": None, "answer": None, "kind": None,
                           "trace": None, "error": None, "backend": backend, "cross_check": None}
    try:
        program = language.parse(text)
    except ProgramError as exc:
        out["error"] = _error_json(exc)
        return out
    out["program"] = language.text(program)
    out["steps"] = language.steps(program)
    try:
        out["sparql"] = language.sparql(program, backend)
    except SynKQAError as exc:          # a program the compiler does not cover: still runs natively
        out["sparql_error"] = str(exc)
    try:
        out["kind"], out["answer"], out["trace"] = language.run(program, backend, trace)
        out["seconds"] = round(time.perf_counter() - started, 6)
    except SynKQAError as exc:
        out["error"] = _error_json(exc)
        out["trace"] = [{"kind": s.value.kind, **_items(s.value.values)} for s in getattr(exc, "trace", [])] or None
        return out
    if cross_check:
        other = "oxigraph" if backend == "native" else "native"
        check_started = time.perf_counter()
        try:
            theirs = language.answer(program, other)
            out["cross_check"] = {"engine": other, "agree": theirs == out["answer"], "answer": theirs,
                                  "seconds": round(time.perf_counter() - check_started, 6)}
        except SynKQAError as exc:
            out["cross_check"] = {"engine": other, "agree": False, "error": str(exc)}
    return out


def _sparql_op(language, endpoint, query: str, media_type: str | None, accept: str | None,
               limit: int) -> fmt.Serialized:
    from store.oxigraph import query_form, query_raw, screen_query
    if endpoint is not None:
        screen_query(query)             # before anything is sent
        result = endpoint.raw_results(query)
    else:
        result = query_raw(language.raw_store, query, base_iri=language.base_iri)
    try:
        if isinstance(result, ox.QueryBoolean):
            return fmt.serialize_boolean(bool(result), fmt.negotiate(accept, False, media_type))
        if isinstance(result, ox.QueryTriples) or query_form(query) in ("CONSTRUCT", "DESCRIBE"):
            return fmt.serialize_triples(result, fmt.negotiate(accept, True, media_type), limit)
        variables = [v.value for v in result.variables]
        return fmt.serialize_solutions(variables, result, fmt.negotiate(accept, False, media_type), limit)
    except (OSError, RuntimeError) as exc:
        raise StoreError(f"query failed: {safe_text(str(exc), 500)}") from None


# ---- the pool --------------------------------------------------------------------------------

class WorkerPool:
    """``size`` deadline workers shared by the requests of one event loop; a call waits at
    most ``wait`` seconds for a free worker (else :class:`Busy`)."""

    def __init__(self, operations: dict[str, Callable], size: int, timeout: float):
        self.workers = [DeadlineWorker(operations, timeout) for _ in range(max(1, size))]
        self._free: asyncio.Queue | None = None      # made in the serving loop, on first use

    async def call(self, name: str, *args, timeout: float, what: str, wait: float, hint: str = "") -> Any:
        if self._free is None:
            self._free = asyncio.Queue()
            for worker in self.workers:
                self._free.put_nowait(worker)
        try:
            worker = await asyncio.wait_for(self._free.get(), wait)
        except asyncio.TimeoutError:
            raise Busy(f"all {len(self.workers)} workers stayed busy for {wait:g} s; try again") from None
        try:
            worker.timeout, worker.what, worker.hint = timeout, what, hint
            return await worker.acall(name, *args)
        finally:
            self._free.put_nowait(worker)

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


# ---- the workbench ------------------------------------------------------------------------------

class Workbench:
    """One KB, its engines and a pool of workers; every method returns JSON-ready values."""

    def __init__(self, settings: Settings):
        self.settings = settings
        kqapro = False
        if settings.kb is not None:
            from synkqa.benchmark.kqapro_kb import is_kqapro_file
            if not Path(settings.kb).is_file():
                raise ConfigError(f"KB file not found: {settings.kb}")
            kqapro = is_kqapro_file(Path(settings.kb))
        self.language = _KQAPro(settings) if kqapro else _SynKQA(settings)
        self.backends = ["native", "oxigraph"] + (["endpoint"] if settings.endpoint else [])
        endpoint = None
        if settings.endpoint:
            from store.remote import EndpointStore
            endpoint = EndpointStore(settings.endpoint, timeout=settings.query_timeout)
        language = self.language
        self._vocabulary = {kind: sorted(pairs, key=lambda p: (p[0].casefold(), p[0]))
                            for kind, pairs in language.vocabulary().items()}
        self._keys = {kind: [p[0].casefold() for p in pairs] for kind, pairs in self._vocabulary.items()}
        operations = {
            "execute": lambda text, backend, cross, trace: _execute_op(language, text, backend, cross, trace),
            "sparql": lambda query, media, accept, limit: _sparql_op(language, endpoint, query, media,
                                                                      accept, limit),
        }
        # Forked now, before the server starts any thread: the workers hold the loaded KB.
        self.pool = WorkerPool(operations, settings.workers, settings.program_timeout)
        for worker in self.pool.workers:
            worker.start()
        self._asker = None
        self._asker_lock = threading.Lock()
        if self.questions_available():
            # Train or load the question model now, in the background: on a fresh cache it
            # needs the benchmark's train split first (about a minute), which would
            # otherwise fall on the first person to ask.
            threading.Thread(target=self._warm_up, name="question-model", daemon=True).start()

    def _warm_up(self) -> None:
        try:
            self._answerer()
        except Exception:     # noqa: BLE001 - the first ask() retries and reports the error
            pass

    def close(self) -> None:
        self.pool.close()

    # ---- what the page needs to know ----------------------------------------------------------

    def info(self) -> dict:
        s = self.settings
        return {"language": self.language.name, "kb": str(s.kb) if s.kb else f"SynKQA-Pro (seed {s.seed}, "
                                                                             f"scale {s.scale})",
                "backends": self.backends, "endpoint": s.endpoint, "prefixes": self.language.prefixes,
                "base_iri": self.language.base_iri,
                "limits": {"program_seconds": s.program_timeout, "query_seconds": s.query_timeout,
                           "rows": s.row_limit},
                "questions": self.questions_available(), "functions": self.language.functions(),
                "counts": {kind: len(pairs) for kind, pairs in self._vocabulary.items()}}

    def complete(self, kind: str, prefix: str, limit: int = COMPLETIONS) -> list[dict]:
        """Names of ``kind`` (function, relation, attribute, concept, entity, …) whose label
        starts with ``prefix`` (case-insensitive), then those containing it."""
        if kind == "function":
            names = [f["name"] for f in self.language.functions()]
            low = prefix.casefold()
            return [{"value": n, "detail": ""} for n in names if n.casefold().startswith(low)][:limit]
        if kind not in self._vocabulary:
            raise ConfigError(f"unknown completion kind {safe_text(kind, 40)!r}; known: function, "
                              + ", ".join(sorted(self._vocabulary)))
        pairs, keys = self._vocabulary[kind], self._keys[kind]
        low = prefix.casefold()
        found = []
        at = bisect_left(keys, low)
        while at < len(keys) and keys[at].startswith(low) and len(found) < limit:
            found.append(pairs[at])
            at += 1
        if len(found) < limit and low:
            seen = {p[0] for p in found}
            for pair, key in zip(pairs, keys):
                if low in key and pair[0] not in seen:
                    found.append(pair)
                    if len(found) >= limit:
                        break
        return [{"value": value, "detail": detail} for value, detail in found]

    def check(self, text: str) -> dict:
        """Parse and type-check only: the steps to draw, or the error to underline."""
        try:
            program = self.language.parse(text)
        except ProgramError as exc:
            return {"program": None, "steps": None, "sparql": None, "error": _error_json(exc)}
        try:
            sparql = self.language.sparql(program, "oxigraph")
        except SynKQAError:
            sparql = None
        return {"program": self.language.text(program), "steps": self.language.steps(program), "sparql": sparql,
                "error": None}

    # ---- running things -----------------------------------------------------------------------

    async def execute(self, text: str, backend: str = "native", cross_check: bool = True,
                      trace: bool = True) -> dict:
        if backend not in self.backends:
            raise ConfigError(f"unknown backend {safe_text(backend, 60)!r}; this server has "
                              + ", ".join(self.backends))
        s = self.settings
        started = time.perf_counter()
        try:
            out = await self.pool.call("execute", text, backend, cross_check, trace, timeout=s.program_timeout,
                                 what="program", wait=s.program_timeout, hint="the server's --timeout")
        except (ExecutionError, StoreError, Busy) as exc:       # a timeout, a crashed worker
            out = {"program": None, "steps": None, "sparql": None, "answer": None, "kind": None,
                   "trace": None, "error": _error_json(exc), "backend": backend, "cross_check": None}
        out["total_seconds"] = round(time.perf_counter() - started, 6)
        return out

    async def sparql(self, query: str, media_type: str | None = None, accept: str | None = None) -> fmt.Serialized:
        s = self.settings
        return await self.pool.call("sparql", query, media_type, accept, s.row_limit, timeout=s.query_timeout,
                              what="query", wait=s.query_timeout, hint="the server's --query-timeout")

    # ---- questions ----------------------------------------------------------------------------

    def questions_available(self) -> bool:
        return self.settings.questions and isinstance(self.language, _SynKQA) and self.settings.kb is None

    def ask(self, question: str) -> dict:
        """The best open-ended system's program for ``question`` with its ranked candidates."""
        if not self.questions_available():
            raise ConfigError("questions are answered on the SynKQA-Pro KB only (the parsers are "
                              "trained on its benchmark); this server runs "
                              + ("another KB" if self.settings.questions else "with --no-questions"))
        from parsers.base import ProgramRunner, Query
        spec, answerer = self._answerer()
        started = time.perf_counter()
        runner = ProgramRunner(self.language.engines["native"])
        prediction = answerer.answer([Query(question.strip())], runner)[0]
        return {"system": spec.name, "question": question, "program": prediction.program,
                "answer": prediction.answer, "selected_rank": prediction.selected_rank,
                "fallback": prediction.fallback, "seconds": round(time.perf_counter() - started, 6),
                "candidates": [{"rank": c.rank, "program": c.program, "score": round(float(c.score), 4),
                                "answer": c.answer, "verdict": c.outcome, "executed": c.executed}
                               for c in prediction.candidates]}

    def _answerer(self):
        with self._asker_lock:
            if self._asker is None:
                from evaluation.runner import train_system
                from parsers import registry
                from synkqa.benchmark.dataset import load_split
                spec = registry.best_system(with_choices=False)
                train = load_split("train", self.settings.seed) if spec.uses_train_data else []
                trained = train_system(spec.name, train, seed=0, with_choices=False)
                self._asker = spec, registry.build(spec, trained.model)
            return self._asker


__all__ = ["Workbench", "Settings", "WorkerPool", "Busy"]
