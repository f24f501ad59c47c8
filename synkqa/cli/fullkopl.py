"""``synkqa crosscheck``: random full-KoPL programs on every engine, agreement and speed."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from synkqa.cli.common import fail, handle_errors, print_json, stderr, stdout


@handle_errors
def crosscheck(
    kb: Path = typer.Option(None, "--kb", exists=True, dir_okay=False,
                            help="A KQA Pro-model Turtle (kb import / kb build --kind kqapro); default: "
                                 "generate one with --scale/--seed."),
    scale: float = typer.Option(0.1, "--scale", min=0.001, max=100,
                                help="Scale of the generated KQA Pro-shaped KB (1 = about 17,000 entities)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the generated KB."),
    n: int = typer.Option(1000, "--n", min=1, help="How many random programs."),
    program_seed: int = typer.Option(0, "--program-seed", min=0, help="Seed of the random programs."),
    engines: str = typer.Option("native,oxigraph,kopl,kopl-engine", "--engines",
                                help="Comma-separated: native, oxigraph, virtuoso (started on loopback), "
                                     "jena (ARQ in a JVM), kopl, kopl-engine."),
    out: Path = typer.Option(None, "--out", dir_okay=False, help="Also write the report as JSON here."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Run random well-typed full-KoPL programs (all 27 functions) on several engines and count
    agreements with the native interpreter, incomparable cases by reason, and µs per program.

    Exit 1 if any engine disagrees or fails on a program."""
    from kqapro.crosscheck import ENGINES, cross_check
    from kqapro.rdf import kb_from_turtle, kb_to_turtle
    from kqapro.sampling import random_programs
    from synkqa.benchmark.kqapro_kb import is_kqapro_file

    names = [e.strip() for e in engines.split(",") if e.strip()]
    if not names or any(e not in ENGINES for e in names):
        raise fail(f"--engines takes a comma-separated list of {', '.join(ENGINES)}", 2)
    if "native" not in names:
        names.insert(0, "native")
    with tempfile.TemporaryDirectory(prefix="synkqa-crosscheck-") as tmp:
        workdir = Path(tmp)
        with stderr.status("reading the KB" if kb else f"generating a KB (scale {scale:g}, seed {seed})"):
            if kb is not None:
                if not is_kqapro_file(kb):
                    raise fail(f"{kb} is not a KQA Pro-model Turtle (write one with `synkqa kb import`)", 1)
                knowledge, turtle = kb_from_turtle(kb), kb
            else:
                from kqapro.generator import generate
                from kqapro.kb import KB
                knowledge = KB.from_json(generate(scale=scale, seed=seed), where="generated KB")
                turtle = workdir / "kb.ttl"
                turtle.write_bytes(kb_to_turtle(knowledge))
            programs = random_programs(knowledge, n, seed=program_seed)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      console=stderr, transient=True, disable=as_json) as bar:
            tasks = {name: bar.add_task(name, total=n) for name in names}

            def tick(name: str, i: int) -> None:
                bar.update(tasks[name], completed=i + 1)

            report = cross_check(knowledge, turtle, programs, names, workdir=workdir, progress=tick)
    report |= {"scale": None if kb else scale, "seed": None if kb else seed, "program_seed": program_seed,
               "kb_file": str(kb) if kb else None}
    if out is not None:
        out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    bad = {name: e for name, e in report["engines"].items() if e["disagree"] or e["errors"]}
    if as_json:
        print_json(report)
    else:
        _print(report)
    if bad:
        raise typer.Exit(1)


def _print(report: dict) -> None:
    table = Table(title=f"{report['programs']} random programs, KB of {report['kb']['entities']} entities")
    for column in ("engine", "agree", "disagree", "incomparable (reason: n)", "errors", "rule notes", "mean µs"):
        table.add_column(column)
    for name, e in report["engines"].items():
        table.add_row(name, str(e["agree"]), str(e["disagree"]),
                      ", ".join(f"{k}: {v}" for k, v in e["incomparable"].items()) or "–",
                      ", ".join(f"{k}: {v}" for k, v in e["errors"].items()) or "–",
                      ", ".join(f"{k}: {v}" for k, v in e["notes"].items()) or "–",
                      f"{e['mean_us']:.0f}" if e["mean_us"] is not None else "–")
    stdout.print(table)
    families = sorted({f for e in report["engines"].values() for f in e["median_us"]})
    speed = Table(title="median µs per program, by last function")
    speed.add_column("family")
    for name in report["engines"]:
        speed.add_column(name, justify="right")
    for f in families:
        speed.add_row(f, *[str(e["median_us"].get(f, "–")) for e in report["engines"].values()])
    stdout.print(speed)
    for name, e in report["engines"].items():
        for ex in e["examples"]:
            stdout.print(f"[red]{name}[/red] differs on {ex['program']}: native {ex['native']!r}, "
                         f"{name} {ex['engine']!r}", markup=True, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("crosscheck")(crosscheck)
