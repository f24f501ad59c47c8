"""``synkqa systems | train | predict | evaluate | reproduce``: the study from the command line.

Systems are named as in the registry (``random``, ``majority``, ``prototype``, ``tc``,
``ev-tc``, ``oracle``, and ``best`` for the strongest one that can serve the request).
Everything a command needs (KB, dataset, trained model) is built and cached on first use.
Models train on the train split only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from kopl2sparql.errors import ConfigError, DatasetError
from synkqa.cli.common import handle_errors, print_json, stdout

DATA_HELP = ("Read train/validation/test JSONL from this directory instead of the SynKQA-Pro "
             "dataset (built on first use).")


def register(app: typer.Typer) -> None:
    """Add the study's commands to the main app."""
    app.command("systems")(systems_command)
    app.command("train")(train_command)
    app.command("predict")(predict_command)
    app.command("evaluate")(evaluate_command)
    app.command("reproduce")(reproduce_command)


def _check_backend(value: str) -> str:
    if value in ("native", "oxigraph") or value.startswith(("http://", "https://")):
        return value
    raise typer.BadParameter(f"'{value}' is not a backend: use oxigraph, native or an http(s):// "
                             "SPARQL endpoint URL")


def _check_k(value: Optional[int]) -> Optional[int]:
    if value is not None and value < 1:
        raise typer.BadParameter("k must be at least 1")
    return value


SYSTEM = typer.Option(..., "--system", "-s", help="System name (see `synkqa systems`), or 'best'.")
SEED = typer.Option(0, "--seed", help="Seed of the classifier's optimiser (TC, EV-TC) and of RandomChoice.")
BACKEND = typer.Option("oxigraph", "--backend", "-b", callback=_check_backend,
                       help="Executor: oxigraph (SPARQL on the embedded store), native, or an endpoint URL.")
DATA = typer.Option(None, "--data", file_okay=False, help=DATA_HELP)
K = typer.Option(None, "--k", "-k", callback=_check_k, help="EV-TC: candidates per question (default 5).")


def _train_records(data: Optional[Path], progress) -> list[dict]:
    from evaluation.runner import load_splits
    return load_splits(("train",), data_dir=data, progress=progress)["train"]


# ---- systems ---------------------------------------------------------------------------

@handle_errors
def systems_command(json_output: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the systems that train, predict and evaluate, and what each needs."""
    from parsers import registry
    specs = [registry.get_spec(n) for n in registry.system_names()]
    best, best_open = registry.best_system(True).name, registry.best_system(False).name
    if json_output:
        print_json({"systems": [{"name": s.name, "title": s.title, "description": s.description,
                                 "predicts_program": s.predicts_program, "needs_choices": s.needs_choices,
                                 "needs_gold": s.needs_gold, "trainable": s.trainable} for s in specs],
                    "best": {"with_choices": best, "open_ended": best_open}})
        return
    table = Table("name", "system", "program?", "needs options", "description", box=None)
    for s in specs:
        table.add_row(s.name, s.title, "yes" if s.predicts_program else "no",
                      "yes" if s.needs_choices else ("gold programs" if s.needs_gold else "no"), s.description)
    stdout.print(table)
    stdout.print(f"best: {best} (with options), {best_open} (open-ended)")


# ---- train -------------------------------------------------------------------------------

@handle_errors
def train_command(
    system: str = SYSTEM,
    seed: int = SEED,
    data: Optional[Path] = DATA,
    retrain: bool = typer.Option(False, "--retrain", help="Ignore a cached model and fit again."),
    json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Fit a system on the train split and cache the model (validation accuracy is reported; the test split is never read)."""
    from evaluation.runner import Progress, load_splits, train_system
    from parsers import registry
    spec = registry.get_spec(system)
    with Progress(enabled=not json_output) as progress:
        splits = load_splits(("train", "validation"), data_dir=data, progress=progress)
        with progress.task(f"train {spec.name} (seed {seed})", 1):
            trained = train_system(spec.name, splits["train"], seed=seed, cache=not retrain)
    info: dict[str, Any] = {"system": spec.name, "seed": seed, "model": str(trained.path) if trained.path else None,
                            "cached": trained.cached, "seconds": round(trained.seconds, 3),
                            "train_questions": len(splits["train"])}
    model = trained.model
    if hasattr(model, "predict") and hasattr(model, "classes_") and splits["validation"]:
        val = splits["validation"]
        predicted = model.predict([r["question"] for r in val])
        info["validation_template_accuracy"] = round(
            100.0 * sum(int(p) == int(r["template_id"]) for p, r in zip(predicted, val)) / len(val), 2)
    if json_output:
        print_json(info)
        return
    where = info["model"] or "(nothing to store: this system learns nothing)"
    state = "loaded from cache" if trained.cached else f"trained in {trained.seconds:.2f} s"
    stdout.print(f"{spec.name} (seed {seed}): {state} on {info['train_questions']:,} questions -> {where}")
    if "validation_template_accuracy" in info:
        stdout.print(f"validation template accuracy: {info['validation_template_accuracy']:.2f} %")


# ---- predict -----------------------------------------------------------------------------

def _read_inputs(path: Path) -> list[dict]:
    from evaluation.runner import read_jsonl
    if str(path) != "-" and not path.is_file():
        raise ConfigError(f"input file not found: {path}")
    if str(path) == "-":
        import sys
        lines = sys.stdin.read().splitlines()
        records = []
        for n, line in enumerate(lines, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"stdin:{n}: not valid JSON ({exc.msg})") from None
    else:
        records = read_jsonl(path)
    for n, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get("question"), str):
            raise DatasetError(f"{path}: record {n} has no 'question' string")
    return records


@handle_errors
def predict_command(
    system: str = SYSTEM,
    input_file: Path = typer.Option(..., "--input", "-i", help="JSONL: {\"id\", \"question\", \"choices\"?} per line ('-' for stdin)."),
    output_file: Path = typer.Option(..., "--output", "-o", help="JSONL written: {\"id\", \"program\", \"answer\"} per line."),
    seed: int = SEED,
    k: Optional[int] = K,
    backend: str = BACKEND,
    data: Optional[Path] = DATA,
) -> None:
    """Answer questions: one output line per input line, in order.

    With choices, systems use them. Without, systems that can run open-ended do; a system that needs an option set (ev-tc, random) stops with an error (exit 1). --system best picks the strongest system for the input, with or without options.
    """
    from evaluation.runner import Progress, answer_all, make_executor, train_system
    from parsers import registry
    from parsers.base import ProgramRunner, Query
    records = _read_inputs(input_file)
    with_choices = bool(records) and all(r.get("choices") for r in records)
    spec = registry.get_spec(system, with_choices=with_choices)
    if spec.needs_choices:
        missing = [n for n, r in enumerate(records, 1) if not r.get("choices")]
        if missing:
            raise DatasetError(f"system '{spec.name}' needs an option set, but line {missing[0]} of "
                               f"{input_file} has no 'choices' ({len(missing)} such lines); add choices, "
                               f"or use a system that runs open-ended (e.g. --system tc, or --system best)")
    if spec.needs_gold:
        missing = [n for n, r in enumerate(records, 1) if not r.get("kopl")]
        if missing:
            raise DatasetError(f"system '{spec.name}' executes gold programs, but line {missing[0]} of "
                               f"{input_file} has no 'kopl'")
    queries = [Query.from_record(r, where=f"{input_file}:{n}") for n, r in enumerate(records, 1)]
    start = time.perf_counter()
    with Progress(enabled=True) as progress:
        train = _train_records(data, progress) if spec.uses_train_data else []
        with progress.task(f"model {spec.name} (seed {seed})", 1):
            trained = train_system(spec.name, train, seed=seed, with_choices=with_choices)
        answerer = registry.build(spec, trained.model, k=k)
        with progress.task(f"executor ({backend})", 1):
            executor = make_executor(backend)
        with progress.task(f"answer with {spec.name}", len(queries)) as task:
            predictions = answer_all(answerer, queries, ProgramRunner(executor), task=task)
    from synkqa.benchmark import paths
    with paths.atomic_path(output_file) as tmp:
        with open(tmp, "w", encoding="utf-8") as out:
            for p in predictions:
                out.write(json.dumps(p.to_json(), ensure_ascii=False) + "\n")
    elapsed = time.perf_counter() - start
    answered = sum(p.answer is not None for p in predictions)
    stdout.print(f"{spec.name}: {len(predictions)} predictions ({answered} answered) -> {output_file} "
                 f"in {elapsed:.1f} s")


# ---- evaluate ----------------------------------------------------------------------------

def _metrics_table(title: str, rows: dict, first: str) -> Table:
    table = Table(first, "N", "accuracy %", "program EM %", title=title, box=None, title_justify="left")
    for key, m in rows.items():
        table.add_row(str(key), str(m["n"]), f"{m['accuracy']:.2f}", f"{m['program_em']:.2f}")
    return table


@handle_errors
def evaluate_command(
    system: str = SYSTEM,
    split: str = typer.Option("test", "--split", help="Split to evaluate on: test or validation (or train)."),
    seed: int = SEED,
    k: Optional[int] = K,
    backend: str = BACKEND,
    data: Optional[Path] = DATA,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N questions of the split."),
    predictions_file: Optional[Path] = typer.Option(None, "--predictions", help="Also write predictions (JSONL)."),
    open_ended: bool = typer.Option(False, "--open-ended",
                                    help="Remove the options: systems must answer without them "
                                         "(those that need options stop with an error)."),
    held_out: Optional[str] = typer.Option(
        None, "--held-out",
        help="Comma-separated template names (e.g. EmployerHQCountry,WorkAndBornIntersection): train "
             "without them and evaluate on their questions only."),
    json_output: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
) -> None:
    """Answer accuracy, program EM (overall, by hop, reasoning type and template), error types, and for ranking systems the gold-rank distribution and top-k coverage."""
    from evaluation.runner import Progress, evaluate_system, load_splits, make_executor
    from parsers import registry
    spec = registry.get_spec(system)
    with Progress(enabled=not json_output) as progress:
        wanted = ("train",) if split == "train" else ("train", split)
        splits = load_splits(wanted, data_dir=data, progress=progress)
        records = splits[split]
        train_records = splits["train"]
        if held_out:
            from evaluation.generalization import heldout_split
            names = [n.strip() for n in held_out.split(",") if n.strip()]
            try:
                train_records, records = heldout_split(train_records, records, names)
            except KeyError as exc:
                raise ConfigError(str(exc.args[0]) if exc.args else str(exc)) from None
        records = records[:limit] if limit else records
        if open_ended:
            from evaluation.generalization import open_ended_records
            records = open_ended_records(records)
        with progress.task(f"executor ({backend})", 1):
            executor = make_executor(backend)
        result = evaluate_system(spec.name, records, train_records, executor, seed=seed, k=k,
                                 progress=progress)
    predictions = result.pop("predictions")
    result["split"] = split
    if predictions_file is not None:
        from synkqa.benchmark import paths
        with paths.atomic_path(predictions_file) as tmp:
            tmp.write_text("".join(json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in predictions),
                           encoding="utf-8")
    if json_output:
        print_json(_jsonable(result))
        return
    o = result["overall"]
    head = f"{result['title']} on {split} (N={o['n']}, seed {seed}, executor {result['backend']}"
    head += f", k={result['k']})" if "k" in result else ")"
    stdout.print(head)
    examined = (f" (candidates examined {result['mean_examined']:.2f})" if "mean_examined" in result else "")
    stdout.print(f"answer accuracy {o['accuracy']:.2f} %   program EM {o['program_em']:.2f} %   "
                 f"programs executed/question {result['mean_executions']:.2f}{examined}")
    stdout.print(_metrics_table("by hops", result["by_hops"], "hops"))
    stdout.print(_metrics_table("by reasoning type", result["by_reasoning"], "reasoning"))
    from synkqa.benchmark.templates import templates
    names = {str(t.id): t.name for t in templates()}
    stdout.print(_metrics_table("by template", {f"{t} {names.get(str(t), '')}": m
                                                for t, m in result["by_template"].items()}, "template"))
    stdout.print("error types: " + ", ".join(f"{k} {v}" for k, v in result["errors"].items() if v))
    if "selected_ranks" in result:
        stdout.print("selected rank: " + ", ".join(f"{k}: {v}" for k, v in result["selected_ranks"].items()))
    if "ranks" in result:
        r = result["ranks"]
        stdout.print("gold template rank: " + ", ".join(f"{k}: {v}" for k, v in r["histogram"].items() if v)
                     + (f"; mean {r['mean_gold_rank']:.2f}" if r["mean_gold_rank"] else ""))
        stdout.print("top-k coverage %: " + ", ".join(f"{k}: {v:.2f}" for k, v in r["coverage"].items()))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


# ---- reproduce ---------------------------------------------------------------------------

def _parse_seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise typer.BadParameter(f"--seeds takes comma-separated integers, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise typer.BadParameter("--seeds needs at least one seed and no repeats")
    return seeds


@handle_errors
def reproduce_command(
    out: Path = typer.Option(Path("reports"), "--out", "-o", file_okay=False, help="Report directory."),
    seeds: str = typer.Option("0,1,2", "--seeds", help="TC seeds (comma-separated)."),
    backend: str = BACKEND,
    k: int = typer.Option(5, "--k", "-k", min=1, help="EV-TC candidates per question."),
    data: Optional[Path] = DATA,
    timing: bool = typer.Option(True, "--timing/--no-timing", help="Time TC and EV-TC per question."),
    beyond: bool = typer.Option(True, "--beyond/--no-beyond",
                                help="Also evaluate schema-ev open-ended and on held-out templates "
                                     "(generalization.md)."),
    compositional: bool = typer.Option(True, "--compositional/--no-compositional",
                                       help="Also evaluate the open-ended systems per composition kind "
                                            "on the compositional split (compositional.md)."),
    beyond_best: bool = typer.Option(False, "--beyond-best",
                                     help="In generalization.md, also run schema-ev with the "
                                          "best-scoring selection rule (about 8x the executions)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                          help="Processes for the independent stages (default: one per "
                                               "CPU; 1 runs everything in one process). Tables and "
                                               "figures do not depend on it."),
    json_output: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
) -> None:
    """Reproduce the paper: build what is missing (KB, dataset), train TC with every seed, evaluate every system, and write Tables I–XI (Markdown + JSON, beside the paper's), Figures 2–7 (PNG) and SUMMARY.md under --out.

    The independent stages (the paper's study, the generalization study's parts) run in
    parallel processes. Everything but the runtime tables is byte-identical on a rerun.
    """
    from evaluation.reproduce import reproduce
    from evaluation.runner import Progress, StudyConfig
    seed_list = _parse_seeds(seeds)
    ks = tuple(sorted(set((1, 2, 3, 5)) | {k}))
    config = StudyConfig(seeds=seed_list, backend=backend, k=k, ks=ks, data_dir=data, timing=timing)
    start = time.perf_counter()
    with Progress(enabled=True) as progress:
        done = reproduce(config, out, beyond=beyond, beyond_best=beyond_best, compositional=compositional,
                         timing_questions=500 if timing else 0, workers=workers, progress=progress)
    elapsed = time.perf_counter() - start
    written = done["files"]
    headline = {name: {"accuracy": round(m["overall"]["accuracy"], 2),
                       "program_em": round(m["overall"]["program_em"], 2)} for name, m in done["systems"].items()}
    if json_output:
        print_json({"out": str(out), "seconds": round(elapsed, 2), "systems": headline,
                    "runtime": done["runtime"], "stages": done["stages"], "files": written})
        return
    table = Table("system", "accuracy %", "program EM %", box=None)
    for name, m in headline.items():
        table.add_row(name, f"{m['accuracy']:.2f}", f"{m['program_em']:.2f}")
    stdout.print(table)
    if done.get("runtime"):
        rt = done["runtime"]
        stdout.print(f"TC {rt['tc']['ms_per_question']:.3f} ms/question, EV-TC "
                     f"{rt['ev-tc']['ms_per_question']:.3f} ms/question (x{rt['ratio']:.2f}), "
                     f"executor {rt['backend']}")
    stdout.print(f"{len(written)} files written to {out}/ in {elapsed:.1f} s (see {out}/SUMMARY.md)")
