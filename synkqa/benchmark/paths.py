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
import tempfile
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


@contextmanager
def atomic_path(target: Path):
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    An interrupted build therefore never leaves a half-written file under the final name.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
