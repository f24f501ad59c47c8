"""``synkqa bench --kind kqapro``: full KoPL on generated KQA Pro-shaped KBs, every engine on
the same random programs, median µs per program by function family, and the two ratios the
project tracks: native / kopl-engine per family (target ≤ 1.0) and Virtuoso over HTTP /
embedded Oxigraph (target ≥ 10).

All engines run in this process one after another (kopl-engine in its child process, its
time measured there; Virtuoso and Jena in their servers), on the same programs; answers are
checked as in :mod:`kqapro.crosscheck`, so a fast wrong engine shows up as disagreeing.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kqapro.crosscheck import ENGINES, cross_check
from kqapro.generator import generate
from kqapro.kb import KB
from kqapro.rdf import kb_to_turtle, write_kb_turtle  # noqa: F401 - kb_to_turtle kept for importers
from kqapro.sampling import random_programs

DEFAULT_ENGINES = ENGINES


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def run_bench(scales: Sequence[float], engines: Sequence[str] = DEFAULT_ENGINES, n: int = 2000, seed: int = 0,
              out: Path | None = None, log: Callable[[str], None] = lambda m: None) -> dict:
    engines = ["native"] + [e for e in engines if e != "native"]
    runs = []
    for scale in scales:
        started = time.perf_counter()
        kb = KB.from_json(generate(scale=scale, seed=seed), where="generated KB")
        generate_s = round(time.perf_counter() - started, 1)
        log(f"scale {scale:g}: {len(kb.entities)} entities generated in {time.perf_counter() - started:.1f} s")
        with tempfile.TemporaryDirectory(prefix="synkqa-bench-kqapro-") as tmp:
            workdir = Path(tmp)
            turtle = workdir / "kb.ttl"
            write_kb_turtle(kb, turtle)  # streamed: the Turtle is never held in memory
            turtle_mb = round(turtle.stat().st_size / 2**20, 1)
            programs = random_programs(kb, n, seed=seed)
            report = cross_check(kb, turtle, programs, [e for e in engines if e != "oxigraph-disk"], workdir=workdir)
            if "oxigraph-disk" in engines:  # Oxigraph on disk: evaluation/bench/kqapro_disk.py
                from evaluation.bench.kqapro_disk import run_disk
                report["engines"]["oxigraph-disk"] = run_disk(kb, turtle, programs, workdir)
        medians = {name: e["median_us"] for name, e in report["engines"].items()}
        families = sorted({f for m in medians.values() for f in m})
        ratios = []
        for f in families:
            row = {"family": f}
            row["native/kopl-engine"] = _ratio(medians["native"].get(f), medians.get("kopl-engine", {}).get(f))
            row["virtuoso/oxigraph"] = _ratio(medians.get("virtuoso", {}).get(f), medians.get("oxigraph", {}).get(f))
            ratios.append(row)
        overall = {name: statistics.median(v for v in m.values()) if m else None for name, m in medians.items()}
        runs.append({"scale": scale, "entities": len(kb.entities), "programs": n, "report": report,
                     "families": families, "ratios": ratios, "median_of_family_medians": overall})
        runs[-1].update(generate_s=generate_s, turtle_mb=turtle_mb, peak_mb=_peak_mb())
        log(f"scale {scale:g}: done")
    result = {"engines": engines, "seed": seed, "runs": runs}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench-kqapro.json").write_text(json.dumps(result, indent=1) + "\n")
        (out / "bench-kqapro.md").write_text(markdown(result))
    return result


def _peak_mb() -> float:
    """This process's peak resident memory so far (every engine but kopl-engine, Virtuoso and Jena runs in it)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def markdown(result: dict) -> str:
    lines = ["# Full KoPL bench (generated KQA Pro-shaped KBs)", ""]
    for run in result["runs"]:
        engines = list(run["report"]["engines"])
        lines += [f"## scale {run['scale']:g} ({run['entities']} entities, {run['programs']} random programs)", "",
                  "median µs per program, by last function; ratios native/kopl-engine and virtuoso/oxigraph", "",
                  "| family | " + " | ".join(engines) + " | native/kopl-engine | virtuoso/oxigraph |",
                  "|---|" + "---|" * (len(engines) + 2)]
        for f, ratio in zip(run["families"], run["ratios"]):
            cells = [str(run["report"]["engines"][e]["median_us"].get(f, "–")) for e in engines]
            lines.append(f"| {f} | " + " | ".join(cells) + f" | {ratio['native/kopl-engine'] or '–'} | "
                         f"{ratio['virtuoso/oxigraph'] or '–'} |")
        agree = ", ".join(f"{e}: {v['agree']} agree, {v['disagree']} disagree, "
                          f"{sum(v['incomparable'].values())} incomparable" for e, v in run["report"]["engines"].items())
        lines += ["", agree, ""]
    return "\n".join(lines) + "\n"
