"""Where built artefacts live.

Everything a command needs (KB Turtle, on-disk store, dataset, models) is built on first
use under one cache directory: ``$SYNKQA_HOME`` if set, else ``.synkqa/`` in the current
directory (so a fresh checkout is self-contained and ``rm -rf .synkqa`` starts over).
Names carry the seed and scale, so different configurations never overwrite each other,
and everything sits under a ``v<ARTEFACT_VERSION>`` folder: a release that changes what the
generators write bumps the version, so an old cache is never mistaken for a current one.

Files appear atomically (:func:`atomic_path`); what takes longer to build than one rename
(the KB Turtle, an on-disk store) is built under :func:`build_lock`, an advisory lock per
artefact in ``locks/``, so that processes started together build it once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: builds are not serialised
    fcntl = None


ARTEFACT_VERSION = 1
"""Bump when the KB generator, the dataset generator or the model format changes output."""


def home() -> Path:
    """The cache directory of this artefact version (created if missing)."""
    root = Path(os.environ.get("SYNKQA_HOME") or ".synkqa") / f"v{ARTEFACT_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    return root


def kb_turtle(seed: int = 42, scale: int = 1) -> Path:
    return home() / f"kb-seed{seed}-scale{scale}.ttl"


def kb_store_dir(seed: int = 42, scale: int = 1) -> Path:
    return home() / f"store-seed{seed}-scale{scale}"


def kb_file_store_dir(sha256: str) -> Path:
    """On-disk store of a user's Turtle KB (``--kb``), named by the file's content."""
    return home() / "kb-files" / sha256[:32]


def dataset_dir(seed: int = 42) -> Path:
    return home() / f"dataset-seed{seed}"


def models_dir() -> Path:
    path = home() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


STALE_PART_SECONDS = 24 * 3600
"""A ``.part`` file of an unknown writer older than this is left over from a killed run."""


def clean_stale_parts(target: Path) -> int:
    """Remove temporary files a killed writer of ``target`` left beside it; how many.

    A temporary file names its writer's PID (``.NAME.PID.XXXX.part``): it is stale when that
    process is gone; one without a PID when it is older than :data:`STALE_PART_SECONDS`.
    A live writer's file is never touched.
    """
    removed = 0
    try:
        candidates = list(target.parent.glob(f".{target.name}.*.part"))
    except OSError:
        return 0
    for part in candidates:
        middle = part.name[len(target.name) + 2:-len(".part")]
        pid_text = middle.split(".", 1)[0]
        try:
            stale = (not _alive(int(pid_text))) if pid_text.isdigit() else \
                (time.time() - part.stat().st_mtime > STALE_PART_SECONDS)
            if stale:
                part.unlink()
                removed += 1
        except OSError:
            continue
    return removed


@contextmanager
def atomic_path(target: Path):
    """Yield a temporary path to write ``target``'s content to; it reaches ``target`` only on success.

    A regular file (or a new one) is replaced by a rename, so an interrupted write never
    leaves a half-written file under the final name; it gets the mode the old file had, or
    the user's umask. An existing symlink, FIFO or device is written *through* (the link
    kept, the pipe or device written to), never replaced. Temporary files that killed
    writers left beside ``target`` are removed first.

    :raises ConfigError: when the content cannot be written to ``target``.
    """
    from ontology.errors import ConfigError

    target = Path(target)
    special = target.is_symlink() or (target.exists() and not target.is_file())
    if special:
        fd, tmp = tempfile.mkstemp(prefix=f".synkqa-{os.getpid()}.", suffix=".part")
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            yield tmp_path
            try:
                with open(tmp_path, "rb") as source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
            except OSError as exc:
                raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from None
        finally:
            tmp_path.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_parts(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


# ---- one builder at a time ----------------------------------------------------------------------

BUILD_WAIT_SECONDS = 1800.0
"""How long a process waits for another one to finish building the same artefact."""
_RETRY_SECONDS = 0.1


def lock_path(target: Path | str) -> Path:
    """The lock file for building ``target``: in the cache's ``locks/`` folder (never beside a
    store given outside the cache), named by ``target``'s absolute path."""
    target = Path(target).resolve()
    digest = hashlib.sha256(str(target).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return home() / "locks" / f"{target.name}.{digest}.lock"


class BuildLock:
    """An exclusive lock on building one artefact, held by this process (see :func:`build_lock`).

    The lock file also notes what its holder is doing, so that the next holder can tell an
    artefact a killed builder left half-made: :meth:`begin` before writing, :meth:`done` after.
    """

    def __init__(self, fh, target: Path):
        self._fh = fh
        self.target = target
        state = _read_state(fh) if fh is not None else {}
        self.interrupted: dict | None = state.get("building") if isinstance(state.get("building"), dict) else None
        """What a previous holder began and never finished (it died or failed), else ``None``."""
        self._write(self.interrupted)  # keep that note until this holder has dealt with it

    def _write(self, building: dict | None) -> None:
        if self._fh is None:
            return
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(json.dumps({"pid": os.getpid(), "target": str(self.target), "building": building}))
        self._fh.flush()

    def begin(self, **note) -> None:
        """Note that this holder starts writing ``target`` (``note``: what the next holder needs
        to clean up if it never finishes, e.g. ``created=True``)."""
        self.interrupted = None
        self._write(note)

    def done(self) -> None:
        """Note that ``target`` is complete (or that nothing was left to clean up)."""
        self.interrupted = None
        self._write(None)


def _read_state(fh) -> dict:
    try:
        fh.seek(0)
        state = json.loads(fh.read() or "{}")
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _holder(lock: Path) -> str:
    try:
        with open(lock, encoding="utf-8") as fh:
            pid = _read_state(fh).get("pid")
    except OSError:
        pid = None
    return f"process {pid}" if isinstance(pid, int) else "another process"


@contextmanager
def build_lock(target: Path | str, *, timeout: float | None = None,
               error: type[Exception] = RuntimeError) -> Iterator[BuildLock]:
    """Hold the exclusive advisory lock (``fcntl.flock``) on building ``target``.

    Every process that builds an artefact of the cache (the KB Turtle, an on-disk store) does
    so under this lock and checks again, once it holds it, whether the artefact is complete:
    concurrent first uses build it once, the others wait and then use it. The kernel releases
    the lock when its holder exits, however it exits, so a killed builder never blocks
    anyone; what it left half-made is told by :attr:`BuildLock.interrupted`.

    While waiting, one line on stderr says who holds the lock. ``flock`` itself has no time
    limit, so the wait retries a non-blocking ``flock`` until ``timeout`` seconds
    (:data:`BUILD_WAIT_SECONDS` by default) have passed, then raises ``error``. Without
    ``fcntl`` (not POSIX), or when the lock file cannot be created (a read-only cache), the
    lock is a no-op.
    """
    target = Path(target)
    timeout = BUILD_WAIT_SECONDS if timeout is None else timeout
    fh = None
    if fcntl is not None:
        lock = lock_path(target)
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fh = open(lock, "a+", encoding="utf-8")
        except OSError:
            fh = None
    if fh is None:
        yield BuildLock(None, target)
        return
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if time.monotonic() >= deadline:
                raise error(f"{target} is still being built by {_holder(lock)} after waiting "
                            f"{timeout:g} s; try again when it has finished") from None
            if not waited:
                waited = True
                print(f"waiting for {_holder(lock)} to finish building {target} "
                      f"(at most {timeout:g} s)...", file=sys.stderr, flush=True)
            time.sleep(min(_RETRY_SECONDS, max(0.0, deadline - time.monotonic())))
        try:
            yield BuildLock(fh, target)
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()
