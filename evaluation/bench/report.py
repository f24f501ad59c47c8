"""The report of a run: :func:`summarise` (a row per scale and engine) and :func:`targets`
(the issue's targets, met or missed), the summary and per-program tables
(:func:`summary_cells`, :func:`shape_table`, also used by the CLI), the Markdown, the plot
and :func:`write_outputs` (``bench.json``, ``bench.md``, ``latency.png``).
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from evaluation.bench.config import HUGE_SCALE, OURS
from evaluation.bench.workload import SCAN_SHAPES


# ---- summary, table, files ----------------------------------------------------------------------

TEMPLATE_ORDER = ("BirthYear", "BirthCity", "BirthCountry", "EmployerHQCountry", "CountBornIn",
                  "CompareCityPopulation", "ArgmaxCityInCountry", "WorkAndBornIntersection", "VerifyEmployment")


def summarise(report: dict) -> None:
    """Add ``summary`` rows (one per scale and engine) and ``targets`` to the report."""
    rows = []
    for scale, block in report["scales"].items():
        engines = block["engines"]
        native = engines.get("native") or {}
        for engine, result in engines.items():
            row: dict[str, Any] = {"scale": int(scale), "engine": engine, "status": result.get("status"),
                                   "reason": result.get("reason")}
            if result.get("status") == "ok":
                runs = result.get("runs", {})
                templates = [runs[k] for k in runs if k.startswith("templates/") and runs[k].get("n")]
                row["template_median_us"] = _median_of(templates, "median_us")
                row["template_p99_us"] = _median_of(templates, "p99_us")
                row["random_median_us"] = runs.get("random", {}).get("median_us")
                scans = [runs[k] for k in runs if k.startswith("scans/") and runs[k].get("n")]
                row["scan_median_us"] = _median_of(scans, "median_us")
                row["load_s"] = result.get("load_s")
                row["peak_mb"] = result.get("peak_mb")
                row["throughput_per_s"] = best_throughput(result.get("batch") or {})
                row["evtc_median_us"] = (result.get("evtc") or {}).get("median_us")
                native_t = _median_of([native.get("runs", {}).get(k, {}) for k in runs if k.startswith("templates/")],
                                      "median_us") if native else None
                row["ratio_to_native"] = _ratio(row["template_median_us"], native_t)
                total = (result.get("agreement") or {}).get("total", {})
                row["agree"] = total.get("agree")
                row["compared"] = total.get("compared")
                row["disagree"] = total.get("disagree")
                row["not_comparable"] = total.get("not_comparable")
            rows.append(row)
    report["summary"] = rows
    report["targets"] = targets(report)


def _median_of(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def _ratio(a, b) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def best_throughput(batch: dict) -> float | None:
    values = [batch[k]["per_s"] for k in ("one_by_one", "many", "many_parallel") if k in batch]
    return max(values) if values else None


def _shape_medians(report: dict, scale: int, engine: str, exec_only: bool = False) -> dict[str, float]:
    result = report["scales"].get(str(scale), {}).get("engines", {}).get(engine) or {}
    out = {}
    for key, run in (result.get("runs") or {}).items():
        if key.startswith("templates/"):
            stats = run.get("exec_only") if exec_only else run
            if stats and stats.get("median_us") is not None:
                out[key.split("/", 1)[1]] = stats["median_us"]
    return out


def targets(report: dict) -> list[dict]:
    """The issue's targets, each met / missed / not measured, with the numbers."""
    out = []
    scales = [int(s) for s in report["scales"]]

    def engine(scale, name):
        return report["scales"].get(str(scale), {}).get("engines", {}).get(name) or {}

    for scale in (1, 10):
        if scale not in scales:
            continue
        ours = _shape_medians(report, scale, "native")
        theirs = _shape_medians(report, scale, "kopl-engine")
        if ours and theirs:
            ratios = {s: round(ours[s] / theirs[s], 2) for s in ours if s in theirs and theirs[s]}
            worst = max(ratios.values()) if ratios else None
            out.append({"target": f"native median <= 1.0x kopl-engine (parse+execute), nine shapes, scale {scale}",
                        "met": worst is not None and worst <= 1.0, "value": worst, "per_shape": ratios})
        else:
            out.append({"target": f"native median <= 1.0x kopl-engine, scale {scale}", "met": None,
                        "value": None, "why": "kopl-engine or native not run"})
    if 1 in scales:
        ox_ = _shape_medians(report, 1, "oxigraph-memory")
        virt = _shape_medians(report, 1, "virtuoso")
        nat = _shape_medians(report, 1, "native")
        if ox_ and virt:
            ratios = {s: round(virt[s] / ox_[s], 2) for s in ox_ if s in virt}
            worst = min(ratios.values())
            out.append({"target": "Oxigraph embedded >= 10x faster than Virtuoso HTTP per program, scale 1",
                        "met": worst >= 10, "value": worst, "per_shape": ratios})
        else:
            out.append({"target": "Oxigraph embedded >= 10x faster than Virtuoso HTTP, scale 1", "met": None,
                        "value": None, "why": "Virtuoso not available in this run"})
        if ox_ and nat:
            ratios = {s: round(ox_[s] / nat[s], 2) for s in ox_ if s in nat}
            worst = max(ratios.values())
            out.append({"target": "Oxigraph embedded within 3x of native per program, scale 1",
                        "met": worst <= 3, "value": worst, "per_shape": ratios})
    if 1 in scales and 100 in scales:
        for name in OURS:
            twin = (report["scales"]["100"].get("twins") or {}).get(name) or {}
            high = _shape_medians(report, 100, name)
            low = {k.split("/", 1)[1]: r["median_us"] for k, r in (twin.get("runs") or {}).items()
                   if r.get("median_us") is not None}
            how = "against its scale-1 twin, interleaved in the same run"
            if not low:
                low, how = _shape_medians(report, 1, name), "against the scale-1 phase of the run"
            if low and high:
                ratios = {s: round(high[s] / low[s], 2) for s in low if s in high}
                worst = max(ratios.values())
                out.append({"target": f"{name}: scale 100 <= 3x scale 1 per template program",
                            "met": worst <= 3, "value": worst, "per_shape": ratios, "how": how})
    if 100 in scales:
        mem = engine(100, "oxigraph-memory")
        if mem.get("status") == "ok":
            out.append({"target": "Oxigraph (memory) load <= 60 s at scale 100", "met": mem["load_s"] <= 60,
                        "value": mem["load_s"]})
            out.append({"target": "Oxigraph (memory) peak memory <= 4 GB at scale 100",
                        "met": mem["peak_mb"] <= 4096, "value": mem["peak_mb"]})
        disk = engine(100, "oxigraph-disk")
        if disk.get("status") == "ok":
            out.append({"target": "Oxigraph (disk) load <= 60 s at scale 100", "met": disk["load_s"] <= 60,
                        "value": disk["load_s"]})
            out.append({"target": "Oxigraph (disk) peak memory <= 4 GB at scale 100",
                        "met": disk["peak_mb"] <= 4096, "value": disk["peak_mb"]})
    return out


def machine() -> dict:
    """Where the numbers come from (the load average matters on a shared machine)."""
    import platform

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_average_at_start": load}


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


SUMMARY_COLUMNS = (
    ("scale", "scale"), ("engine", "engine"), ("load_s", "load s"), ("peak_mb", "peak MB"),
    ("template_median_us", "median µs"), ("template_p99_us", "p99 µs"), ("ratio_to_native", "× native"),
    ("random_median_us", "random µs"), ("scan_median_us", "scan µs"), ("throughput_per_s", "batch prog/s"),
    ("evtc_median_us", "EV-TC µs/q"), ("agreement", "agree"),
)


def summary_cells(row: dict) -> list[str]:
    """One row of the summary table as text (an engine that did not run says why)."""
    if row["status"] != "ok":
        return [str(row["scale"]), row["engine"], f"{row['status']}: {row.get('reason') or ''}"[:90]] + \
            [""] * (len(SUMMARY_COLUMNS) - 3)
    cells = []
    for key, _ in SUMMARY_COLUMNS:
        if key == "agreement":
            compared, agree = row.get("compared") or 0, row.get("agree") or 0
            extra = f" (+{row['not_comparable']} n/c)" if row.get("not_comparable") else ""
            cells.append(f"{agree}/{compared}{extra}")
        elif key == "ratio_to_native":
            cells.append("-" if row.get(key) is None else f"{row[key]:.2f}×")
        else:
            cells.append(_fmt(row.get(key)))
    return cells


SHORT = {"native": "native", "oxigraph-memory": "ox mem", "oxigraph-disk": "ox disk", "rdflib": "rdflib",
         "oxigraph-server": "ox HTTP", "virtuoso": "virtuoso", "kopl": "kopl", "kopl-engine": "kopl-eng"}
"""Column headings of the per-program table."""


def shape_table(report: dict, scale: str, stat: str = "median_us") -> tuple[list[str], list[list[str]]]:
    """Median (or ``stat``: ``p99_us``) µs per program at one scale: a row per work item, a
    column per engine that ran."""
    block = report["scales"][scale]
    engines = [e for e, r in block["engines"].items() if r.get("status") == "ok"]
    keys = [f"templates/{t}" for t in TEMPLATE_ORDER] + ["random"] + [f"scans/{s}" for s in SCAN_SHAPES]
    rows = []
    for key in keys:
        values = [(block["engines"][e].get("runs") or {}).get(key, {}).get(stat) for e in engines]
        if any(v is not None for v in values):
            rows.append([key.split("/", 1)[-1]] + [_fmt(v) for v in values])
    evtc = [(block["engines"][e].get("evtc") or {}).get(stat) for e in engines]
    if any(v is not None for v in evtc):
        rows.append(["EV-TC per question"] + [_fmt(v) for v in evtc])
    return ["program"] + [SHORT.get(e, e) for e in engines], rows


def markdown(report: dict) -> str:
    """The report as Markdown: summary, targets, per-shape medians, batch variants, load."""
    lines = [f"Machine: {report['machine']['cpus']} cores, load average at start "
             f"{report['machine']['load_average_at_start']}; run took {report.get('seconds')} s.", ""]
    head = [label for _, label in SUMMARY_COLUMNS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["summary"]:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in summary_cells(row)) + " |")
    lines += ["", "Targets:", ""]
    for t in report["targets"]:
        state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        lines.append(f"- {t['target']}: **{state}** (value {t.get('value')})"
                     + (f" — {t['why']}" if t.get("why") else ""))
    for scale in report["scales"]:
        columns, rows = shape_table(report, scale)
        lines += ["", f"Median µs per program, scale {scale}:", "", "| " + " | ".join(columns) + " |",
                  "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    for scale in report["scales"]:
        if int(scale) < HUGE_SCALE:
            continue
        # Beyond the full table's scales the tail matters as much as the median: p99 per shape too.
        columns, rows = shape_table(report, scale, "p99_us")
        lines += ["", f"p99 µs per program, scale {scale}:", "", "| " + " | ".join(columns) + " |",
                  "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "KB and load:", ""]
    for scale, block in report["scales"].items():
        native = block["engines"].get("native") or {}
        facts = [f"Turtle {block.get('turtle_mb')} MB"]
        if native.get("entities"):
            facts.append(f"{native['entities']:,} entities")
        sizes = block.get("sizes") or {}
        if sizes:
            facts.append(f"work: batch {sizes.get('batch'):,}, EV-TC {sizes.get('evtc'):,}")
        disk = block["engines"].get("oxigraph-disk") or {}
        if disk.get("disk_mb") is not None:
            facts.append(f"oxigraph-disk: {disk['disk_mb']:,} MB on disk after optimize(), "
                         f"load {disk.get('load_s')} s, reopen {disk.get('open_s')} s, peak {disk.get('peak_mb')} MB")
        lines.append(f"- scale {scale}: " + "; ".join(facts))
    for scale, block in report["scales"].items():
        twins = block.get("twins") or {}
        if not twins:
            continue
        lines += ["", f"Scaling, scale {scale} ÷ scale {next(iter(twins.values()))['scale']} (median per template "
                  "program, both measured side by side in this run):", "",
                  "| engine | " + " | ".join(TEMPLATE_ORDER) + " |", "|" + "---|" * (len(TEMPLATE_ORDER) + 1)]
        for engine, twin in twins.items():
            high = _shape_medians(report, int(scale), engine)
            low = {k.split("/", 1)[1]: r.get("median_us") for k, r in (twin.get("runs") or {}).items()}
            cells = [f"{high[t] / low[t]:.2f}×" if high.get(t) and low.get(t) else "-" for t in TEMPLATE_ORDER]
            lines.append(f"| {engine} | " + " | ".join(cells) + " |")
    lines += ["", "Batch throughput (programs/s):", "", "| scale | engine | one by one | execute_many | "
              "execute_many, parallel |", "|---|---|---|---|---|"]
    for scale, block in report["scales"].items():
        for engine, result in block["engines"].items():
            batch = result.get("batch") or {}
            if not batch:
                continue
            cells = [_fmt(batch.get(k, {}).get("per_s")) + (f" (n={batch[k]['n']})" if k in batch else "")
                     for k in ("one_by_one", "many", "many_parallel")]
            lines.append(f"| {scale} | {engine} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(report: dict, out: Path) -> None:
    """``bench.json`` (without the per-program answers), ``bench.md`` and ``latency.png``."""
    slim = json.loads(json.dumps(report))
    for block in slim["scales"].values():
        for result in block["engines"].values():
            for run in (result.get("runs") or {}).values():
                for key in ("answers", "peer_answers", "finishes", "incomparable"):
                    run.pop(key, None)
            for part in ("batch", "evtc"):
                for key in ("answers", "many_answers", "peer_answers", "finishes", "incomparable",
                            "many_incomparable"):
                    (result.get(part) or {}).pop(key, None)
    report.clear()
    report.update(slim)
    (out / "bench.json").write_text(json.dumps(slim, indent=1, ensure_ascii=False) + "\n")
    (out / "bench.md").write_text(markdown(slim))
    plot(slim, out / "latency.png")


def plot(report: dict, path: Path) -> None:
    """Two log-log panels against KB size (entities): median template latency, and load time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (latency, load) = plt.subplots(1, 2, figsize=(12, 4.8))
    for axis, key, label in ((latency, "template_median_us", "median µs per template program"),
                             (load, "load_s", "KB load time, s")):
        series: dict[str, list[tuple[float, float]]] = {}
        for row in report["summary"]:
            value = row.get(key)
            if row["status"] == "ok" and value:
                entities = _entities(report, row["scale"])
                series.setdefault(row["engine"], []).append((entities, value))
        for engine, points in series.items():
            points.sort()
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=engine)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("KB size (entities)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
        if series:
            axis.legend(fontsize=7)
    latency.set_title("Latency against KB size")
    load.set_title("Load time against KB size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _entities(report: dict, scale: int) -> int:
    native = report["scales"].get(str(scale), {}).get("engines", {}).get("native") or {}
    return native.get("entities") or 8120 * scale
