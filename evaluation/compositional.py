"""The compositional study: open-ended accuracy per composition kind on wordings the system
was never trained on, beside the system it improves on, with refinement and time per question.

The questions are the ``test`` part of the compositional split
(:mod:`synkqa.benchmark.compositional`: wordings 3 and 4 of every kind; training may read
wordings 0 and 1 only, model choices wordings 2). Every system answers without options.
One table, ``compositional.md/.json``: a row per kind (questions, the baseline's accuracy,
the system's accuracy and program exact match, how many of its answers came from
refinement), then the overall row, then the validation part overall. Timing goes to
``compositional-runtime.md/.json`` (it varies between runs; the accuracy table does not).

:func:`compositional_report` is the one entry point (``synkqa reproduce`` calls it).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation import metrics
from evaluation.tables import Table
from parsers.base import Prediction, ProgramRunner, queries_from

__all__ = ["compositional_report", "load_compositional", "BASELINE"]

BASELINE = "schema-ev-templates"
"""The system this study sets the new one beside: schema-ev as it was before the
compositional program space (nine-template-era enumeration and ranking)."""


def load_compositional(part: str | None = None, seed: int = 42, data_dir: Path | str | None = None) -> list[dict]:
    """Records of the compositional split (one ``part`` or all), built on first use.

    :raises DatasetError: for a missing file or one that differs from its manifest.
    """
    from kopl2sparql.errors import DatasetError
    from synkqa.benchmark import dataset
    from synkqa.benchmark.compositional import FILE, PARTS
    if part is not None and part not in PARTS:
        raise DatasetError(f"unknown compositional part {part!r} (one of {', '.join(PARTS)})")
    directory = dataset.ensure_dataset(seed, show_progress=False) if data_dir is None else Path(data_dir)
    path = directory / FILE
    if not path.is_file():
        if data_dir is None:
            raise DatasetError(f"no compositional split at {path} (rebuild with `synkqa dataset build`)")
        # A directory of one's own splits (``--data``) usually has none: the questions are
        # about the KB, so draw and execute them (about a second) rather than fail.
        return [r for r in _drawn(seed) if part is None or r["part"] == part]
    dataset.check_split_file(path)
    out = []
    with open(path, "rb") as fh:
        for line in fh:
            record = json.loads(line)
            if part is None or record["part"] == part:
                out.append(record)
    return out


def _drawn(seed: int) -> list[dict]:
    from store.executor import SparqlExecutor
    from synkqa.benchmark.compositional import build_records
    from synkqa.benchmark.executors import get_executor
    ox = get_executor("oxigraph", seed)
    return build_records(get_executor("native", seed), SparqlExecutor(ox.store, ox.schema, name="oxigraph"), seed)


def _answer(system, records: Sequence[dict], runner: ProgramRunner, progress, label: str) -> list[Prediction]:
    queries = queries_from([{k: v for k, v in r.items() if k != "choices"} for r in records])
    out: list[Prediction] = []
    with progress.task(label, len(queries)) as task:
        for start in range(0, len(queries), 200):
            out.extend(system.answer(queries[start:start + 200], runner))
            task.advance(len(queries[start:start + 200]))
    return out


def _per_kind(records: Sequence[dict], predictions: Sequence[Prediction]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r, p in zip(records, predictions):
        cell = out.setdefault(r["kind"], {"n": 0, "correct": 0, "exact": 0, "refined": 0, "refined_correct": 0})
        cell["n"] += 1
        ok = metrics.answer_correct(r, p)
        cell["correct"] += ok
        cell["exact"] += metrics.program_match(r, p)
        if _was_refined(p):
            cell["refined"] += 1
            cell["refined_correct"] += ok
    for cell in out.values():
        cell["accuracy"] = 100.0 * cell["correct"] / cell["n"]
        cell["program_em"] = 100.0 * cell["exact"] / cell["n"]
    return out


def _was_refined(p: Prediction) -> bool:
    """Whether the selected program came out of refinement (the parser marks it)."""
    return bool(getattr(p, "refined", False)) or bool(
        p.selected_rank is not None and any(c.rank == p.selected_rank and c.template_id == -2
                                            for c in p.candidates))


def compositional_report(out_dir: Path | str | None = None, *, seed: int = 0, system: str = "best",
                         baseline: str | None = BASELINE, executor=None, backend: str = "oxigraph",
                         data_dir: Path | str | None = None, train_records: Sequence[dict] | None = None,
                         records: dict[str, list[dict]] | None = None, cache: bool = True,
                         timing_questions: int | None = 300, ablate_training: bool = True,
                         progress=None) -> dict[str, Any]:
    """Evaluate ``system`` (default: the strongest registered, open-ended) and ``baseline`` on
    the compositional split's test part (unseen wordings), per kind; return plain data with
    the tables under ``"_tables"`` and write ``compositional.md/.json`` (deterministic) and
    ``compositional-runtime.md/.json`` under ``out_dir``.

    :param train_records: the standard train split's records (else loaded / built); the
        systems are trained on them as ``synkqa train`` does.
    :param records: already loaded ``{"test": [...], "validation": [...]}`` compositional records.
    :param executor: an executor to reuse (else ``backend`` is opened).
    :param timing_questions: test questions timed per system (``0``: none; ``None``: all).
    :param ablate_training: also measure refinement behind a ranker trained on the template
        questions only (Table C3; one more training, ~10 s).
    """
    from evaluation.runner import Progress, load_splits, make_executor, train_system
    from parsers import registry

    progress = progress or Progress()
    if train_records is None:
        train_records = load_splits(("train",), data_dir=data_dir, progress=progress)["train"]
    if records is None:
        records = {part: load_compositional(part, data_dir=data_dir) for part in ("test", "validation")}
    executor = executor or make_executor(backend)
    name = registry.get_spec(system, with_choices=False).name
    names = [name] + ([baseline] if baseline and baseline != name else [])
    models = {}
    with progress.task(f"train {', '.join(names)}", len(names)) as task:
        for n in names:
            models[n] = train_system(n, train_records, seed=seed, cache=cache, with_choices=False).model
            task.advance()
    runner = ProgramRunner(executor, memo=True)
    cells: dict[str, dict[str, Any]] = {}
    for n in names:
        cells[n] = {}
        for part in ("test", "validation"):
            preds = _answer(models[n], records[part], runner, progress, f"{n} compositional {part}")
            cells[n][part] = {"overall": metrics.score(records[part], preds),
                              "kinds": _per_kind(records[part], preds),
                              "refined": sum(_was_refined(p) for p in preds),
                              "refined_correct": sum(_was_refined(p) and metrics.answer_correct(r, p)
                                                     for r, p in zip(records[part], preds)),
                              "fallback": sum(p.fallback for p in preds),
                              "errors": dict(Counter(metrics.error_type(r, p) for r, p in zip(records[part], preds)))}
    ablations = _ablations(models[name], records["test"], runner, progress, "full")
    if ablate_training and hasattr(models[name], "compositional_training"):
        # Refinement has most to do behind a weaker ranker: the same system whose ranker
        # learned from the template questions only.
        import copy
        weak = copy.copy(models[name])
        weak.compositional_training = False
        with progress.task("train schema-ev (template questions only)", 1):
            from evaluation.runner import training_data
            weak.fit(*training_data(train_records))
        ablations += _ablations(weak, records["test"], runner, progress, "templates only")
    results: dict[str, Any] = {
        "ablations": ablations,
        "config": {"seed": seed, "system": name, "baseline": baseline if baseline != name else None,
                   "backend": getattr(executor, "name", backend),
                   "test_questions": len(records["test"]), "validation_questions": len(records["validation"]),
                   "kinds": len({r["kind"] for r in records["test"]})},
        "cells": cells,
    }
    if timing_questions != 0:
        timed = records["test"] if timing_questions is None else _spread(records["test"], timing_questions)
        results["runtime"] = _timing({n: models[n] for n in names}, timed, executor, progress)
    tables = [_accuracy_table(results)]
    if ablations:
        tables.append(_ablation_table(results))
    if "runtime" in results:
        tables.append(_runtime_table(results))
    results["_tables"] = tables
    if out_dir is not None:
        results["files"] = [str(p) for p in _write(results, tables, Path(out_dir))]
    return results


def _ablations(model, records: Sequence[dict], runner: ProgramRunner, progress, ranker: str
               ) -> list[dict[str, Any]]:
    """The system with refinement off, and with one candidate tried before refinement
    (where refinement has the most to do), on the test part. Empty for systems without a
    ``refine`` switch."""
    import copy
    if not hasattr(model, "refine") or not hasattr(model, "with_options"):
        return []
    out = []
    for k in (None, 1):
        for refine in (True, False):
            variant = model.with_options(k=k) if k is not None else copy.copy(model)
            variant.refine = refine
            label = f"{ranker} ranker, k={variant.k}, refinement {'on' if refine else 'off'}"
            preds = _answer(variant, records, runner, progress, f"ablation {label}")
            refined = [(r, p) for r, p in zip(records, preds) if _was_refined(p)]
            out.append({"ranker": ranker, "k": variant.k, "refine": refine,
                        "accuracy": metrics.score(records, preds)["accuracy"],
                        "refined": len(refined),
                        "refined_correct": sum(metrics.answer_correct(r, p) for r, p in refined),
                        "fallback": sum(p.fallback for p in preds)})
    return out


def _ablation_table(results: dict[str, Any]) -> Table:
    rows = [[a["ranker"], f"k = {a['k']}", "on" if a["refine"] else "off", a["accuracy"], a["refined"],
             a["refined_correct"], a["fallback"]] for a in results["ablations"]]
    return Table("compositional-refinement", "C3", "Refinement from execution feedback (compositional test part, "
                 "open-ended, percent)", ["Ranker trained on", "Candidates tried first", "Refinement", "Accuracy",
                                          "Answered by refinement", "of them correct", "No candidate passed"], rows,
                 ["Refinement runs only when every candidate tried first fails validation: it edits the best "
                  "failures at the step their trace blames (relation or direction, attribute, operator; a "
                  "comparator the words did not give) and validates the edits. 'No candidate passed': the "
                  "top candidate's own answer was returned.",
                  "'full': the system as registered (template questions and the compositional train part); "
                  "'templates only': the same system with a ranker trained on the template questions alone."])


def _spread(records: Sequence[dict], n: int) -> list[dict]:
    """``n`` records spread evenly over the list (every kind is timed)."""
    if n >= len(records):
        return list(records)
    step = len(records) / n
    return [records[int(i * step)] for i in range(n)]


def _timing(models: dict[str, Any], records: Sequence[dict], executor, progress, repeats: int = 2) -> dict[str, Any]:
    """Wall time per question without memo: one untimed pass per system (warm caches alike),
    then the fastest of ``repeats`` timed passes."""
    queries = queries_from([{k: v for k, v in r.items() if k != "choices"} for r in records])
    out: dict[str, Any] = {"questions": len(queries), "backend": getattr(executor, "name", "?"), "repeats": repeats}
    with progress.task("compositional timing warm-up", len(models)) as task:
        for model in models.values():
            model.answer(queries, ProgramRunner(executor))
            task.advance()
    for name, model in models.items():
        best = float("inf")
        with progress.task(f"time {name} (compositional)", repeats):
            for _ in range(repeats):
                runner = ProgramRunner(executor, memo=False)
                start = time.perf_counter()
                predictions = model.answer(queries, runner)
                best = min(best, time.perf_counter() - start)
        n = max(len(queries), 1)
        out[name] = {"ms_per_question": 1000 * best / n,
                     "executions_per_question": metrics.mean_executions(predictions),
                     "executor_calls_per_question": runner.calls / n}
    return out


def _accuracy_table(results: dict[str, Any]) -> Table:
    cfg, cells = results["config"], results["cells"]
    system, baseline = cfg["system"], cfg["baseline"]
    test = cells[system]["test"]
    base = cells[baseline]["test"] if baseline else None
    columns = ["Kind", "Reasoning", "Questions"] + ([f"{baseline} acc"] if baseline else []) + \
              [f"{system} acc", f"{system} EM", "Answered by refinement"]
    from synkqa.benchmark.compositional import KINDS
    reasoning = {k.name: k.reasoning for k in KINDS}
    rows: list[list[Any]] = []
    for kind in sorted(test["kinds"], key=lambda k: [x.name for x in KINDS].index(k) if k in reasoning else 99):
        c = test["kinds"][kind]
        row = [kind, reasoning.get(kind, "?"), c["n"]]
        if base:
            row.append(base["kinds"].get(kind, {}).get("accuracy"))
        row += [c["accuracy"], c["program_em"], c["refined"]]
        rows.append(row)
    overall = ["All kinds (test wordings)", "", test["overall"]["n"]]
    if base:
        overall.append(base["overall"]["accuracy"])
    overall += [test["overall"]["accuracy"], test["overall"]["program_em"], test["refined"]]
    rows.append(overall)
    val = cells[system]["validation"]
    vrow = ["All kinds (validation wording)", "", val["overall"]["n"]]
    if base:
        vrow.append(cells[baseline]["validation"]["overall"]["accuracy"])
    vrow += [val["overall"]["accuracy"], val["overall"]["program_em"], val["refined"]]
    rows.append(vrow)
    notes = [f"Open-ended (no options). Test: the compositional split's test part, {cfg['test_questions']} "
             f"questions in wordings 3 and 4 of each of {cfg['kinds']} kinds; no system trains on them or "
             "chooses anything on them. Validation: wording 2.",
             "Accuracy and program exact match in percent; 'Answered by refinement': questions whose "
             "selected program came from editing failed candidates after execution feedback "
             f"({test['refined_correct']} of {test['refined']} of them answered correctly).",
             f"Executor {cfg['backend']}; seed {cfg['seed']}."]
    if baseline:
        notes.append(f"{baseline}: schema-ev before this study (template-era enumeration, regex entity "
                     "linking), trained alike.")
    return Table("compositional", "C1", "Compositional questions beyond the templates, per kind, "
                 "open-ended, unseen wordings (percent)", columns, rows, notes)


def _runtime_table(results: dict[str, Any]) -> Table:
    rt = results["runtime"]
    rows = [[name, t["ms_per_question"], t["executions_per_question"], t["executor_calls_per_question"]]
            for name, t in rt.items() if isinstance(t, dict)]
    return Table("compositional-runtime", "C2", "Time per compositional question on CPU (varies between runs)",
                 ["System", "ms/question", "Programs executed/question", "Executor calls/question"], rows,
                 [f"{rt['questions']} test questions spread over every kind, executor {rt['backend']}, no memo, "
                  "question text to answer (linking, enumeration, ranking, execution, validation, trace "
                  f"queries, refinement); one untimed pass, then the fastest of {rt['repeats']}."], digits=3)


def _write(results: dict[str, Any], tables: list[Table], out_dir: Path) -> list[Path]:
    from evaluation.runner import jsonable
    from evaluation.tables import write_tables
    return write_tables(tables, out_dir, sort_keys=True, extra={
        "compositional": {"cells": jsonable(results["cells"]), "config": jsonable(results["config"])},
        "compositional-refinement": {"raw": jsonable(results.get("ablations"))},
        "compositional-runtime": {"raw": jsonable(results.get("runtime"))}})
