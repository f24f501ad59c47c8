"""``synkqa reproduce``: the paper's study and the generalization study, on every core.

The inputs every stage reads (the KB's store, the three splits, the executor) are built or
loaded once, here; then the stages run as jobs of :mod:`evaluation.parallel` in processes
forked from this one:

- ``train tc (seed S)``: the first TC seed, which the paper's study and the generalization
  study both use (trained once, read by both from the model cache);
- ``study``: :func:`evaluation.runner.run_study` and its report (Tables I–XI, Figures 2–7,
  SUMMARY.md);
- the generalization study's jobs (:func:`evaluation.generalization.generalization_jobs`);
- ``compositional``: :func:`evaluation.compositional.compositional_report`.

Tables and figures are the same with any number of workers (tests compare one against
two); only the timings differ, and their tables say how they were measured.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from evaluation.parallel import Job, run_jobs
from evaluation.runner import (SPLITS, Progress, StudyConfig, jsonable, load_splits, make_executor,
                               open_kb_store, run_study, train_system, write_report)

__all__ = ["reproduce"]


def reproduce(config: StudyConfig, out: Path | str, *, beyond: bool = True, beyond_best: bool = False,
              compositional: bool = True, timing_questions: int = 500, workers: int | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """Run the study (with ``beyond`` the generalization study, with ``compositional`` the
    compositional questions' study) and write the report under ``out``.

    :param workers: processes for the stages (``None``: one per CPU; 1: all in this one).
    :returns: ``{"systems", "runtime", "files", "stages", "generalization"}`` as plain data
        (``stages``: each job's wall and CPU seconds and worker; ``generalization`` is
        ``None`` without ``beyond``).
    """
    progress = progress or Progress()
    out = Path(out)
    started = time.perf_counter(), time.process_time()
    with progress.paused():
        open_kb_store(config.kb_seed, config.scale, show_progress=progress.enabled)
    splits = load_splits(SPLITS, seed=config.data_seed, data_dir=config.data_dir, progress=progress)
    with progress.task(f"executor ({config.backend})", 1):
        executor = make_executor(config.backend, seed=config.kb_seed, scale=config.scale)

    timings: dict[str, dict[str, float]] = {"inputs (KB, dataset, executor)": {
        "seconds": time.perf_counter() - started[0], "cpu_seconds": time.process_time() - started[1],
        "worker": 0}}
    jobs: list[Job] = []
    first_tc = ()
    if "tc" in config.systems or "ev-tc" in config.systems:
        seed = config.seeds[0]

        def train_first_tc(task_progress: Progress, done: dict) -> None:
            with task_progress.task(f"train tc (seed {seed})", 1):
                train_system("tc", splits["train"], seed=seed)

        jobs.append(Job(f"train tc (seed {seed})", train_first_tc, cost=6))
        first_tc = (jobs[-1].name,)

    def study(task_progress: Progress, done: dict) -> dict[str, Any]:
        results = run_study(config, task_progress, splits=splits)
        with task_progress.task("tables, figures, summary", 1):
            written = write_report(results, out)
        return {"systems": jsonable(results["systems"]), "runtime": jsonable(results.get("runtime")),
                "files": [str(p) for p in written]}

    jobs.append(Job("study", study, after=first_tc, cost=25))
    combine = None
    if beyond:
        from evaluation.generalization import generalization_jobs
        gen_jobs, combine = generalization_jobs(
            {"train": splits["train"], "test": splits["test"]}, executor, seed=config.seeds[0], k=config.k,
            timing_questions=timing_questions, best_rule=beyond_best)
        # The generalization study's full-split TC is the study's first seed: wait for it.
        jobs += [dataclasses.replace(j, after=j.after + first_tc) if j.name == "generalization: models" else j
                 for j in gen_jobs]

    if compositional:
        def compositional_study(task_progress: Progress, done: dict) -> dict[str, Any]:
            from evaluation.compositional import compositional_report
            comp = compositional_report(out, seed=config.seeds[0], backend=config.backend,
                                        data_dir=config.data_dir, executor=executor,
                                        train_records=splits["train"],
                                        timing_questions=300 if timing_questions else 0,
                                        progress=task_progress)
            return {k: v for k, v in comp.items() if not k.startswith("_")}

        # schema-ev's model is the generalization study's (same train split and seed): wait
        # for it in the cache rather than fit it twice.
        after = ("generalization: models",) if beyond else ()
        jobs.append(Job("compositional", compositional_study, after=after, cost=30))

    results = run_jobs(jobs, progress, workers=workers, timings=timings)
    study_out = results["study"]
    files = list(study_out["files"])
    gen = None
    comp = results.get("compositional")
    if combine is not None:
        with progress.task("generalization tables", 1):
            gen = combine(results, out)
        files += gen["files"]
    if comp is not None:
        files += comp["files"]
    summary = out / "SUMMARY.md"
    if summary.exists() and (gen is not None or comp is not None):
        # point readers of the summary at the beyond-the-paper tables
        summary.write_text(summary.read_text(encoding="utf-8") + beyond_section(gen, comp), encoding="utf-8")
    return {"systems": study_out["systems"], "runtime": study_out["runtime"], "files": files,
            "stages": {name: {k: round(v, 2) for k, v in t.items()} for name, t in timings.items()},
            "generalization": None if gen is None else {k: v for k, v in gen.items() if not k.startswith("_")}}


def beyond_section(gen: dict | None, comp: dict | None = None) -> str:
    """SUMMARY.md's closing section: the headline cells of generalization.md and
    compositional.md."""
    lines = []
    if gen is not None:
        lines += ["", "## Beyond the paper (generalization.md)", ""]
        for key, row in gen["cells"].items():
            name, mode = key.split("/")
            mode = "open-ended" if mode == "open" else "multiple-choice"
            lines.append(f"- {name}, {mode}: test {row['test']['accuracy']:.2f} % / "
                         f"{row['test']['program_em']:.2f} % EM; held-out templates "
                         f"{row['heldout']['accuracy']:.2f} % / {row['heldout']['program_em']:.2f} % EM")
        lines += ["", "Open-ended means without options; held-out templates were removed from training. "
                  "See generalization.md for the setup and generalization-runtime.md for the cost.", ""]
    if comp is not None:
        cfg = comp["config"]
        lines += ["", "## Compositional questions (compositional.md)", ""]
        for name, parts in comp["cells"].items():
            test = parts["test"]["overall"]
            lines.append(f"- {name}, open-ended: {test['accuracy']:.2f} % answer accuracy, "
                         f"{test['program_em']:.2f} % program EM on {cfg['test_questions']} test "
                         f"questions ({cfg['kinds']} composition kinds, wordings unseen in training)")
        lines += ["", "See compositional.md for the kinds, compositional-refinement.md for refinement "
                  "with execution feedback.", ""]
    return "\n".join(lines)
