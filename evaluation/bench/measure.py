"""How the bench measures: peak memory (this process, or a server by PID), timing one call
at a time with the garbage collector off, answers as canonical text, and latency
statistics (median, p99, mean), also over the slices of one work item (:func:`merge_parts`).

Used by the engines inside the workers and by the parent alike; it imports nothing from
the rest of the package.
"""

from __future__ import annotations

import gc
import math
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


# ---- measuring ---------------------------------------------------------------------------------

def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports kB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def process_peak_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of another process we started, if the OS says."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def outcome_text(run: Callable[[], Any]) -> str:
    """The canonical answer, ``error`` (the KB cannot answer) or ``type-error: ...``."""
    from kopl2sparql.errors import ExecutionError, ProgramError

    try:
        return run().canonical()
    except ExecutionError:
        return "error"
    except ProgramError as exc:
        return "type-error: " + str(exc).splitlines()[0]


def time_each(run: Callable[[str], Any], items: Sequence, convert: Callable[[Any], str]) -> tuple[list[int], list[str]]:
    """Run ``run(item)`` for each item, timing each call alone; outcomes converted after the clock.

    Exceptions the engines raise for a program (ExecutionError, ProgramError) are outcomes,
    not failures: they are passed to ``convert`` as the value.
    """
    from kopl2sparql.errors import ExecutionError, ProgramError

    clock = time.perf_counter_ns
    timings: list[int] = []
    values: list[Any] = []
    gc.collect()
    gc.disable()
    try:
        for item in items:
            start = clock()
            try:
                value = run(item)
            except (ExecutionError, ProgramError) as exc:
                value = exc
            timings.append(clock() - start)
            values.append(value)
    finally:
        gc.enable()
    return timings, [convert(v) for v in values]


class _collector_paused:
    """Pause the cyclic garbage collector (after a collection) for a timed section.

    Every timed section of every engine runs this way: the engines allocate no reference
    cycles, and a collection started by whatever the harness holds (the work lists) would
    charge its scan to whichever engine happens to allocate at that moment.
    """

    def __enter__(self):
        gc.collect()
        gc.disable()

    def __exit__(self, *exc):
        gc.enable()


def canonical(value) -> str:
    from kopl2sparql.errors import ExecutionError, ProgramError

    if isinstance(value, ExecutionError):
        return "error"
    if isinstance(value, ProgramError):
        return "type-error: " + str(value).splitlines()[0]
    return value.canonical()


def latency_stats(timings_ns: Sequence[int]) -> dict:
    """Median, p99 and mean in µs (``n`` programs)."""
    if not timings_ns:
        return {"n": 0}
    ordered = sorted(timings_ns)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return {"n": len(ordered), "median_us": round(statistics.median(ordered) / 1000, 2),
            "p99_us": round(p99 / 1000, 2), "mean_us": round(statistics.fmean(ordered) / 1000, 2)}


_LISTS = ("answers", "peer_answers", "finishes", "incomparable")


def merge_parts(parts: list[dict]) -> dict:
    """One work item's result from its slices: statistics over all timings, lists joined in order."""
    timings = [t for part in parts for t in part.get("timings", [])]
    run: dict[str, Any] = latency_stats(timings)
    for key in _LISTS:
        if any(key in part for part in parts):
            run[key] = [x for part in parts for x in part.get(key, [])]
    if any("exec_only" in part for part in parts):
        run["exec_only"] = latency_stats([t for part in parts for t in part.get("exec_only", [])])
    return run
