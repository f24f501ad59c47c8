"""Independent stages of the study on every core: jobs in forked worker processes.

``synkqa reproduce`` is a handful of stages that share their inputs (the KB's store, the
loaded splits, the executor) but not their work: the paper's study, the generalization
study's held-out models, its full-split cells, its timing. :func:`run_jobs` runs such jobs
in worker processes forked from the one that loaded the inputs, so every worker sees them
copy-on-write without pickling or reloading anything, and only each job's (small) result
travels back.

- Jobs may name others they must wait for (``after``): a job that reads a model another job
  trains and caches waits for it instead of training it a second time.
- The parent draws every bar: a job's :class:`~evaluation.runner.Progress` calls travel to
  it over the job's pipe, so the display shows what each worker is doing as it does it.
- Results do not depend on where or in which order jobs run: with one worker (or without
  ``fork``) the same jobs run one after another in this process, and tests compare both.
- A job's exception is re-raised in the parent as it was raised (or, if it cannot be
  pickled, as an :class:`~ontology.errors.ExecutionError` naming the job); a worker that dies
  is named with its exit status. Either way the other workers are stopped.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from kopl2sparql.errors import ConfigError, ExecutionError

__all__ = ["Job", "run_jobs", "default_workers"]


@dataclass(frozen=True)
class Job:
    """One unit of independent work: ``run(progress, done)`` returns a picklable result;
    ``done`` holds the results of the jobs named in ``after``.

    :param after: names of jobs whose results (or side effects, such as a cached model) this
        one needs; it starts only once they have finished.
    :param cost: rough expected seconds; among the jobs ready to start, the costliest goes
        first, so the long ones do not end up last on one core.
    """

    name: str
    run: Callable[[Any, dict[str, Any]], Any]
    after: tuple[str, ...] = ()
    cost: float = 1.0


def default_workers() -> int:
    """One worker per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check(jobs: Sequence[Job]) -> list[Job]:
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"job names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    known = set(names)
    for job in jobs:
        missing = [a for a in job.after if a not in known]
        if missing:
            raise ConfigError(f"job '{job.name}' waits for unknown job(s) {missing}")
    # Topological order with the costliest ready job first (the order the sequential run uses too).
    done: set[str] = set()
    order: list[Job] = []
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(a in done for a in j.after)]
        if not ready:
            raise ConfigError(f"jobs wait for each other in a cycle: {[j.name for j in pending]}")
        job = max(ready, key=lambda j: j.cost)
        order.append(job)
        done.add(job.name)
        pending.remove(job)
    return order


def run_jobs(jobs: Sequence[Job], progress=None, workers: int | None = None,
             timings: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """Run ``jobs`` on up to ``workers`` forked processes (default: one per CPU) and return
    ``{name: result}``.

    :param progress: an :class:`evaluation.runner.Progress`; every job's bars appear on it.
    :param timings: filled with ``{name: {"seconds", "cpu_seconds", "worker"}}`` per job.
    :raises ConfigError: for repeated names, unknown or cyclic ``after``.
    """
    from evaluation.runner import Progress
    progress = progress or Progress()
    order = _check(jobs)
    workers = default_workers() if workers is None else workers
    workers = min(workers, len(order))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        results: dict[str, Any] = {}
        for job in order:
            results[job.name], spent = _timed(job, progress, {a: results[a] for a in job.after})
            if timings is not None:
                timings[job.name] = {**spent, "worker": 0}
        return results
    pool = _Pool(order, progress, workers)
    results = pool.run()
    if timings is not None:
        timings.update({name: pool.timings[name] for name in results})
    return results


def _timed(job: Job, progress, done: dict) -> tuple[Any, dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = job.run(progress, done)
    return result, {"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}


# ---- the forked side -------------------------------------------------------------------

class _PipeProgress:
    """What a job sees as its progress: every call becomes a message to the parent."""

    enabled = False  # no nested displays of its own: the parent owns the terminal

    def __init__(self, conn: Connection):
        self._conn = conn
        self._next = 0

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator["_PipeTask"]:
        self._next += 1
        key = self._next
        self._conn.send(("task", key, description, total))
        try:
            yield _PipeTask(self._conn, key)
        finally:
            self._conn.send(("done", key))

    @contextmanager
    def paused(self) -> Iterator[None]:
        yield

    def log(self, message: str) -> None:
        self._conn.send(("log", message))


@dataclass
class _PipeTask:
    conn: Connection
    key: int

    def advance(self, n: int = 1) -> None:
        self.conn.send(("advance", self.key, n))


def _worker(conn: Connection, jobs: dict[str, Job]) -> None:
    """A worker's life: run the jobs the parent names until it sends ``None``."""
    progress = _PipeProgress(conn)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        name, done = message
        try:
            result, spent = _timed(jobs[name], progress, done)
            payload = pickle.dumps(("result", name, result, spent), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            try:
                payload = pickle.dumps(("error", name, exc), protocol=pickle.HIGHEST_PROTOCOL)
                pickle.loads(payload)   # some exceptions pickle but do not unpickle
            except Exception:  # noqa: BLE001
                payload = pickle.dumps(("error", name, ExecutionError(f"job '{name}' failed: {text}")))
        conn.send_bytes(payload)


# ---- the parent's side -----------------------------------------------------------------

class _Pool:
    def __init__(self, order: list[Job], progress, workers: int):
        self.order = order
        self.progress = progress
        self.workers = workers
        self.results: dict[str, Any] = {}
        self.timings: dict[str, dict[str, float]] = {}
        self.bars: dict[tuple[int, int], Any] = {}

    def run(self) -> dict[str, Any]:
        ctx = multiprocessing.get_context("fork")
        jobs = {job.name: job for job in self.order}
        procs, conns = [], []
        finished = False
        # Fork with no drawing thread alive (rich's refresher could hold the console's lock),
        # and with the loaded inputs moved out of the collector's reach, so that neither the
        # collector nor reference counting in a worker copies pages it never changes.
        gc.collect()
        gc.freeze()
        try:
            with self.progress.paused():
                for _ in range(self.workers):
                    parent_end, child_end = ctx.Pipe(duplex=True)
                    proc = ctx.Process(target=_worker, args=(child_end, jobs), daemon=True)
                    proc.start()
                    child_end.close()
                    procs.append(proc)
                    conns.append(parent_end)
            self._schedule(procs, conns)
            finished = True
        finally:
            gc.unfreeze()
            for conn in conns:
                try:
                    conn.send(None)
                except OSError:
                    pass
            for proc in procs:
                # After a failure the others' work is wasted: stop them now.
                proc.join(timeout=2 if finished else 0)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
            for bar in self.bars.values():
                bar.close()
            self.bars.clear()
        return {job.name: self.results[job.name] for job in self.order}

    def _schedule(self, procs, conns) -> None:
        pending = list(self.order)
        running: dict[int, str] = {}          # worker index -> job name
        while pending or running:
            for w in range(len(conns)):
                if w in running:
                    continue
                ready = next((j for j in pending if all(a in self.results for a in j.after)), None)
                if ready is None:
                    break
                pending.remove(ready)
                running[w] = ready.name
                conns[w].send((ready.name, {a: self.results[a] for a in ready.after}))
            if not running:
                raise ExecutionError("jobs are waiting for each other and none can start")  # pragma: no cover
            for conn in wait([conns[w] for w in running]):
                w = conns.index(conn)
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    procs[w].join(timeout=5)
                    raise ExecutionError(f"the worker running job '{running[w]}' died "
                                         f"({_status(procs[w].exitcode)})") from None
                kind = message[0]
                if kind == "result":
                    self.results[message[1]] = message[2]
                    self.timings[message[1]] = {**message[3], "worker": w + 1}
                    del running[w]
                elif kind == "error":
                    raise message[2]
                else:
                    self._draw(w, message)

    def _draw(self, worker: int, message: tuple) -> None:
        kind = message[0]
        if kind == "task":
            _, key, description, total = message
            self.bars[(worker, key)] = self.progress.open_task(description, total)
        elif kind == "advance":
            bar = self.bars.get((worker, message[1]))
            if bar is not None:
                bar.advance(message[2])
        elif kind == "done":
            bar = self.bars.pop((worker, message[1]), None)
            if bar is not None:
                bar.close()
        elif kind == "log":
            self.progress.log(message[1])


def _status(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"
