"""Our engines inside a worker process: the :class:`_Engine` interface a worker drives
(``load``, ``run``, ``batch``, ``evtc``, ``close``), and :class:`_Ours` for ``native``,
embedded Oxigraph (memory and disk), ``rdflib`` (:class:`RdflibStore`) and the HTTP
endpoints, with their batch throughput and EV-TC runs.

The KoPL peers, which implement the same interface, are in :mod:`evaluation.bench.peers`.
"""

from __future__ import annotations

import gc
import json
import pickle
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluation.bench.config import HTTP_ENGINES
from evaluation.bench.measure import (
    _collector_paused,
    canonical,
    latency_stats,
    outcome_text,
    peak_rss_mb,
    time_each,
)
from evaluation.bench.workload import make_workload
from kopl2sparql.errors import ConfigError, SynKQAError


# ---- engines inside a worker -------------------------------------------------------------------

class RdflibStore:
    """rdflib's own SPARQL engine over an in-memory Graph, with the store interface
    (``query(sparql) -> SelectResult | bool``, values as :mod:`store.results` converts them)."""

    def __init__(self, turtle: Path):
        import rdflib

        self.graph = rdflib.Graph()
        self.graph.parse(str(turtle), format="turtle")

    def query(self, sparql: str):
        from rdflib import Literal, URIRef

        from store.results import SelectResult, literal_value

        result = self.graph.query(sparql)
        if result.type == "ASK":
            return bool(result.askAnswer)

        def convert(term):
            if term is None:
                return None
            if isinstance(term, URIRef):
                return str(term)
            if isinstance(term, Literal):
                return literal_value(str(term), str(term.datatype) if term.datatype else None)
            return str(term)

        variables = tuple(str(v) for v in result.vars)
        return SelectResult(variables, [tuple(convert(row[v]) for v in result.vars) for row in result])


class _Engine:
    """One engine inside a worker process: ``load`` once, then ``run`` work items on request."""

    def __init__(self, job: dict):
        self.job = job
        self.workload: dict | None = None

    def read_workload(self) -> dict:
        if self.workload is None:
            self.workload = json.loads(Path(self.job["workload"]).read_text())
        return self.workload

    def items(self, key: str, part: int = 0, parts: int = 1) -> list[str]:
        """The program texts of one work item (``templates/<shape>``, ``random``, ``scans/<shape>``),
        capped; ``part`` of ``parts`` contiguous slices."""
        work = self.read_workload()
        group, _, name = key.partition("/")
        texts = _capped(self.job, group, work[group][name] if name else work[group])
        return texts[len(texts) * part // parts:len(texts) * (part + 1) // parts]

    def load(self) -> dict:
        raise NotImplementedError

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        """Time one slice of a work item: raw ``timings`` (ns) and the answers."""
        raise NotImplementedError

    def batch(self) -> dict:
        raise NotImplementedError

    def evtc(self) -> dict | None:
        return None

    def close(self) -> dict:
        return {}


def _capped(job: dict, key: str, items: list) -> list:
    cap = job.get("caps", {}).get(key)
    return items if cap is None else items[:cap]


class _Ours(_Engine):
    """Native, SPARQL on embedded Oxigraph (memory, disk), rdflib, and the HTTP endpoints."""

    def load(self) -> dict:
        from kopl2sparql.dialects import OXIGRAPH
        from evaluation.bench.leanschema import schema_for
        from kopl2sparql.kbindex import KBIndex
        from store.executor import NativeExecutor, SparqlExecutor
        from store.oxigraph import OxigraphStore

        job, info = self.job, {}
        engine, turtle = job["engine"], Path(job["turtle"])
        schema_start = time.perf_counter()
        schema = schema_for(turtle, job["scale"], job.get("kb_seed", 42))   # not part of any engine's load
        info["schema_s"] = round(time.perf_counter() - schema_start, 3)
        start = time.perf_counter()
        if engine == "native":
            executor = NativeExecutor(KBIndex.from_turtle(turtle, schema), schema)
            info["entities"] = executor.index.entity_count()
        elif engine == "oxigraph-memory":
            store = OxigraphStore()
            store.load_turtle(turtle)
            executor = SparqlExecutor(store, schema, name=engine, dialect=OXIGRAPH)
        elif engine == "oxigraph-disk":
            self.location = Path(job["run_dir"]) / f"oxigraph-disk-scale{job['scale']}"
            shutil.rmtree(self.location, ignore_errors=True)
            loading = OxigraphStore(self.location)
            loading.load_turtle(turtle)
            # Compacting the bulk-loaded files costs ~10% of the load and saves ~10-15% per
            # query (fewer SST files to look in); OxigraphStore.load_turtle does not do it yet.
            loading.raw.optimize()
            del loading                                   # closes RocksDB
            info["load_s"] = round(time.perf_counter() - start, 3)
            reopen = time.perf_counter()
            executor = SparqlExecutor(OxigraphStore(self.location, read_only=True), schema, name=engine,
                                      dialect=OXIGRAPH)
            info["open_s"] = round(time.perf_counter() - reopen, 3)
            info["disk_mb"] = round(sum(f.stat().st_size for f in self.location.rglob("*") if f.is_file()) / 2**20, 1)
        elif engine == "rdflib":
            executor = SparqlExecutor(RdflibStore(turtle), schema, name=engine)
        elif engine in HTTP_ENGINES:
            from store.remote import EndpointStore

            executor = SparqlExecutor(EndpointStore(job["url"], graph=job.get("graph"), timeout=120.0), schema,
                                      name=engine)
            executor.store.ping()
        else:  # pragma: no cover - the parent only sends known engines
            raise ConfigError(f"not one of our engines: {engine}")
        info.setdefault("load_s", round(time.perf_counter() - start, 3))
        info["peak_after_load_mb"] = peak_rss_mb()
        self.executor = executor
        return info

    def make_workload(self) -> dict:
        """The reference draws the work from its own index (native only)."""
        job = self.job
        started = time.perf_counter()
        self.workload = make_workload(self.executor.index, self.executor, job["scale"], job["sizes"], job["seed"],
                                      job["kb_seed"], Path(job["run_dir"]))
        Path(job["workload"]).write_text(json.dumps(self.workload))
        return {"workload_s": round(time.perf_counter() - started, 2)}

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        from kopl2sparql.syntax import parse

        executor, texts = self.executor, self.items(key, part, parts)
        run = _timed(lambda text: executor.execute(parse(text)), texts)
        if self.job["engine"] == "rdflib":
            run["incomparable"] = rdflib_incomparable(texts)
        return run

    def batch(self) -> dict:
        return _batch_ours(self.job, self.executor, self.read_workload()["batch"])

    def evtc(self) -> dict | None:
        evtc = self.read_workload().get("evtc")
        return _evtc(self.job, self.executor, evtc) if evtc else None

    def close(self) -> dict:
        location = getattr(self, "location", None)
        if location is not None:
            self.executor = None
            gc.collect()
            shutil.rmtree(location, ignore_errors=True)
        return {}


RDFLIB_FILTER_FALSE = "rdflib ignores a lone constant FILTER(false) (RDFLib/rdflib#3381)"


def rdflib_incomparable(texts: list[str]) -> list[str | None]:
    """Per program, why rdflib's answer cannot be compared (its SPARQL has ``FILTER(false)``,
    which the compiler writes for an intersection that is always empty), or ``None``."""
    from kopl2sparql.compiler import compile_program
    from kopl2sparql.syntax import parse
    from ontology import Schema, schema_path

    schema = Schema.from_turtle(schema_path())       # the vocabulary suffices to see FILTER(false)
    out = []
    for text in texts:
        try:
            sparql = compile_program(parse(text), schema).sparql
        except SynKQAError:
            sparql = ""
        out.append(RDFLIB_FILTER_FALSE if "FILTER(false)" in sparql else None)
    return out


def _timed(run: Callable[[str], Any], texts: list[str]) -> dict:
    timings, answers = time_each(run, texts, canonical)
    return {"timings": timings, "answers": answers}


def _batch_ours(job: dict, executor, texts: list[str]) -> dict:
    """Throughput on the batch: one by one, ``execute_many``, and ``execute_many`` on the cores."""
    from kopl2sparql.syntax import parse

    out: dict[str, Any] = {"n": len(texts)}
    if not texts:
        return out
    loop = _capped(job, "batch_loop", texts)
    with _collector_paused():
        start = time.perf_counter()
        answers = [outcome_text(lambda t=t: executor.execute(parse(t))) for t in loop]
        seconds = time.perf_counter() - start
    out["one_by_one"] = {"n": len(loop), "seconds": round(seconds, 3), "per_s": round(len(loop) / seconds, 1)}
    out["answers"] = answers
    many = _capped(job, "batch_many", texts)
    if job["engine"] == "rdflib":
        out["incomparable"] = rdflib_incomparable(loop)
        out["many_incomparable"] = rdflib_incomparable(many)
    variants = [("many", 1)] + ([("many_parallel", job["workers"])] if job["workers"] > 1 else [])
    for label, workers in variants:
        with _collector_paused():
            start = time.perf_counter()
            programs = [parse(t) for t in many]
            outcomes = executor.execute_many(programs, workers=workers)
            seconds = time.perf_counter() - start
        out[label] = {"n": len(many), "workers": workers, "seconds": round(seconds, 3),
                      "per_s": round(len(many) / seconds, 1)}
        if label == "many":
            out["many_answers"] = [canonical(o) for o in outcomes]
        else:
            mismatched = sum(canonical(o) != a for o, a in zip(outcomes, out["many_answers"]))
            out[label]["differs_from_sequential"] = mismatched
    return out


def _evtc(job: dict, executor, evtc: dict) -> dict:
    """EV-TC per question: the ranking (one vectorised call, its time shared out), then each
    question's fill-execute-validate loop timed alone."""
    from parsers.base import ProgramRunner, Query
    from parsers.rerank import ExecutionValidatedParser
    from parsers.validators import get_selection, get_validator

    with open(evtc["model"], "rb") as handle:
        model = pickle.load(handle)
    questions = _capped(job, "evtc", evtc["questions"])
    if not questions:
        return {"n": 0}
    parser = ExecutionValidatedParser.from_fitted(model, k=5)
    queries = [Query(q["question"], tuple(q["choices"]), q["id"]) for q in questions]
    start = time.perf_counter_ns()
    ids, scores = model.rank([q.question for q in queries], 5)
    rank_ns = (time.perf_counter_ns() - start) / len(queries)
    runner = ProgramRunner(executor)
    validator, rule = get_validator("options"), get_selection("first")
    positions = iter(range(len(queries)))

    def decide(query):
        i = next(positions)
        return parser.decide(query, ids[i], scores[i], runner, validator, rule)

    timings, predictions = time_each(decide, queries, lambda p: p)
    timings = [int(t + rank_ns) for t in timings]
    answers = [f"{p.program} => {p.answer}" for p in predictions]
    correct = sum(p.answer == q["gold"] for p, q in zip(predictions, questions))
    return {**latency_stats(timings), "rank_us": round(rank_ns / 1000, 2), "answers": answers,
            "accuracy": round(correct / len(questions), 4),
            "executions_per_question": round(runner.calls / len(questions), 3)}
