"""Every CLI entry point against hostile input, under an address-space limit.

Cases from tests/cli_fuzz.py (mutated programs, queries, Turtle, KQA Pro JSON, program
files, dataset splits; random bytes) run through the real CLI in a child process limited
to 3 GB of address space. Each must end with exit 0, 1 or 2 and a short message: no
traceback, no crash of the child, no case running away with time or output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_fuzz import cases

MEMORY_LIMIT = 3 * 1024 ** 3
ROOT = Path(__file__).resolve().parent.parent


def _limit_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(tmp_path, count: int, seed: int, budget: float) -> list[dict]:
    file = tmp_path / "cases.json"
    file.write_text(json.dumps(cases(count, seed)))
    done = subprocess.run([sys.executable, "-c", "from tests.cli_fuzz import main; main()", str(file)],
                          capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(),
                          preexec_fn=_limit_memory, timeout=budget)
    assert done.returncode == 0, f"the driver died ({done.returncode}): {done.stderr[-2000:]}"
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == count
    return results


def _check(results: list[dict]) -> None:
    bad = [r for r in results
           if r["crashed"] or r["traceback"] or r["exit"] not in (0, 1, 2)
           or r["output_chars"] > 20_000 or r["seconds"] > 30]
    assert not bad, json.dumps(bad[:5], indent=1, ensure_ascii=True)
    # the inputs really are hostile: most cases end in an error
    assert sum(r["exit"] != 0 for r in results) > len(results) / 2


def test_hostile_inputs_on_every_entry_point(tmp_path, kb_turtle):
    _check(_run(tmp_path, 30, seed=0, budget=300))


@pytest.mark.slow
def test_hostile_inputs_on_every_entry_point_many(tmp_path, kb_turtle):
    _check(_run(tmp_path, 300, seed=1, budget=600))
