"""``synkqa dataset build|stats``: the SynKQA-Pro question files and their Table II."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich import box
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
                                       help="Directory for the files (default: the cache, $SYNKQA_HOME/v<version>/dataset-seed<N>)."),
    json_output: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Generate train/validation/test JSONL, every gold answer executed on both engines.

    Rebuilds even if the files exist. The files are replaced together only when the whole
    build succeeds; an engine disagreement aborts it (exit 1) and names the program.
    """
    import json

    from synkqa.benchmark.dataset import SPLITS, build, progress_bar

    start = time.perf_counter()
    with progress_bar() as update:
        directory = build(seed, out, progress=update)
    elapsed = time.perf_counter() - start
    manifest = json.loads((directory / "manifest.json").read_text())
    if json_output:
        print_json({"directory": str(directory), "seconds": round(elapsed, 2), **manifest})
        return
    stdout.print(f"dataset (seed {seed}) written to {directory} in {elapsed:.1f} s")
    for split in SPLITS:
        info = manifest["splits"][split]
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
    """Table II and per-template counts, beside the paper's.

    Table II: questions, words per question (mean ± std), program steps, unique answers,
    per split. Builds the dataset first if it is not cached.
    """
    from synkqa.benchmark.dataset import SPLITS, dataset_stats

    stats = dataset_stats(seed, directory)
    if json_output:
        print_json(stats)
        return
    # Laid out to fit 80 columns, so pipes and narrow terminals keep one row per split.
    table = Table(title=f"Table II, seed {seed}: ours beside the paper (words: mean ± std)",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1),
                  collapse_padding=True)
    for column in ("split", "n", "words", "paper", "steps", "paper", "unique", "paper"):
        table.add_column(column, justify="left" if column == "split" else "right", no_wrap=True)
    for split in SPLITS:
        ours, paper = stats["splits"][split], stats["paper"][split]
        table.add_row(
            split, f"{ours['questions']:,}",
            f"{ours['avg_words']:.2f} ± {ours['std_words']:.2f}", f"{paper['avg_words']:.2f} ± {paper['std_words']:.2f}",
            f"{ours['avg_steps']:.2f}", f"{paper['avg_steps']:.2f}",
            f"{ours['unique_answers']:,}", f"{paper['unique_answers']:,}",
        )
    stdout.print(table)
    per = Table(title="Questions per template (paper: Table XI N, test only)", box=box.SIMPLE_HEAD, show_edge=False,
                pad_edge=False)
    for column in ("id", "template", "weight", *SPLITS, "paper"):
        per.add_column(column, justify="left" if column == "template" else "right", no_wrap=True)
    for row in stats["templates"]:
        per.add_row(str(row["id"]), row["name"], f"{row['weight']:.2f}",
                    *(f"{row[s]:,}" for s in SPLITS), f"{row['test_paper']:,}")
    stdout.print(per)


def register(app: typer.Typer) -> None:
    """Add ``synkqa dataset ...`` to the main app."""
    app.add_typer(dataset_app, name="dataset")
