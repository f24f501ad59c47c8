"""Random full-KoPL programs on every engine: agreement counts and time per program.

The native interpreter is the reference. SPARQL engines (embedded Oxigraph, Virtuoso over
HTTP, Jena ARQ in a JVM) must give the same :class:`~kqapro.answers.Answer`; ``kopl`` is
compared under our rules, and every rule that made a difference on a program is counted
by its note (:mod:`kqapro.peers`); ``kopl-engine`` answers one string, so a difference it
cannot express is counted as incomparable under a named reason. Times are per program as
each engine sees it: SPARQL engines include compiling and decoding; ``kopl-engine``'s are
measured inside its process (parse + forward), ``kopl``'s around its function calls.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kqapro.answers import Answer
from kqapro.engines import EndpointEngine, JenaSparqlEngine, NativeEngine, OxigraphEngine
from kqapro.kb import KB
from kqapro.program import Program
from ontology.errors import ConfigError, SynKQAError

ENGINES = ("native", "oxigraph", "virtuoso", "jena", "kopl", "kopl-engine")
EXAMPLES = 5


def family(program: Program) -> str:
    """The function family a program is timed under: its last function (Verify* together)."""
    last = program.steps[-1].function
    return "Verify*" if last.startswith("Verify") else last


@dataclass
class Tally:
    agree: int = 0
    disagree: int = 0
    incomparable: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)
    seconds: dict = field(default_factory=lambda: defaultdict(list))

    def to_json(self) -> dict:
        return {"agree": self.agree, "disagree": self.disagree,
                "incomparable": dict(sorted(self.incomparable.items())),
                "errors": dict(sorted(self.errors.items())), "notes": dict(sorted(self.notes.items())),
                "examples": self.examples,
                "median_us": {f: round(statistics.median(v) * 1e6, 1) for f, v in sorted(self.seconds.items())},
                "mean_us": round(statistics.fmean([x for v in self.seconds.values() for x in v]) * 1e6, 1)
                if self.seconds else None}


def _example(tally: Tally, program: Program, ours: Answer, theirs: object) -> None:
    if len(tally.examples) < EXAMPLES:
        tally.examples.append({"program": program.to_text(), "native": ours.text[:300], "engine": str(theirs)[:300]})


SERVERS = ("virtuoso", "jena")
"""Engines that answer from a server process of their own."""


def cross_check(kb: KB, turtle: Path, programs: Sequence[Program], engines: Sequence[str] = ENGINES, *,
                workdir: Path, progress: Callable[[str, int], None] | None = None, concurrency: int = 1) -> dict:
    """Run ``programs`` on ``engines``; the report (JSON-ready): per engine agreement counts,
    incomparable cases by reason, rule notes, errors, examples and median µs per family.

    ``concurrency`` above 1 is for throughput (the CI's 10,000 programs on every engine):
    the engines with a server of their own (Virtuoso, Jena) run in background threads while
    the others run in this one, and Virtuoso gets that many requests at a time (its time
    per program goes mostly into compiling the query, in its own threads). The answers and
    counts are the same; the times per program then include waiting for a CPU and are not
    latencies (the report says ``"concurrency"``), so the bench runs with 1."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ConfigError(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    tick = progress or (lambda name, i: None)
    native = NativeEngine(kb)
    reference: list[Answer | None] = []
    tallies: dict[str, Tally] = {}
    t = tallies["native"] = Tally()
    for i, p in enumerate(programs):
        start = time.perf_counter()
        try:
            answer = native.run(p)
        except SynKQAError as exc:
            answer = None
            t.errors[type(exc).__name__] += 1
        t.seconds[family(p)].append(time.perf_counter() - start)
        reference.append(answer)
        tick("native", i)
    t.agree = sum(a is not None for a in reference)

    others = [name for name in engines if name != "native"]
    background = [name for name in others if name in SERVERS] if concurrency > 1 else []
    with ThreadPoolExecutor(max_workers=max(1, len(background))) as pool:
        # each background engine starts, runs and stops its server in its thread
        futures = {name: pool.submit(_run_sparql, name, kb, turtle, programs, reference, workdir,
                                     lambda name, i: None, concurrency if name == "virtuoso" else 1)
                   for name in background}
        for name in others:
            if name in futures:
                continue
            if name in ("oxigraph", "virtuoso", "jena"):
                tallies[name] = _run_sparql(name, kb, turtle, programs, reference, workdir, tick)
            elif name == "kopl":
                tally = tallies[name] = Tally()
                _run_kopl(kb, programs, reference, tally, tick)
            else:
                tally = tallies[name] = Tally()
                _run_kopl_engine(kb, programs, reference, tally, workdir, tick)
        for name, future in futures.items():
            tallies[name] = future.result()
    report = {"programs": len(programs), "kb": kb.counts(),
              "engines": {name: tallies[name].to_json() for name in ["native"] + others}}
    if concurrency > 1:
        report["concurrency"] = concurrency
    return report


def _run_sparql(name: str, kb: KB, turtle: Path, programs: Sequence[Program], reference: list, workdir: Path,
                tick: Callable[[str, int], None], requests: int = 1) -> Tally:
    """One SPARQL engine on every program (``requests`` at a time), tallied against native."""
    tally = Tally()
    with contextlib.ExitStack() as stack:
        engine = _sparql_engine(name, kb, turtle, workdir, stack)

        def outcome(p: Program) -> tuple[Answer | None, SynKQAError | None, float]:
            start = time.perf_counter()
            try:
                return engine.run(p), None, time.perf_counter() - start
            except SynKQAError as exc:
                return None, exc, time.perf_counter() - start

        if requests > 1:
            outcomes = stack.enter_context(ThreadPoolExecutor(max_workers=requests)).map(outcome, programs)
        else:
            outcomes = map(outcome, programs)
        for i, (p, ours, (theirs, error, seconds)) in enumerate(zip(programs, reference, outcomes)):
            tally.seconds[family(p)].append(seconds)
            tick(name, i)
            if error is not None:
                tally.errors[type(error).__name__] += 1
                _example(tally, p, ours or Answer("names", ()), error)
            elif ours is None or theirs != ours:
                tally.disagree += 1
                _example(tally, p, ours or Answer("names", ()), theirs)
            else:
                tally.agree += 1
    return tally


def _sparql_engine(name: str, kb: KB, turtle: Path, workdir: Path, stack: contextlib.ExitStack):
    if name == "oxigraph":
        return OxigraphEngine(kb, turtle)
    if name == "jena":
        engine = JenaSparqlEngine(kb, turtle)
        stack.callback(engine.close)
        return engine
    from store.servers import start_virtuoso
    server = start_virtuoso(turtle, workdir / "virtuoso")
    stack.callback(server.stop)
    return EndpointEngine(kb, server.store(timeout=120), "virtuoso")


def _run_kopl(kb, programs, reference, tally, tick) -> None:
    from kqapro.peers import KoplPeer

    peer = KoplPeer(kb.to_json())
    for i, (p, ours) in enumerate(zip(programs, reference)):
        start = time.perf_counter()
        result = peer.run(p.to_json())
        tally.seconds[family(p)].append(time.perf_counter() - start)
        tick("kopl", i)
        tally.notes.update(set(result.notes))
        if result.error is not None:
            tally.errors[result.error.split(":")[0]] += 1
        elif result.answer == ours:
            tally.agree += 1
        else:
            tally.disagree += 1
            _example(tally, p, ours, result.answer)


def _run_kopl_engine(kb, programs, reference, tally, workdir: Path, tick) -> None:
    from kqapro.peers import KoplEnginePeer, compare_engine

    kb_json = kb.to_json()
    path = workdir / "kb.json"
    path.write_text(json.dumps(kb_json, ensure_ascii=False))
    with KoplEnginePeer(path) as peer:
        raws = peer.run_many([p.to_json() for p in programs])
    for i, (p, ours, raw) in enumerate(zip(programs, reference, raws)):
        tick("kopl-engine", i)
        if raw.seconds is not None:
            tally.seconds[family(p)].append(raw.seconds)
        verdict, reason = compare_engine(ours, raw, p.to_json(), kb_json)
        if verdict == "agree":
            tally.agree += 1
        elif verdict == "incomparable":
            tally.incomparable[reason] += 1
        else:
            tally.disagree += 1
            _example(tally, p, ours, raw.text)
