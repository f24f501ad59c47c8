"""``synkqa bench``: every engine on the same programs, side by side, at several KB scales."""

from __future__ import annotations

from pathlib import Path

import typer

from synkqa.cli.common import handle_errors, print_json, stderr, stdout


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("bench")(bench)


@handle_errors
def bench(
    kind: str = typer.Option("synkqa", "--kind", help="synkqa: the paper's subset on the SynKQA-Pro KB; "
                                                   "kqapro: full KoPL on generated KQA Pro-shaped KBs "
                                                   "(scales like 0.1, 1, 10; engines native, oxigraph, "
                                                   "oxigraph-disk, virtuoso, jena, kopl, kopl-engine); "
                                                   "serve: a load "
                                                   "test of `synkqa serve` (--clients, --seconds)."),
    scale: str = typer.Option("1,10", "--scale", help="KB scales, comma-separated (1 = the paper's 8,120 "
                                                     "entities; 100 = 812,000)."),
    engines: str = typer.Option("all", "--engines", help="Comma-separated engines: native, oxigraph-memory, "
                                                        "oxigraph-disk, rdflib, oxigraph-server, virtuoso, "
                                                        "kopl, kopl-engine (default all; native always runs "
                                                        "as the reference)."),
    n: int = typer.Option(2000, "--n", help="Programs per template shape (random programs: as many)."),
    random_programs: int = typer.Option(None, "--random", help="Random programs beyond the templates "
                                                              "(default: --n)."),
    scans: int = typer.Option(60, "--scans", help="Programs per whole-country scan shape."),
    batch: int = typer.Option(None, "--batch", help="Gold programs for the throughput batch (default: the "
                                                    "benchmark's 120,000; 10,000 from scale 300; 0 skips it)."),
    evtc: int = typer.Option(None, "--evtc", help="EV-TC questions timed end to end (default: --n / 2; "
                                                  "off from scale 300; 0 skips it)."),
    evtc_train: int = typer.Option(20_000, "--evtc-train", help="Train questions the EV-TC ranker learns from."),
    workers: int = typer.Option(2, "--workers", help="Cores for the parallel batch run."),
    virtuoso: str = typer.Option(None, "--virtuoso", metavar="URL",
                                 help="Use this Virtuoso endpoint instead of starting one (one --scale only; "
                                      "the KB graph as ?default-graph-uri=, default http://synkqa.org/kb)."),
    oxigraph_server: str = typer.Option(None, "--oxigraph-server", metavar="URL",
                                        help="Use this Oxigraph server endpoint instead of starting one "
                                             "(one --scale only)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random slots and programs."),
    out: Path = typer.Option(Path("reports/bench"), "--out", help="Directory for bench.json, bench.md and "
                                                                 "latency.png."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON instead of the table."),
    clients: int = typer.Option(32, "--clients", min=1, max=1000, help="--kind serve: concurrent clients."),
    seconds: float = typer.Option(60.0, "--seconds", min=1, help="--kind serve: how long the load lasts."),
    serve_url: str = typer.Option(None, "--serve-url", metavar="URL",
                                  help="--kind serve: load this running `synkqa serve` instead of starting one."),
) -> None:
    """Run the same programs on every engine and print one table (also JSON, Markdown and a plot).

    Every engine runs in its own process: load time and peak memory are that process's. Answers are checked against the native engine; exit status 1 if any engine disagrees or fails (an engine that is not installed is reported, not a failure). See docs/BENCH.md.
    """  # noqa: E501 - one paragraph, so the help text reflows

    if kind == "kqapro":
        return _bench_kqapro(scale, engines, n, seed, out, json_output)
    if kind == "serve":
        return _bench_serve(serve_url, clients, seconds, workers, seed, out, json_output)
    if kind != "synkqa":
        raise typer.BadParameter(f"--kind is synkqa, kqapro or serve, not {kind!r}")
    from evaluation import bench as lib

    config = lib.BenchConfig(
        scales=lib.parse_scales(scale), engines=lib.parse_engines(engines), n=n,
        random_programs=random_programs, scan_programs=scans, batch=batch, evtc=evtc, evtc_train=evtc_train,
        workers=workers, seed=seed, out=out, virtuoso_url=virtuoso, oxigraph_server_url=oxigraph_server)
    report = lib.run(config, log=lambda message: stderr.print(message))
    if json_output:
        print_json(report)
    else:
        _print_table(report, lib)
        stdout.print(f"\nwritten: {out / 'bench.json'}, {out / 'bench.md'}, {out / 'latency.png'}")
    bad = [r for r in report["summary"] if r["status"] == "failed" or (r["status"] == "ok" and r.get("disagree"))]
    if bad:
        for row in bad:
            what = row.get("reason") or f"{row['disagree']} answers differ from native"
            stderr.print(f"error: {row['engine']} at scale {row['scale']}: {what}")
        raise typer.Exit(1)


def _print_table(report: dict, lib) -> None:
    from rich.console import Console
    from rich.table import Table

    # Piped output gets rich's 80 columns by default, which folds every cell: use 160.
    console = stdout if stdout.is_terminal else Console(highlight=False, width=160)

    table = Table(title="synkqa bench: median/p99 per template program, load, memory, throughput, agreement",
                  show_lines=False)
    for _, label in lib.SUMMARY_COLUMNS:
        table.add_column(label, justify="left" if label in ("engine",) else "right", overflow="fold")
    for row in report["summary"]:
        table.add_row(*lib.summary_cells(row))
    console.print(table)
    for scale in report["scales"]:
        columns, rows = lib.shape_table(report, scale)
        shapes = Table(title=f"median µs per program, scale {scale}", show_lines=False)
        for column in columns:
            shapes.add_column(column, justify="left" if column == "program" else "right", no_wrap=True)
        for row in rows:
            shapes.add_row(*row)
        console.print(shapes)
    for target in report["targets"]:
        state = {True: "[green]met[/green]", False: "[red]MISSED[/red]", None: "not measured"}[target["met"]]
        why = f" — {target['why']}" if target.get("why") else ""
        console.print(f"target: {target['target']}: {state} ({target.get('value')}){why}")


def _bench_kqapro(scale: str, engines: str, n: int, seed: int, out: Path, json_output: bool) -> None:
    from rich.table import Table

    from evaluation.bench import fullkopl
    from kopl2sparql.errors import ConfigError

    try:
        scales = [float(s) for s in scale.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--scale takes comma-separated numbers, not {scale!r}") from None
    if not scales or any(not 0 < s for s in scales):
        raise ConfigError("--scale: each scale must be positive")
    from evaluation.bench.kqapro_disk import kqapro_fits
    from evaluation.bench.runner import _memory_budget_mb

    for s in scales:
        # The KB is generated and held in Python objects, in this process, with every
        # in-process engine: refuse a scale that cannot fit rather than be killed hours in.
        fits, why = kqapro_fits(s, _memory_budget_mb())
        if not fits:
            raise ConfigError(f"--kind kqapro --scale {s:g} does not fit in memory: {why}")
    names = list(fullkopl.DEFAULT_ENGINES) if engines == "all" else [e.strip() for e in engines.split(",") if e.strip()]
    result = fullkopl.run_bench(scales, names, n=n, seed=seed, out=out, log=lambda m: stderr.print(m))
    if json_output:
        print_json(result)
    else:
        for run in result["runs"]:
            cols = list(run["report"]["engines"])
            table = Table(title=f"full KoPL, scale {run['scale']:g} ({run['entities']} entities): "
                                "median µs per program")
            for c in ["family", *cols, "native/kopl-engine", "virtuoso/oxigraph"]:
                table.add_column(c, justify="left" if c == "family" else "right")
            for f, ratio in zip(run["families"], run["ratios"]):
                table.add_row(f, *[str(run["report"]["engines"][e]["median_us"].get(f, "–")) for e in cols],
                              str(ratio["native/kopl-engine"] or "–"), str(ratio["virtuoso/oxigraph"] or "–"))
            stdout.print(table)
        stdout.print(f"written: {out / 'bench-kqapro.json'}, {out / 'bench-kqapro.md'}")
    bad = [e for run in result["runs"] for e, v in run["report"]["engines"].items() if v["disagree"] or v["errors"]]
    if bad:
        stderr.print(f"error: engines disagree or fail: {', '.join(sorted(set(bad)))}")
        raise typer.Exit(1)


def _bench_serve(url, clients: int, seconds: float, workers: int, seed: int, out: Path, json_output: bool) -> None:
    from rich.table import Table

    from evaluation.bench.serve import run_load

    report = run_load(url, clients=clients, seconds=seconds, workers=workers, seed=seed, out=out,
                      log=lambda m: stderr.print(m))
    if json_output:
        print_json(report)
    else:
        table = Table(title=f"synkqa serve under load: {report['clients']} clients for {report['seconds']} s, "
                            f"{report['workers']} workers", show_lines=False)
        for column in ("requests", "per second", "p50 ms", "p99 ms"):
            table.add_column(column, justify="right")
        table.add_column("type", justify="left")
        for kind in ("program", "sparql"):
            row = report[kind]
            table.add_row(str(row["requests"]), str(row["per_second"]), str(row["p50_ms"]), str(row["p99_ms"]), kind)
        stdout.print(table)
        latency = Table(title="one client, one template program at a time (HTTP round trip)", show_lines=False)
        for column in ("p50 ms", "p99 ms", "server p50 ms"):
            latency.add_column(column, justify="right")
        latency.add_column("request", justify="left")
        for name, row in report["latency"].items():
            latency.add_row(str(row["p50_ms"]), str(row["p99_ms"]), str(row["server_p50_ms"] or "–"), name)
        stdout.print(latency)
        memory = report["memory_mb"]
        stdout.print(f"errors: {report['errors']} of {report['requests']} requests; memory (server + workers): "
                     f"{memory['first_10s_max']} MB in the first 10 s, {memory['last_10s_max']} MB in the last 10 s, "
                     f"max {memory['max']} MB; written: {out / 'serve-load.json'}")
        for failure in report["failures"]:
            stderr.print(f"failure: {failure}")
    if report["errors"]:
        raise typer.Exit(1)
