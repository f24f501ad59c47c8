"""The KB on first use: Turtle under the cache directory, loaded into a store.

``ensure_turtle`` writes ``kb-seed{seed}-scale{scale}.ttl`` atomically if it is missing;
``ensure_store`` does the same for an on-disk store (reopened without reloading when its load
record matches the Turtle); ``open_store`` gives a store object, in memory by default, cached
per process so that tests and commands share one load.

Concurrent first uses are safe: every build of the Turtle or of an on-disk store happens
under the cache's lock for it (:func:`synkqa.benchmark.paths.build_lock`), and a process that
gets the lock looks again before building. So one process builds, the others wait (saying so
on stderr) and then use what it built. A store a killed process left half-built has no load
record and is rebuilt, never used; a directory it left without even a RocksDB ``CURRENT`` file
is emptied first when the lock's note says that build created it (or it lies in the cache).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path

from kopl2sparql.errors import StoreError, SynKQAError
from store.oxigraph import OxigraphStore, StoreLocked, file_sha256
from ontology import Schema, schema_path
from synkqa.benchmark import kbgen, paths


@contextmanager
def _progress(enabled: bool, description: str, total: int, unit: str = "triples"):
    """Yield ``update(done, total=None)`` driving a rich progress bar on stderr, or ``None``."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    with Progress(TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True)) as bar:
        task_id = bar.add_task(description, total=total)
        yield lambda done, _total=None: bar.update(task_id, completed=done)


def write_kb(seed: int, scale: int, target: Path | str, progress: bool = False) -> Path:
    """Generate the KB for (seed, scale) and write its Turtle at ``target`` atomically."""
    kb = kbgen.generate(seed, scale)
    counts = kb.counts()
    total = 2 * counts["entities"] + counts["relation_edges"] + counts["attribute_values"]
    with _progress(progress, f"writing KB seed={seed} scale={scale}", total) as update:
        with paths.atomic_path(Path(target)) as tmp:
            kbgen.write_turtle(kb, tmp, progress=update)
    return Path(target)


def ensure_turtle(seed: int = 42, scale: int = 1, progress: bool = False) -> Path:
    """Path of the KB Turtle for (seed, scale) in the cache, generating it if missing.

    :param progress: show a rich progress bar on stderr while generating.
    """
    target = paths.kb_turtle(seed, scale)
    if not target.exists():
        # One writer at a time (the file appears by an atomic rename either way); the others
        # wait and find it written.
        with paths.build_lock(target, error=SynKQAError):
            if not target.exists():
                write_kb(seed, scale, target, progress=progress)
    return target


_SCHEMAS: dict[tuple[int, int], Schema] = {}


def kb_schema(seed: int = 42, scale: int = 1, progress: bool = False) -> Schema:
    """The schema of the SynKQA-Pro KB for (seed, scale): ``schema.ttl`` plus the data
    (built on first use, then kept for the life of the process)."""
    key = (seed, scale)
    found = _SCHEMAS.get(key)
    if found is None:
        found = _SCHEMAS[key] = Schema.from_turtle(schema_path(), ensure_turtle(seed, scale, progress=progress))
    return found


def load_into(store: OxigraphStore, turtle: Path, progress: bool = False, *,
              sha256: str | None = None, with_ontology: bool = True) -> bool:
    """Load ``turtle`` unless the store already holds it; ``True`` if it loaded."""
    sha256 = sha256 or file_sha256(turtle)
    if store.holds(turtle, sha256=sha256):
        return False
    with _progress(progress, f"loading {turtle.name}", turtle.stat().st_size, "bytes") as update:
        store.load_turtle(turtle, progress=update, sha256=sha256, with_ontology=with_ontology)
    return True


def _holds(path: Path, turtle: Path, sha256: str) -> bool:
    """Whether the on-disk store at ``path`` completely holds ``turtle`` (a read-only look;
    ``False`` for a missing, half-built or unreadable store)."""
    if not (path / "CURRENT").is_file():
        return False
    try:
        return OxigraphStore(path, read_only=True).holds(turtle, sha256=sha256)
    except StoreError:
        return False


def _in_cache(path: Path) -> bool:
    return path.resolve().is_relative_to(paths.home().resolve())


def _in_use(path: Path) -> bool:
    """Whether a process has the store at ``path`` open for writing: RocksDB holds a POSIX
    lock on its ``LOCK`` file for as long as it is open (a read-only open takes none)."""
    if any(store.path is not None and store.path.resolve() == path.resolve() for store in _OPEN.values()):
        return True  # this process: probing its own lock would release it
    try:
        import fcntl
        with open(path / "LOCK", "rb+") as fh:
            try:
                fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.lockf(fh, fcntl.LOCK_UN)
    except (ImportError, OSError):
        return False
    return False


def _empty_dir(path: Path) -> None:
    """Remove what ``path`` contains (the directory itself stays)."""
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _open_for_build(path: Path, lock: paths.BuildLock) -> OxigraphStore:
    """Open the on-disk store at ``path`` for writing, under ``lock``, after clearing what an
    interrupted build left there; notes on the lock that a build is under way.

    :raises StoreLocked: if another process holds the store open for writing.
    :raises StoreError: if ``path`` cannot hold a store.
    """
    left = lock.interrupted
    if path.is_dir() and any(path.iterdir()):
        if (left is not None and left.get("created")) or \
                (_in_cache(path) and not (path / "CURRENT").is_file()):
            if _in_use(path):  # someone writes it without the build lock (e.g. `kb build --store`)
                raise StoreLocked(f"store {path} is in use by another process (it holds the write lock)")
            _empty_dir(path)  # half-built by a killed (or failed) build: start afresh
    created = not path.exists() or (path.is_dir() and not any(path.iterdir()))
    lock.begin(created=created)
    try:
        return OxigraphStore(path)
    except StoreLocked:
        raise
    except StoreError:
        if created or not _in_cache(path) or _in_use(path):
            raise
    _empty_dir(path)  # a damaged store of the cache's own: rebuilt, not used
    lock.begin(created=True)
    return OxigraphStore(path)


def _ensure_on_disk(path: Path, turtle: Path, sha256: str, progress: bool, with_ontology: bool) -> None:
    """Make the on-disk store at ``path`` hold ``turtle``, one builder at a time; closed on return."""
    with paths.build_lock(path, error=StoreError) as lock:
        if _holds(path, turtle, sha256):  # complete: built earlier, or just now by another process
            if lock.interrupted is not None:
                lock.done()
            return
        try:
            store = _open_for_build(path, lock)
        except StoreLocked:
            raise StoreError(f"store {path} is open for writing in another process and does not hold "
                             f"{turtle.name} yet; try again when that process has finished") from None
        try:
            load_into(store, turtle, progress, sha256=sha256, with_ontology=with_ontology)
            lock.done()
        finally:
            del store  # closes RocksDB and releases its lock


def ensure_store(seed: int = 42, scale: int = 1, path: Path | str | None = None,
                 progress: bool = False) -> Path:
    """Directory of an on-disk store holding the KB for (seed, scale), built if needed.

    ``path`` defaults to the cache's store directory. A store whose load record matches the
    Turtle is not reloaded; one that does not (or an interrupted load) is cleared and loaded.
    Concurrent calls build it once: the others wait for the builder (at most
    :data:`paths.BUILD_WAIT_SECONDS`) and then use its store. The store is closed again on
    return, so child processes can open it read-only.

    :raises StoreError: if the wait runs out, or another process holds the store open for
        writing while it holds something else.
    """
    path = Path(path) if path is not None else paths.kb_store_dir(seed, scale)
    turtle = ensure_turtle(seed, scale, progress=progress)
    if _key(seed, scale, path) in _OPEN:  # this process already holds it open and loaded
        return path
    _ensure_on_disk(path, turtle, file_sha256(turtle), progress, with_ontology=True)
    return path


def load_store_dir(path: Path | str, turtle: Path | str, progress: bool = False) -> bool:
    """Make the on-disk store at ``path`` hold the SynKQA-Pro KB ``turtle`` (``kb build
    --store``), under the same build lock as :func:`ensure_store`; ``True`` if it loaded."""
    path, turtle = Path(path), Path(turtle)
    sha256 = file_sha256(turtle)
    loaded_before = _holds(path, turtle, sha256)
    _ensure_on_disk(path, turtle, sha256, progress, with_ontology=True)
    return not loaded_before


def ensure_kb_file_store(kb: Path | str, progress: bool = False) -> Path:
    """Directory of an on-disk store holding a user's Turtle KB (``--kb``), built if needed
    and reused while the file's content is unchanged; closed again on return. Concurrent
    calls build it once, as :func:`ensure_store`.

    :raises StoreError: as :func:`ensure_store`, or for invalid Turtle.
    """
    kb = Path(kb)
    sha256 = file_sha256(kb)
    path = paths.kb_file_store_dir(sha256)
    path.parent.mkdir(parents=True, exist_ok=True)
    _ensure_on_disk(path, kb, sha256, progress, with_ontology=False)
    return path


_OPEN: dict[tuple[int, int, str | None], OxigraphStore] = {}


def _key(seed: int, scale: int, path: Path | str | None) -> tuple[int, int, str | None]:
    return seed, scale, str(Path(path).resolve()) if path is not None else None


def open_store(seed: int = 42, scale: int = 1, path: Path | str | None = None, *,
               on_disk: bool = False, progress: bool = False) -> OxigraphStore:
    """A store holding the KB for (seed, scale), one per process and configuration.

    In memory by default (loading takes ~0.15 s at scale 1); on disk at ``path``, or at the
    cache's store directory with ``on_disk=True``, where a complete earlier load is reused.
    The on-disk store stays open (and write-locked) for the life of the process.
    """
    if path is None and on_disk:
        path = paths.kb_store_dir(seed, scale)
    key = _key(seed, scale, path)
    store = _OPEN.get(key)
    if store is None:
        turtle = ensure_turtle(seed, scale, progress=progress)
        if path is None:
            store = OxigraphStore()
            load_into(store, turtle, progress)
        else:
            with paths.build_lock(Path(path), error=StoreError) as lock:
                store = _open_for_build(Path(path), lock)
                load_into(store, turtle, progress)
                lock.done()
        _OPEN[key] = store
    return store


def close_stores() -> None:
    """Forget every store ``open_store`` cached (on-disk ones are closed and unlocked)."""
    _OPEN.clear()


# ---- Table I from SPARQL --------------------------------------------------------------------------

_STATS_PREFIXES = ("PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
                   "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n")
STATS_QUERIES = {
    "classes": "SELECT ?class (COUNT(DISTINCT ?e) AS ?n) WHERE { ?e rdf:type ?class } GROUP BY ?class",
    "entities": "SELECT (COUNT(DISTINCT ?e) AS ?n) WHERE { ?e rdf:type ?class }",
    "relations": "SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(isIRI(?o) && ?p != rdf:type) } GROUP BY ?p",
    "attributes": "SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(isLiteral(?o) && ?p != rdfs:label) } "
                  "GROUP BY ?p",
}
"""Table I as SPARQL. Relations are the predicates with IRI objects (``rdf:type`` aside),
attributes those with literal objects (``rdfs:label`` aside): the numbers come from the data
in the store, not from the generator or the schema."""


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def table_i(store) -> dict:
    """Table I recomputed with SPARQL COUNT queries on ``store`` (anything with ``query``).

    Returns ``{"measured": {Person, City, Country, Organization, entities, relation_types,
    relation_edges, attribute_types, attribute_values}, "classes": …, "relations": {name: edges},
    "attributes": {name: values}}``.
    """
    def rows(name: str) -> list[tuple]:
        return store.query(_STATS_PREFIXES + STATS_QUERIES[name]).rows

    classes = {_local(c): int(n) for c, n in rows("classes")}
    relations = dict(sorted((_local(p), int(n)) for p, n in rows("relations")))
    attributes = dict(sorted((_local(p), int(n)) for p, n in rows("attributes")))
    measured = {cls: classes.get(cls, 0) for cls in ("Person", "City", "Country", "Organization")}
    measured.update(
        entities=int(rows("entities")[0][0]),
        relation_types=len(relations), relation_edges=sum(relations.values()),
        attribute_types=len(attributes), attribute_values=sum(attributes.values()),
    )
    return {"measured": measured, "classes": classes, "relations": relations, "attributes": attributes}


def kb_counts(store, schema: Schema) -> dict:
    """Counts of any KB by SPARQL, guided by its schema: distinct entities, instances per
    class (subclasses included), edges per relation, values per attribute."""
    def count(pattern: str) -> int:
        rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {pattern} }}").rows
        return int(rows[0][0])

    subclass = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
    classes = {name: count(f"SELECT DISTINCT ?e WHERE {{ ?e a ?c . ?c {subclass}* <{info.iri}> }}")
               for name, info in sorted(schema.classes.items())}
    relations = {name: count(f"?s <{info.iri}> ?o FILTER(isIRI(?o))") for name, info in sorted(schema.relations.items())}
    attributes = {name: count(f"?s <{info.iri}> ?o FILTER(isLiteral(?o))")
                  for name, info in sorted(schema.attributes.items())}
    iris = " ".join(f"<{info.iri}>" for info in schema.classes.values())
    entities = count(f"SELECT DISTINCT ?e WHERE {{ ?e a ?c VALUES ?c {{ {iris} }} }}") if iris else 0
    return {"entities": entities, "classes": classes, "relations": relations, "attributes": attributes}


def expected_table_i(scale: int = 1) -> dict[str, int]:
    """The paper's Table I with every count multiplied by ``scale`` (numbers of types stay)."""
    return {k: v if k.endswith("_types") else v * scale for k, v in kbgen.PAPER_TABLE_I.items()}

