"""The parent of a run: :func:`run` goes scale by scale; :func:`_run_scale` splits the
engines into phases; :func:`_run_phase` loads each engine in its worker, runs the work
item by item interleaved across the engines (and the scale-1 twins), then the batch and
EV-TC; :func:`_job_for` says what each worker needs (a server, the KQA Pro export) or
why the engine cannot run. The answers are then compared with native's and summarised.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluation.bench.agreement import _agree, compare_answers
from evaluation.bench.config import ENGINES, HTTP_ENGINES, HUGE_SCALE, LARGE_SCALE, OURS, BenchConfig, native_fits
from evaluation.bench.measure import merge_parts, process_peak_mb
from evaluation.bench.report import machine, summarise, write_outputs
from evaluation.bench.servers import _Servers
from evaluation.bench.worker import WorkerFailed, _Worker
from kopl2sparql.errors import SynKQAError


def _kqapro_json(turtle: Path, scale: int, kb_seed: int, backward: bool, log) -> Path:
    """The KB exported for the KoPL engines, cached beside the Turtle (written by a child
    process, so this process never holds the KB dict)."""
    from synkqa.benchmark import paths

    target = paths.home() / f"kqapro-seed{kb_seed}-scale{scale}{'' if backward else '-forward'}.json"
    if not target.exists():
        log(f"  exporting {target.name} ...")
        code = ("import sys; from synkqa.benchmark.kqapro_kb import write_kqapro; "
                "write_kqapro(sys.argv[1], sys.argv[2], backward=sys.argv[3] == '1')")
        proc = subprocess.run([sys.executable, "-c", code, str(turtle), str(target), "1" if backward else "0"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SynKQAError(f"KQA Pro export failed: {' '.join(proc.stderr.split()[-20:])}")
    return target


def _peer_missing(engine: str) -> str | None:
    import importlib.util

    module = {"kopl": "kopl", "kopl-engine": "kopl_engine"}[engine]
    if importlib.util.find_spec(module) is None:
        return f"python package {module} not installed (pip install '.[peers]')"
    return None


def run(config: BenchConfig, log: Callable[[str], None] = lambda m: None) -> dict:
    """Run the benchmark; the report (also written to ``config.out``) as a dict.

    :raises ConfigError: for a bad configuration.
    :raises WorkerFailed: if the native engine (the reference) fails.
    """
    from synkqa.benchmark.world import ensure_turtle

    config.check()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=out))
    sizes = config.sizes(config.scales[0])
    report: dict[str, Any] = {"config": {**asdict(config), "out": str(config.out), "sizes": sizes},
                              "machine": machine(), "scales": {}}
    started = time.perf_counter()
    previous = _raise_on_sigterm()
    try:
        first = None
        for scale in config.scales:
            log(f"scale {scale}: KB ...")
            t0 = time.perf_counter()
            turtle = ensure_turtle(config.kb_seed, scale, progress=False)
            twins: dict[str, dict] = {}
            scale_sizes = config.sizes(scale)
            if scale_sizes != sizes:
                log(f"scale {scale}: work sizes {scale_sizes} (the defaults shrink from scale {HUGE_SCALE})")
            results = _run_scale(config, scale, turtle, scale_sizes, run_dir, log, first, twins)
            report["scales"][str(scale)] = {"turtle_mb": round(turtle.stat().st_size / 2**20, 1),
                                           "seconds": round(time.perf_counter() - t0, 1),
                                           "sizes": scale_sizes, "engines": results}
            if twins:
                report["scales"][str(scale)]["twins"] = twins
            if first is None:
                first = {"scale": scale, "turtle": str(turtle),
                         "workload": str(run_dir / f"workload-scale{scale}.json"),
                         "reference": results.get("native") or {}}
        report["seconds"] = round(time.perf_counter() - started, 1)
        report["machine"]["load_average_at_end"] = machine()["load_average_at_start"]
        summarise(report)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)
    write_outputs(report, out)
    return report


def _raise_on_sigterm():
    """Turn SIGTERM into KeyboardInterrupt while the run lasts, so workers and servers are
    stopped on the way out; the previous handler (``None`` off the main thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def _run_scale(config: BenchConfig, scale: int, turtle: Path, sizes: dict, run_dir: Path, log,
               first: dict | None = None, twins: dict | None = None) -> dict:
    """Load every engine (one after the other), then run each work item on all of them in turn.

    Interleaving item by item (and rotating which engine goes first) gives every engine the
    same share of whatever else the machine is doing, so ratios from one run are fair.

    From :data:`LARGE_SCALE` on, the KoPL peers run afterwards, one at a time, once ours
    are done and gone: at scale 100 kopl-engine holds ~10 GB and kopl ~4 GB, and beside
    ours they squeeze the page cache out of the machine, which makes the on-disk store
    read from the disk. (The peers' targets are at scales 1 and 10, where all run together.)

    Above the run's first scale, each of our engines also gets a *twin* at the first scale
    (``first``: its scale, Turtle, work and native answers) that runs the template items in
    the same rotation: the scaling ratio (scale N against scale 1) is then measured at the
    same moment too. Twin results go to ``twins``.
    """
    base = {"scale": scale, "turtle": str(turtle), "workload": str(run_dir / f"workload-scale{scale}.json"),
            "run_dir": str(run_dir), "sizes": sizes, "seed": config.seed, "kb_seed": config.kb_seed,
            "workers": config.workers}
    results: dict[str, dict] = {}
    servers = _Servers()
    engines = [e for e in config.engines if e != "native"]
    if scale >= LARGE_SCALE:
        phases = [["native"] + [e for e in engines if ENGINES[e].family != "peer"]] + \
                 [[e] for e in engines if ENGINES[e].family == "peer"]
    else:
        phases = [["native"] + engines]
    if scale >= HUGE_SCALE:
        fits, why = native_fits(scale, _memory_budget_mb())
        log(f"scale {scale}: native {why}")
        if not fits:
            # Native is the reference: it draws the work and every answer is checked against
            # it, so without it nothing at this scale can run. Say so instead of being killed.
            results["native"] = {"engine": "native", "scale": scale, "status": "not run",
                                 "reason": f"does not fit in memory: {why}"}
            for engine in engines:
                results[engine] = {"engine": engine, "scale": scale, "status": "not run",
                                   "reason": "no reference work: native (which draws it) does not fit in memory"}
            return results
    try:
        for number, phase in enumerate(phases):
            with_twins = number == 0 and first is not None and twins is not None and first["scale"] != scale
            _run_phase(config, phase, base, results, servers, turtle, run_dir, log,
                       first if with_twins else None, twins)
    finally:
        servers.stop()
    if scale >= HUGE_SCALE and results["native"].get("status") == "failed":
        return results        # reported as failed, with what the other engines measured in loading
    if results["native"].get("status") != "ok":
        raise WorkerFailed(f"the native engine (the reference) failed at scale {scale}: "
                           f"{results['native'].get('reason')}")
    compare_answers(results["native"], results)
    if "native" not in config.engines:
        results.pop("native", None)
    return results


def _run_phase(config: BenchConfig, phase: list[str], base: dict, results: dict, servers: "_Servers",
               turtle: Path, run_dir: Path, log, first: dict | None, twins: dict | None) -> None:
    """Load the engines of one phase, run the work interleaved, then the batch and EV-TC."""
    scale = base["scale"]
    workers: dict[str, _Worker] = {}
    twin_workers: dict[str, _Worker] = {}

    def fail(engine: str, exc: Exception) -> None:
        results[engine].update(status="failed", reason=str(exc).splitlines()[0][:400])
        worker = workers.pop(engine, None)
        if worker is not None:
            worker.stop()

    try:
        if scale >= HUGE_SCALE and "native" in phase:
            # Loads of tens of minutes each: run them side by side, one per core, instead of one
            # after the other (the others read the work only when they first run an item). Native
            # failing to load (memory) ends the phase with what the others measured, not the run.
            pending = {}
            for engine in phase:
                results[engine] = {"engine": engine, "scale": scale, "status": "ok"}
                job = {**base, "engine": "native"} if engine == "native" else \
                    _job_for(config, engine, base, results[engine], servers, turtle, run_dir, log)
                if job is None:
                    continue
                log(f"scale {scale}: loading {engine} (loads run side by side from scale {HUGE_SCALE}) ...")
                workers[engine] = _Worker(engine, job, run_dir, config.worker_timeout)
                pending[engine] = workers[engine].send({"cmd": "load"})
            for engine, sent in pending.items():
                try:
                    results[engine].update(workers[engine].receive({"cmd": "load"}, sent))
                except WorkerFailed as exc:
                    fail(engine, exc)
            if "native" not in workers:
                for engine in list(workers):
                    try:
                        results[engine].update(workers[engine].call({"cmd": "finish"}))
                    except WorkerFailed:
                        pass
                    results[engine].update(status="not run", reason="no reference work: native failed to load")
                    workers.pop(engine).stop()
                return
            results["native"].update(workers["native"].call({"cmd": "workload"}))
            phase = []
        for engine in phase:
            if engine == "native":
                log(f"scale {scale}: loading native (the reference; it draws the work) ...")
                native = workers["native"] = _Worker("native", {**base, "engine": "native"}, run_dir,
                                                     config.worker_timeout)
                results["native"] = {"engine": "native", "scale": scale, "status": "ok",
                                     **native.call({"cmd": "load"})}
                results["native"].update(native.call({"cmd": "workload"}))
                continue
            results[engine] = {"engine": engine, "scale": scale, "status": "ok"}
            job = _job_for(config, engine, base, results[engine], servers, turtle, run_dir, log)
            if job is None:
                continue
            log(f"scale {scale}: loading {engine} ...")
            workers[engine] = _Worker(engine, job, run_dir, config.worker_timeout)
            try:
                results[engine].update(workers[engine].call({"cmd": "load"}))
            except WorkerFailed as exc:
                fail(engine, exc)
        if first is not None:
            twin_base = {**base, "scale": first["scale"], "turtle": first["turtle"], "workload": first["workload"]}
            for engine in [e for e in OURS if e in workers]:
                log(f"scale {scale}: loading the scale-{first['scale']} twin of {engine} ...")
                twin = _Worker(engine, {**twin_base, "engine": engine}, run_dir, config.worker_timeout, "-twin")
                try:
                    twin.call({"cmd": "load"})
                    twin_workers[engine] = twin
                    twins[engine] = {"scale": first["scale"], "runs": {}}
                except WorkerFailed as exc:
                    twin.stop()
                    twins[engine] = {"scale": first["scale"], "status": "failed", "reason": str(exc)[:300]}
        if not workers:
            return
        workload = json.loads(Path(base["workload"]).read_text())
        keys = ([f"templates/{t}" for t in workload["templates"]] + ["random"]
                + [f"scans/{s}" for s in workload["scans"]])
        log(f"scale {scale}: {len(keys)} work items on {', '.join(workers)}, interleaved ...")
        rounds = max(1, config.rounds)
        turn = 0
        for key in keys:
            slices: dict[tuple[str, bool], list[dict]] = {}
            for part in range(rounds):
                order = [(e, False) for e in workers]
                if key.startswith("templates/"):
                    order += [(e, True) for e in twin_workers]
                turn += 1
                order = order[turn % len(order):] + order[:turn % len(order)]
                for engine, is_twin in order:
                    worker = (twin_workers if is_twin else workers).get(engine)
                    if worker is None:
                        continue
                    try:
                        slices.setdefault((engine, is_twin), []).append(
                            worker.call({"cmd": "run", "key": key, "part": part, "parts": rounds}))
                    except WorkerFailed as exc:
                        slices.pop((engine, is_twin), None)
                        if is_twin:
                            twins[engine].update(status="failed", reason=str(exc)[:300])
                            twin_workers.pop(engine).stop()
                        else:
                            fail(engine, exc)
            for (engine, is_twin), parts in slices.items():
                run = merge_parts(parts)
                if is_twin:
                    reference = (first["reference"].get("runs") or {}).get(key, {}).get("answers", [])
                    run["agreement"] = _agree(engine, run, reference, "error")
                    run.pop("answers", None)
                    twins[engine]["runs"][key] = run
                else:
                    results[engine].setdefault("runs", {})[key] = run
        for twin in twin_workers.values():
            try:
                twin.call({"cmd": "finish"})
            except WorkerFailed:
                pass
            twin.stop()
        twin_workers.clear()
        log(f"scale {scale}: batch of {len(workload['batch'])} gold programs on {', '.join(workers)} ...")
        for engine in list(workers):
            try:
                results[engine]["batch"] = workers[engine].call({"cmd": "batch"})
            except WorkerFailed as exc:
                fail(engine, exc)
        evtc_engines = [e for e in workers if ENGINES[e].family != "peer"]
        if workload.get("evtc") and evtc_engines:
            log(f"scale {scale}: EV-TC on {len(workload['evtc']['questions'])} questions ...")
            for engine in evtc_engines:
                try:
                    results[engine]["evtc"] = workers[engine].call({"cmd": "evtc"})
                except WorkerFailed as exc:
                    fail(engine, exc)
        for engine in list(workers):
            try:
                results[engine].update(workers[engine].call({"cmd": "finish"}))
            except WorkerFailed as exc:
                fail(engine, exc)
        for engine in HTTP_ENGINES:
            result = results.get(engine) or {}
            if engine in workers and result.get("server_pid"):
                # The server does the work: its load time and its memory are the engine's.
                result.update(client_peak_mb=result.get("peak_mb"), peak_mb=process_peak_mb(result["server_pid"]),
                              load_s=result["server_load_s"], peak_after_load_mb=None)
            elif engine in workers and result.get("server"):
                result.update(client_peak_mb=result.get("peak_mb"), peak_mb=None, load_s=None)
    finally:
        for worker in [*workers.values(), *twin_workers.values()]:
            worker.stop()


def _memory_budget_mb() -> float | None:
    """What a worker may use: the memory available now, or less under an address-space limit
    (``prlimit --as``, ``ulimit -v``; workers inherit it). ``None`` if neither is known."""
    import resource

    budgets = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                budgets.append(int(line.split()[1]) / 1024)
    except OSError:
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        budgets.append(soft / 2**20 * 0.97)       # native's virtual size is ~1 % above its resident size
    return min(budgets) if budgets else None


def _job_for(config: BenchConfig, engine: str, base: dict, result: dict, servers: "_Servers", turtle: Path,
             run_dir: Path, log) -> dict | None:
    """The worker job of one engine, or ``None`` (with the reason on ``result``) if it cannot run."""
    scale = base["scale"]
    spec = ENGINES[engine]
    if spec.max_scale is not None and scale > spec.max_scale:
        result.update(status="not run", reason=f"scale > {spec.max_scale}: {spec.max_scale_reason}")
        return None
    job = {**base, "engine": engine, "caps": spec.caps_at(scale)}
    if engine in HTTP_ENGINES:
        url = config.virtuoso_url if engine == "virtuoso" else config.oxigraph_server_url
        if url is not None:
            from store.loaders import DEFAULT_GRAPH

            graph = DEFAULT_GRAPH if engine == "virtuoso" and "default-graph-uri" not in url else None
            job.update(url=url, graph=graph)
            result["server"] = "external URL: load time and memory not measured"
        else:
            facts, why = servers.start(engine, turtle, run_dir / f"{engine}-scale{scale}", log)
            if facts is None:
                result.update(status="not available", reason=why)
                return None
            job.update(url=facts["url"], graph=facts["graph"])
            result.update(server_pid=facts["pid"], server_load_s=facts["load_s"], server_start_s=facts["start_s"])
    elif engine in ("kopl", "kopl-engine"):
        why = _peer_missing(engine)
        if why:
            result.update(status="not available", reason=why)
            return None
        job["kqapro_json"] = str(_kqapro_json(turtle, scale, config.kb_seed, engine == "kopl", log))
    return job
