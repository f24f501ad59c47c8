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


def cross_check(kb: KB, turtle: Path, programs: Sequence[Program], engines: Sequence[str] = ENGINES, *,
                workdir: Path, progress: Callable[[str, int], None] | None = None) -> dict:
    """Run ``programs`` on ``engines``; the report (JSON-ready): per engine agreement counts,
    incomparable cases by reason, rule notes, errors, examples and median µs per family."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ConfigError(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
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

    with contextlib.ExitStack() as stack:
        for name in engines:
            if name == "native":
                continue
            tally = tallies[name] = Tally()
            if name in ("oxigraph", "virtuoso", "jena"):
                engine = _sparql_engine(name, kb, turtle, workdir, stack)
                for i, (p, ours) in enumerate(zip(programs, reference)):
                    start = time.perf_counter()
                    try:
                        theirs = engine.run(p)
                    except SynKQAError as exc:
                        tally.errors[type(exc).__name__] += 1
                        _example(tally, p, ours or Answer("names", ()), exc)
                        continue
                    finally:
                        tally.seconds[family(p)].append(time.perf_counter() - start)
                        tick(name, i)
                    if ours is None or theirs != ours:
                        tally.disagree += 1
                        _example(tally, p, ours or Answer("names", ()), theirs)
                    else:
                        tally.agree += 1
            elif name == "kopl":
                _run_kopl(kb, programs, reference, tally, tick)
            else:
                _run_kopl_engine(kb, programs, reference, tally, workdir, tick)
    return {"programs": len(programs), "kb": kb.counts(),
            "engines": {name: tallies[name].to_json() for name in tallies}}


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
