"""``oxigraph-disk`` for ``synkqa bench --kind kqapro``: the embedded-Oxigraph engine of
:mod:`kqapro.engines` on a RocksDB store on disk instead of in memory, loaded the way the
SynKQA-Pro bench loads its ``oxigraph-disk`` (``bulk_load`` from the file, ``optimize()``,
reopened read-only), and run on the same programs with native's answers as the reference.

It lives here rather than in :mod:`kqapro.crosscheck` so that module's engine list stays as
it is; :mod:`evaluation.bench.fullkopl` calls :func:`run_disk` when the engine is asked for.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph as ox

from kqapro.crosscheck import Tally, family
from kqapro.engines import NativeEngine, OxigraphEngine, SparqlEngine
from kqapro.kb import KB
from kqapro.program import Program
from ontology.errors import SynKQAError

NAME = "oxigraph-disk"

KQAPRO_BASE_MB = 300.0
KQAPRO_MB_PER_SCALE = 700.0
"""Peak resident memory of ``synkqa bench --kind kqapro`` is about ``KQAPRO_BASE_MB +
KQAPRO_MB_PER_SCALE * scale`` (17,000 entities per scale unit): the generator's JSON, the
:class:`~kqapro.kb.KB` built from it, native's indexes and the in-memory Oxigraph store are
all in the one process (measured at scales 1 and 3, docs/BENCH.md)."""


def kqapro_fits(scale: float, available_mb: float | None) -> tuple[bool, str]:
    """Whether a kqapro bench at ``scale`` fits in ``available_mb``, and the figures as a sentence."""
    need = KQAPRO_BASE_MB + KQAPRO_MB_PER_SCALE * scale
    entities = round(17_000 * scale)
    if available_mb is None:
        return True, f"needs about {need:,.0f} MB for {entities:,} entities (extrapolated)"
    why = (f"needs about {need:,.0f} MB for {entities:,} entities ({KQAPRO_MB_PER_SCALE:g} MB per scale unit, "
           f"measured; the KB is held in Python objects by the generator and by native), "
           f"{available_mb:,.0f} MB may be used")
    return need <= available_mb, why


class OxigraphDiskEngine(OxigraphEngine):
    """:class:`OxigraphEngine` (same dialect, same queries) on a store in ``location``."""

    name = NAME

    def __init__(self, kb: KB, turtle: Path, location: Path):
        SparqlEngine.__init__(self, kb)
        shutil.rmtree(location, ignore_errors=True)
        started = time.perf_counter()
        loading = ox.Store(str(location))
        loading.bulk_load(path=str(turtle), format=ox.RdfFormat.TURTLE)
        loading.optimize()                    # fewer SST files to look in, as in the synkqa bench
        del loading                           # closes RocksDB before the read-only open
        self.load_s = round(time.perf_counter() - started, 2)
        self.store = ox.Store.read_only(str(location))
        self.disk_mb = round(sum(f.stat().st_size for f in location.rglob("*") if f.is_file()) / 2**20, 1)


def run_disk(kb: KB, turtle: Path, programs: Sequence[Program], workdir: Path) -> dict:
    """The engine's entry of a cross-check report (agreement with native, median µs per
    family), plus ``load_s``, ``disk_mb`` and the p99 per family (``native_p99_us``: native's).

    Native's answers are computed again here (and timed, for its p99):
    :func:`kqapro.crosscheck.cross_check` hands out neither its answers nor its times.
    """
    native = NativeEngine(kb)
    reference = []
    native_seconds: dict = {}
    for p in programs:
        start = time.perf_counter()
        try:
            reference.append(native.run(p))
        except SynKQAError:
            reference.append(None)
        native_seconds.setdefault(family(p), []).append(time.perf_counter() - start)
    location = workdir / "oxigraph-disk"
    engine = OxigraphDiskEngine(kb, turtle, location)
    tally = Tally()
    try:
        for p, ours in zip(programs, reference):
            start = time.perf_counter()
            try:
                theirs = engine.run(p)
            except SynKQAError as exc:
                tally.errors[type(exc).__name__] += 1
                continue
            finally:
                tally.seconds[family(p)].append(time.perf_counter() - start)
            if ours is None or theirs != ours:
                tally.disagree += 1
                if len(tally.examples) < 5:
                    tally.examples.append({"program": p.to_text(), "native": ours.text[:300] if ours else None,
                                           "engine": str(theirs)[:300]})
            else:
                tally.agree += 1
        result = tally.to_json()
        result.update(load_s=engine.load_s, disk_mb=engine.disk_mb, p99_us=p99_us(tally.seconds),
                      native_p99_us=p99_us(native_seconds))
    finally:
        engine.store = None
        shutil.rmtree(location, ignore_errors=True)
    return result


def p99_us(seconds: dict) -> dict:
    """The 99th percentile per family, µs (nearest rank)."""
    out = {}
    for f, values in sorted(seconds.items()):
        ordered = sorted(values)
        out[f] = round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e6, 1)
    return out
