"""SPARQL dialects side by side on the embedded store: the same programs compiled to the
portable text and to the embedded store's dialect, run interleaved, answers compared.

Only programs whose query text differs between the two dialects are timed (the others are
the same query). Each is run three times per dialect, alternating; a program's ratio is
its best time in one dialect over its best time in the other, so load on the machine
cancels out::

    python -m evaluation.dialectbench --n 6000
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from evaluation.bench import RandomPrograms


def compare(first, second, n: int, seed: int = 11, log=print) -> dict:
    """Time ``second``'s dialect against ``first``'s on random programs of the SynKQA-Pro KB."""
    from kopl2sparql.compiler import compile_program
    from kopl2sparql.errors import ExecutionError, ProgramError
    from kopl2sparql.syntax import parse
    from store.executor import SparqlExecutor
    from synkqa.benchmark.executors import get_executor

    native = get_executor("native")
    store, schema = get_executor("oxigraph").store, native.schema
    engines = [SparqlExecutor(store, schema, name=d.name, dialect=d) for d in (first, second)]
    generator = RandomPrograms(native.index, random.Random(seed))
    programs = []
    for _ in range(n):
        program = parse(generator.program())
        try:
            if compile_program(program, schema, first).sparql != compile_program(program, schema, second).sparql:
                programs.append(program)
        except ProgramError:
            continue

    def run(engine, program):
        try:
            return engine.execute(program)
        except ExecutionError:
            return "error"

    disagreements = sum(run(engines[0], p) != run(engines[1], p) for p in programs)
    ratios = []
    for program in programs:
        best = {e.name: float("inf") for e in engines}
        for _ in range(3):
            for engine in engines:
                start = time.perf_counter()
                run(engine, program)
                best[engine.name] = min(best[engine.name], time.perf_counter() - start)
        ratios.append(best[second.name] / best[first.name])
    ratios.sort()
    report = {"programs": n, "differing": len(programs), "disagreements": disagreements,
              "median": statistics.median(ratios) if ratios else None,
              "p10": ratios[len(ratios) // 10] if ratios else None,
              "p90": ratios[9 * len(ratios) // 10] if ratios else None}
    log(f"{second.name} vs {first.name}: {report['differing']} of {n} programs differ, "
        f"{disagreements} disagreements; time ratio median {report['median']:.3f} "
        f"(p10 {report['p10']:.3f}, p90 {report['p90']:.3f})")
    return report


def main(argv: list[str] | None = None) -> int:
    from kopl2sparql.dialects import OXIGRAPH, PORTABLE, Dialect

    parser = argparse.ArgumentParser(prog="python -m evaluation.dialectbench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=6000, help="random programs drawn")
    args = parser.parse_args(argv)
    # One rewrite at a time, then the whole embedded-store dialect.
    spelling = Dialect("no-casts-not-in", cast_mixed_numbers=False, not_in_as_conjunction=False)
    compare(PORTABLE, spelling, args.n)
    compare(spelling, OXIGRAPH, args.n, seed=12)
    compare(PORTABLE, OXIGRAPH, args.n, seed=13)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
