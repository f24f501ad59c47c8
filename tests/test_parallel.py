"""evaluation.parallel: jobs in forked workers give what they give in one process, wait
for the jobs they name, and fail with the job's own error or the worker's fate."""

from __future__ import annotations

import os
import signal

import pytest

from evaluation.parallel import Job, run_jobs
from evaluation.runner import Progress
from kopl2sparql.errors import ConfigError, DatasetError, ExecutionError

LOADED = list(range(50_000))   # inherited by the workers through fork, never sent to them


class Recorder(Progress):
    """A Progress that remembers the bars it was asked to draw (from any worker)."""

    def __init__(self):
        super().__init__(enabled=False)
        self.opened: list[tuple[str, int | None]] = []
        self.advanced = 0
        self.closed = 0
        self.logged: list[str] = []
        outer = self

        class Bar:
            def advance(self, n=1):
                outer.advanced += n

            def close(self):
                outer.closed += 1

        self._bar_type = Bar

    def open_task(self, description, total=None):
        self.opened.append((description, total))
        return self._bar_type()

    def log(self, message):
        self.logged.append(message)


def _jobs():
    def total(progress, done):
        with progress.task("sum", 2) as task:
            task.advance()
            value = sum(LOADED)
            task.advance()
        return {"sum": value, "pid": os.getpid()}

    def square(progress, done):
        progress.log("squaring")
        return [x * x for x in LOADED[:5]]

    def combine(progress, done):
        return done["total"]["sum"] + sum(done["square"])

    return [Job("total", total, cost=3), Job("square", square, cost=1),
            Job("combine", combine, after=("total", "square"))]


def test_workers_give_the_same_results_as_one_process_and_report_progress():
    one = run_jobs(_jobs(), Recorder(), workers=1)
    progress = Recorder()
    two = run_jobs(_jobs(), progress, workers=2)
    assert one["combine"] == two["combine"] == sum(LOADED) + sum(x * x for x in range(5))
    assert one["square"] == two["square"]
    assert one["total"]["pid"] == os.getpid() and two["total"]["pid"] != os.getpid()
    assert progress.opened == [("sum", 2)] and progress.advanced == 2 and progress.closed == 1
    assert progress.logged == ["squaring"]


def test_a_jobs_error_is_raised_in_the_parent_as_raised():
    def bad(progress, done):
        raise DatasetError("test.jsonl:3: missing field 'answer'")

    with pytest.raises(DatasetError, match="missing field 'answer'"):
        run_jobs([Job("bad", bad), Job("fine", lambda p, d: 1)], workers=2)


def test_an_unpicklable_error_is_named_with_its_job():
    class Local(Exception):
        pass

    def bad(progress, done):
        raise Local("no way back")

    with pytest.raises(ExecutionError, match="job 'bad' failed: .*no way back"):
        run_jobs([Job("bad", bad), Job("fine", lambda p, d: 1)], workers=2)


def test_a_dead_worker_is_named_and_the_others_stop():
    def die(progress, done):
        os.kill(os.getpid(), signal.SIGKILL)

    def slow(progress, done):
        import time
        time.sleep(30)

    import time
    start = time.monotonic()
    with pytest.raises(ExecutionError, match="job 'die' died .*SIGKILL"):
        run_jobs([Job("die", die, cost=2), Job("slow", slow)], workers=2)
    assert time.monotonic() - start < 10


def test_bad_job_graphs_are_refused():
    with pytest.raises(ConfigError, match="unknown job"):
        run_jobs([Job("a", lambda p, d: 1, after=("b",))])
    with pytest.raises(ConfigError, match="cycle"):
        run_jobs([Job("a", lambda p, d: 1, after=("b",)), Job("b", lambda p, d: 1, after=("a",))])
    with pytest.raises(ConfigError, match="repeat"):
        run_jobs([Job("a", lambda p, d: 1), Job("a", lambda p, d: 2)])
