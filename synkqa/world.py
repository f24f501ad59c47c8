"""The KB on first use: Turtle under the cache directory, loaded into a store.

``ensure_turtle`` writes ``kb-seed{seed}-scale{scale}.ttl`` atomically if it is missing;
``ensure_store`` does the same for an on-disk store (reopened without reloading when its load
record matches the Turtle); ``open_store`` gives a store object, in memory by default, cached
per process so that tests and commands share one load.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from kopl2sparql.errors import StoreError
from store.oxigraph import OxigraphStore, StoreLocked, file_sha256
from synkqa import kbgen, paths


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
        write_kb(seed, scale, target, progress=progress)
    return target


def load_into(store: OxigraphStore, turtle: Path, progress: bool = False) -> bool:
    """Load ``turtle`` unless the store already holds it; ``True`` if it loaded."""
    sha256 = file_sha256(turtle)
    if store.holds(turtle, sha256=sha256):
        return False
    with _progress(progress, f"loading {turtle.name}", turtle.stat().st_size, "bytes") as update:
        store.load_turtle(turtle, progress=update, sha256=sha256)
    return True


def ensure_store(seed: int = 42, scale: int = 1, path: Path | str | None = None,
                 progress: bool = False) -> Path:
    """Directory of an on-disk store holding the KB for (seed, scale), built if needed.

    ``path`` defaults to the cache's store directory. A store whose load record matches the
    Turtle is not reloaded; one that does not (or an interrupted load) is cleared and loaded.
    The store is closed again on return, so child processes can open it read-only.

    :raises StoreError: if the store is locked by another process and not complete yet.
    """
    path = Path(path) if path is not None else paths.kb_store_dir(seed, scale)
    turtle = ensure_turtle(seed, scale, progress=progress)
    if _key(seed, scale, path) in _OPEN:  # this process already holds it open and loaded
        return path
    try:
        store = OxigraphStore(path)
    except StoreLocked:
        # Another process holds the write lock; reading is safe once its load has finished.
        record = OxigraphStore(path, read_only=True).record
        if record is None:
            raise StoreError(f"store {path} is being built by another process; "
                             "try again when it finishes") from None
        return path
    try:
        load_into(store, turtle, progress)
    finally:
        del store  # closes RocksDB and releases its lock
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
        store = OxigraphStore(path)
        load_into(store, turtle, progress)
        _OPEN[key] = store
    return store


def close_stores() -> None:
    """Forget every store ``open_store`` cached (on-disk ones are closed and unlocked)."""
    _OPEN.clear()
