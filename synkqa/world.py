"""The KB on first use: Turtle under the cache directory, loaded into a store."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from synkqa import kbgen, paths
from store.oxigraph import OxigraphStore


def ensure_turtle(seed: int = 42, scale: int = 1) -> Path:
    """Path of the KB Turtle for (seed, scale), generating it if missing."""
    target = paths.kb_turtle(seed, scale)
    if not target.exists():
        with paths.atomic_path(target) as tmp:
            kbgen.write_turtle(kbgen.generate(seed, scale), tmp)
    return target


@lru_cache(maxsize=4)
def open_store(seed: int = 42, scale: int = 1) -> OxigraphStore:
    """An in-memory Oxigraph store holding the KB (one per process and configuration)."""
    store = OxigraphStore()
    store.load_turtle(ensure_turtle(seed, scale))
    return store
