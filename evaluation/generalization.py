"""Splits that test generalisation, and the report that sets the paper's EV-TC, our EV-TC
and the schema-aware system side by side, with and without options.

Three test sets, none used to train or to choose anything:

- the **paraphrase-shifted test split** (the paper's: test wording never seen in training);
- a **held-out-template split**: train on the train split *without* two templates
  (default ``EmployerHQCountry`` and ``WorkAndBornIntersection``: a 3-hop chain and the
  only set intersection), test on the test-split questions of those two templates. A
  template classifier cannot predict a class it never saw; an enumerator can;
- optionally **other phrasings**: a JSONL file of questions worded by hand
  (``tests/fixtures/other_phrasings.jsonl``), gold answers computed from their gold programs.

Every system runs in multiple-choice mode (options given) and open-ended mode (options
removed); EV-TC's option-set validator cannot run open-ended, so open-ended EV-TC uses the
option-free validators (``open`` = non-empty + answer type + trace). Accuracy tables are
deterministic; timings go to their own table.

:func:`generalization_report` is what ``synkqa reproduce`` calls.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation import metrics
from ontology import paper
from evaluation.runner import Progress, jsonable, load_splits, make_executor, read_jsonl
from evaluation.tables import Table
from parsers.base import Prediction, ProgramRunner, queries_from
from parsers.rerank import ExecutionValidatedParser

__all__ = ["DEFAULT_HELD_OUT", "heldout_split", "open_ended_records", "other_phrasings_records",
           "generalization_report", "generalization_jobs", "SCHEMA_SYSTEM"]

DEFAULT_HELD_OUT = ("EmployerHQCountry", "WorkAndBornIntersection")
SCHEMA_SYSTEM = "schema-ev"
OPEN_VALIDATOR = "open"


# ---- splits ------------------------------------------------------------------------------------

def _template_ids(names: Sequence[str]) -> set[int]:
    from synkqa.benchmark.templates import by_name
    return {by_name(n).id for n in names}


def heldout_split(train: Sequence[dict], test: Sequence[dict],
                  held_out: Sequence[str] = DEFAULT_HELD_OUT) -> tuple[list[dict], list[dict]]:
    """``(train without the held-out templates, test questions of the held-out templates)``.

    :raises KeyError: for an unknown template name (with a suggestion).
    """
    ids = _template_ids(held_out)
    return ([r for r in train if int(r["template_id"]) not in ids],
            [r for r in test if int(r["template_id"]) in ids])


def open_ended_records(records: Sequence[dict]) -> list[dict]:
    """The records without their options (what an open-ended system is given)."""
    return [{k: v for k, v in r.items() if k != "choices"} for r in records]


def other_phrasings_records(path: Path | str, executor) -> list[dict]:
    """Hand-worded questions (``{"id", "question", "kopl"}`` per line) with their gold answer
    computed by executing the gold program, and the fields the metrics read."""
    from kopl2sparql.syntax import parse
    from parsers.open_ended import template_of
    out = []
    for r in read_jsonl(path):
        answer = executor.execute(parse(r["kopl"])).canonical()
        tid = template_of(r["kopl"])
        out.append({**r, "answer": answer, "template_id": -1 if tid is None else tid,
                    "hops": r.get("hops", 0), "reasoning": r.get("reasoning", "other")})
    return out


# ---- running one system on one set --------------------------------------------------------------

def _answer(system, records: Sequence[dict], runner: ProgramRunner, progress: Progress, label: str
            ) -> list[Prediction]:
    from evaluation.runner import answer_all
    queries = queries_from(records)
    with progress.task(label, len(queries)) as task:
        return answer_all(system, queries, runner, task=task)


def _cell(records: Sequence[dict], predictions: Sequence[Prediction]) -> dict[str, Any]:
    s = metrics.score(records, predictions)
    s["mean_executions"] = metrics.mean_executions(predictions)
    s["errors"] = {k: v for k, v in metrics.error_counts(records, predictions).items() if v}
    return s


def _trained(name: str, train: Sequence[dict], seed: int, cache: bool):
    from evaluation.runner import train_system
    return train_system(name, train, seed=seed, cache=cache).model


_BEST = f"{SCHEMA_SYSTEM} (best)"


def _system_names(best_rule: bool) -> list[str]:
    """The systems' names in the report's order (the order :func:`_systems` builds them)."""
    return ["tc", "ev-tc", SCHEMA_SYSTEM] + ([_BEST] if best_rule else [])


def _systems(tc_model, schema_model, k: int, schema_k: int, best_rule: bool = True
             ) -> dict[str, dict[str, Any]]:
    """The answering objects per (system, mode); ``best_rule`` adds schema-ev with the
    best-scoring selection rule (it executes every candidate, so it costs ~8x more)."""
    systems = {
        "tc": {"mc": tc_model, "open": tc_model},
        "ev-tc": {"mc": ExecutionValidatedParser.from_fitted(tc_model, k=k),
                  "open": ExecutionValidatedParser.from_fitted(tc_model, k=k, validator=OPEN_VALIDATOR)},
        SCHEMA_SYSTEM: {"mc": schema_model.with_options(k=schema_k),
                        "open": schema_model.with_options(k=schema_k)},
    }
    if best_rule:
        systems[_BEST] = {"mc": schema_model.with_options(k=schema_k, selection="best"),
                                             "open": schema_model.with_options(k=schema_k, selection="best")}
    return systems


def _timing(systems: dict[str, dict[str, Any]], records: Sequence[dict], executor, progress: Progress,
            repeats: int = 2) -> dict[str, Any]:
    """Wall time per question, no memo. Every system first answers all the timed questions
    once untimed, so none pays for first-time costs the others do not (the store's page
    cache, the executor's memory of which entities exist, compiled-query caches); then each
    is timed on ``repeats`` further passes, keeping the fastest."""
    out: dict[str, Any] = {"questions": len(records), "backend": getattr(executor, "name", "?"),
                           "repeats": repeats}
    batches = {"mc": queries_from(records), "open": queries_from(open_ended_records(records))}
    with progress.task("timing warm-up", 1):
        for mode, queries in batches.items():
            for by_mode in systems.values():
                by_mode[mode].answer(queries, ProgramRunner(executor))
    for mode, queries in batches.items():
        for name, by_mode in systems.items():
            system = by_mode[mode]
            seconds = float("inf")
            with progress.task(f"time {name} ({mode})", repeats):
                for _ in range(repeats):           # the best of a few passes: less noise from
                    runner = ProgramRunner(executor, memo=False)     # other work on the machine
                    start = time.perf_counter()
                    predictions = system.answer(queries, runner)
                    seconds = min(seconds, time.perf_counter() - start)
            n = max(len(queries), 1)
            out[f"{name}/{mode}"] = {"ms_per_question": 1000 * seconds / n,
                                     "executions_per_question": metrics.mean_executions(predictions),
                                     "executor_calls_per_question": runner.calls / n}
    return out


# ---- the report ---------------------------------------------------------------------------------

_TITLES = {"tc": "TC (ours)", "ev-tc": "EV-TC (ours)", SCHEMA_SYSTEM: "schema-ev (ours, first passing)",
           f"{SCHEMA_SYSTEM} (best)": "schema-ev (ours, best-scoring passing)"}
_MODES = {"mc": "multiple-choice", "open": "open-ended"}


def generalization_report(out_dir: Path | str | None = None, *, seed: int = 0, backend: str = "oxigraph",
                          k: int = 5, schema_k: int = 10, held_out: Sequence[str] = DEFAULT_HELD_OUT,
                          data_dir: Path | str | None = None, splits: dict[str, list[dict]] | None = None,
                          executor=None, other_phrasings: Path | str | None = None,
                          timing_questions: int | None = 2000, cache: bool = True,
                          best_rule: bool = True, progress: Progress | None = None,
                          workers: int | None = 1) -> dict[str, Any]:
    """Evaluate TC, EV-TC and schema-ev on the paraphrase-shifted test split, the held-out
    templates and (if given) other phrasings, with and without options; return plain data
    with two :class:`~evaluation.tables.Table` objects under ``"_tables"``, and write
    ``generalization.md/.json`` and ``generalization-runtime.md/.json`` under ``out_dir``.

    :param splits: already loaded ``{"train", "test"}`` records (else loaded/built).
    :param executor: an executor to reuse (else ``backend`` is opened).
    :param timing_questions: test questions timed per system and mode (``None``: all,
        ``0``: no timing).
    :param cache: reuse trained models from the model cache.
    :param best_rule: also evaluate schema-ev with the best-scoring selection rule.
    :param workers: processes for the independent parts (:mod:`evaluation.parallel`;
        ``None``: one per CPU). The numbers do not depend on it, the timings may.
    """
    from evaluation.parallel import run_jobs
    progress = progress or Progress()
    if splits is None or "train" not in splits or "test" not in splits:
        splits = load_splits(("train", "test"), data_dir=data_dir, progress=progress)
    executor = executor or make_executor(backend)
    jobs, combine = generalization_jobs(splits, executor, seed=seed, k=k, schema_k=schema_k,
                                        held_out=held_out, other_phrasings=other_phrasings,
                                        timing_questions=timing_questions, cache=cache,
                                        best_rule=best_rule)
    return combine(run_jobs(jobs, progress, workers=workers), out_dir)


def generalization_jobs(splits: dict[str, list[dict]], executor, *, seed: int = 0, k: int = 5,
                        schema_k: int = 10, held_out: Sequence[str] = DEFAULT_HELD_OUT,
                        other_phrasings: Path | str | None = None, timing_questions: int | None = 2000,
                        cache: bool = True, best_rule: bool = True):
    """The report as independent jobs (:class:`evaluation.parallel.Job`) and the function that
    combines their results: ``combine(results, out_dir)`` returns what
    :func:`generalization_report` returns (and writes its files when ``out_dir`` is given).

    The held-out models and cells are one job; the full-split models are another, which the
    test split's two halves (every system in both modes) and the timing wait for. Each job
    answers with its own execution memo, and the predictions of the halves are scored
    together, so the numbers are the same however the jobs are spread.
    """
    from evaluation.parallel import Job
    train, test = splits["train"], splits["test"]
    ho_train, ho_test = heldout_split(train, test, held_out)
    other = other_phrasings_records(other_phrasings, executor) if other_phrasings is not None else None
    timed = [] if timing_questions == 0 else (test if timing_questions is None else test[:timing_questions])

    def full_models(progress: Progress, done: dict) -> tuple:
        with progress.task("train tc, schema-ev (full train split)", 1):
            # schema-ev first: by the time it is fitted, a TC seed trained by another job
            # in parallel is in the model cache.
            schema = _trained(SCHEMA_SYSTEM, train, seed, cache)
            return _trained("tc", train, seed, cache), schema

    def heldout_cells(progress: Progress, done: dict) -> dict:
        with progress.task(f"train tc, schema-ev ({len(held_out)} held out)", 1):
            schema = _trained(SCHEMA_SYSTEM, ho_train, seed, cache)
            held = _systems(_trained("tc", ho_train, seed, cache), schema, k, schema_k, best_rule)
        runner = ProgramRunner(executor, memo=True)
        cells = {}
        for name in held:
            for mode in ("mc", "open"):
                recs = ho_test if mode == "mc" else open_ended_records(ho_test)
                preds = _answer(held[name][mode], recs, runner, progress, f"{name} {mode} heldout")
                cells[f"{name}/{mode}"] = _cell(ho_test, preds)
        return cells

    def test_part(part: slice, with_other: bool):
        # Both modes of one slice of the test split in one job: the ranking of a question
        # and the executions of its candidates are shared between them (memo).
        def run(progress: Progress, done: dict) -> dict:
            full = _systems(*done["generalization: models"], k, schema_k, best_rule)
            runner = ProgramRunner(executor, memo=True)
            records = test[part]
            label = f"{part.start + 1}-{min(part.stop, len(test))}"
            predictions: dict[str, list[Prediction]] = {}
            for name in full:
                for mode in ("mc", "open"):
                    recs = records if mode == "mc" else open_ended_records(records)
                    predictions[f"{name}/{mode}/test"] = _answer(full[name][mode], recs, runner, progress,
                                                                 f"{name} {mode} test {label}")
                    if with_other and other is not None and mode == "open":   # no options there
                        predictions[f"{name}/{mode}/other"] = _answer(full[name][mode], other, runner,
                                                                      progress, f"{name} {mode} other")
            return predictions
        return run

    def timing(progress: Progress, done: dict) -> dict:
        return _timing(_systems(*done["generalization: models"], k, schema_k, best_rule), timed,
                       executor, progress)

    half = (len(test) + 1) // 2
    parts = [slice(0, half), slice(half, len(test))]
    test_jobs = [f"generalization: test {i}/{len(parts)}" for i in range(1, len(parts) + 1)]
    jobs = [Job("generalization: models", full_models, cost=8),
            Job("generalization: held-out", heldout_cells, cost=14)]
    jobs += [Job(name, test_part(part, with_other=i == 0), after=("generalization: models",),
                 cost=18 * len(test) / 10000)
             for i, (name, part) in enumerate(zip(test_jobs, parts))]
    if timed:
        jobs.append(Job("generalization: timing", timing, after=("generalization: models",), cost=6))
    names = _system_names(best_rule)

    def combine(results: dict[str, Any], out_dir: Path | str | None = None) -> dict[str, Any]:
        held_cells = results["generalization: held-out"]
        cells: dict[str, dict[str, Any]] = {}
        for name in names:
            for mode in ("mc", "open"):
                preds = [p for job in test_jobs for p in results[job][f"{name}/{mode}/test"]]
                row = {"test": _cell(test, preds), "heldout": held_cells[f"{name}/{mode}"]}
                if f"{name}/{mode}/other" in results[test_jobs[0]]:
                    row["other"] = _cell(other, results[test_jobs[0]][f"{name}/{mode}/other"])
                cells[f"{name}/{mode}"] = row
        out: dict[str, Any] = {
            "config": {"seed": seed, "k": k, "schema_k": schema_k, "held_out": list(held_out),
                       "backend": getattr(executor, "name", "?"), "test_questions": len(test),
                       "heldout_train_questions": len(ho_train), "heldout_test_questions": len(ho_test),
                       "other_phrasings": len(other or ()),
                       "open_ended_ev_tc_validator": OPEN_VALIDATOR},
            "cells": cells,
        }
        if "generalization: timing" in results:
            out["runtime"] = results["generalization: timing"]
        tables = [_accuracy_table(out)]
        if "runtime" in out:
            tables.append(_runtime_table(out))
        out["_tables"] = tables
        if out_dir is not None:
            out["files"] = [str(p) for p in _write(out, tables, Path(out_dir))]
        return out

    return jobs, combine


def _accuracy_table(results: dict[str, Any]) -> Table:
    cells = results["cells"]
    p_acc, p_em = paper.TABLE_V["ev-tc"]
    has_other = bool(results["config"]["other_phrasings"])
    columns = ["System", "Options", "Test acc", "Test EM", "Held-out acc", "Held-out EM"]
    if has_other:
        columns += ["Other phrasings acc", "Other phrasings EM"]
    rows: list[list[Any]] = [["EV-TC (paper)", "multiple-choice", p_acc, p_em, None, None]
                             + ([None, None] if has_other else [])]
    for key, row in cells.items():
        name, mode = key.split("/")
        line = [_TITLES.get(name, name), _MODES[mode],
                row["test"]["accuracy"], row["test"]["program_em"],
                row["heldout"]["accuracy"], row["heldout"]["program_em"]]
        if has_other:
            other = row.get("other")
            line += [other["accuracy"], other["program_em"]] if other else [None, None]
        rows.append(line)
    cfg = results["config"]
    notes = [f"Test: the paraphrase-shifted test split ({cfg['test_questions']} questions). Held-out: "
             f"models retrained without {', '.join(cfg['held_out'])} ({cfg['heldout_train_questions']} "
             f"train questions) and tested on those templates' {cfg['heldout_test_questions']} test questions.",
             "Open-ended: options removed. EV-TC's option-set validator cannot run without options, so "
             f"open-ended EV-TC validates with '{cfg['open_ended_ev_tc_validator']}' (non-empty + answer "
             "type from the question + EVER-style trace). TC validates nothing, so its two modes agree.",
             f"EV-TC k={cfg['k']}; schema-ev executes at most {cfg['schema_k']} of its enumerated candidates.",
             "The paper reports EV-TC with options on its own test split only."]
    if has_other:
        notes.append(f"Other phrasings: {cfg['other_phrasings']} questions worded by hand, open-ended "
                     "(no options), gold answers from their gold programs; used for no training or choice.")
    return Table("generalization", "G1", "Generalisation: paraphrase shift, held-out templates, "
                 "multiple-choice and open-ended (percent)", columns, rows, notes)


def _runtime_table(results: dict[str, Any]) -> Table:
    rt = results["runtime"]
    p = paper.TABLE_X
    rows: list[list[Any]] = [["TC (paper)", "multiple-choice", p["tc_ms_per_question"], None],
                             ["EV-TC (paper)", "multiple-choice", p["ev_tc_ms_per_question"], p["mean_executions"]]]
    for key, t in rt.items():
        if "/" not in key:
            continue
        name, mode = key.split("/")
        rows.append([_TITLES.get(name, name), _MODES[mode], t["ms_per_question"], t["executions_per_question"]])
    return Table("generalization-runtime", "G2", "Time per question on CPU (varies between runs)",
                 ["System", "Options", "ms/question", "Programs executed/question"], rows,
                 [f"{rt['questions']} test questions, executor {rt['backend']}, no memo, from question "
                  "text to answer (ranking, enumeration, execution, validation incl. trace queries), "
                  f"every system answers them once untimed, then the fastest of {rt.get('repeats', 1)} timed passes "
                  "is kept; all systems back to back in one process."],
                 digits=3)


def _write(results: dict[str, Any], tables: list[Table], out_dir: Path) -> list[Path]:
    from evaluation.tables import write_tables
    return write_tables(tables, out_dir, sort_keys=True, extra={
        "generalization": {"cells": jsonable(results["cells"]), "config": jsonable(results["config"])},
        "generalization-runtime": {"raw": jsonable(results.get("runtime"))}})
