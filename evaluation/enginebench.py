"""Latency of our two KoPL engines on the nine template shapes, in one process (~1 min).

The quick, single-process view; ``synkqa bench`` (:mod:`evaluation.bench`) is the full
comparison (every engine in its own process, peers, servers, scale 100, throughput).

For every scale and template, ``n`` programs with random slots from the KB are timed one
by one (``time.perf_counter_ns``, garbage collector off) and the median is reported:

- ``native exec``: :meth:`Interpreter.run` on an already parsed program;
- ``native parse+exec``: :func:`kopl2sparql.syntax.parse` then :meth:`Interpreter.run`;
- ``sparql warm``: compile (cached) + guards (facts already known) + the query on
  in-memory Oxigraph + decoding: what a long-running service pays per program;
- ``sparql cold``: the same with empty caches before every program (compilation from
  scratch, prepared shapes included; the fact check for the program's entities; the query).

Slots are drawn with ``random.Random(seed)``; WorkAndBornIntersection slots come from one
person (organisation and birth city), as the benchmark generator does, so answers are
non-empty. Every program's answer is also checked to agree on both engines.

    python -m evaluation.enginebench --scales 1,10 --n 2000
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from kopl2sparql.compiler import clear_caches, compile_program
from kopl2sparql.interpreter import Interpreter
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.syntax import parse
from store.executor import SparqlExecutor
from synkqa.benchmark.templates import Template, templates
from synkqa.benchmark.world import ensure_turtle, kb_schema, open_store

COLUMNS = ("native_exec", "native_parse_exec", "sparql_warm", "sparql_cold")


@dataclass
class ShapeResult:
    scale: int
    template: str
    n: int
    native_exec: float          # median µs per program
    native_parse_exec: float
    sparql_warm: float
    sparql_cold: float


def random_texts(template: Template, index: KBIndex, n: int, rng: random.Random) -> list[str]:
    """``n`` program texts of ``template`` with slots drawn from the KB (as ``synkqa bench`` draws them)."""
    from evaluation.bench import template_texts

    return template_texts(template, index, n, rng)


def _median_us(fn, items, before=None) -> float:
    """Median µs of ``fn(item)``; ``before()`` runs untimed ahead of each call."""
    timings = []
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for item in items:
            if before is not None:
                before()
            start = clock()
            fn(item)
            timings.append(clock() - start)
    finally:
        gc.enable()
    return statistics.median(timings) / 1000


def bench_scale(scale: int, n: int = 2000, seed: int = 0, log=print) -> list[ShapeResult]:
    """Time every template shape at one scale (building the KB and store if needed)."""
    started = time.perf_counter()
    turtle = ensure_turtle(42, scale, progress=True)
    t0 = time.perf_counter()
    schema = kb_schema(42, scale)
    index = KBIndex.from_turtle(turtle, schema)
    t1 = time.perf_counter()
    store = open_store(42, scale)
    log(f"scale {scale}: {index.entity_count()} entities; index {t1 - t0:.2f} s, "
        f"store ready {time.perf_counter() - t1:.2f} s (total setup {time.perf_counter() - started:.1f} s)")
    interpreter = Interpreter(index, schema)
    rng = random.Random(seed)
    results = []
    for template in templates():
        texts = random_texts(template, index, n, rng)
        programs = [parse(t) for t in texts]
        # Cold: before every program the compile cache and the known facts are emptied.
        cold_executor = SparqlExecutor(store, schema)

        def forget():
            clear_caches()
            cold_executor._known.clear()

        cold = _median_us(lambda p: cold_executor.run_compiled(compile_program(p, schema)), programs, forget)
        warm_executor = SparqlExecutor(store, schema)
        for p in programs:                          # the answers agree (and every cache is warm)
            native_answer = interpreter.run(p)
            assert warm_executor.run_compiled(compile_program(p, schema)) == native_answer, p
        warm = _median_us(lambda p: warm_executor.run_compiled(compile_program(p, schema)), programs)
        native = _median_us(interpreter.run, programs)
        native_parse = _median_us(lambda t: interpreter.run(parse(t)), texts)
        results.append(ShapeResult(scale, template.name, n, round(native, 2), round(native_parse, 2),
                                   round(warm, 2), round(cold, 2)))
    return results


def format_table(results: list[ShapeResult]) -> str:
    """Markdown table: one row per template, a column group per scale."""
    scales = sorted({r.scale for r in results})
    head = "| template | " + " | ".join(
        f"native exec {s}x | native parse+exec {s}x | SPARQL warm {s}x | SPARQL cold {s}x" for s in scales) + " |"
    lines = [head, "|" + "---|" * (1 + 4 * len(scales))]
    by = {(r.scale, r.template): r for r in results}
    for t in templates():
        cells = []
        for s in scales:
            r = by.get((s, t.name))
            cells += [f"{getattr(r, c):.1f}" if r else "-" for c in COLUMNS]
        lines.append(f"| {t.id} {t.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.enginebench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,10", help="comma-separated KB scales (default 1,10)")
    parser.add_argument("--n", type=int, default=2000, help="programs per template and scale (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="slot sampling seed")
    parser.add_argument("--json", dest="json_path", help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    results = []
    for scale in scales:
        results += bench_scale(scale, args.n, args.seed, log=lambda m: print(m, file=sys.stderr))
    print("median µs per program\n")
    print(format_table(results))
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump([asdict(r) for r in results], fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
