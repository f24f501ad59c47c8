"""Apache Jena (ARQ in memory, or TDB2 on disk) answering SPARQL from one long-lived JVM.

A JVM start costs about a second, so :class:`JenaEngine` starts one Java process
(``store/jena/JenaQueryServer.java``) that loads the KB once and then answers queries one at
a time over its stdin/stdout, one JSON line each way::

    >>> with JenaEngine(Path("kb.ttl"), base_iri="http://example.org/kb/") as jena:  # doctest: +SKIP
    ...     jena.query("SELECT ?o WHERE { <Q1> ?p ?o }")["results"]["bindings"]

The jars are Debian's (``apt-get install libapache-jena-java default-jre-headless``), and
two things in them break a naive ``java -cp '/usr/share/java/*'`` (see ENGINES.md): the
classpath is the jars of ``libapache-jena-java`` and its Java dependencies minus the slf4j
bridges that loop, and Jena's shaded Xerces looks for its ``.properties`` files under
``xerces/`` while the jar has them under ``org/apache/jena/ext/xerces/``, so they are
copied out once. That classpath, the copied files and the compiled server are built once
per Jena install and source version into a cache directory (``$SYNKQA_HOME/jena``, else
``~/.cache/synkqa/jena``). The server is compiled with ``javac`` when there is one, else by
the JDK compiler API through ``java``'s source-file launcher.

Errors are the project's: a malformed query is a :class:`QuerySyntaxError` with Jena's
message and position; SPARQL Update a :class:`ReadOnlyError` (as for every other store
here); ``SERVICE``, ``CONSTRUCT`` and ``DESCRIBE`` a :class:`QueryRefused`; a query over its
time limit a :class:`QueryTimeout` (Jena cancels it and the JVM goes on serving; one that
Jena does not stop within ``kill_margin`` more seconds gets its JVM killed, and the next
query starts a new one); a JVM that dies a :class:`StoreError` with its last stderr lines.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

try:
    import orjson as _orjson

    def _loads(data: bytes) -> Any:
        return _orjson.loads(data)

    def _dumps(value: Any) -> bytes:
        return _orjson.dumps(value)
except ImportError:  # pragma: no cover - orjson is a dependency
    import json as _json

    def _loads(data: bytes) -> Any:
        return _json.loads(data)

    def _dumps(value: Any) -> bytes:
        return _json.dumps(value, ensure_ascii=False).encode()

from ontology.errors import (ConfigError, QueryRefused, QuerySyntaxError, QueryTimeout, ReadOnlyError,
                             StoreError, safe_text)

SERVER_SOURCE = Path(__file__).parent / "jena" / "JenaQueryServer.java"
SERVER_CLASS = "JenaQueryServer"
JAVA_DIR = Path("/usr/share/java")
JENA_PACKAGE = "libapache-jena-java"
REQUIRED_JARS = ("jena-arq.jar", "jena-core.jar", "jena-base.jar", "jena-iri.jar", "jena-tdb2.jar")

# Jars that must stay off the classpath: slf4j bridges and bindings that loop or compete
# (log4j-over-slf4j with slf4j-log4j12 is an endless loop). slf4j-simple stays: it logs to stderr.
_CONFLICTING_JAR = re.compile(r"slf4j-(log4j12|jcl|jdk14|nop|migrator)|log4j-over|jcl-over|jul-to")
_VERSIONED_JAR = re.compile(r"-[0-9][0-9.]*[^/]*\.jar$")
_XERCES_PREFIX = "org/apache/jena/ext/xerces/"

DEFAULT_TIMEOUT = 30.0
KILL_MARGIN = 5.0
"""Seconds past a query's time limit before the JVM is killed (Jena normally cancels it first)."""
START_TIMEOUT = 600.0
"""Seconds the JVM may take to start and load the KB."""
STDERR_LINES = 20


def default_cache_dir() -> Path:
    """``$SYNKQA_HOME/jena`` if ``SYNKQA_HOME`` is set, else ``~/.cache/synkqa/jena``.

    (``store`` sits below ``synkqa`` and cannot ask ``synkqa.benchmark.paths``.)
    """
    home = os.environ.get("SYNKQA_HOME")
    return Path(home) / "jena" if home else Path.home() / ".cache" / "synkqa" / "jena"


# ---- can Jena run here? -------------------------------------------------------------------------

def _which_java(java: str) -> str | None:
    return shutil.which(java)


def _javac_for(java_path: str) -> str | None:
    """The ``javac`` of the same JDK as ``java`` (symlinks followed), else the one on PATH."""
    sibling = Path(os.path.realpath(java_path)).parent / "javac"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    return shutil.which("javac")


def _has_compiler_module(java_path: str) -> bool:
    try:
        out = subprocess.run([java_path, "--list-modules"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith("jdk.compiler@") for line in out.stdout.splitlines())


def jena_unavailable(java: str = "java", classpath: Sequence[str] | None = None) -> str | None:
    """Why Jena cannot run on this machine, or ``None`` if it can.

    :param java: the ``java`` command (name on ``PATH`` or a path).
    :param classpath: explicit jars instead of Debian's ``libapache-jena-java``.
    """
    java_path = _which_java(java)
    if java_path is None:
        return f"no Java runtime: '{java}' is not on PATH (apt-get install default-jre-headless)"
    if classpath is None:
        missing = [jar for jar in REQUIRED_JARS if not (JAVA_DIR / jar).is_file()]
        if missing:
            return (f"Apache Jena's jars are not installed ({', '.join(missing)} missing in {JAVA_DIR}; "
                    f"apt-get install {JENA_PACKAGE})")
        for tool in ("apt-cache", "dpkg"):
            if shutil.which(tool) is None:
                return f"'{tool}' not found: the Debian classpath recipe needs it (or pass classpath=...)"
    else:
        missing = [jar for jar in classpath if not Path(jar).exists()]
        if missing:
            return f"classpath entries missing: {', '.join(missing[:5])}"
    if _javac_for(java_path) is None and not _has_compiler_module(java_path):
        return ("no Java compiler: neither javac nor the jdk.compiler module "
                "(apt-get install default-jdk-headless)")
    return None


# ---- classpath and compiled server, built once ----------------------------------------------------

def debian_classpath() -> list[str]:
    """The unversioned jars of ``libapache-jena-java`` and its Java dependencies, minus the
    conflicting slf4j bridges (the recipe in ENGINES.md).

    :raises StoreError: if ``apt-cache``/``dpkg`` fail or Jena's jars are not among them.
    """
    try:
        deps = subprocess.run(
            ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
             "--no-breaks", "--no-replaces", "--no-enhances", JENA_PACKAGE],
            capture_output=True, text=True, timeout=120, check=True).stdout
        packages = sorted({line.strip() for line in deps.splitlines()
                           if line and not line[0].isspace() and line.strip().endswith("java")})
        # dpkg -L exits 1 when some listed package is not installed (virtual or optional ones);
        # the installed ones are still listed.
        files = subprocess.run(["dpkg", "-L", *packages], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise StoreError(f"cannot list the jars of {JENA_PACKAGE}: {exc}") from None
    jars = sorted({line for line in files.splitlines()
                   if re.fullmatch(r"/usr/share/java/[^/]+\.jar", line)
                   and not _VERSIONED_JAR.search(line) and not _CONFLICTING_JAR.search(line)})
    if not any(jar.endswith("/jena-arq.jar") for jar in jars):
        raise StoreError(f"{JENA_PACKAGE} lists no jena-arq.jar; is it installed? (apt-get install {JENA_PACKAGE})")
    return jars


def _extract_xerces_fix(classpath: Sequence[str], target: Path) -> None:
    """Copy the shaded Xerces' message files to ``xerces/`` where its classes look for them."""
    target.mkdir(parents=True, exist_ok=True)
    for jar in classpath:
        if not jar.endswith(".jar") or "jena-core" not in Path(jar).name:
            continue
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if name.startswith(_XERCES_PREFIX) and name.endswith(".properties"):
                    out = target / "xerces" / name[len(_XERCES_PREFIX):]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(archive.read(name))


def _cache_key(java_path: str, classpath: Sequence[str] | None) -> str:
    digest = hashlib.sha256(SERVER_SOURCE.read_bytes())
    digest.update(os.path.realpath(java_path).encode())
    for jar in classpath if classpath is not None else [str(JAVA_DIR / j) for j in REQUIRED_JARS]:
        real = os.path.realpath(jar)   # /usr/share/java/jena-arq.jar -> jena-arq-4.5.0.jar
        stat = os.stat(real)
        digest.update(f"{real}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _compile(java_path: str, classpath: str, out_dir: Path) -> None:
    javac = _javac_for(java_path)
    if javac is not None:
        command = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "11", "-cp", classpath,
                   "-d", str(out_dir), str(SERVER_SOURCE)]
    else:  # the source-file launcher compiles the server in memory; its --compile mode writes classes
        command = [java_path, "-cp", classpath, str(SERVER_SOURCE), "--compile", str(SERVER_SOURCE), str(out_dir)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise StoreError(f"cannot compile {SERVER_SOURCE.name}: {exc}") from None
    if done.returncode != 0 or not (out_dir / f"{SERVER_CLASS}.class").is_file():
        raise StoreError(f"compiling {SERVER_SOURCE.name} failed (exit {done.returncode}):\n"
                         f"{safe_text((done.stderr or done.stdout)[-2000:])}")


def server_classpath(java: str = "java", cache_dir: Path | None = None,
                     classpath: Sequence[str] | None = None) -> str:
    """The ``-cp`` value that runs the compiled server: Xerces fix, classes, jars. Built once
    into ``cache_dir`` (atomically, so concurrent first users do not trip over each other).

    :raises StoreError: if Jena cannot run here or the build fails.
    """
    reason = jena_unavailable(java, classpath)
    if reason is not None:
        raise StoreError(f"Apache Jena is not available: {reason}")
    java_path = _which_java(java)
    assert java_path is not None
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    build = root / _cache_key(java_path, classpath)
    listing = build / "classpath.txt"
    if listing.is_file():
        jars = listing.read_text().split("\n")
        if all(Path(jar).exists() for jar in jars):
            return os.pathsep.join([str(build / "xfix"), str(build / "classes"), *jars])
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    except OSError as exc:
        raise StoreError(f"cannot write Jena's cache directory {root}: {exc}") from None
    try:
        jars = list(classpath) if classpath is not None else debian_classpath()
        _extract_xerces_fix(jars, tmp / "xfix")
        _compile(java_path, os.pathsep.join(jars), tmp / "classes")
        (tmp / "classpath.txt").write_text("\n".join(jars))
        if build.exists():          # stale (a jar went missing) or built meanwhile by someone else
            shutil.rmtree(build, ignore_errors=True)
        try:
            os.rename(tmp, build)
        except OSError:             # another process renamed its build in first: use that one
            if not (build / "classpath.txt").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.pathsep.join([str(build / "xfix"), str(build / "classes"), *jars])


# ---- the engine ---------------------------------------------------------------------------------

class _Exited(Exception):
    """The JVM closed its stdout."""


def _stop_process(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Close stdin (the server exits at end of input, closing TDB2 cleanly), then kill by PID."""
    if process.poll() is None:
        try:
            if process.stdin:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    for stream in (process.stdin, process.stdout):
        try:
            if stream:
                stream.close()
        except OSError:
            pass


_LEADING_POSITION = re.compile(r"^Line \d+, column \d+: ")
_EXPECTING = re.compile(r"\s*Was expecting(?: one of)?:\s*(.*)", re.DOTALL)


def _syntax_message(message: str) -> str:
    """Jena's parser message on one line, its list of expected tokens cut short."""
    head, _, tail = message.partition("Was expecting")
    text = _LEADING_POSITION.sub("", " ".join(head.split()))   # the error names the position already
    m = _EXPECTING.match("Was expecting" + tail) if tail else None
    if m:
        options = [" ".join(o.split()).removesuffix(" ...").strip() for o in m[1].split("\n")]
        options = [o for o in options if o]
        shown = ", ".join(options[:8]) + (f", … ({len(options)} in all)" if len(options) > 8 else "")
        text += f" Was expecting {'one of ' if len(options) > 1 else ''}{shown}"
    return text


class JenaEngine:
    """One JVM running Apache Jena over one KB: in memory (ARQ), or TDB2 with ``tdb2_dir``.

    :param turtle: the KB as Turtle (loaded at start; for TDB2 only into an empty directory,
        an already loaded one is opened as it is).
    :param base_iri: base IRI for parsing the Turtle (its own ``@base`` wins) and the default
        base of queries, so ``<Q1>`` in a query means ``<{base_iri}Q1>``.
    :param tdb2_dir: a TDB2 database directory (created and loaded if empty) instead of memory.
    :param java: the ``java`` command.
    :param cache_dir: where the classpath and the compiled server are kept
        (default :func:`default_cache_dir`).
    :param classpath: Jena's jars, if not Debian's ``libapache-jena-java``.
    :param jvm_options: extra JVM arguments, e.g. ``["-Xmx8g"]``.
    :param kill_margin: seconds past a query's time limit before the JVM is killed.
    :param start_timeout: seconds the JVM may take to start and load the KB.
    :raises ConfigError: if the Turtle file is missing.
    :raises StoreError: if Jena is not available, or the JVM fails to start or load.
    """

    def __init__(self, turtle: Path, *, base_iri: str | None = None, tdb2_dir: Path | None = None,
                 java: str = "java", cache_dir: Path | None = None, classpath: Sequence[str] | None = None,
                 jvm_options: Sequence[str] = (), kill_margin: float = KILL_MARGIN,
                 start_timeout: float = START_TIMEOUT):
        self.turtle = Path(turtle).resolve()
        self.base_iri = base_iri
        self.tdb2_dir = Path(tdb2_dir).resolve() if tdb2_dir is not None else None
        self.java = java
        self.kill_margin = kill_margin
        self.start_timeout = start_timeout
        self.jvm_options = list(jvm_options)
        needs_turtle = self.tdb2_dir is None or not self.tdb2_dir.is_dir() or not any(self.tdb2_dir.iterdir())
        if needs_turtle and not self.turtle.is_file():
            raise ConfigError(f"Turtle file not found: {self.turtle}")
        self._classpath = server_classpath(java, cache_dir, classpath)
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._poll: select.poll | None = None
        self._finalizer: weakref.finalize | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = bytearray()
        self._closed = False
        self.start_seconds = 0.0
        """Seconds the last JVM start took, load included."""
        self.load_seconds = 0.0
        """Seconds of that start spent loading (or opening) the data, as the JVM measured it."""
        self.triples: int | None = None
        """Triples loaded at the last start (``None`` when a loaded TDB2 directory was opened)."""
        self.jena_version = ""
        self.starts = 0
        self._start()

    # -- lifecycle --

    def __enter__(self) -> JenaEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """End the JVM (it closes the TDB2 database at end of input; killed if it lingers)."""
        with self._lock:
            self._closed = True
            self._stop()

    def _stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()          # runs _stop_process once
            self._finalizer = None
        self._process = None
        self._buffer.clear()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(5)
        self._stop()

    def _start(self) -> None:
        command = [self.java, *self.jvm_options, "-cp", self._classpath, SERVER_CLASS,
                   "--data", str(self.turtle)]
        if self.base_iri:
            command += ["--base", self.base_iri]
        if self.tdb2_dir is not None:
            command += ["--tdb2", str(self.tdb2_dir)]
        # Append mode: the JVM shares this open file, and reading its tail must not move where
        # the JVM writes.
        fd, path = tempfile.mkstemp(prefix="jena-stderr-")
        os.close(fd)
        self._stderr = open(path, "a+b")  # noqa: SIM115 - closed in _stop
        os.unlink(path)
        t0 = time.perf_counter()
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=self._stderr, bufsize=0, start_new_session=True)
        except OSError as exc:
            self._stop()
            raise StoreError(f"cannot start Java ({self.java}): {exc}") from None
        self._process = process
        self._poll = select.poll()
        self._poll.register(process.stdout.fileno(), select.POLLIN)
        self._finalizer = weakref.finalize(self, _stop_process, process)
        self.starts += 1
        try:
            line = self._read_line(time.monotonic() + self.start_timeout)
        except _Exited:
            raise self._died("while starting") from None
        if line is None:
            self._kill()
            raise StoreError(f"Jena did not load {self.turtle.name} within {self.start_timeout:g} s")
        try:
            ready = _loads(line)
            if not isinstance(ready, dict) or ready.get("ready") is not True:
                raise ValueError
        except ValueError:
            # Not the server talking: the JVM launcher prints its own failures on stdout.
            raise self._bad_start(line) from None
        self.start_seconds = time.perf_counter() - t0
        self.load_seconds = ready.get("load_ms", 0) / 1000
        self.triples = ready.get("triples") if ready.get("loaded") else None
        self.jena_version = str(ready.get("jena", ""))

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - 16384))
            text = self._stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [line for line in text.splitlines() if line.strip()][-STDERR_LINES:]
        return safe_text("\n".join(lines), 500)

    def _bad_start(self, first_line: bytes) -> StoreError:
        output = [first_line]
        deadline = time.monotonic() + 2.0
        try:
            while len(output) < STDERR_LINES and (line := self._read_line(deadline)) is not None:
                output.append(line)
        except _Exited:
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        text = safe_text(b"\n".join(output).decode(errors="replace"), 500)
        if self._process is not None and self._process.poll() is None:
            self._kill()
            return StoreError(f"Jena started with an unexpected first line; stdout:\n{text}")
        error = self._died("while starting")
        return StoreError(f"{error}\nstdout:\n{text}")

    def _died(self, when: str) -> StoreError:
        process = self._process
        code = None
        if process is not None:
            try:
                code = process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait(5)
        tail = self._stderr_tail()
        self._stop()
        where = "" if self.tdb2_dir is None else f" (TDB2 {self.tdb2_dir})"
        return StoreError(f"the Jena JVM{where} exited with code {code} {when}"
                          + (f"; last stderr lines:\n{tail}" if tail else " and wrote nothing on stderr"))

    # -- the pipe --

    def _read_line(self, deadline: float | None) -> bytes | None:
        """The next line from the JVM; ``None`` at the deadline. :raises _Exited: at end of output."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        buffer = self._buffer
        scanned = 0
        while True:
            end = buffer.find(b"\n", scanned)
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[:end + 1]
                return line
            scanned = len(buffer)
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if not self._poll.poll(remaining * 1000):
                    continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _Exited
            buffer += chunk

    # -- queries --

    def query(self, sparql: str, *, timeout: float | None = DEFAULT_TIMEOUT,
              base: str | None = None) -> dict:
        """Run a SELECT or ASK query; the SPARQL 1.1 JSON results, parsed:
        ``{"head": {"vars": [...]}, "results": {"bindings": [...]}}`` or ``{"head": {}, "boolean": b}``.

        :param timeout: seconds before :class:`QueryTimeout` (``None``: no limit).
        :param base: base IRI for relative IRIs in the query (default: the engine's ``base_iri``).
        :raises QuerySyntaxError: for a malformed query (Jena's message, line and column).
        :raises ReadOnlyError: for SPARQL Update.
        :raises QueryRefused: for ``SERVICE``, ``CONSTRUCT`` or ``DESCRIBE``.
        :raises QueryTimeout: when the time limit is exceeded.
        :raises StoreError: when Jena fails otherwise or its JVM dies (the next query starts a new one).
        """
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive or None, not {timeout}")
        request = {"query": sparql, "base": base or self.base_iri,
                   "timeout_ms": 0 if timeout is None else max(1, round(timeout * 1000))}
        wait = None if timeout is None else timeout + self.kill_margin
        answer = self._exchange(request, wait)
        if "error" in answer and "head" not in answer:
            raise self._error(answer, timeout)
        return answer

    def _exchange(self, request: dict, wait: float | None) -> dict:
        """Send one request, read one answer; kill the JVM if none comes within ``wait`` s."""
        with self._lock:
            if self._closed:
                raise StoreError("this JenaEngine is closed")
            if self._process is not None and self._process.poll() is not None:
                raise self._died("since the last query (the next query starts a new one)")
            if self._process is None:              # first query after a kill or a death
                self._start()
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write(_dumps(request) + b"\n")
                self._process.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died("before it could read the query") from None
            deadline = None if wait is None else time.monotonic() + wait
            try:
                line = self._read_line(deadline)
            except _Exited:
                raise self._died("while answering a query") from None
            if line is None:
                self._kill()
                limit = request["timeout_ms"] / 1000
                raise QueryTimeout(f"query exceeded the time limit of {limit:g} s and Jena had not stopped it "
                                   f"{self.kill_margin:g} s later, so its JVM was killed "
                                   f"(the next query starts a new one)")
            try:
                return _loads(line)
            except ValueError:
                raise StoreError(f"Jena answered with malformed JSON: "
                                 f"{safe_text(line[:200].decode(errors='replace'))!r}") from None

    @staticmethod
    def _error(answer: dict, timeout: float | None) -> StoreError:
        message = str(answer.get("error", ""))
        kind = answer.get("kind")
        if kind == "syntax":
            return QuerySyntaxError(_syntax_message(message), answer.get("line"), answer.get("column"))
        if kind == "update":
            return ReadOnlyError(message)
        if kind == "refused":
            return QueryRefused(message)
        if kind == "timeout":
            limit = f"{timeout:g} s" if timeout is not None else "?"
            return QueryTimeout(f"query exceeded the time limit of {limit} (Jena cancelled it)")
        return StoreError(f"Jena could not run the query: {safe_text(message, 500)}")


__all__ = ["JenaEngine", "jena_unavailable", "server_classpath", "debian_classpath", "default_cache_dir"]
