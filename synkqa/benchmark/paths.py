"""Where built artefacts live.

Everything a command needs (KB Turtle, on-disk store, dataset, models) is built on first
use under one cache directory: ``$SYNKQA_HOME`` if set, else ``.synkqa/`` in the current
directory (so a fresh checkout is self-contained and ``rm -rf .synkqa`` starts over).
Names carry the seed and scale, so different configurations never overwrite each other,
and everything sits under a ``v<ARTEFACT_VERSION>`` folder: a release that changes what the
generators write bumps the version, so an old cache is never mistaken for a current one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


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
