"""Executors for a KB by name: the SynKQA-Pro KB of a (seed, scale), or any Turtle file.

This is the factory above ``store/``: it knows where the benchmark's KB lives (built on
first use) and how to open a user's Turtle KB, and hands each executor the KB's schema.
"""

from __future__ import annotations

from pathlib import Path

from kopl2sparql.dialects import OXIGRAPH
from kopl2sparql.errors import ConfigError, unknown_name_message
from kopl2sparql.kbindex import KBIndex
from ontology import Schema
from store.executor import BACKENDS, CrossCheckExecutor, Executor, NativeExecutor, SparqlExecutor
from store.oxigraph import OxigraphStore

_EXECUTORS: dict[tuple, Executor] = {}
_KB_FILES: dict[str, tuple[tuple, Schema]] = {}


def kb_file_schema(kb: Path | str) -> Schema:
    """The schema of a Turtle KB file, read once per process (re-read when the file changes).

    :raises ConfigError: the file is missing, unreadable or not valid Turtle.
    """
    path = Path(kb)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"KB file not found: {kb}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read KB file {kb}: {exc.strerror}") from None
    if not path.is_file():
        raise ConfigError(f"KB file {kb} is not a regular file")
    key = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    found = _KB_FILES.get(str(path.resolve()))
    if found is None or found[0] != key:
        found = _KB_FILES[str(path.resolve())] = (key, Schema.from_turtle(path))
    return found[1]


def schema_for(seed: int = 42, scale: int = 1, kb: Path | str | None = None, progress: bool = False) -> Schema:
    """The schema of the KB an executor of these arguments runs on."""
    if kb is not None:
        return kb_file_schema(kb)
    from synkqa.benchmark.world import kb_schema
    return kb_schema(seed, scale, progress=progress)


def get_executor(backend: str = "native", seed: int = 42, scale: int = 1, *, kb: Path | str | None = None,
                 cross_check: bool = False, progress: bool = False) -> Executor:
    """The executor for ``backend`` (``native``, ``oxigraph`` or an ``http(s)://`` endpoint URL).

    The KB is the SynKQA-Pro KB for (seed, scale), built on first use (``progress``: show
    progress bars on stderr while building), or the Turtle file ``kb`` (loaded into an
    in-memory store for ``oxigraph``; an endpoint is assumed to hold that KB). Executors
    are cached per process. With ``cross_check`` every program also runs on the other
    engine (native against the backend, or native against oxigraph when the backend is
    native) and any difference raises EngineDisagreement.

    :raises ConfigError: for an unknown backend name or an unreadable KB file.
    """
    kb_key = None
    if kb is not None:
        schema = kb_file_schema(kb)        # validates the file, and keys the cache on its state
        kb_key = (str(Path(kb).resolve()), id(schema))
    key = (backend, seed, scale, kb_key, cross_check)
    executor = _EXECUTORS.get(key)
    if executor is None:
        executor = _EXECUTORS[key] = _build_executor(backend, seed, scale, kb, cross_check, progress)
    return executor


def _build_executor(backend: str, seed: int, scale: int, kb, cross_check: bool, progress: bool) -> Executor:
    if cross_check:
        other = "oxigraph" if backend == "native" else backend
        return CrossCheckExecutor(get_executor("native", seed, scale, kb=kb, progress=progress),
                                  get_executor(other, seed, scale, kb=kb, progress=progress))
    schema = schema_for(seed, scale, kb, progress)
    if backend == "native":
        if kb is not None:
            return NativeExecutor(KBIndex.from_turtle(kb, schema), schema)
        from synkqa.benchmark.world import ensure_turtle
        return NativeExecutor(KBIndex.from_turtle(ensure_turtle(seed, scale, progress=progress), schema), schema)
    if backend == "oxigraph":
        if kb is not None:
            store = OxigraphStore()
            store.load_turtle(Path(kb), with_ontology=False)
            return SparqlExecutor(store, schema, name="oxigraph", dialect=OXIGRAPH)
        from synkqa.benchmark.world import open_store
        return SparqlExecutor(open_store(seed, scale, progress=progress), schema, name="oxigraph", dialect=OXIGRAPH)
    if backend.startswith(("http://", "https://")):
        from store.remote import EndpointStore       # the seam for remote endpoints, loaded lazily
        return SparqlExecutor(EndpointStore(backend), schema, name=backend)
    raise ConfigError(unknown_name_message("backend", backend, BACKENDS)
                      + " (or an http:// or https:// SPARQL endpoint URL)")


__all__ = ["get_executor", "schema_for", "kb_file_schema"]
