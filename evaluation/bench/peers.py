"""The KoPL peers inside a worker process: the official ``kopl`` engine (:class:`_Kopl`)
and VisKoP's C++ ``kopl-engine`` (:class:`_KoplEngine`, which ends its process on bad
input, so it only ever runs in a worker), both through the plans of :mod:`synkqa.benchmark.peers`,
timing only the calls that produce the answer; and :func:`kopl_engine_incomparable`, why
a kopl-engine output cannot be compared with ours.
"""

from __future__ import annotations

import gc
import json
import os
import time

from evaluation.bench.engines import _capped, _Engine
from evaluation.bench.measure import peak_rss_mb
from kopl2sparql.errors import SynKQAError


# ---- the KoPL peers inside a worker ------------------------------------------------------------

_TIMED_ROLES = ("main", "left", "right")
"""Plan calls that produce the answer; the others only check the peer's answer."""


def _plans(texts: list[str]):
    from kopl2sparql.kqapro import NoKQAProCounterpart
    from kopl2sparql.syntax import parse
    from synkqa.benchmark.peers import plan_for

    plans = []
    for text in texts:
        try:
            plans.append(plan_for(parse(text)))
        except (NoKQAProCounterpart, SynKQAError):
            plans.append(None)
    return plans


def _peer_record(answer) -> list | None:
    return None if answer is None else [answer[0], answer[1]]


def _peer_timed(run_plan, plans) -> dict:
    """Time the plans one by one; only the answer-producing calls count (``run_plan`` says)."""
    gc.collect()
    gc.disable()
    timings, answers = [], []
    try:
        for plan in plans:
            answer, spent = run_plan(plan)
            answers.append(_peer_record(answer))
            if answer is not None and spent:
                timings.append(spent)
    finally:
        gc.enable()
    return {"timings": timings, "peer_answers": answers, "finishes": [p.finish if p else None for p in plans]}


class _Kopl(_Engine):
    """The official ``kopl`` engine (pure Python), in this worker."""

    def load(self) -> dict:
        from synkqa.benchmark.peers import KoplRunner

        start = time.perf_counter()
        with open(self.job["kqapro_json"], encoding="utf-8") as handle:
            kb = json.load(handle)
        self.runner = KoplRunner(kb)
        del kb
        return {"load_s": round(time.perf_counter() - start, 3), "peak_after_load_mb": peak_rss_mb()}

    def run_plan(self, plan):
        from synkqa.benchmark.peers import ERROR, PeerEngineError

        if plan is None:
            return None, 0
        known = self.runner.engine.kb.name_to_id
        if any(not known.get(name) for name in plan.entity_names()):
            return (ERROR, "unknown-entity"), 0
        outputs, spent = [], 0
        for role, call in zip(plan.roles, plan.calls):
            t0 = time.perf_counter_ns()
            outputs.append(self.runner.call(call))
            if role in _TIMED_ROLES:
                spent += time.perf_counter_ns() - t0
        try:
            answer = plan.kopl_answer(outputs)
            return (answer.canonical, answer.explanation), spent
        except PeerEngineError as exc:
            return ("peer-error: " + str(exc)[:120], None), spent

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        return _peer_timed(self.run_plan, _plans(self.items(key, part, parts)))

    def batch(self) -> dict:
        texts = self.read_workload()["batch"]
        loop = _capped(self.job, "batch_loop", texts)
        if not loop:
            return {"n": len(texts)}
        plans = _plans(loop)
        start = time.perf_counter()
        answers = [self.run_plan(p)[0] for p in plans]
        seconds = time.perf_counter() - start
        return {"n": len(texts), "one_by_one": {"n": len(loop), "seconds": round(seconds, 3),
                                                "per_s": round(len(loop) / seconds, 1)},
                "peer_answers": [_peer_record(a) for a in answers]}


def kopl_engine_incomparable(plan) -> str | None:
    """Why ``kopl-engine``'s output for ``plan`` cannot be compared with ours, if it cannot.

    - a Count (or VerifyNum of a Count) whose operand may hold one entity several times:
      KoPL keeps the list (``Relate`` of several entities along a relation they share), so
      its Count counts duplicates, and kopl-engine's ``What`` prints only the first name,
      so the distinct count cannot be recovered as it is for ``kopl``;
    - VerifyNum of a Count: :mod:`synkqa.benchmark.peers` has no kopl-engine reading for it.
    """
    if plan is None:
        return None
    if plan.finish == "verifycount":
        return "VerifyNum of a Count: no kopl-engine reading in synkqa.benchmark.peers"
    if plan.finish == "count" and _may_repeat(plan.calls[0]):
        return "Count of a list that may repeat entities (KoPL keeps duplicates)"
    return None


def _may_repeat(call) -> bool:
    """Whether the set a KQA Pro program counts may list an entity twice (``Relate`` forward
    from a set that may hold several entities: they can share the neighbour)."""
    many: list[bool] = []            # per step: may the output hold several entities?
    repeat: list[bool] = []          # per step: may it list an entity twice?
    for step in call:
        deps = step.get("dependencies", [])
        fn = step["function"]
        m = any(many[d] for d in deps)
        r = any(repeat[d] for d in deps)
        if fn == "Find":
            m, r = False, False
        elif fn == "Relate":
            direction = step["inputs"][1] if len(step["inputs"]) > 1 else "forward"
            # Every relation is functional forward: one entity gives one neighbour, several
            # entities may give the same one; backward, each entity has its own neighbours.
            r = r or (m and direction == "forward")
            m = True if direction == "backward" else m
        elif fn in ("Or", "And"):
            r = r or fn == "Or"
        many.append(m)
        repeat.append(r)
    return bool(repeat) and repeat[-2 if len(call) > 1 else -1]


class _KoplEngine(_Engine):
    """VisKoP's ``kopl-engine`` (C++ through ctypes). It ends its process on bad input, so it
    only ever runs in this worker, never in the parent."""

    def load(self) -> dict:
        os.environ.setdefault("TQDM_DISABLE", "1")
        from kopl_engine import engine as ke

        self.ke = ke
        start = time.perf_counter()
        self.executor = ke.init(self.job["kqapro_json"], 1)
        return {"load_s": round(time.perf_counter() - start, 3), "peak_after_load_mb": peak_rss_mb()}

    def run_plan(self, plan, exec_only: list | None = None):
        if plan is None:
            return None, 0
        ke, clock = self.ke, time.perf_counter_ns
        outputs, spent, executing = [], 0, 0
        for role, call in zip(plan.roles, plan.calls):
            t0 = clock()
            program = ke.parse_program(list(call))
            t1 = clock()
            output = ke.forward(self.executor, program, False)
            t2 = clock()
            outputs.append(output.strip())
            if role in _TIMED_ROLES:
                spent += t2 - t0
                executing += t2 - t1
        if exec_only is not None:
            exec_only.append(executing)
        try:
            answer = plan.kopl_engine_answer(outputs)
            return (answer.canonical, answer.explanation), spent
        except Exception as exc:  # noqa: BLE001 - an unexpected peer output is data
            return (f"peer-error: {type(exc).__name__}: {exc}"[:120], None), spent

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        exec_only: list[int] = []
        plans = _plans(self.items(key, part, parts))
        run = _peer_timed(lambda p: self.run_plan(p, exec_only), plans)
        run["exec_only"] = exec_only
        run["incomparable"] = [kopl_engine_incomparable(p) for p in plans]
        return run

    def batch(self) -> dict:
        texts = self.read_workload()["batch"]
        if not texts:
            return {"n": 0}
        plans = _plans(texts)
        start = time.perf_counter()
        answers = [self.run_plan(p)[0] for p in plans]
        seconds = time.perf_counter() - start
        return {"n": len(texts), "one_by_one": {"n": len(texts), "seconds": round(seconds, 3),
                                                "per_s": round(len(texts) / seconds, 1)},
                "peer_answers": [_peer_record(a) for a in answers],
                "finishes": [p.finish if p else None for p in plans],
                "incomparable": [kopl_engine_incomparable(p) for p in plans]}
