"""``synkqa dataset build|stats``: the SynKQA-Pro question files and their Table II."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from synkqa.cli.common import handle_errors, print_json, stdout

dataset_app = typer.Typer(help="Build the SynKQA-Pro benchmark (120,000 questions) and print its statistics.",
                          no_args_is_help=True)

SEED = typer.Option(42, "--seed", help="Seed of the KB and of the questions.")


@dataset_app.command("build")
@handle_errors
def build_command(
    seed: int = SEED,
    out: Optional[Path] = typer.Option(None, "--out", file_okay=False, dir_okay=True,
                                       help="Directory for the files (default: the cache, $SYNKQA_HOME/dataset-seed<N>)."),
    json_output: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Generate train/validation/test JSONL, every gold answer executed on both engines.

    Rebuilds even if the files exist. The files are replaced together only when the whole
    build succeeds; an engine disagreement aborts it (exit 1) and names the program.
    """
    import json

    from synkqa.dataset import build, progress_bar

    start = time.perf_counter()
    with progress_bar() as update:
        directory = build(seed, out, progress=update)
    elapsed = time.perf_counter() - start
    manifest = json.loads((directory / "manifest.json").read_text())
    if json_output:
        print_json({"directory": str(directory), "seconds": round(elapsed, 2), **manifest})
        return
    stdout.print(f"dataset (seed {seed}) written to {directory} in {elapsed:.1f} s")
    for split, info in manifest["splits"].items():
        stdout.print(f"  {info['file']:<17} {info['questions']:>7,} questions  "
                     f"{info['bytes'] / 1e6:7.1f} MB  sha256 {info['sha256'][:16]}…")


@dataset_app.command("stats")
@handle_errors
def stats_command(
    seed: int = SEED,
    directory: Optional[Path] = typer.Option(None, "--dir", exists=True, file_okay=False,
                                             help="Read this dataset directory instead of the cache."),
    json_output: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
) -> None:
    """Table II (questions, words, program steps, unique answers) and per-template counts,
    each beside the paper's. Builds the dataset first if it is not cached."""
    from synkqa.dataset import SPLITS, dataset_stats

    stats = dataset_stats(seed, directory)
    if json_output:
        print_json(stats)
        return
    table = Table(title=f"Table II — SynKQA-Pro splits (seed {seed}; ours / paper)")
    for column in ("split", "questions", "avg words ± std", "avg steps", "unique answers"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split in SPLITS:
        ours, paper = stats["splits"][split], stats["paper"][split]
        table.add_row(
            split,
            f"{ours['questions']:,} / {paper['questions']:,}",
            f"{ours['avg_words']:.2f} ± {ours['std_words']:.2f} / {paper['avg_words']:.2f} ± {paper['std_words']:.2f}",
            f"{ours['avg_steps']:.2f} / {paper['avg_steps']:.2f}",
            f"{ours['unique_answers']:,} / {paper['unique_answers']:,}",
        )
    stdout.print(table)
    per = Table(title="Questions per template (expected = weight × split size; paper: Table XI N)")
    for column in ("id", "template", "weight", "train (exp.)", "validation (exp.)", "test (exp.)", "test paper"):
        per.add_column(column, justify="left" if column == "template" else "right")
    for row in stats["templates"]:
        per.add_row(str(row["id"]), row["name"], f"{row['weight']:.2f}",
                    *(f"{row[s]:,} ({row[s + '_expected']:,.0f})" for s in SPLITS),
                    f"{row['test_paper']:,}")
    stdout.print(per)


def register(app: typer.Typer) -> None:
    """Add ``synkqa dataset ...`` to the main app."""
    app.add_typer(dataset_app, name="dataset")
