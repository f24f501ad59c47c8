"""``synkqa bench``: every engine on the same programs, from scale 1 to 100, in one run.

The run is one process tree. The parent builds nothing heavy itself; for every scale and
engine it starts a *worker* process (``python -m evaluation.bench worker JOB``) that loads
the KB the engine's own way, reports its load time and peak memory (``ru_maxrss`` of that
process, so engines never share a measurement), runs the work and writes its answers and
timings. The native worker runs first: it is the reference every other engine is checked
against, and it draws the work (random slots from its index, seeded) so that every engine
sees exactly the same programs.

Engines (:data:`ENGINES`): ours — ``native`` (the interpreter over a :class:`KBIndex`),
``oxigraph-memory`` and ``oxigraph-disk`` (compiled SPARQL on embedded pyoxigraph); the
reference SPARQL engines — ``rdflib`` (its own engine over an in-memory Graph),
``oxigraph-server`` and ``virtuoso`` (over HTTP through :class:`EndpointStore`); the KoPL
peers — ``kopl`` (the official Python engine, in the worker) and ``kopl-engine`` (VisKoP's
C++ engine, which kills its process on bad input: here it only ever runs in its own worker).

Work (:func:`make_workload`):

- ``templates``: each of the nine template shapes with ``n`` random slot fillings;
- ``random``: random well-typed programs beyond the templates (any operator, depth <= 3);
- ``scans``: the widest programs the language can write, e.g. all people born in a
  country (``Find(Country_x);RelateInv(located_in);RelateInv(born_in);Count()``);
- ``batch``: the benchmark's 120,000 gold programs (train + validation + test, the
  template mix) at the run's scale, for throughput;
- ``evtc``: EV-TC end to end per question (rank, fill, execute, validate), TC trained on
  a sample of the train split.

Per program, each engine is timed one program at a time (``perf_counter_ns``, garbage
collector off), as a service sees it: a fresh engine, every program new. Ours pay
parse + type check + execute (+ compile and fact checks for SPARQL); ``kopl-engine`` pays
``parse_program`` + ``forward`` and ``kopl`` ``forward``, both only for the KoPL calls that
produce the answer (the extra calls :mod:`synkqa.benchmark.peers` makes to check a peer's answer are
run but not timed). Throughput is measured on the batch: one program at a time, through
``execute_many`` (batched VALUES queries for SPARQL) and with ``--workers`` cores.

Every engine's answers are compared with native's. KoPL peers are compared through the
rules of :mod:`synkqa.benchmark.peers` (``kopl``: differences it bridges are counted as agreement and
tagged; ``kopl-engine``: prints only the first name of a set and ``no`` for an empty one,
so ours is cut down the same way before comparing, and programs on which ours raises are
not comparable). Programs with no KoPL counterpart are counted as "not comparable".

The package, by concern (each module imports only those above it in this list):

- :mod:`~evaluation.bench.config`: the engines, ``--engines``/``--scale`` parsing, :class:`BenchConfig`;
- :mod:`~evaluation.bench.workload`: the programs of one scale (templates, random, scans, batch, EV-TC);
- :mod:`~evaluation.bench.measure`: timing, latency statistics, peak memory, canonical answers;
- :mod:`~evaluation.bench.engines`: our engines inside a worker (native, Oxigraph, rdflib, HTTP);
- :mod:`~evaluation.bench.peers`: the KoPL peers inside a worker (``kopl``, ``kopl-engine``);
- :mod:`~evaluation.bench.worker`: the worker process (:func:`serve`) and the parent's handle on it;
- :mod:`~evaluation.bench.servers`: the SPARQL servers a run starts itself;
- :mod:`~evaluation.bench.agreement`: every engine's answers against native's;
- :mod:`~evaluation.bench.report`: summary, targets, tables, Markdown, plot, output files;
- :mod:`~evaluation.bench.runner`: :func:`run`, the parent that drives it all.

This module re-exports the names the CLI (:mod:`synkqa.cli.bench`), :mod:`evaluation.enginebench`
and the tests use; ``python -m evaluation.bench worker JOB`` runs :mod:`evaluation.bench.__main__`.
"""

from __future__ import annotations

from evaluation.bench.agreement import _agree, compare_answers
from evaluation.bench.config import (
    ENGINES,
    HTTP_ENGINES,
    LARGE_SCALE,
    OURS,
    BenchConfig,
    EngineSpec,
    parse_engines,
    parse_scales,
)
from evaluation.bench.engines import RDFLIB_FILTER_FALSE, RdflibStore, rdflib_incomparable
from evaluation.bench.measure import (
    canonical,
    latency_stats,
    merge_parts,
    outcome_text,
    peak_rss_mb,
    process_peak_mb,
    time_each,
)
from evaluation.bench.peers import kopl_engine_incomparable
from evaluation.bench.report import (
    SHORT,
    SUMMARY_COLUMNS,
    TEMPLATE_ORDER,
    best_throughput,
    machine,
    markdown,
    plot,
    shape_table,
    summarise,
    summary_cells,
    targets,
    write_outputs,
)
from evaluation.bench.runner import run
from evaluation.bench.workload import SCAN_SHAPES, RandomPrograms, kb_entities, make_workload, template_texts
from evaluation.bench.worker import WorkerFailed, main, serve

__all__ = [
    # config
    "EngineSpec", "LARGE_SCALE", "ENGINES", "OURS", "HTTP_ENGINES", "parse_engines", "parse_scales", "BenchConfig",
    # workload
    "SCAN_SHAPES", "template_texts", "RandomPrograms", "kb_entities", "make_workload",
    # measure
    "peak_rss_mb", "process_peak_mb", "outcome_text", "time_each", "canonical", "latency_stats", "merge_parts",
    # engines, peers
    "RdflibStore", "RDFLIB_FILTER_FALSE", "rdflib_incomparable", "kopl_engine_incomparable",
    # worker, runner, agreement
    "serve", "main", "WorkerFailed", "run", "compare_answers", "_agree",
    # report
    "TEMPLATE_ORDER", "summarise", "best_throughput", "targets", "machine", "SUMMARY_COLUMNS", "summary_cells",
    "SHORT", "shape_table", "markdown", "write_outputs", "plot",
]
