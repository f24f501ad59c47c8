"""The experiment runner: data, executors, training, answering, timing and the whole study.

:func:`run_study` is what ``synkqa reproduce`` runs. It is arranged so that nothing is done
twice: each TC seed is trained once (and cached), its full ranking of the test questions is
computed once and reused by TC, EV-TC and the k ablation, and every program is executed
once through a shared memo, except inside the timed runs, which pay for every execution
(as the paper's per-question timings do) and leave their results in the memo.

Everything in the returned results is deterministic except the ``runtime`` section.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kopl2sparql.errors import ConfigError, DatasetError, unknown_name_message
from parsers import registry
from parsers.base import Prediction, ProgramRunner, Query, queries_from
from parsers.rerank import ExecutionValidatedParser
from evaluation import metrics

SPLITS = ("train", "validation", "test")
ABLATION_KS = (1, 2, 3, 5)
PAPER_SYSTEMS = ("random", "majority", "prototype", "tc", "ev-tc", "oracle")
CHUNK = 1000


# ---- progress ------------------------------------------------------------------------

class Progress:
    """Progress bars on stderr (rich), or nothing when disabled (library default)."""

    def __init__(self, enabled: bool = False):
        self.enabled = enabled
        self._bar = None

    def __enter__(self) -> "Progress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       TextColumn, TimeElapsedColumn)
            self._bar = RichProgress(TextColumn("{task.description:<36}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=Console(stderr=True), transient=False)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator["_Task"]:
        """A bar for one stage; ``advance(n)`` moves it, it completes on exit."""
        handle = self.open_task(description, total)
        try:
            yield handle
        finally:
            handle.close()

    def open_task(self, description: str, total: int | None = None) -> "_Task":
        """A bar that stays open until its ``close()`` (for bars driven from elsewhere, such
        as a worker process's messages)."""
        if self._bar is None:
            return _Task(None, None)
        return _Task(self._bar, self._bar.add_task(description, total=total), total)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop drawing while a callee shows its own bars (rich allows one live display)."""
        if self._bar is None:
            yield
            return
        self._bar.stop()
        try:
            yield
        finally:
            self._bar.start()

    def log(self, message: str) -> None:
        if self._bar is not None:
            self._bar.console.print(message, highlight=False)


@dataclass
class _Task:
    bar: Any
    task_id: Any
    total: int | None = None

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(self.task_id, advance=n)

    def close(self) -> None:
        """Show the stage as complete (and stop its clock)."""
        if self.bar is not None:
            total = self.total if self.total is not None else 1
            self.bar.update(self.task_id, completed=total, total=total)
            self.bar.stop_task(self.task_id)


# ---- data and engines ----------------------------------------------------------------

STUDY_FIELDS = ("id", "split", "question", "choices", "answer", "kopl", "template_id", "template",
                "reasoning", "hops")
"""The record fields the study reads; the rest (KQA Pro program, SPARQL) is dropped on load,
which keeps the 120,000 records in a quarter of the memory."""

STUDY_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str, int), "question": (str,), "choices": (list,), "answer": (str,), "kopl": (str,),
    "template_id": (int,), "template": (str,), "reasoning": (str,), "hops": (int,)}
"""What every evaluated record must have, and of which JSON type (a wrong one is named, with
its line, rather than failing later inside a metric)."""

TRAIN_TYPES = {key: STUDY_TYPES[key] for key in ("question", "kopl", "template_id")}
"""What a training record must have (the parsers learn from the question and its program)."""


def check_record(record: dict, where: str, types: dict = STUDY_TYPES) -> None:
    """:raises DatasetError: naming the first missing or wrongly typed field of ``types``."""
    for key, kinds in types.items():
        value = record.get(key)
        if value is None:
            raise DatasetError(f"{where}: missing field '{key}'")
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            want = " or ".join({str: "a string", int: "an integer", list: "a list"}[k] for k in kinds)
            raise DatasetError(f"{where}: field '{key}' must be {want}, not {type(value).__name__}")
    if "choices" in types and not all(isinstance(c, str) for c in record["choices"]):
        raise DatasetError(f"{where}: field 'choices' must be a list of strings")


try:  # a declared dependency, several times faster on the 85 MB train file; stdlib if absent
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


def read_jsonl(path: Path | str, fields: Sequence[str] | None = None, check: dict | None = None) -> list[dict]:
    """Records of a JSON Lines file (only ``fields`` of each, when given; with ``check``, each
    record validated by :func:`check_record` against those field types).

    :raises DatasetError: for a missing file, a line that is not a JSON object, or (with
        ``check``) a record missing a study field or with one of the wrong type (with its line
        number).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"no such file: {path}")
    records = []
    with path.open("rb") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = _loads(line)
            except ValueError as exc:
                raise DatasetError(f"{path}:{lineno}: not valid JSON ({exc})") from None
            except RecursionError:
                raise DatasetError(f"{path}:{lineno}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise DatasetError(f"{path}:{lineno}: expected a JSON object")
            if check:
                check_record(record, f"{path}:{lineno}", check)
            if fields is not None:
                record = {key: record[key] for key in fields if key in record}
            records.append(record)
    return records


def load_splits(splits: Sequence[str] = SPLITS, seed: int = 42, data_dir: Path | str | None = None,
                progress: Progress | None = None) -> dict[str, list[dict]]:
    """The dataset splits as lists of records (the fields in :data:`STUDY_FIELDS`).

    Without ``data_dir`` the SynKQA-Pro dataset for ``seed`` is built on first use
    (``synkqa.benchmark.dataset``); with it, ``DIR/<split>.jsonl`` files are read as they are,
    except that a directory with a ``manifest.json`` (one written by ``dataset build``) must
    hold the files it records (:func:`synkqa.benchmark.dataset.check_split_file`).

    :raises DatasetError: for a missing or malformed file, or one that differs from its manifest.
    """
    from synkqa.benchmark import dataset
    for split in splits:
        if split not in SPLITS:
            raise ConfigError(unknown_name_message("split", split, SPLITS))
    progress = progress or Progress()
    if data_dir is None:
        with progress.paused():
            data_dir = dataset.ensure_dataset(seed=seed, show_progress=progress.enabled)
    data_dir = Path(data_dir)
    loaded = {}
    with progress.task(f"load {data_dir.name}", len(splits)) as task:
        for split in splits:
            dataset.check_split_file(data_dir / f"{split}.jsonl")
            loaded[split] = read_jsonl(data_dir / f"{split}.jsonl", STUDY_FIELDS,
                                       check=TRAIN_TYPES if split == "train" else STUDY_TYPES)
            task.advance()
    return loaded


def make_executor(backend: str = "oxigraph", seed: int = 42, scale: int = 1):
    """An executor: ``oxigraph`` (SPARQL on the embedded store), ``native``, or an endpoint URL."""
    from synkqa.benchmark.executors import get_executor
    return get_executor(backend, seed=seed, scale=scale)


def open_kb_store(seed: int = 42, scale: int = 1, show_progress: bool = False):
    """The embedded store holding the KB, built on first use (with its own progress bars)."""
    from synkqa.benchmark import world
    try:
        return world.open_store(seed, scale, progress=show_progress)
    except TypeError:  # an older world.open_store without progress bars
        return world.open_store(seed, scale)


def example_trace(executor, person: str = "Person_00371") -> dict[str, Any]:
    """Fig. 2: the BirthCountry test question about ``person``, its program and the engine's
    step-by-step trace."""
    from kopl2sparql.syntax import parse
    from synkqa.benchmark.templates import templates
    template = templates()[2]
    program = template.program_text(Person=person)
    trace = executor.trace(parse(program))
    return {"question": template.question("test", Person=person), "program": program,
            "steps": [(step.step, step.value.canonical()) for step in trace],
            "answer": trace[-1].value.canonical(), "engine": getattr(executor, "name", "?")}


def fresh_executor(executor):
    """A new executor like ``executor`` with no per-process engine memo (remembered entities,
    type-checked program shapes), so timed systems start alike. Falls back to ``executor``
    itself for an executor without ``fresh()``."""
    from store.executor import clear_typecheck_cache
    clear_typecheck_cache()
    fresh = getattr(executor, "fresh", None)
    return fresh() if callable(fresh) else executor


def training_data(records: Sequence[dict]) -> tuple[list[str], list[int]]:
    """Questions and gold template ids of the training records."""
    return [r["question"] for r in records], [int(r["template_id"]) for r in records]


# ---- training and answering ----------------------------------------------------------

@dataclass
class Trained:
    """A fitted model of a registered system."""

    spec: registry.SystemSpec
    seed: int
    model: Any
    path: Path | None
    cached: bool
    seconds: float


def train_system(name: str, train_records: Sequence[dict], seed: int = 0, cache: bool = True,
                 with_choices: bool = True) -> Trained:
    """Fit (or load) the model of system ``name`` on the training records only."""
    spec = registry.get_spec(name, with_choices=with_choices)
    questions, template_ids = training_data(train_records)
    start = time.perf_counter()
    model, path, cached = registry.train(spec, seed, questions, template_ids, cache=cache)
    return Trained(spec, seed, model, path, cached, time.perf_counter() - start)


def answer_all(system: Any, queries: Sequence[Query], runner: ProgramRunner,
               ranking: tuple[np.ndarray, np.ndarray] | None = None, task=None,
               **kwargs: Any) -> list[Prediction]:
    """``system.answer`` in chunks (so a progress bar can move), with a shared ranking."""
    out: list[Prediction] = []
    for start in range(0, len(queries), CHUNK):
        part = queries[start:start + CHUNK]
        extra = dict(kwargs)
        if ranking is not None:
            extra["ranking"] = (ranking[0][start:start + CHUNK], ranking[1][start:start + CHUNK])
        out.extend(system.answer(part, runner, **extra))
        if task is not None:
            task.advance(len(part))
    return out


def rank_all(model: Any, queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray]:
    """The model's full ranking (every template) of the queries."""
    return model.rank([q.question for q in queries], k=len(model.classes_))


def rank_statistics(records: Sequence[dict], ranked_ids: np.ndarray) -> dict[str, Any]:
    """Gold-rank histogram, mean gold rank and top-k coverage of a full ranking."""
    ranks = metrics.gold_ranks(records, ranked_ids)
    depth = ranked_ids.shape[1]
    return {"histogram": metrics.rank_histogram(ranks, depth),
            "mean_gold_rank": metrics.mean_rank(ranks),
            "coverage": {str(k): v for k, v in metrics.topk_coverage(ranks, range(1, depth + 1)).items()}}


def evaluate_system(name: str, records: Sequence[dict], train_records: Sequence[dict], executor,
                    seed: int = 0, k: int | None = None, progress: Progress | None = None,
                    cache: bool = True) -> dict[str, Any]:
    """Train (or load) system ``name``, answer ``records``, and compute every metric."""
    progress = progress or Progress()
    spec = registry.get_spec(name)
    if spec.needs_choices and any(not r.get("choices") for r in records):
        raise DatasetError(f"system '{spec.name}' needs options, but some records have no 'choices'")
    with progress.task(f"train {spec.name} (seed {seed})", 1):
        trained = train_system(spec.name, train_records, seed=seed, cache=cache)
    system = registry.build(spec, trained.model, k=k)
    queries = queries_from(records)
    runner = ProgramRunner(executor, memo=True)
    ranking = None
    result: dict[str, Any] = {"system": spec.name, "title": spec.title, "seed": seed,
                              "split_size": len(records), "backend": runner.name}
    if hasattr(trained.model, "rank") and hasattr(trained.model, "classes_"):
        ranking = rank_all(trained.model, queries)
        result["ranks"] = rank_statistics(records, ranking[0])
    if isinstance(system, ExecutionValidatedParser):
        result["k"] = system.k
    start = time.perf_counter()
    with progress.task(f"answer with {spec.name}", len(queries)) as task:
        predictions = answer_all(system, queries, runner,
                                 ranking if (ranking is not None and hasattr(system, "rank")) else None,
                                 task=task)
    result["seconds"] = time.perf_counter() - start
    result.update(metrics.evaluate(records, predictions))
    result["predictions"] = predictions
    return result


# ---- timing --------------------------------------------------------------------------

def measure_runtime(model: Any, queries: Sequence[Query], executor, k: int = 5,
                    cache: dict | None = None, progress: Progress | None = None
                    ) -> tuple[dict[str, Any], list[Prediction], list[Prediction]]:
    """Per-question time of TC and EV-TC on the same questions, in the same run.

    As the paper measures it: wall time per question on the CPU, from the question text to
    the answer (TF-IDF + classifier ranking, slot filling, and every execution, with no
    memo). The systems run back to back, each on a fresh executor after the same short
    warm-up; the returned predictions are the systems' real output (they feed the tables),
    and their executions are left in ``cache`` for the untimed runs.
    """
    progress = progress or Progress()
    ev = ExecutionValidatedParser.from_fitted(model, k=k)
    timings: dict[str, Any] = {"questions": len(queries), "backend": getattr(executor, "name", "?"), "k": k}
    outputs = {}
    for label, system, depth in (("tc", model, 1), ("ev-tc", ev, k)):
        # Each system starts from the same engine state: a fresh executor (no remembered
        # entities) and an empty type-check memo, warmed up on the same 50 questions.
        executor = fresh_executor(executor)
        warm = list(queries[-50:])
        system.answer(warm, ProgramRunner(executor), ranking=model.rank([q.question for q in warm], k=depth))
        runner = ProgramRunner(executor, memo=False, cache=cache)
        predictions: list[Prediction] = []
        rank_s = total_s = 0.0
        with progress.task(f"time {label} on {timings['backend']} (no memo)", len(queries)) as task:
            for start in range(0, len(queries), CHUNK):
                part = queries[start:start + CHUNK]
                t0 = time.perf_counter()
                ranking = model.rank([q.question for q in part], k=depth)
                t1 = time.perf_counter()
                predictions.extend(system.answer(part, runner, ranking=ranking))
                t2 = time.perf_counter()
                rank_s += t1 - t0
                total_s += t2 - t0
                task.advance(len(part))
        n = max(len(queries), 1)
        timings[label] = {"ms_per_question": 1000 * total_s / n,
                          "rank_ms_per_question": 1000 * rank_s / n,
                          "exec_ms_per_question": 1000 * (total_s - rank_s) / n,
                          "executions": runner.calls,
                          "executions_per_question": runner.calls / n}
        outputs[label] = predictions
    timings["ratio"] = timings["ev-tc"]["ms_per_question"] / max(timings["tc"]["ms_per_question"], 1e-12)
    return timings, outputs["tc"], outputs["ev-tc"]


# ---- statistics of the KB and the dataset ----------------------------------------------

def kb_statistics(store) -> dict[str, int]:
    """Table I, counted with SPARQL on ``store`` (anything with ``query(sparql)``)."""
    from ontology import NS, Schema, schema_path
    sch = Schema.from_turtle(schema_path())
    prefix = f"PREFIX sk: <{NS}>\n"

    def count(pattern: str) -> int:
        result = store.query(prefix + f"SELECT (COUNT(*) AS ?n) WHERE {{ {pattern} }}")
        return int(result.rows[0][0])

    out: dict[str, int] = {}
    for cls in ("Person", "City", "Country", "Organization"):
        out[cls] = count(f"?e a sk:{cls}")
    out["entities"] = sum(out[c] for c in ("Person", "City", "Country", "Organization"))
    out["relation_types"] = len(sch.relations)
    out["relation_edges"] = sum(count(f"?s sk:{rel} ?o") for rel in sch.relations)
    out["attribute_types"] = len(sch.attributes)
    out["attribute_values"] = sum(count(f"?s sk:{attr} ?o") for attr in sch.attributes)
    for rel in sorted(sch.relations):
        out[f"edges:{rel}"] = count(f"?s sk:{rel} ?o")
    return out


def dataset_statistics(splits: dict[str, Sequence[dict]]) -> dict[str, Any]:
    """Table II per split (questions, words mean ± std, program steps, unique answers) and
    per-template counts."""
    out: dict[str, Any] = {}
    for split, records in splits.items():
        words = np.array([len(r["question"].split()) for r in records], dtype=float)
        steps = np.array([r["kopl"].count(";") + 1 for r in records], dtype=float)
        out[split] = {
            "questions": len(records),
            "words_mean": float(words.mean()) if len(words) else 0.0,
            "words_std": float(words.std()) if len(words) else 0.0,
            "steps_mean": float(steps.mean()) if len(steps) else 0.0,
            "unique_answers": len({r["answer"] for r in records}),
            "templates": {str(t): n for t, n in sorted(Counter(int(r["template_id"]) for r in records).items())},
        }
    return out


# ---- the study -----------------------------------------------------------------------

@dataclass
class StudyConfig:
    """What ``synkqa reproduce`` runs."""

    seeds: tuple[int, ...] = (0, 1, 2)
    backend: str = "oxigraph"
    k: int = 5
    ks: tuple[int, ...] = ABLATION_KS
    data_seed: int = 42
    kb_seed: int = 42
    scale: int = 1
    data_dir: Path | None = None
    timing: bool = True
    systems: tuple[str, ...] = PAPER_SYSTEMS
    extra: dict[str, Any] = field(default_factory=dict)


def _summary(records, predictions) -> dict[str, Any]:
    out = metrics.score(records, predictions)
    out["mean_executions"] = metrics.mean_executions(predictions)
    out["mean_examined"] = metrics.mean_examined(predictions)
    return out


def _mean_std(values: Sequence[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "std": statistics.pstdev(values) if len(values) > 1 else 0.0}


def run_study(config: StudyConfig, progress: Progress | None = None,
              splits: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """Train, run and evaluate every system of the paper; return all numbers as plain data.

    :param splits: the three splits already loaded (else loaded, or built, here).

    The ``runtime`` entry (timings) is the only part that varies between runs.
    """
    progress = progress or Progress()
    if not config.seeds:
        raise ConfigError("need at least one seed")
    for name in config.systems:
        registry.get_spec(name)
    results: dict[str, Any] = {"config": {
        "seeds": list(config.seeds), "backend": config.backend, "k": config.k, "ks": list(config.ks),
        "data_seed": config.data_seed, "kb_seed": config.kb_seed, "scale": config.scale,
        "data": str(config.data_dir) if config.data_dir else f"SynKQA-Pro (seed {config.data_seed})"}}

    with progress.paused():
        store = open_kb_store(config.kb_seed, config.scale, show_progress=progress.enabled)
    if splits is None or any(split not in splits for split in SPLITS):
        splits = load_splits(SPLITS, seed=config.data_seed, data_dir=config.data_dir, progress=progress)
    with progress.task("Table I: SPARQL counts", 1):
        results["kb"] = kb_statistics(store)
    results["dataset"] = dataset_statistics(splits)
    train, test = splits["train"], splits["test"]
    queries = queries_from(test)
    with progress.task(f"executor ({config.backend})", 1):
        executor = make_executor(config.backend, seed=config.kb_seed, scale=config.scale)
    cache: dict = {}
    runner = ProgramRunner(executor, memo=True, cache=cache)
    systems: dict[str, Any] = {}
    predictions: dict[str, list[Prediction]] = {}
    wants_tc = "tc" in config.systems or "ev-tc" in config.systems

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="train-tc") as pool:
        # TC's seeds train on a second thread while the baselines execute their programs:
        # SGD runs without the GIL, so the two cores both work. One worker trains the seeds
        # in order (the TF-IDF fit is shared between them). Nothing is timed until it is done.
        def train_tc(seed: int) -> Trained:
            with progress.task(f"train tc (seed {seed})", 1):
                return train_system("tc", train, seed=seed)

        pending = {seed: pool.submit(train_tc, seed) for seed in config.seeds} if wants_tc else {}

        for name in ("random", "majority", "prototype", "oracle"):
            if name not in config.systems:
                continue
            spec = registry.get_spec(name)
            trained = train_system(name, train, seed=config.seeds[0])
            with progress.task(f"answer with {name}", len(queries)) as task:
                preds = answer_all(registry.build(spec, trained.model), queries, runner, task=task)
            predictions[name] = preds
            systems[name] = metrics.evaluate(test, preds)
            if name == "majority":
                from synkqa.benchmark.templates import templates
                results["majority_template"] = templates()[trained.model.template_].name
        models = {seed: future.result().model for seed, future in pending.items()}

    # TC and EV-TC: one full ranking per seed, shared by TC, EV-TC and the ablation. The
    # first seed's TC and EV-TC runs are also the timed runs.
    per_seed: dict[str, Any] = {}
    ranks_by_seed = {}
    if wants_tc:
        for i, seed in enumerate(config.seeds):
            model = models[seed]
            with progress.task(f"rank test questions (seed {seed})", 1):
                ranking = rank_all(model, queries)
            ranks_by_seed[seed] = ranking[0]
            ev = ExecutionValidatedParser.from_fitted(model, k=config.k)
            if i == 0 and config.timing:
                timing, tc_preds, ev_preds = measure_runtime(model, queries, executor, k=config.k,
                                                             cache=cache, progress=progress)
                results["runtime"] = timing
                if config.backend != "native":
                    # The paper's executor is an in-process interpreter like our native one:
                    # time that too, and check that it selects exactly what SPARQL selected.
                    native = make_executor("native", seed=config.kb_seed, scale=config.scale)
                    native_timing, tc_native, ev_native = measure_runtime(
                        model, queries, native, k=config.k, progress=progress)
                    results["runtime"]["native"] = native_timing
                    results["cross_engine"] = {
                        "engines": [getattr(executor, "name", config.backend), "native"],
                        "questions": len(queries),
                        "tc_disagreements": sum((a.program, a.answer) != (b.program, b.answer)
                                                for a, b in zip(tc_preds, tc_native)),
                        "ev_tc_disagreements": sum((a.program, a.answer, a.candidates) != (b.program, b.answer, b.candidates)
                                                   for a, b in zip(ev_preds, ev_native))}
            else:
                with progress.task(f"answer with tc (seed {seed})", len(queries)) as task:
                    tc_preds = answer_all(model, queries, runner, ranking, task=task)
                with progress.task(f"answer with ev-tc (seed {seed})", len(queries)) as task:
                    ev_preds = answer_all(ev, queries, runner, ranking, task=task)
            per_seed[str(seed)] = {"tc": _summary(test, tc_preds), "ev-tc": _summary(test, ev_preds)}
            if i == 0:
                predictions["tc"], predictions["ev-tc"] = tc_preds, ev_preds
                systems["tc"] = metrics.evaluate(test, tc_preds)
                systems["ev-tc"] = metrics.evaluate(test, ev_preds)
                results["ranks"] = rank_statistics(test, ranking[0])
                ablation = {}
                with progress.task("top-k ablation", len(config.ks)) as task:
                    for k in config.ks:
                        preds = ev_preds if k == config.k else answer_all(
                            ExecutionValidatedParser.from_fitted(model, k=k), queries, runner, ranking)
                        ablation[str(k)] = _summary(test, preds)
                        ablation[str(k)]["errors"] = metrics.error_counts(test, preds)
                        task.advance()
                results["ablation"] = ablation
        results["seeds"] = per_seed
        results["seed_summary"] = {
            system: {metric: _mean_std([per_seed[s][system][metric] for s in per_seed])
                     for metric in ("accuracy", "program_em", "mean_executions")}
            for system in ("tc", "ev-tc")}
        first = ranks_by_seed[config.seeds[0]]
        results["seeds_identical_rankings"] = all(np.array_equal(first[:, :config.k], r[:, :config.k])
                                                  for r in ranks_by_seed.values())

    results["example"] = example_trace(executor)
    results["systems"] = {name: systems[name] for name in config.systems if name in systems}
    results["executions"] = {"distinct_programs": len(cache), "executor_calls_memo": runner.calls}
    results["_predictions"] = predictions  # not JSON: for figures and callers; dropped when written
    results["_executor"] = executor
    return results


# ---- writing the report ----------------------------------------------------------------

def jsonable(value: Any) -> Any:
    """Plain JSON data: drops ``_private`` keys, turns numpy scalars and tuples into Python."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if hasattr(value, "item"):
        return jsonable(value.item())
    return value


def write_report(results: dict[str, Any], out_dir: Path | str) -> list[Path]:
    """Write tables (``tables/``), figures (``figures/``), ``results.json``, ``runtime.*`` and
    ``SUMMARY.md`` under ``out_dir``. Everything but ``runtime.*`` is byte-identical on a rerun."""
    from evaluation import figures, tables
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    built = tables.build_tables(results)
    written = tables.write_tables(built, out_dir / "tables")
    runtime = tables.runtime_table(results)
    if runtime is not None:
        (out_dir / "runtime.md").write_text(runtime.markdown(), encoding="utf-8")
        (out_dir / "runtime.json").write_text(
            json.dumps({**runtime.to_json(), "raw": jsonable(results["runtime"])}, indent=2) + "\n",
            encoding="utf-8")
        written += [out_dir / "runtime.md", out_dir / "runtime.json"]
    written += figures.write_figures(results, out_dir / "figures", example=results.get("example"))
    deterministic = {k: v for k, v in results.items() if k != "runtime"}
    (out_dir / "results.json").write_text(json.dumps(jsonable(deterministic), indent=1, sort_keys=True) + "\n",
                                          encoding="utf-8")
    written.append(out_dir / "results.json")
    summary = out_dir / "SUMMARY.md"
    summary.write_text(tables.summary_markdown(results, built, [p.relative_to(out_dir) for p in written]),
                       encoding="utf-8")
    written.append(summary)
    return written
