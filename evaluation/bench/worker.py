"""The worker process and the parent's handle on it.

:func:`serve` is the worker's side (``python -m evaluation.bench worker JOB``, through
:func:`main`): it builds the engine of its job and answers JSON commands on stdin, one
JSON reply per line. :class:`_Worker` is the parent's side: it starts that process and
sends it commands one by one, raising :class:`WorkerFailed` when it dies, times out or
reports an error.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from evaluation.bench.engines import _Engine, _Ours
from evaluation.bench.measure import peak_rss_mb
from evaluation.bench.peers import _Kopl, _KoplEngine
from kopl2sparql.errors import SynKQAError


def serve(job_path: Path) -> int:
    """Worker entry point: JSON commands on stdin, one JSON reply per line on stdout.

    Commands: ``load``, ``workload`` (native only: draw the work), ``run`` (``key``),
    ``batch``, ``evtc``, ``finish`` (replies with the process's peak memory and exits).
    Anything the engines print goes to the log (stderr), never into the replies.
    """
    job = json.loads(Path(job_path).read_text())
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    engine: _Engine = {"kopl": _Kopl, "kopl-engine": _KoplEngine}.get(job["engine"], _Ours)(job)
    started = time.perf_counter()
    for line in sys.stdin:
        command = json.loads(line)
        name = command["cmd"]
        try:
            if name == "load":
                reply = engine.load()
            elif name == "workload":
                reply = engine.make_workload()
            elif name == "run":
                reply = engine.run(command["key"], command.get("part", 0), command.get("parts", 1))
            elif name == "batch":
                reply = engine.batch()
            elif name == "evtc":
                reply = engine.evtc() or {}
            elif name == "finish":
                reply = {**engine.close(), "peak_mb": peak_rss_mb(),
                         "worker_s": round(time.perf_counter() - started, 2)}
            else:
                reply = {"error": f"unknown command {name!r}"}
        except SynKQAError as exc:
            reply = {"error": str(exc).splitlines()[0]}
        except Exception as exc:  # noqa: BLE001 - the parent reports it; the traceback goes to the log
            import traceback

            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if name in ("load", "workload") and "error" not in reply:
            # The KB and the work stay for the life of the worker: move them out of the
            # collector's sight, so the collection before each timed section is cheap.
            if Path(job["workload"]).exists():
                engine.read_workload()
            gc.collect()
            gc.freeze()
        replies.write(json.dumps(reply) + "\n")
        if name == "finish":
            break
    return 0


# ---- the parent ---------------------------------------------------------------------------------

class WorkerFailed(SynKQAError):
    """A worker process died, timed out or reported an error."""


class _Worker:
    """A worker process of this run, driven command by command."""

    def __init__(self, engine: str, job: dict, run_dir: Path, timeout: float, label: str = ""):
        self.engine, self.timeout = engine, timeout
        name = f"{engine}-scale{job['scale']}{label}"
        job_path = run_dir / f"{name}.job.json"
        job_path.write_text(json.dumps(job))
        self.log_path = run_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "evaluation.bench", "worker", str(job_path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        text=True, bufsize=1)

    def call(self, command: dict) -> dict:
        """Send one command and wait for its reply.

        :raises WorkerFailed: when the worker reports an error, dies or takes longer than the time limit.
        """
        return self.receive(command, self.send(command))

    def send(self, command: dict) -> bool:
        """Send a command without waiting (:meth:`receive` gets the reply); ``False`` if the worker is gone."""
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def receive(self, command: dict, sent: bool = True) -> dict:
        """The reply to ``command``, sent before by :meth:`send`.

        :raises WorkerFailed: as :meth:`call`.
        """
        import threading

        expired = threading.Event()

        def kill() -> None:
            expired.set()
            self.process.kill()

        timer = threading.Timer(self.timeout, kill)
        timer.start()
        try:
            line = self.process.stdout.readline() if sent else ""
        except (BrokenPipeError, OSError):
            line = ""
        finally:
            timer.cancel()
        if not line:
            code = self.process.wait()
            self._log.flush()
            tail = " ".join(self.log_path.read_text(errors="replace").split()[-40:])
            why = f"no answer within {self.timeout:g} s" if expired.is_set() else f"worker exited with status {code}"
            raise WorkerFailed(f"{why} during {command['cmd']}: {tail}"[:500])
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerFailed(f"{command['cmd']} failed: {reply['error']}")
        return reply

    def stop(self) -> None:
        """End the worker (by its PID) if it is still there."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m evaluation.bench worker JOB`` (internal)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "worker":
        return serve(Path(argv[1]))
    print("usage: python -m evaluation.bench worker JOB.json   (the command is: synkqa bench)", file=sys.stderr)
    return 2
