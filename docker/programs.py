"""Print N distinct random well-typed KoPL programs, one per line, for the container cross-check.

    python3 docker/programs.py --n 1000 [--seed 0] [--kb-seed 42] [--kb-scale 1]

The programs come from the library's sampler (kopl2sparql.sampling, the one the serve load
test uses), with numbers drawn from the KB's own attribute values so that filters and
comparisons cut sets. Only programs the native interpreter answers are kept: a program
that fails by design (QueryAttr on several entities, say) makes `synkqa execute` report a
failure even when both engines agree on it, and the check's exit code must mean "the
engines disagree or the endpoint failed", nothing else. Deterministic for the seeds.
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="how many programs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the programs")
    parser.add_argument("--kb-seed", type=int, default=42)
    parser.add_argument("--kb-scale", type=int, default=1)
    parser.add_argument("--depth", type=int, default=4, help="how far programs grow")
    args = parser.parse_args()

    from kopl2sparql.errors import ExecutionError
    from kopl2sparql.kbindex import Multi
    from kopl2sparql.sampling import random_programs
    from synkqa.benchmark.executors import get_executor
    from synkqa.benchmark.world import kb_schema

    schema = kb_schema(args.kb_seed, args.kb_scale)
    native = get_executor("native", args.kb_seed, args.kb_scale)
    numbers: dict[str, list] = {}
    for attribute, table in native.index.values.items():
        found = set()
        for value in table.values():
            for v in (value if isinstance(value, Multi) else (value,)):
                if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
                    found.add(v)
        if found:
            numbers[attribute] = sorted(found)

    kept: list[str] = []
    seen: set[str] = set()
    skipped = 0
    batch, offset = 4 * args.n, 0
    while len(kept) < args.n:
        # The sampler is deterministic per seed: widen the seed range until enough are kept.
        for program in random_programs(schema, batch, seed=args.seed + offset, depth=args.depth,
                                       numbers=numbers):
            text = program.canonical()
            if text in seen:
                continue
            seen.add(text)
            try:
                native.execute(program)
            except ExecutionError:
                skipped += 1
                continue
            kept.append(text)
            if len(kept) == args.n:
                break
        offset += 1_000_003
    print("\n".join(kept))
    print(f"programs.py: {len(kept)} programs ({skipped} that fail on the native engine left out)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
