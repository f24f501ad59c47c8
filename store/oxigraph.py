"""The embedded store: pyoxigraph in memory (default) or on disk.

Layout of a loaded store::

    default graph                    the KB and nothing else, so COUNT queries give Table I exactly
    <http://synkqa.org/ontology>     schema.ttl: classes, properties, labels, altLabels
    <http://synkqa.org/store>        the load record: sha256 of the loaded Turtle and of the schema

Writes (``load_turtle``, ``ensure_loaded``) are kept apart from reads (``query``, ``dump``).
The load record is added in one transaction *after* the bulk load has finished, and flushed,
so an on-disk store carrying the record of the Turtle at hand is complete: reopening it does
not reload. A store without the record (an interrupted load) is cleared and loaded again.

``query`` never writes. A SPARQL Update (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE, ADD,
MOVE, COPY, WITH) is refused with :class:`ReadOnlyError` before it reaches the engine; the
engine's query parser would reject it anyway, so the data cannot change through this path.

Time limits. pyoxigraph has no way to cancel a running query (oxigraph/oxigraph#1336: the
evaluator runs on native threads with no cancellation point), hence two mechanisms:

* ``OxigraphStore.query(timeout=...)`` evaluates in a worker thread (pyoxigraph releases the
  GIL while evaluating) and raises :class:`QueryTimeout` at the deadline. A query that streams
  rows really stops there (the deadline is checked between rows); one that computes everything
  before its first row (ORDER BY, GROUP BY, aggregates over a huge join) keeps one core busy in
  the abandoned thread until it finishes or the process exits.
* :func:`query_in_subprocess` runs the query on an on-disk store in a child process and kills
  the child at the deadline, which stops any query. ``synkqa sparql`` uses it.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kopl2sparql.errors import QueryRefused, QuerySyntaxError, QueryTimeout, ReadOnlyError, StoreError
from ontology import ONTOLOGY_IRI, PREFIXES, schema_path
from store.results import SelectResult, term_value

DEFAULT_TIMEOUT = 30.0
"""Seconds a ``synkqa sparql`` query may run (CLI default; the library default is no limit)."""
DEFAULT_LIMIT = 10_000
"""Rows a ``synkqa sparql`` query may return (CLI default; the library default is no limit)."""

ONTOLOGY_GRAPH = ox.NamedNode(ONTOLOGY_IRI)
RECORD_GRAPH = ox.NamedNode("http://synkqa.org/store")
_RECORD_NS = "http://synkqa.org/store#"

QUERY_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
UPDATE_OPERATIONS = ("INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH")

TURTLE_PREFIXES = {k: PREFIXES[k] for k in ("sk", "ske", "rdfs", "xsd")}


# ---- query text: form, update refusal, syntax errors ----------------------------------------

_SKIP = re.compile(r"""
      \s+                                   # whitespace
    | \#[^\n]*                              # comment
    | BASE \s* <[^>]*>                      # BASE <iri>
    | PREFIX \s* [^\s:]* : \s* <[^>]*>      # PREFIX p: <iri>
""", re.IGNORECASE | re.VERBOSE)
_WORD = re.compile(r"[A-Za-z]+")


def query_form(sparql: str) -> str | None:
    """The first keyword after the prologue, upper-cased (``SELECT``, ``INSERT``, …), or ``None``.

    >>> query_form("PREFIX sk: <http://synkqa.org/ontology#>  # count\\n select (count(*) as ?n) {}")
    'SELECT'
    >>> query_form("DELETE WHERE { ?s ?p ?o }")
    'DELETE'
    """
    word, _ = _first_word(sparql)
    return word.upper() if word else None


def _first_word(sparql: str) -> tuple[str | None, int]:
    """The first word after the prologue and its offset (the offset of the next token if none)."""
    pos = 0
    while (m := _SKIP.match(sparql, pos)) and m.end() > pos:
        pos = m.end()
    m = _WORD.match(sparql, pos)
    return (m.group() if m else None), pos


def refuse_update(sparql: str) -> None:
    """Raise :class:`ReadOnlyError` if ``sparql`` is a SPARQL Update request.

    :raises ReadOnlyError: for INSERT, DELETE, LOAD, CLEAR, DROP, CREATE, ADD, MOVE, COPY, WITH.
    """
    form = query_form(sparql)
    if form in UPDATE_OPERATIONS:
        raise ReadOnlyError(f"SPARQL Update ({form}) refused: queries here are read-only, "
                            f"the KB was not changed")


# What may hide the word SERVICE without being the keyword: comments, strings, IRIs.
_NOT_CODE = re.compile(r"""
      \#[^\n]*                                  # a comment
    | '''(?:[^'\\]|\\.|'(?!''))*'''             # long strings
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
    | '(?:[^'\\\n]|\\.)*'                       # strings
    | "(?:[^"\\\n]|\\.)*"
    | <[^<>"{}|^`\\\s]*>                         # IRIs
""", re.VERBOSE)
_SERVICE = re.compile(r"(?<![\w?$:.-])SERVICE(?![\w:.-])", re.IGNORECASE)


def refuse_service(sparql: str) -> None:
    """Raise :class:`QueryRefused` if ``sparql`` calls another endpoint with ``SERVICE``: a
    query sent here must not make this machine send requests anywhere.

    >>> refuse_service("SELECT ?service WHERE { ?service <http://x/SERVICE> 'SERVICE' } # SERVICE")
    >>> refuse_service("SELECT * { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")
    Traceback (most recent call last):
    ...
    ontology.errors.QueryRefused: SERVICE refused: a query here may not call other endpoints (allow it explicitly with --allow-service)
    """
    if _SERVICE.search(_NOT_CODE.sub(" ", sparql)):
        raise QueryRefused("SERVICE refused: a query here may not call other endpoints "
                           "(allow it explicitly with --allow-service)")


MAX_NESTING = 1000
"""Deepest nesting of ``{ ( [`` accepted in a query: Oxigraph's recursive parser overflows
its stack (the process dies with SIGSEGV) somewhere past 2,000 braces or 1,000 parentheses."""


def refuse_deep_nesting(sparql: str, limit: int = MAX_NESTING) -> None:
    """Raise :class:`QuerySyntaxError` for a query nested deeper than ``limit`` (outside
    strings, IRIs and comments), before a parser can crash on it.

    >>> refuse_deep_nesting("SELECT * { { ?s ?p ?o FILTER((1)) } }")
    >>> refuse_deep_nesting("ASK " + "{" * 5 + "}" * 5, limit=3)
    Traceback (most recent call last):
    ...
    ontology.errors.QuerySyntaxError: SPARQL syntax error: the query is nested 5 levels deep ({ ( [); at most 3 are accepted
    """
    code = _NOT_CODE.sub(" ", sparql)
    depth = deepest = 0
    for char in code:
        if char in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "})]":
            depth -= 1
    if deepest > limit:
        raise QuerySyntaxError(f"the query is nested {deepest} levels deep ({{ ( [); at most {limit} are accepted")


_POSITION = re.compile(r"error at (\d+):(\d+):\s*", re.DOTALL)
_PNAME = re.compile(r"(?<![\w?$<:/#.\"'-])([A-Za-z][\w.-]*)?:(?=[A-Za-z0-9_])")
_DECLARED = re.compile(r"PREFIX\s*([^\s:]*):", re.IGNORECASE)


def screen_query(sparql: str, *, allow_service: bool = False) -> None:
    """Everything a query is refused for before it reaches any engine: an update, a
    ``SERVICE`` call (unless ``allow_service``), nesting deeper than the parser survives.

    :raises ReadOnlyError, QueryRefused, QuerySyntaxError:
    """
    refuse_update(sparql)
    if not allow_service:
        refuse_service(sparql)
    refuse_deep_nesting(sparql)


def query_raw(store: ox.Store, sparql: str, *, base_iri: str | None = None):
    """A screened, read-only query on a pyoxigraph store, answered with pyoxigraph's own
    result objects (for a service that writes the standard result formats itself).

    :raises ReadOnlyError, QueryRefused, QuerySyntaxError, StoreError: as ``OxigraphStore.query``.
    """
    screen_query(sparql)
    try:
        return store.query(sparql, base_iri=base_iri)
    except SyntaxError as exc:
        raise _syntax_error(sparql, exc, None) from None
    except OSError as exc:
        raise StoreError(f"query failed: {exc}") from None


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(lines[i]) + 1 for i in range(min(line - 1, len(lines)))) + column - 1


def _rdflib_position(sparql: str) -> tuple[int, int] | None:
    """Where rdflib's (pyparsing) SPARQL grammar stops, as a second opinion on positions."""
    try:
        import pyparsing
        from rdflib.plugins.sparql.parser import parseQuery
    except ImportError:  # pragma: no cover - rdflib is a dependency
        return None
    try:
        parseQuery(sparql)
    except pyparsing.ParseException as exc:
        return exc.lineno, exc.col
    except Exception:  # noqa: BLE001 - a second opinion must never mask the real error
        return None
    return None


def _syntax_error(sparql: str, exc: SyntaxError, prefixes: Mapping[str, str] | None) -> QuerySyntaxError:
    text = str(getattr(exc, "msg", None) or exc)
    line = column = None
    m = _POSITION.match(text)
    if m:
        line, column = int(m[1]), int(m[2])
        text = text[m.end():]
        # Oxigraph's PEG parser reports the farthest point it reached, which for many errors
        # is the end of the query; rdflib then usually points at the offending clause instead.
        if _offset(sparql, line, column) >= len(sparql.rstrip()) - 1:
            other = _rdflib_position(sparql)
            if other is not None and other < (line, column):
                line, column = other
    text = " ".join(text.split())
    word, at = _first_word(sparql)
    if (word or "").upper() not in QUERY_FORMS:
        # The engine names the position where its last alternative failed; the real culprit
        # is the missing or misspelt query form at the start.
        line = sparql.count("\n", 0, at) + 1
        column = at - (sparql.rfind("\n", 0, at) + 1) + 1
        found = f"'{word}'" if word else "no keyword"
        text = f"expected SELECT, ASK, CONSTRUCT or DESCRIBE, found {found}"
    elif "Prefix not found" in text:
        declared = set(_DECLARED.findall(sparql)) | set(prefixes or ())
        unknown = [p for p in _PNAME.findall(sparql) if p not in declared]
        known = ", ".join(f"{p}:" for p in sorted(declared))
        if unknown:  # point at the first use of the undeclared prefix, not past it
            at = re.search(rf"(?<![\w?$<:/#.\"'-]){re.escape(unknown[0])}:", sparql)
            if at:
                line = sparql.count("\n", 0, at.start()) + 1
                column = at.start() - (sparql.rfind("\n", 0, at.start()) + 1) + 1
        text = (f"undefined prefix '{unknown[0]}:'" if unknown else "undefined prefix") + \
            (f" (declare it with PREFIX; known: {known})" if known else " (declare it with PREFIX)")
    elif len(text) > 160:
        text = text[:150].rsplit(",", 1)[0] + ", ..."
    if line is not None:
        rest = sparql.split("\n")[line - 1][column - 1:] if line <= sparql.count("\n") + 1 else ""
        snippet = rest.strip()[:25]
        text += f' near "{snippet}"' if snippet else " (at the end of the query)"
    return QuerySyntaxError(text, line, column)


# ---- load record --------------------------------------------------------------------------------

@dataclass(frozen=True)
class LoadRecord:
    """What a store holds: the Turtle it was loaded from (by sha256) and the schema version."""

    turtle_sha256: str
    ontology_sha256: str
    triples: int
    source: str


def file_sha256(path: Path | str) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _ontology_sha256() -> str:
    return file_sha256(schema_path())


class _ProgressReader(io.RawIOBase):
    """A binary file that reports bytes read, so a bulk load can drive a progress bar."""

    def __init__(self, raw: io.BufferedReader, callback: Callable[[int], None]):
        self._raw, self._callback, self._done = raw, callback, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        self._done += n
        self._callback(self._done)
        return n


class StoreLocked(StoreError):
    """Another process holds the on-disk store's write lock."""


def _open_error(path: Path, exc: OSError, read_only: bool) -> StoreError:
    text = str(exc)
    if "lock" in text.lower():
        return StoreLocked(f"store {path} is in use by another process (it holds the write lock)")
    if read_only and isinstance(exc, FileNotFoundError) and not path.exists():
        return StoreError(f"no store at {path}")
    return StoreError(f"cannot open store at {path}: {exc.strerror or text}")


# ---- the store --------------------------------------------------------------------------------

class OxigraphStore:
    """A pyoxigraph store holding one KB. Reads (``query``, ``dump``) are kept apart from
    writes (``load_turtle``, ``ensure_loaded``).

    :param path: directory of an on-disk store (created if missing); ``None`` for memory.
    :param read_only: open an existing on-disk store for reading only (several processes may
        do so at once, e.g. query workers).
    :raises StoreError: if the store cannot be opened (missing, locked by another process,
        or a non-empty directory that is not an Oxigraph store).

    >>> store = OxigraphStore()
    >>> store.query("ASK { ?s ?p ?o }")
    False
    """

    def __init__(self, path: Path | str | None = None, *, read_only: bool = False):
        self.path = Path(path) if path is not None else None
        self.read_only = read_only
        if self.path is None:
            if read_only:
                raise ValueError("a read-only store needs a path")
            self.raw = ox.Store()
            return
        if (self.path.is_dir() and any(self.path.iterdir())
                and not (self.path / "CURRENT").exists()):
            # RocksDB would happily scatter its files into any directory it is pointed at.
            raise StoreError(f"{self.path} is a non-empty directory but not an Oxigraph store")
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"cannot open store at {self.path}: it is a file, not a directory")
        try:
            self.raw = ox.Store.read_only(str(self.path)) if read_only else ox.Store(str(self.path))
        except OSError as exc:
            raise _open_error(self.path, exc, read_only) from None
        except RuntimeError as exc:  # RocksDB: e.g. "Column family not found" in a half-made store
            raise StoreError(f"cannot open store at {self.path}: it is incomplete or damaged ({exc}); "
                             "an interrupted build leaves it so, and the next build redoes it") from None

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"OxigraphStore({where}{', read-only' if self.read_only else ''})"

    # ---- writes ----

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"store {self.path} was opened read-only")

    def load_turtle(self, path: Path | str, *, progress: Callable[[int, int], None] | None = None,
                    sha256: str | None = None, with_ontology: bool = True) -> LoadRecord:
        """Replace the store's content with the KB in the Turtle file ``path``.

        The KB goes to the default graph, ``schema.ttl`` to the ontology graph (unless
        ``with_ontology`` is false: a KB of another schema carries its own), then the load
        record. ``progress(done_bytes, total_bytes)`` is called while the Turtle is read.

        :raises StoreError: for invalid Turtle (with its position) or a store failure.
        :raises OSError: if the file cannot be read.
        """
        self._check_writable()
        path = Path(path)
        sha256 = sha256 or file_sha256(path)
        total = path.stat().st_size
        try:
            self.raw.clear()  # a previous KB, or what an interrupted load left behind
            if progress is None:  # by path: ~15% less CPU than through a Python file object
                self.raw.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
            else:
                with open(path, "rb") as fh:
                    self.raw.bulk_load(_ProgressReader(fh, lambda done: progress(done, total)),
                                       format=ox.RdfFormat.TURTLE)
            triples = len(self.raw)
            if with_ontology:
                self.raw.bulk_load(path=str(schema_path()), format=ox.RdfFormat.TURTLE,
                                   to_graph=ONTOLOGY_GRAPH)
            record = LoadRecord(sha256, _ontology_sha256(), triples, path.name)
            subject = ox.NamedNode(RECORD_GRAPH.value)
            self.raw.extend([
                ox.Quad(subject, ox.NamedNode(_RECORD_NS + "turtleSha256"), ox.Literal(record.turtle_sha256), RECORD_GRAPH),
                ox.Quad(subject, ox.NamedNode(_RECORD_NS + "ontologySha256"), ox.Literal(record.ontology_sha256), RECORD_GRAPH),
                ox.Quad(subject, ox.NamedNode(_RECORD_NS + "triples"), ox.Literal(str(triples), datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")), RECORD_GRAPH),
                ox.Quad(subject, ox.NamedNode(_RECORD_NS + "source"), ox.Literal(record.source), RECORD_GRAPH),
            ])
            if self.path is not None:
                self.raw.flush()
        except SyntaxError as exc:
            raise StoreError(f"{path}: invalid Turtle: {exc}") from None
        except OSError as exc:
            if exc.filename or isinstance(exc, (FileNotFoundError, PermissionError)):
                raise
            raise StoreError(f"loading {path} into {self!r} failed: {exc}") from None
        return record

    def ensure_loaded(self, path: Path | str, *,
                      progress: Callable[[int, int], None] | None = None) -> bool:
        """Load the Turtle file unless the store already holds exactly it; ``True`` if it loaded.

        :raises StoreError: as :meth:`load_turtle`; also if a read-only store holds something else.
        """
        sha256 = file_sha256(path)
        if self.holds(path, sha256=sha256):
            return False
        if self.read_only:
            raise StoreError(f"store {self.path} does not hold {Path(path).name} and is open read-only")
        self.load_turtle(path, progress=progress, sha256=sha256)
        return True

    # ---- reads ----

    def holds(self, path: Path | str, *, sha256: str | None = None) -> bool:
        """Whether the store completely holds the Turtle file ``path`` (and the current schema)."""
        record = self.record
        return record is not None and record.ontology_sha256 == _ontology_sha256() \
            and record.turtle_sha256 == (sha256 or file_sha256(path))

    @property
    def record(self) -> LoadRecord | None:
        """The load record, or ``None`` if nothing was (completely) loaded."""
        values = {q.predicate.value[len(_RECORD_NS):]: q.object.value
                  for q in self.raw.quads_for_pattern(None, None, None, RECORD_GRAPH)}
        try:
            return LoadRecord(values["turtleSha256"], values["ontologySha256"], int(values["triples"]),
                              values["source"])
        except KeyError:
            return None

    def __len__(self) -> int:
        """Number of KB triples (the default graph; the ontology and the record are not counted)."""
        return self.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0][0]

    def query(self, sparql: str, *, timeout: float | None = None, limit: int | None = None,
              prefixes: Mapping[str, str] | None = None, allow_service: bool = False) -> SelectResult | bool:
        """Run a read-only SPARQL query over the KB (the default graph; ``GRAPH`` reaches the
        ontology). SELECT gives a :class:`SelectResult`, ASK a ``bool``, CONSTRUCT/DESCRIBE a
        :class:`SelectResult` with columns ``subject``, ``predicate``, ``object``.

        :param timeout: seconds before :class:`QueryTimeout`; ``None`` for no limit (see the
            module docstring for what happens to the abandoned evaluation).
        :param limit: at most this many rows; more rows set ``truncated`` on the result.
        :param prefixes: prefixes usable without declaring them, e.g. ``ontology.PREFIXES``.
            ``None`` by default, so a query that runs here also runs on a remote endpoint.
        :param allow_service: run ``SERVICE`` calls to other endpoints (refused by default).
        :raises ReadOnlyError: for a SPARQL Update.
        :raises QueryRefused: for a ``SERVICE`` call, unless ``allow_service``.
        :raises QuerySyntaxError: for a malformed query (with line and column).
        :raises QueryTimeout: when the time limit is exceeded.
        :raises StoreError: if evaluation fails.
        """
        screen_query(sparql, allow_service=allow_service)
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        if timeout is None:
            return self._evaluate(sparql, limit, None, prefixes)
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        deadline = time.monotonic() + timeout
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["value"] = self._evaluate(sparql, limit, (deadline, timeout), prefixes)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="oxigraph-query", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise QueryTimeout(_timeout_message(timeout))
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _evaluate(self, sparql: str, limit: int | None, deadline: tuple[float, float] | None,
                  prefixes: Mapping[str, str] | None) -> SelectResult | bool:
        """Evaluate and convert; ``deadline`` is ``(monotonic time, timeout)`` or ``None``."""
        try:
            result = self.raw.query(sparql, prefixes=dict(prefixes) if prefixes else None)
        except SyntaxError as exc:
            raise _syntax_error(sparql, exc, prefixes) from None
        except OSError as exc:
            raise StoreError(f"query failed: {exc}") from None
        if isinstance(result, ox.QueryBoolean):
            return bool(result)
        if isinstance(result, ox.QuerySolutions):
            variables = tuple(v.value for v in result.variables)

            def convert(solution):
                return tuple(term_value(t) for t in solution)
        else:
            variables = ("subject", "predicate", "object")

            def convert(triple):
                return term_value(triple.subject), term_value(triple.predicate), term_value(triple.object)
        rows: list[tuple] = []
        truncated = False
        item = None
        try:
            for item in result:
                if limit is not None and len(rows) >= limit:
                    truncated = True
                    break
                if deadline is not None and time.monotonic() > deadline[0]:
                    raise QueryTimeout(_timeout_message(deadline[1]))
                rows.append(convert(item))
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"query failed: {exc}") from None
        finally:
            # pyoxigraph result iterators are bound to the thread that created them; drop
            # them here, not later from a traceback handed to another thread.
            del result, item
        return SelectResult(variables, rows, truncated)

    def dump(self, path: Path | str | None = None, format: ox.RdfFormat | None = None) -> bytes | None:
        """Serialise the KB (default graph only) to ``path``, or return it as bytes.

        The format comes from ``format`` or the file extension (``.ttl``, ``.nt``, …; bytes
        default to N-Triples). The file is written under a temporary name and renamed, so a
        failed dump never leaves a partial file under ``path``.

        :raises StoreError: if the format cannot be told from the extension.
        :raises OSError: if the file cannot be written.
        """
        if format is None:
            suffix = Path(path).suffix.lstrip(".") if path is not None else "nt"
            format = ox.RdfFormat.from_extension(suffix) if suffix else None
            if format is None:
                raise StoreError(f"cannot tell the RDF format of {path}; use .ttl, .nt, .nq, .trig, .rdf or .jsonld")
        prefixes = TURTLE_PREFIXES if format in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG) else None
        if path is None:
            return self.raw.dump(format=format, from_graph=ox.DefaultGraph(), prefixes=prefixes)
        target = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        os.close(fd)
        try:
            self.raw.dump(output=tmp, format=format, from_graph=ox.DefaultGraph(), prefixes=prefixes)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return None


def _timeout_message(timeout: float) -> str:
    return f"query exceeded the time limit of {timeout:g} s"


# ---- queries in a child process: a time limit that really stops the query --------------------

_ERROR_TYPES = {cls.__name__: cls for cls in (StoreError, QuerySyntaxError, QueryTimeout, ReadOnlyError)}


def query_in_subprocess(path: Path | str, sparql: str, *, timeout: float | None = DEFAULT_TIMEOUT,
                        limit: int | None = DEFAULT_LIMIT,
                        prefixes: Mapping[str, str] | None = PREFIXES,
                        startup_timeout: float = 120.0, allow_service: bool = False) -> SelectResult | bool:
    """Run a read-only query on the on-disk store at ``path`` in a child process.

    The child opens the store read-only, signals that it is ready, then evaluates; the time
    limit starts at that signal (so interpreter start-up does not count) and the child is
    killed when it expires. Results come back pickled, as :meth:`OxigraphStore.query` gives them.
    ``sk:``, ``ske:``, ``rdf:``, ``rdfs:`` and ``xsd:`` are predeclared (a convenience for
    people typing queries at ``synkqa sparql``).

    :raises ReadOnlyError, QueryRefused, QuerySyntaxError, QueryTimeout, StoreError: as
        ``OxigraphStore.query`` (``SERVICE`` is refused before any process starts).
    """
    screen_query(sparql, allow_service=allow_service)
    if timeout is not None and timeout <= 0:
        raise ValueError("timeout must be > 0 seconds")
    request = {"path": str(path), "sparql": sparql, "limit": limit, "allow_service": allow_service,
               "prefixes": dict(prefixes) if prefixes else None}
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])  # so `-m store.oxigraph` resolves from any cwd
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        pickle.dump(request, stdin)
        stdin.seek(0)
        proc = subprocess.Popen([sys.executable, "-m", "store.oxigraph"], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=stderr, env=env)
        try:
            ready, _, _ = select.select([proc.stdout], [], [], startup_timeout)
            if not ready:
                raise StoreError(f"query process did not start within {startup_timeout:g} s")
            first = os.read(proc.stdout.fileno(), 1)  # unbuffered: communicate() reads the rest
            try:
                out, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise QueryTimeout(_timeout_message(timeout)) from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if first != b"R" or proc.returncode != 0:
            stderr.seek(0)
            lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
            if proc.returncode == -signal.SIGSEGV:
                raise StoreError("the query process crashed (segmentation fault in the SPARQL engine); "
                                 "a query nested very deeply or a very long expression can do that: "
                                 "simplify the query")
            raise StoreError(f"query process failed (exit code {proc.returncode})"
                             + (f": {lines[-1]}" if lines else ""))
    reply = pickle.loads(out)
    if reply[0] == "ok":
        return reply[1]
    _, kind, message, line, column = reply
    exc = _ERROR_TYPES.get(kind, StoreError).__new__(_ERROR_TYPES.get(kind, StoreError))
    Exception.__init__(exc, message)  # the message is already complete; keep it verbatim
    if isinstance(exc, QuerySyntaxError):
        exc.line, exc.column = line, column
    raise exc


def _worker_main() -> None:
    """Child side of :func:`query_in_subprocess`: request on stdin, pickled reply on stdout."""
    request = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer

    def reply(value) -> None:
        out.write(pickle.dumps(value))
        out.flush()

    try:
        store = OxigraphStore(request["path"], read_only=True)
        if store.record is None:
            raise StoreError(f"store {request['path']} holds no complete KB (interrupted load?); "
                             "rebuild it with `synkqa kb build --store`")
    except StoreError as exc:
        out.write(b"R")
        reply(("error", type(exc).__name__, str(exc), None, None))
        return
    out.write(b"R")
    out.flush()
    try:
        result = store.query(request["sparql"], limit=request["limit"], prefixes=request["prefixes"],
                             allow_service=request.get("allow_service", False))
    except StoreError as exc:
        reply(("error", type(exc).__name__, str(exc), getattr(exc, "line", None), getattr(exc, "column", None)))
    else:
        reply(("ok", result))


if __name__ == "__main__":
    _worker_main()
