"""Run calls on an engine with a deadline: in a forked worker process that is killed when late.

A thread cannot be stopped: a SPARQL query that computes everything before its first row
(``Relate`` chains on a store grow exponentially) or a native step over a huge set would
go on using CPU and memory after its caller gave up. A process can be killed, so
:class:`DeadlineWorker` forks one from the caller, which already holds the engine (its KB
index or in-memory store is shared copy-on-write, nothing is rebuilt), sends it one call
at a time and kills it at the deadline; the next call forks a fresh worker from the
caller's untouched engine.

Only ``fork`` gives the child the caller's engine for free, so this is POSIX-only; callers
without fork run without a deadline (see :func:`can_fork`). The caller must not be
querying the engine from another thread while it forks.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable, Mapping
from typing import Any

from ontology.errors import ExecutionError, ExecutionTimeout

_RESULT, _ERROR = "result", "error"


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else an ExecutionError with its message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return ExecutionError(f"{type(exc).__name__}: {exc}")


def _serve(connection, operations: Mapping[str, Callable[..., Any]]) -> None:
    """Worker loop: one (name, args) request at a time, one (status, value) reply each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the caller's to handle
    faulthandler.disable()      # a crash is reported by the caller, once, without a dump
    while True:
        try:
            name, args = connection.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (_RESULT, operations[name](*args))
        except Exception as exc:        # the caller re-raises it, so the error stays per call
            reply = (_ERROR, _portable(exc))
        try:
            connection.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            connection.send((_ERROR, ExecutionError(f"the result could not be sent back: {exc}")))


class DeadlineWorker:
    """Calls ``operations[name](*args)`` in a forked worker; :class:`ExecutionTimeout` after
    ``timeout`` seconds (the worker is killed, with everything it was computing).

    A worker that dies (a crash in native code, the kernel's OOM killer) is one
    :class:`ExecutionError` for the call it was running; the next call gets a new worker.
    Arguments and results cross a pipe, so they must pickle.
    """

    def __init__(self, operations: Mapping[str, Callable[..., Any]], timeout: float, *, what: str = "program",
                 hint: str = "see --timeout"):
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        self.operations = dict(operations)
        self.timeout = timeout
        self.what = what
        self.hint = hint                  # which option sets the limit, for the message
        self._process = None
        self._connection = None
        self.started = 0                  # workers forked so far (one more after every kill)

    def __enter__(self) -> "DeadlineWorker":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        """Fork the worker now (else the first call does): before the caller starts threads."""
        if self._process is None:
            self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, self.operations), daemon=True)
        process.start()
        theirs.close()
        self._process, self._connection = process, mine
        self.started += 1

    def call(self, name: str, *args: Any) -> Any:
        connection = self._send(name, args)
        try:
            ready = connection is None or connection.poll(self.timeout)
        except (BrokenPipeError, EOFError, OSError):
            ready = True                  # the worker is gone: recv below says how
        if not ready:
            self._late()
        return self._receive()

    async def acall(self, name: str, *args: Any) -> Any:
        """:meth:`call` for an asyncio event loop: waits for the reply without a thread."""
        import asyncio

        connection = self._send(name, args)
        if connection is not None:
            loop = asyncio.get_running_loop()
            ready = loop.create_future()
            fd = connection.fileno()
            loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
            try:
                await asyncio.wait_for(ready, self.timeout)
            except asyncio.TimeoutError:
                loop.remove_reader(fd)
                self._late()
            finally:
                if self._connection is connection:
                    loop.remove_reader(fd)
                    # uvloop leaves the fd non-blocking: a reply larger than the pipe's buffer
                    # would then fail half-read instead of waiting for its rest.
                    os.set_blocking(fd, True)
        return self._receive()

    def _send(self, name: str, args: tuple):
        """Send one request; the connection, or ``None`` if the worker is already gone."""
        if name not in self.operations:
            raise KeyError(name)
        if self._process is None:
            self._start()
        try:
            self._connection.send((name, args))
        except (BrokenPipeError, EOFError, OSError):
            return None
        return self._connection

    def _late(self) -> None:
        self._kill()
        raise ExecutionTimeout(f"{self.what} exceeded the time limit of {self.timeout:g} s (stopped; {self.hint})")

    def _receive(self) -> Any:
        connection = self._connection
        try:
            if connection is None:
                raise EOFError
            status, value = connection.recv()
        except (EOFError, OSError):
            code = self._reap()
            raise ExecutionError(f"the engine process died while running this {self.what} "
                                 f"({_describe_exit(code)}); the next {self.what} gets a new one") from None
        if status == _ERROR:
            raise value
        return value

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> int | None:
        process, self._process = self._process, None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if process is None:
            return None
        process.join(5)
        return process.exitcode

    def close(self) -> None:
        """Stop the worker (it would also exit with the caller: it is a daemon)."""
        if self._process is not None:
            try:
                self._connection.close()      # EOF ends the worker's loop
            except OSError:
                pass
            self._process.join(1)
            if self._process.is_alive():
                self._kill()
            self._process = self._connection = None


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
    return f"exit code {code}"


__all__ = ["DeadlineWorker", "can_fork"]
