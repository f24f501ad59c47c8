"""``synkqa bench``: every engine on the same programs, from scale 1 to 100, in one run.

The run is one process tree. The parent builds nothing heavy itself; for every scale and
engine it starts a *worker* process (``python -m evaluation.bench worker JOB``) that loads
the KB the engine's own way, reports its load time and peak memory (``ru_maxrss`` of that
process, so engines never share a measurement), runs the work and writes its answers and
timings. The native worker runs first: it is the reference every other engine is checked
against, and it draws the work (random slots from its index, seeded) so that every engine
sees exactly the same programs.

Engines (:data:`ENGINES`): ours — ``native`` (the interpreter over a :class:`KBIndex`),
``oxigraph-memory`` and ``oxigraph-disk`` (compiled SPARQL on embedded pyoxigraph); the
reference SPARQL engines — ``rdflib`` (its own engine over an in-memory Graph),
``oxigraph-server`` and ``virtuoso`` (over HTTP through :class:`EndpointStore`); the KoPL
peers — ``kopl`` (the official Python engine, in the worker) and ``kopl-engine`` (VisKoP's
C++ engine, which kills its process on bad input: here it only ever runs in its own worker).

Work (:func:`make_workload`):

- ``templates``: each of the nine template shapes with ``n`` random slot fillings;
- ``random``: random well-typed programs beyond the templates (any operator, depth <= 3);
- ``scans``: the widest programs the language can write, e.g. all people born in a
  country (``Find(Country_x);RelateInv(located_in);RelateInv(born_in);Count()``);
- ``batch``: the benchmark's 120,000 gold programs (train + validation + test, the
  template mix) at the run's scale, for throughput;
- ``evtc``: EV-TC end to end per question (rank, fill, execute, validate), TC trained on
  a sample of the train split.

Per program, each engine is timed one program at a time (``perf_counter_ns``, garbage
collector off), as a service sees it: a fresh engine, every program new. Ours pay
parse + type check + execute (+ compile and fact checks for SPARQL); ``kopl-engine`` pays
``parse_program`` + ``forward`` and ``kopl`` ``forward``, both only for the KoPL calls that
produce the answer (the extra calls :mod:`synkqa.peers` makes to check a peer's answer are
run but not timed). Throughput is measured on the batch: one program at a time, through
``execute_many`` (batched VALUES queries for SPARQL) and with ``--workers`` cores.

Every engine's answers are compared with native's. KoPL peers are compared through the
rules of :mod:`synkqa.peers` (``kopl``: differences it bridges are counted as agreement and
tagged; ``kopl-engine``: prints only the first name of a set and ``no`` for an empty one,
so ours is cut down the same way before comparing, and programs on which ours raises are
not comparable). Programs with no KoPL counterpart are counted as "not comparable".
"""

from __future__ import annotations

import gc
import json
import math
import os
import pickle
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kopl2sparql.errors import ConfigError, SynKQAError, unknown_name_message

# ---- engines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineSpec:
    """One engine: what it is and how much of the work it gets.

    ``caps`` bounds the programs per work item for slow engines (the first programs of
    each list, so they are the same programs native ran), ``large_caps`` from scale
    :data:`LARGE_SCALE` on; ``max_scale`` is the largest scale it is run at (with the
    reason in ``max_scale_reason``).
    """

    name: str
    title: str
    family: str                    # "ours", "sparql", "peer"
    what: str
    caps: dict = field(default_factory=dict)
    max_scale: int | None = None
    max_scale_reason: str = ""
    large_caps: dict | None = None          # caps from LARGE_SCALE on (engines that slow down with the KB)

    def caps_at(self, scale: int) -> dict:
        return self.large_caps if self.large_caps is not None and scale >= LARGE_SCALE else self.caps


LARGE_SCALE = 100


_HTTP_CAPS = {"templates": 500, "random": 500, "scans": 100, "batch_loop": 2000, "batch_many": 20_000,
              "evtc": 200}
ENGINES: dict[str, EngineSpec] = {spec.name: spec for spec in (
    EngineSpec("native", "native (ours)", "ours", "Python interpreter over a KBIndex read from the Turtle"),
    EngineSpec("oxigraph-memory", "SPARQL / Oxigraph memory (ours)", "ours",
               "compiled SPARQL on embedded pyoxigraph, in memory"),
    EngineSpec("oxigraph-disk", "SPARQL / Oxigraph disk (ours)", "ours",
               "compiled SPARQL on embedded pyoxigraph, RocksDB on disk"),
    EngineSpec("rdflib", "SPARQL / rdflib", "sparql", "compiled SPARQL on rdflib's own engine over a Graph",
               caps={"templates": 50, "random": 100, "scans": 20, "batch_loop": 300, "batch_many": 300,
                     "evtc": 50},
               max_scale=10, max_scale_reason="rdflib loads 5M triples in minutes and several GB"),
    EngineSpec("oxigraph-server", "SPARQL / Oxigraph server HTTP", "sparql",
               "compiled SPARQL on `oxigraph serve-read-only`, over HTTP (SPARQLWrapper)", caps=_HTTP_CAPS),
    EngineSpec("virtuoso", "SPARQL / Virtuoso HTTP", "sparql",
               "compiled SPARQL on Virtuoso 7, over HTTP (SPARQLWrapper)", caps=_HTTP_CAPS),
    EngineSpec("kopl", "kopl (official)", "peer", "KQA Pro's Python KoPL engine, in process",
               caps={"templates": 300, "random": 300, "scans": 50, "batch_loop": 3000},
               large_caps={"templates": 25, "random": 25, "scans": 4, "batch_loop": 100}),
    EngineSpec("kopl-engine", "kopl-engine (VisKoP)", "peer", "VisKoP's C++ KoPL engine, in a child process"),
)}
OURS = tuple(n for n, s in ENGINES.items() if s.family == "ours")
HTTP_ENGINES = ("oxigraph-server", "virtuoso")


def parse_engines(text: str | None) -> tuple[str, ...]:
    """Engine names from ``a,b,c`` (``None`` or ``all``: every engine), in table order.

    :raises ConfigError: for an unknown name (with a suggestion).
    """
    if not text or text.strip() == "all":
        return tuple(ENGINES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in ENGINES:
            raise ConfigError(unknown_name_message("engine", name, ENGINES))
    return tuple(n for n in ENGINES if n in names)


def parse_scales(text: str) -> tuple[int, ...]:
    """Scales from ``1,10,100``.

    :raises ConfigError: for anything but positive integers.
    """
    try:
        scales = tuple(sorted({int(s) for s in text.split(",") if s.strip()}))
    except ValueError:
        raise ConfigError(f"--scale takes positive integers separated by commas, got {text!r}") from None
    if not scales or scales[0] < 1:
        raise ConfigError(f"--scale takes positive integers separated by commas, got {text!r}")
    return scales


@dataclass
class BenchConfig:
    """What to run. ``n`` is programs per template shape; the other sizes follow it unless set."""

    scales: tuple[int, ...] = (1, 10)
    engines: tuple[str, ...] = tuple(ENGINES)
    n: int = 2000
    random_programs: int | None = None       # default: n
    scan_programs: int = 60                  # per scan shape
    batch: int = 120_000
    evtc: int | None = None                  # default: n // 2
    evtc_train: int = 20_000
    workers: int = 2
    seed: int = 0
    kb_seed: int = 42
    out: Path = Path("reports/bench")
    virtuoso_url: str | None = None
    oxigraph_server_url: str | None = None
    worker_timeout: float = 3600.0
    rounds: int = 4                          # each work item runs in this many interleaved slices

    def sizes(self) -> dict[str, int]:
        return {"templates": self.n, "random": self.random_programs if self.random_programs is not None else self.n,
                "scans": self.scan_programs, "batch": self.batch,
                "evtc": self.evtc if self.evtc is not None else max(self.n // 2, 1),
                "evtc_train": self.evtc_train}

    def check(self) -> None:
        """:raises ConfigError: for sizes or URLs that cannot work."""
        for name, value in self.sizes().items():
            if value < 0:
                raise ConfigError(f"{name} size must be >= 0, got {value}")
        if self.n < 1:
            raise ConfigError(f"--n must be at least 1, got {self.n}")
        if self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if (self.virtuoso_url or self.oxigraph_server_url) and len(self.scales) != 1:
            raise ConfigError("an endpoint URL holds one KB: give --virtuoso/--oxigraph-server URL "
                              "with exactly one --scale")
        for url in (self.virtuoso_url, self.oxigraph_server_url):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ConfigError(f"not an http(s) endpoint URL: {url!r}")


# ---- the work ----------------------------------------------------------------------------------

SCAN_SHAPES = {
    "people born in a country": "Find({c});RelateInv(located_in);RelateInv(born_in);Count()",
    "people working in a country": "Find({c});RelateInv(located_in);RelateInv(headquarters_in);"
                                   "RelateInv(works_at);Count()",
    "colleagues of a country's natives": "Find({c});RelateInv(located_in);RelateInv(born_in);"
                                         "Relate(works_at);RelateInv(works_at);Count()",
    "oldest native of a country": "Find({c});RelateInv(located_in);RelateInv(born_in);"
                                  "Argmin(birth_year);QueryName()",
}
"""The widest programs the language reaches: every class scales with the KB, so these
read the same share of it (about 50 people per country) at every scale; the language has
no operator that reads a whole class at once."""


def template_texts(template, index, n: int, rng: random.Random) -> list[str]:
    """``n`` program texts of ``template`` with slots drawn from the KB.

    WorkAndBornIntersection takes both slots from one person (a non-empty intersection, as
    the benchmark does); VerifyEmployment takes the person's own employer half of the time
    (so both answers occur); CompareCityPopulation two different cities.
    """
    out = []
    people = index.members["Person"]
    for _ in range(n):
        if template.name == "WorkAndBornIntersection":
            person = rng.choice(people)
            slots = {"Org": _one(index.forward["works_at"][person]), "City": _one(index.forward["born_in"][person])}
        elif template.name == "VerifyEmployment":
            person = rng.choice(people)
            org = (_one(index.forward["works_at"][person]) if rng.random() < 0.5
                   else rng.choice(index.members["Organization"]))
            slots = {"Person": person, "Org": org}
        elif template.name == "CompareCityPopulation":
            a, b = rng.sample(index.members["City"], 2)
            slots = {"City1": a, "City2": b}
        else:
            slots = {name: rng.choice(index.members[cls]) for name, cls in template.slots}
        out.append(template.program_text(**slots))
    return out


def _one(values) -> str:
    return min(values)


class RandomPrograms:
    """Random well-typed programs over the schema (any operator, nesting up to ``depth``).

    Relations are followed along their domain and range, attributes only on their class,
    numbers are values the KB has (±0 or 1), so the type checker accepts every program; a
    program may still fail at run time (QueryAttr of several entities), which both engines
    must report alike.
    """

    def __init__(self, index, rng: random.Random, depth: int = 3):
        from ontology import schema

        self.index, self.rng, self.depth = index, rng, depth
        sch = schema()
        self.relations = list(sch.relations.values())
        self.attributes = list(sch.attributes.values())
        self.values = {a.name: sorted(set(index.values[a.name].values())) for a in self.attributes}
        self.classes = [c for c in sch.classes if index.members.get(c)]

    def entity(self, cls: str) -> str:
        return self.rng.choice(self.index.members[cls])

    def set_of(self, cls: str, depth: int) -> list[str]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            return [f"Find({self.entity(cls)})"]
        choices = ["relate", "inv", "and", "or", "diff", "select", "filter"]
        kind = rng.choice(choices)
        if kind == "relate":
            rels = [r for r in self.relations if r.range == cls]
            if rels:
                r = rng.choice(rels)
                return self.set_of(r.domain, depth - 1) + [f"Relate({r.name})"]
        if kind == "inv":
            rels = [r for r in self.relations if r.domain == cls]
            if rels:
                r = rng.choice(rels)
                return self.set_of(r.range, depth - 1) + [f"RelateInv({r.name})"]
        if kind in ("and", "or", "diff"):
            op = {"and": "And", "or": "Or", "diff": "Diff"}[kind]
            return self.set_of(cls, depth - 1) + self.set_of(cls, depth - 1) + [f"{op}()"]
        attrs = [a for a in self.attributes if a.domain == cls]
        if attrs and kind == "select":
            a = rng.choice(attrs)
            return self.set_of(cls, depth - 1) + [f"{rng.choice(('Argmax', 'Argmin'))}({a.name})"]
        if attrs and kind == "filter":
            a = rng.choice(attrs)
            return self.set_of(cls, depth - 1) + [f"FilterNum({a.name},{rng.choice(('>', '<', '>=', '<=', '=', '!='))},"
                                                  f"{self.number(a.name)})"]
        return [f"Find({self.entity(cls)})"]

    def number(self, attribute: str) -> str:
        from kopl2sparql.answer import format_number

        value = self.rng.choice(self.values[attribute])
        return format_number(value + self.rng.choice((0, 0, 1, -1)))

    def number_of(self, depth: int) -> list[str]:
        cls = self.rng.choice(self.classes)
        if self.rng.random() < 0.5:
            return self.set_of(cls, depth) + ["Count()"]
        attrs = [a for a in self.attributes if a.domain == cls] or self.attributes
        a = self.rng.choice(attrs)
        return self.set_of(a.domain, depth) + [f"QueryAttr({a.name})"]

    def program(self) -> str:
        rng = self.rng
        depth = rng.randint(1, self.depth)
        top = rng.choice(("names", "names", "number", "bool", "bool"))
        if top == "names":
            steps = self.set_of(rng.choice(self.classes), depth) + ["QueryName()"]
        elif top == "number":
            steps = self.number_of(depth)
        else:
            kind = rng.choice(("compare", "verifynum", "verifyrel"))
            if kind == "compare":
                steps = self.number_of(depth - 1) + self.number_of(depth - 1) + [
                    f"Compare({rng.choice(('>', '<', '>=', '<=', '=', '!='))})"]
            elif kind == "verifynum":
                number = self.number_of(depth)
                bound = str(rng.randint(0, 60)) if number[-1] == "Count()" else self.number(
                    number[-1][len("QueryAttr("):-1])
                steps = number + [f"VerifyNum({rng.choice(('>', '<', '>=', '<=', '=', '!='))},{bound})"]
            else:
                r = rng.choice(self.relations)
                steps = self.set_of(r.domain, depth) + [f"VerifyRel({r.name},{self.entity(r.range)})"]
        return ";".join(steps)


def kb_entities(index):
    """What slot sampling and options need (:class:`synkqa.dataset.KBEntities`), from the index."""
    from synkqa.dataset import KBEntities

    employer = {p: _one(o) for p, o in index.forward["works_at"].items()}
    birth_city = {p: _one(c) for p, c in index.forward["born_in"].items()}
    names = {cls: tuple(members) for cls, members in index.members.items() if members}
    return KBEntities(names, employer, birth_city)


def make_workload(index, native, scale: int, sizes: dict[str, int], seed: int, kb_seed: int,
                  run_dir: Path) -> dict:
    """Every program of one scale, drawn from ``index`` with ``random.Random(seed)``.

    Also trains the EV-TC ranker (TC on ``evtc_train`` train questions) and writes it to
    ``run_dir``; the EV-TC questions get their gold answer from ``native`` and ten options.
    """
    from kopl2sparql.syntax import parse
    from synkqa.dataset import make_choices, sample_split
    from synkqa.templates import templates

    rng = random.Random(f"bench-{seed}-{scale}")
    work: dict[str, Any] = {"scale": scale}
    work["templates"] = {t.name: template_texts(t, index, sizes["templates"], rng) for t in templates()}
    generator = RandomPrograms(index, rng)
    random_texts: dict[str, None] = {}
    tries = 0
    while len(random_texts) < sizes["random"] and tries < 20 * sizes["random"] + 100:
        tries += 1
        random_texts.setdefault(generator.program())
    work["random"] = list(random_texts)
    countries = index.members["Country"]
    picks = [rng.choice(countries) for _ in range(sizes["scans"])]
    work["scans"] = {name: [shape.format(c=c) for c in picks] for name, shape in SCAN_SHAPES.items()}
    kb = kb_entities(index)
    batch: list[str] = []
    if sizes["batch"]:
        from synkqa.dataset import SPLIT_SIZES

        for split in ("train", "validation", "test"):
            want = min(SPLIT_SIZES[split], sizes["batch"] - len(batch))
            if want <= 0:
                break
            batch += [d.kopl for d in sample_split(kb, split, seed=kb_seed, size=want)]
    work["batch"] = batch
    work["evtc"] = None
    if sizes["evtc"]:
        from parsers.template import TemplateClassifier

        train = sample_split(kb, "train", seed=kb_seed, size=max(sizes["evtc_train"], 200))
        model = TemplateClassifier(random_state=seed).fit([d.question for d in train],
                                                          [d.template.id for d in train])
        model_path = run_dir / f"tc-scale{scale}.pkl"
        with open(model_path, "wb") as handle:
            pickle.dump(model, handle, protocol=pickle.HIGHEST_PROTOCOL)
        options_rng = random.Random(f"bench-options-{seed}-{scale}")
        questions = []
        for draft in sample_split(kb, "test", seed=kb_seed, size=sizes["evtc"]):
            try:
                gold = native.execute(parse(draft.kopl))
                choices = make_choices(gold, kb, options_rng)
            except SynKQAError:
                continue                      # an empty answer has no options; not a question
            questions.append({"id": draft.id, "question": draft.question, "choices": choices,
                              "gold": gold.canonical(), "kopl": draft.kopl})
        work["evtc"] = {"model": str(model_path), "questions": questions, "train": len(train)}
    return work


# ---- measuring ---------------------------------------------------------------------------------

def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports kB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def process_peak_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of another process we started, if the OS says."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def outcome_text(run: Callable[[], Any]) -> str:
    """The canonical answer, ``error`` (the KB cannot answer) or ``type-error: ...``."""
    from kopl2sparql.errors import ExecutionError, ProgramError

    try:
        return run().canonical()
    except ExecutionError:
        return "error"
    except ProgramError as exc:
        return "type-error: " + str(exc).splitlines()[0]


def time_each(run: Callable[[str], Any], items: Sequence, convert: Callable[[Any], str]) -> tuple[list[int], list[str]]:
    """Run ``run(item)`` for each item, timing each call alone; outcomes converted after the clock.

    Exceptions the engines raise for a program (ExecutionError, ProgramError) are outcomes,
    not failures: they are passed to ``convert`` as the value.
    """
    from kopl2sparql.errors import ExecutionError, ProgramError

    clock = time.perf_counter_ns
    timings: list[int] = []
    values: list[Any] = []
    gc.collect()
    gc.disable()
    try:
        for item in items:
            start = clock()
            try:
                value = run(item)
            except (ExecutionError, ProgramError) as exc:
                value = exc
            timings.append(clock() - start)
            values.append(value)
    finally:
        gc.enable()
    return timings, [convert(v) for v in values]


class _collector_paused:
    """Pause the cyclic garbage collector (after a collection) for a timed section.

    Every timed section of every engine runs this way: the engines allocate no reference
    cycles, and a collection started by whatever the harness holds (the work lists) would
    charge its scan to whichever engine happens to allocate at that moment.
    """

    def __enter__(self):
        gc.collect()
        gc.disable()

    def __exit__(self, *exc):
        gc.enable()


def canonical(value) -> str:
    from kopl2sparql.errors import ExecutionError, ProgramError

    if isinstance(value, ExecutionError):
        return "error"
    if isinstance(value, ProgramError):
        return "type-error: " + str(value).splitlines()[0]
    return value.canonical()


def latency_stats(timings_ns: Sequence[int]) -> dict:
    """Median, p99 and mean in µs (``n`` programs)."""
    if not timings_ns:
        return {"n": 0}
    ordered = sorted(timings_ns)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return {"n": len(ordered), "median_us": round(statistics.median(ordered) / 1000, 2),
            "p99_us": round(p99 / 1000, 2), "mean_us": round(statistics.fmean(ordered) / 1000, 2)}


# ---- engines inside a worker -------------------------------------------------------------------

class RdflibStore:
    """rdflib's own SPARQL engine over an in-memory Graph, with the store interface
    (``query(sparql) -> SelectResult | bool``, values as :mod:`store.results` converts them)."""

    def __init__(self, turtle: Path):
        import rdflib

        self.graph = rdflib.Graph()
        self.graph.parse(str(turtle), format="turtle")

    def query(self, sparql: str):
        from rdflib import Literal, URIRef

        from store.results import SelectResult, literal_value

        result = self.graph.query(sparql)
        if result.type == "ASK":
            return bool(result.askAnswer)

        def convert(term):
            if term is None:
                return None
            if isinstance(term, URIRef):
                return str(term)
            if isinstance(term, Literal):
                return literal_value(str(term), str(term.datatype) if term.datatype else None)
            return str(term)

        variables = tuple(str(v) for v in result.vars)
        return SelectResult(variables, [tuple(convert(row[v]) for v in result.vars) for row in result])


class _Engine:
    """One engine inside a worker process: ``load`` once, then ``run`` work items on request."""

    def __init__(self, job: dict):
        self.job = job
        self.workload: dict | None = None

    def read_workload(self) -> dict:
        if self.workload is None:
            self.workload = json.loads(Path(self.job["workload"]).read_text())
        return self.workload

    def items(self, key: str, part: int = 0, parts: int = 1) -> list[str]:
        """The program texts of one work item (``templates/<shape>``, ``random``, ``scans/<shape>``),
        capped; ``part`` of ``parts`` contiguous slices."""
        work = self.read_workload()
        group, _, name = key.partition("/")
        texts = _capped(self.job, group, work[group][name] if name else work[group])
        return texts[len(texts) * part // parts:len(texts) * (part + 1) // parts]

    def load(self) -> dict:
        raise NotImplementedError

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        """Time one slice of a work item: raw ``timings`` (ns) and the answers."""
        raise NotImplementedError

    def batch(self) -> dict:
        raise NotImplementedError

    def evtc(self) -> dict | None:
        return None

    def close(self) -> dict:
        return {}


def _capped(job: dict, key: str, items: list) -> list:
    cap = job.get("caps", {}).get(key)
    return items if cap is None else items[:cap]


class _Ours(_Engine):
    """Native, SPARQL on embedded Oxigraph (memory, disk), rdflib, and the HTTP endpoints."""

    def load(self) -> dict:
        from kopl2sparql.kbindex import KBIndex
        from store.executor import NativeExecutor, SparqlExecutor
        from store.oxigraph import OxigraphStore

        job, info = self.job, {}
        engine, turtle = job["engine"], Path(job["turtle"])
        start = time.perf_counter()
        if engine == "native":
            executor = NativeExecutor(KBIndex.from_turtle(turtle))
            info["entities"] = executor.index.entity_count()
        elif engine == "oxigraph-memory":
            store = OxigraphStore()
            store.load_turtle(turtle)
            executor = SparqlExecutor(store, name=engine)
        elif engine == "oxigraph-disk":
            self.location = Path(job["run_dir"]) / f"oxigraph-disk-scale{job['scale']}"
            shutil.rmtree(self.location, ignore_errors=True)
            loading = OxigraphStore(self.location)
            loading.load_turtle(turtle)
            # Compacting the bulk-loaded files costs ~10% of the load and saves ~10-15% per
            # query (fewer SST files to look in); OxigraphStore.load_turtle does not do it yet.
            loading.raw.optimize()
            del loading                                   # closes RocksDB
            info["load_s"] = round(time.perf_counter() - start, 3)
            reopen = time.perf_counter()
            executor = SparqlExecutor(OxigraphStore(self.location, read_only=True), name=engine)
            info["open_s"] = round(time.perf_counter() - reopen, 3)
            info["disk_mb"] = round(sum(f.stat().st_size for f in self.location.rglob("*") if f.is_file()) / 2**20, 1)
        elif engine == "rdflib":
            executor = SparqlExecutor(RdflibStore(turtle), name=engine)
        elif engine in HTTP_ENGINES:
            from store.remote import EndpointStore

            executor = SparqlExecutor(EndpointStore(job["url"], graph=job.get("graph"), timeout=120.0), name=engine)
            executor.store.ping()
        else:  # pragma: no cover - the parent only sends known engines
            raise ConfigError(f"not one of our engines: {engine}")
        info.setdefault("load_s", round(time.perf_counter() - start, 3))
        info["peak_after_load_mb"] = peak_rss_mb()
        self.executor = executor
        return info

    def make_workload(self) -> dict:
        """The reference draws the work from its own index (native only)."""
        job = self.job
        started = time.perf_counter()
        self.workload = make_workload(self.executor.index, self.executor, job["scale"], job["sizes"], job["seed"],
                                      job["kb_seed"], Path(job["run_dir"]))
        Path(job["workload"]).write_text(json.dumps(self.workload))
        return {"workload_s": round(time.perf_counter() - started, 2)}

    def run(self, key: str, part: int = 0, parts: int = 1) -> dict:
        from kopl2sparql.syntax import parse

        executor, texts = self.executor, self.items(key, part, parts)
        run = _timed(lambda text: executor.execute(parse(text)), texts)
        if self.job["engine"] == "rdflib":
            run["incomparable"] = rdflib_incomparable(texts)
        return run

    def batch(self) -> dict:
        return _batch_ours(self.job, self.executor, self.read_workload()["batch"])

    def evtc(self) -> dict | None:
        evtc = self.read_workload().get("evtc")
        return _evtc(self.job, self.executor, evtc) if evtc else None

    def close(self) -> dict:
        location = getattr(self, "location", None)
        if location is not None:
            self.executor = None
            gc.collect()
            shutil.rmtree(location, ignore_errors=True)
        return {}


RDFLIB_FILTER_FALSE = "rdflib ignores a lone constant FILTER(false) (RDFLib/rdflib#3381)"


def rdflib_incomparable(texts: list[str]) -> list[str | None]:
    """Per program, why rdflib's answer cannot be compared (its SPARQL has ``FILTER(false)``,
    which the compiler writes for an intersection that is always empty), or ``None``."""
    from kopl2sparql.compiler import compile_program
    from kopl2sparql.syntax import parse

    out = []
    for text in texts:
        try:
            sparql = compile_program(parse(text)).sparql
        except SynKQAError:
            sparql = ""
        out.append(RDFLIB_FILTER_FALSE if "FILTER(false)" in sparql else None)
    return out


def _timed(run: Callable[[str], Any], texts: list[str]) -> dict:
    timings, answers = time_each(run, texts, canonical)
    return {"timings": timings, "answers": answers}


_LISTS = ("answers", "peer_answers", "finishes", "incomparable")


def merge_parts(parts: list[dict]) -> dict:
    """One work item's result from its slices: statistics over all timings, lists joined in order."""
    timings = [t for part in parts for t in part.get("timings", [])]
    run: dict[str, Any] = latency_stats(timings)
    for key in _LISTS:
        if any(key in part for part in parts):
            run[key] = [x for part in parts for x in part.get(key, [])]
    if any("exec_only" in part for part in parts):
        run["exec_only"] = latency_stats([t for part in parts for t in part.get("exec_only", [])])
    return run


def _batch_ours(job: dict, executor, texts: list[str]) -> dict:
    """Throughput on the batch: one by one, ``execute_many``, and ``execute_many`` on the cores."""
    from kopl2sparql.syntax import parse

    out: dict[str, Any] = {"n": len(texts)}
    if not texts:
        return out
    loop = _capped(job, "batch_loop", texts)
    with _collector_paused():
        start = time.perf_counter()
        answers = [outcome_text(lambda t=t: executor.execute(parse(t))) for t in loop]
        seconds = time.perf_counter() - start
    out["one_by_one"] = {"n": len(loop), "seconds": round(seconds, 3), "per_s": round(len(loop) / seconds, 1)}
    out["answers"] = answers
    many = _capped(job, "batch_many", texts)
    if job["engine"] == "rdflib":
        out["incomparable"] = rdflib_incomparable(loop)
        out["many_incomparable"] = rdflib_incomparable(many)
    variants = [("many", 1)] + ([("many_parallel", job["workers"])] if job["workers"] > 1 else [])
    for label, workers in variants:
        with _collector_paused():
            start = time.perf_counter()
            programs = [parse(t) for t in many]
            outcomes = executor.execute_many(programs, workers=workers)
            seconds = time.perf_counter() - start
        out[label] = {"n": len(many), "workers": workers, "seconds": round(seconds, 3),
                      "per_s": round(len(many) / seconds, 1)}
        if label == "many":
            out["many_answers"] = [canonical(o) for o in outcomes]
        else:
            mismatched = sum(canonical(o) != a for o, a in zip(outcomes, out["many_answers"]))
            out[label]["differs_from_sequential"] = mismatched
    return out


def _evtc(job: dict, executor, evtc: dict) -> dict:
    """EV-TC per question: the ranking (one vectorised call, its time shared out), then each
    question's fill-execute-validate loop timed alone."""
    from parsers.base import ProgramRunner, Query
    from parsers.rerank import ExecutionValidatedParser
    from parsers.validators import get_selection, get_validator

    with open(evtc["model"], "rb") as handle:
        model = pickle.load(handle)
    questions = _capped(job, "evtc", evtc["questions"])
    if not questions:
        return {"n": 0}
    parser = ExecutionValidatedParser.from_fitted(model, k=5)
    queries = [Query(q["question"], tuple(q["choices"]), q["id"]) for q in questions]
    start = time.perf_counter_ns()
    ids, scores = model.rank([q.question for q in queries], 5)
    rank_ns = (time.perf_counter_ns() - start) / len(queries)
    runner = ProgramRunner(executor)
    validator, rule = get_validator("options"), get_selection("first")
    positions = iter(range(len(queries)))

    def decide(query):
        i = next(positions)
        return parser.decide(query, ids[i], scores[i], runner, validator, rule)

    timings, predictions = time_each(decide, queries, lambda p: p)
    timings = [int(t + rank_ns) for t in timings]
    answers = [f"{p.program} => {p.answer}" for p in predictions]
    correct = sum(p.answer == q["gold"] for p, q in zip(predictions, questions))
    return {**latency_stats(timings), "rank_us": round(rank_ns / 1000, 2), "answers": answers,
            "accuracy": round(correct / len(questions), 4),
            "executions_per_question": round(runner.calls / len(questions), 3)}


# ---- the KoPL peers inside a worker ------------------------------------------------------------

_TIMED_ROLES = ("main", "left", "right")
"""Plan calls that produce the answer; the others only check the peer's answer."""


def _plans(texts: list[str]):
    from kopl2sparql.kqapro import NoKQAProCounterpart
    from kopl2sparql.syntax import parse
    from synkqa.peers import plan_for

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
        from synkqa.peers import KoplRunner

        start = time.perf_counter()
        with open(self.job["kqapro_json"], encoding="utf-8") as handle:
            kb = json.load(handle)
        self.runner = KoplRunner(kb)
        del kb
        return {"load_s": round(time.perf_counter() - start, 3), "peak_after_load_mb": peak_rss_mb()}

    def run_plan(self, plan):
        from synkqa.peers import ERROR, PeerEngineError

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
    - VerifyNum of a Count: :mod:`synkqa.peers` has no kopl-engine reading for it.
    """
    if plan is None:
        return None
    if plan.finish == "verifycount":
        return "VerifyNum of a Count: no kopl-engine reading in synkqa.peers"
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


def serve(job_path: Path) -> int:
    """Worker entry point: JSON commands on stdin, one JSON reply per line on stdout.

    Commands: ``load``, ``workload`` (native only: draw the work), ``run`` (``key``),
    ``batch``, ``evtc``, ``finish`` (replies with the process's peak memory and exits).
    Anything the engines print goes to the log (stderr), never into the replies.
    """
    job = json.loads(Path(job_path).read_text())
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    engine: _Engine = {"kopl": _Kopl, "kopl-engine": _KoplEngine}.get(job["engine"], _Ours)(job)
    started = time.perf_counter()
    for line in sys.stdin:
        command = json.loads(line)
        name = command["cmd"]
        try:
            if name == "load":
                reply = engine.load()
            elif name == "workload":
                reply = engine.make_workload()
            elif name == "run":
                reply = engine.run(command["key"], command.get("part", 0), command.get("parts", 1))
            elif name == "batch":
                reply = engine.batch()
            elif name == "evtc":
                reply = engine.evtc() or {}
            elif name == "finish":
                reply = {**engine.close(), "peak_mb": peak_rss_mb(),
                         "worker_s": round(time.perf_counter() - started, 2)}
            else:
                reply = {"error": f"unknown command {name!r}"}
        except SynKQAError as exc:
            reply = {"error": str(exc).splitlines()[0]}
        except Exception as exc:  # noqa: BLE001 - the parent reports it; the traceback goes to the log
            import traceback

            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if name in ("load", "workload") and "error" not in reply:
            # The KB and the work stay for the life of the worker: move them out of the
            # collector's sight, so the collection before each timed section is cheap.
            if Path(job["workload"]).exists():
                engine.read_workload()
            gc.collect()
            gc.freeze()
        replies.write(json.dumps(reply) + "\n")
        if name == "finish":
            break
    return 0


# ---- the parent ---------------------------------------------------------------------------------

class WorkerFailed(SynKQAError):
    """A worker process died, timed out or reported an error."""


class _Worker:
    """A worker process of this run, driven command by command."""

    def __init__(self, engine: str, job: dict, run_dir: Path, timeout: float, label: str = ""):
        self.engine, self.timeout = engine, timeout
        name = f"{engine}-scale{job['scale']}{label}"
        job_path = run_dir / f"{name}.job.json"
        job_path.write_text(json.dumps(job))
        self.log_path = run_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "evaluation.bench", "worker", str(job_path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        text=True, bufsize=1)

    def call(self, command: dict) -> dict:
        """Send one command and wait for its reply.

        :raises WorkerFailed: when the worker reports an error, dies or takes longer than the time limit.
        """
        import threading

        expired = threading.Event()

        def kill() -> None:
            expired.set()
            self.process.kill()

        timer = threading.Timer(self.timeout, kill)
        timer.start()
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        finally:
            timer.cancel()
        if not line:
            code = self.process.wait()
            self._log.flush()
            tail = " ".join(self.log_path.read_text(errors="replace").split()[-40:])
            why = f"no answer within {self.timeout:g} s" if expired.is_set() else f"worker exited with status {code}"
            raise WorkerFailed(f"{why} during {command['cmd']}: {tail}"[:500])
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerFailed(f"{command['cmd']} failed: {reply['error']}")
        return reply

    def stop(self) -> None:
        """End the worker (by its PID) if it is still there."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


def _server_helpers():
    """tests/endpoint_servers.py, which starts Virtuoso and Oxigraph server privately on loopback.

    :raises ImportError: outside a source checkout, or without pytest.
    """
    try:
        from tests import endpoint_servers
    except ImportError:
        root = Path(__file__).resolve().parent.parent
        if not (root / "tests" / "endpoint_servers.py").is_file():
            raise
        sys.path.insert(0, str(root))
        from tests import endpoint_servers
    return endpoint_servers


class _Servers:
    """Servers this run starts (stopped by PID when the scale is done)."""

    def __init__(self):
        self.started: list = []

    def start(self, engine: str, turtle: Path, workdir: Path, log) -> tuple[dict | None, str | None]:
        """``(endpoint facts, None)`` or ``(None, why it is not available)``."""
        binaries = {"oxigraph-server": ("oxigraph",), "virtuoso": ("virtuoso-t", "isql-vt")}[engine]
        missing = [b for b in binaries if shutil.which(b) is None]
        if missing:
            return None, f"{', '.join(missing)} not installed (bash scripts/install_endpoints.sh)"
        try:
            helpers = _server_helpers()
        except ImportError as exc:
            return None, (f"cannot import tests/endpoint_servers.py ({exc}); run from a source checkout "
                          "with the test extra, or pass the endpoint URL")
        log(f"  starting {engine} ...")
        try:
            if engine == "oxigraph-server":
                server = helpers.start_oxigraph(turtle, workdir)
            else:
                server = helpers.start_virtuoso(turtle, workdir)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            return None, f"could not start: {str(exc).splitlines()[0][:200]}"
        self.started.append(server)
        return {"url": server.url, "graph": server.graph, "pid": server.pid,
                "load_s": round(server.load_seconds, 3), "start_s": round(server.start_seconds, 3)}, None

    def stop(self) -> None:
        for server in self.started:
            try:
                server.stop()
            finally:
                shutil.rmtree(server.workdir, ignore_errors=True)
        self.started.clear()


def _kqapro_json(turtle: Path, scale: int, kb_seed: int, backward: bool, log) -> Path:
    """The KB exported for the KoPL engines, cached beside the Turtle (written by a child
    process, so this process never holds the KB dict)."""
    from synkqa import paths

    target = paths.home() / f"kqapro-seed{kb_seed}-scale{scale}{'' if backward else '-forward'}.json"
    if not target.exists():
        log(f"  exporting {target.name} ...")
        code = ("import sys; from synkqa.kqapro_kb import write_kqapro; "
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
    from synkqa.world import ensure_turtle

    config.check()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=out))
    sizes = config.sizes()
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
            results = _run_scale(config, scale, turtle, sizes, run_dir, log, first, twins)
            report["scales"][str(scale)] = {"turtle_mb": round(turtle.stat().st_size / 2**20, 1),
                                           "seconds": round(time.perf_counter() - t0, 1),
                                           "engines": results}
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
    try:
        for number, phase in enumerate(phases):
            with_twins = number == 0 and first is not None and twins is not None and first["scale"] != scale
            _run_phase(config, phase, base, results, servers, turtle, run_dir, log,
                       first if with_twins else None, twins)
    finally:
        servers.stop()
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


# ---- agreement -----------------------------------------------------------------------------------

def compare_answers(reference: dict, results: dict) -> None:
    """Set ``agreement`` on every result: per work item, how many programs agree with native."""
    from synkqa.peers import ERROR

    ref_runs = reference.get("runs", {})
    for engine, result in results.items():
        if result.get("status") != "ok":
            continue
        agreement: dict[str, dict] = {}
        for key, run in result.get("runs", {}).items():
            ours = ref_runs.get(key, {}).get("answers", [])
            agreement[key] = _agree(engine, run, ours, ERROR)
        batch = result.get("batch") or {}
        ref_batch = reference.get("batch") or {}
        ref_answers = ref_batch.get("answers", [])
        if batch.get("answers") is not None:
            agreement["batch"] = _agree(engine, {"answers": batch["answers"],
                                                 "incomparable": batch.get("incomparable")}, ref_answers, ERROR)
        if batch.get("many_answers") is not None:
            agreement["batch execute_many"] = _agree(engine, {"answers": batch["many_answers"],
                                                              "incomparable": batch.get("many_incomparable")},
                                                     ref_batch.get("many_answers", ref_answers), ERROR)
        if batch.get("peer_answers") is not None:
            agreement["batch"] = _agree(engine, batch, ref_answers, ERROR)
        evtc, ref_evtc = result.get("evtc") or {}, reference.get("evtc") or {}
        if evtc.get("answers"):
            agreement["evtc"] = _agree(engine, evtc, ref_evtc.get("answers", []), ERROR)
        totals = Counter()
        for item in agreement.values():
            totals.update({k: v for k, v in item.items() if isinstance(v, int)})
        result["agreement"] = {"items": agreement, "total": dict(totals)}
        result["agrees"] = totals["disagree"] == 0


def _agree(engine: str, run: dict, ours: list[str], error: str) -> dict:
    """Counts of agree / disagree / not comparable, and the first few disagreements."""
    counts = {"compared": 0, "agree": 0, "disagree": 0, "not_comparable": 0}
    examples: list[str] = []
    tags: Counter = Counter()
    if "peer_answers" in run:
        finishes = run.get("finishes") or [None] * len(run["peer_answers"])
        incomparable = run.get("incomparable") or [None] * len(run["peer_answers"])
        for ref, theirs, finish, why in zip(ours, run["peer_answers"], finishes, incomparable):
            if theirs is None or why:
                counts["not_comparable"] += 1
                if why:
                    tags[f"not comparable: {why}"] += 1
                continue
            answer, tag = theirs
            expected = error if ref == "error" else ref
            same = answer == expected
            if engine == "kopl-engine":
                # It prints one string: one name of a set ("no" for an empty one, read back as
                # the empty set), which must be a member of ours; it cannot say "cannot answer".
                if ref == "error" or ref.startswith("type-error"):
                    counts["not_comparable"] += 1
                    tags["not comparable: ours raises, kopl-engine has no error answer"] += 1
                    continue
                if finish in ("names", "argmax"):
                    same = answer in ref.split("|") if ref else answer == ""
            counts["compared"] += 1
            if same:
                counts["agree"] += 1
                if tag:
                    tags[tag] += 1
            else:
                counts["disagree"] += 1
                if len(examples) < 5:
                    examples.append(f"ours {ref[:60]!r} vs {engine} {answer[:60]!r}")
    else:
        incomparable = run.get("incomparable") or [None] * len(run.get("answers", []))
        for ref, theirs, why in zip(ours, run.get("answers", []), incomparable):
            if why:
                counts["not_comparable"] += 1
                tags[f"not comparable: {why}"] += 1
                continue
            counts["compared"] += 1
            if ref == theirs:
                counts["agree"] += 1
            else:
                counts["disagree"] += 1
                if len(examples) < 5:
                    examples.append(f"ours {ref[:60]!r} vs {engine} {theirs[:60]!r}")
    if tags:
        counts["bridged"] = dict(tags)
    if examples:
        counts["examples"] = examples
    return counts


# ---- summary, table, files ----------------------------------------------------------------------

TEMPLATE_ORDER = ("BirthYear", "BirthCity", "BirthCountry", "EmployerHQCountry", "CountBornIn",
                  "CompareCityPopulation", "ArgmaxCityInCountry", "WorkAndBornIntersection", "VerifyEmployment")


def summarise(report: dict) -> None:
    """Add ``summary`` rows (one per scale and engine) and ``targets`` to the report."""
    rows = []
    for scale, block in report["scales"].items():
        engines = block["engines"]
        native = engines.get("native") or {}
        for engine, result in engines.items():
            row: dict[str, Any] = {"scale": int(scale), "engine": engine, "status": result.get("status"),
                                   "reason": result.get("reason")}
            if result.get("status") == "ok":
                runs = result.get("runs", {})
                templates = [runs[k] for k in runs if k.startswith("templates/") and runs[k].get("n")]
                row["template_median_us"] = _median_of(templates, "median_us")
                row["template_p99_us"] = _median_of(templates, "p99_us")
                row["random_median_us"] = runs.get("random", {}).get("median_us")
                scans = [runs[k] for k in runs if k.startswith("scans/") and runs[k].get("n")]
                row["scan_median_us"] = _median_of(scans, "median_us")
                row["load_s"] = result.get("load_s")
                row["peak_mb"] = result.get("peak_mb")
                row["throughput_per_s"] = best_throughput(result.get("batch") or {})
                row["evtc_median_us"] = (result.get("evtc") or {}).get("median_us")
                native_t = _median_of([native.get("runs", {}).get(k, {}) for k in runs if k.startswith("templates/")],
                                      "median_us") if native else None
                row["ratio_to_native"] = _ratio(row["template_median_us"], native_t)
                total = (result.get("agreement") or {}).get("total", {})
                row["agree"] = total.get("agree")
                row["compared"] = total.get("compared")
                row["disagree"] = total.get("disagree")
                row["not_comparable"] = total.get("not_comparable")
            rows.append(row)
    report["summary"] = rows
    report["targets"] = targets(report)


def _median_of(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def _ratio(a, b) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def best_throughput(batch: dict) -> float | None:
    values = [batch[k]["per_s"] for k in ("one_by_one", "many", "many_parallel") if k in batch]
    return max(values) if values else None


def _shape_medians(report: dict, scale: int, engine: str, exec_only: bool = False) -> dict[str, float]:
    result = report["scales"].get(str(scale), {}).get("engines", {}).get(engine) or {}
    out = {}
    for key, run in (result.get("runs") or {}).items():
        if key.startswith("templates/"):
            stats = run.get("exec_only") if exec_only else run
            if stats and stats.get("median_us") is not None:
                out[key.split("/", 1)[1]] = stats["median_us"]
    return out


def targets(report: dict) -> list[dict]:
    """The issue's targets, each met / missed / not measured, with the numbers."""
    out = []
    scales = [int(s) for s in report["scales"]]

    def engine(scale, name):
        return report["scales"].get(str(scale), {}).get("engines", {}).get(name) or {}

    for scale in (1, 10):
        if scale not in scales:
            continue
        ours = _shape_medians(report, scale, "native")
        theirs = _shape_medians(report, scale, "kopl-engine")
        if ours and theirs:
            ratios = {s: round(ours[s] / theirs[s], 2) for s in ours if s in theirs and theirs[s]}
            worst = max(ratios.values()) if ratios else None
            out.append({"target": f"native median <= 1.0x kopl-engine (parse+execute), nine shapes, scale {scale}",
                        "met": worst is not None and worst <= 1.0, "value": worst, "per_shape": ratios})
        else:
            out.append({"target": f"native median <= 1.0x kopl-engine, scale {scale}", "met": None,
                        "value": None, "why": "kopl-engine or native not run"})
    if 1 in scales:
        ox_ = _shape_medians(report, 1, "oxigraph-memory")
        virt = _shape_medians(report, 1, "virtuoso")
        nat = _shape_medians(report, 1, "native")
        if ox_ and virt:
            ratios = {s: round(virt[s] / ox_[s], 2) for s in ox_ if s in virt}
            worst = min(ratios.values())
            out.append({"target": "Oxigraph embedded >= 10x faster than Virtuoso HTTP per program, scale 1",
                        "met": worst >= 10, "value": worst, "per_shape": ratios})
        else:
            out.append({"target": "Oxigraph embedded >= 10x faster than Virtuoso HTTP, scale 1", "met": None,
                        "value": None, "why": "Virtuoso not available in this run"})
        if ox_ and nat:
            ratios = {s: round(ox_[s] / nat[s], 2) for s in ox_ if s in nat}
            worst = max(ratios.values())
            out.append({"target": "Oxigraph embedded within 3x of native per program, scale 1",
                        "met": worst <= 3, "value": worst, "per_shape": ratios})
    if 1 in scales and 100 in scales:
        for name in OURS:
            twin = (report["scales"]["100"].get("twins") or {}).get(name) or {}
            high = _shape_medians(report, 100, name)
            low = {k.split("/", 1)[1]: r["median_us"] for k, r in (twin.get("runs") or {}).items()
                   if r.get("median_us") is not None}
            how = "against its scale-1 twin, interleaved in the same run"
            if not low:
                low, how = _shape_medians(report, 1, name), "against the scale-1 phase of the run"
            if low and high:
                ratios = {s: round(high[s] / low[s], 2) for s in low if s in high}
                worst = max(ratios.values())
                out.append({"target": f"{name}: scale 100 <= 3x scale 1 per template program",
                            "met": worst <= 3, "value": worst, "per_shape": ratios, "how": how})
    if 100 in scales:
        mem = engine(100, "oxigraph-memory")
        if mem.get("status") == "ok":
            out.append({"target": "Oxigraph (memory) load <= 60 s at scale 100", "met": mem["load_s"] <= 60,
                        "value": mem["load_s"]})
            out.append({"target": "Oxigraph (memory) peak memory <= 4 GB at scale 100",
                        "met": mem["peak_mb"] <= 4096, "value": mem["peak_mb"]})
        disk = engine(100, "oxigraph-disk")
        if disk.get("status") == "ok":
            out.append({"target": "Oxigraph (disk) load <= 60 s at scale 100", "met": disk["load_s"] <= 60,
                        "value": disk["load_s"]})
            out.append({"target": "Oxigraph (disk) peak memory <= 4 GB at scale 100",
                        "met": disk["peak_mb"] <= 4096, "value": disk["peak_mb"]})
    return out


def machine() -> dict:
    """Where the numbers come from (the load average matters on a shared machine)."""
    import platform

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_average_at_start": load}


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


SUMMARY_COLUMNS = (
    ("scale", "scale"), ("engine", "engine"), ("load_s", "load s"), ("peak_mb", "peak MB"),
    ("template_median_us", "median µs"), ("template_p99_us", "p99 µs"), ("ratio_to_native", "× native"),
    ("random_median_us", "random µs"), ("scan_median_us", "scan µs"), ("throughput_per_s", "batch prog/s"),
    ("evtc_median_us", "EV-TC µs/q"), ("agreement", "agree"),
)


def summary_cells(row: dict) -> list[str]:
    """One row of the summary table as text (an engine that did not run says why)."""
    if row["status"] != "ok":
        return [str(row["scale"]), row["engine"], f"{row['status']}: {row.get('reason') or ''}"[:90]] + \
            [""] * (len(SUMMARY_COLUMNS) - 3)
    cells = []
    for key, _ in SUMMARY_COLUMNS:
        if key == "agreement":
            compared, agree = row.get("compared") or 0, row.get("agree") or 0
            extra = f" (+{row['not_comparable']} n/c)" if row.get("not_comparable") else ""
            cells.append(f"{agree}/{compared}{extra}")
        elif key == "ratio_to_native":
            cells.append("-" if row.get(key) is None else f"{row[key]:.2f}×")
        else:
            cells.append(_fmt(row.get(key)))
    return cells


SHORT = {"native": "native", "oxigraph-memory": "ox mem", "oxigraph-disk": "ox disk", "rdflib": "rdflib",
         "oxigraph-server": "ox HTTP", "virtuoso": "virtuoso", "kopl": "kopl", "kopl-engine": "kopl-eng"}
"""Column headings of the per-program table."""


def shape_table(report: dict, scale: str) -> tuple[list[str], list[list[str]]]:
    """Median µs per program at one scale: a row per work item, a column per engine that ran."""
    block = report["scales"][scale]
    engines = [e for e, r in block["engines"].items() if r.get("status") == "ok"]
    keys = [f"templates/{t}" for t in TEMPLATE_ORDER] + ["random"] + [f"scans/{s}" for s in SCAN_SHAPES]
    rows = []
    for key in keys:
        values = [(block["engines"][e].get("runs") or {}).get(key, {}).get("median_us") for e in engines]
        if any(v is not None for v in values):
            rows.append([key.split("/", 1)[-1]] + [_fmt(v) for v in values])
    evtc = [(block["engines"][e].get("evtc") or {}).get("median_us") for e in engines]
    if any(v is not None for v in evtc):
        rows.append(["EV-TC per question"] + [_fmt(v) for v in evtc])
    return ["program"] + [SHORT.get(e, e) for e in engines], rows


def markdown(report: dict) -> str:
    """The report as Markdown: summary, targets, per-shape medians, batch variants, load."""
    lines = [f"Machine: {report['machine']['cpus']} cores, load average at start "
             f"{report['machine']['load_average_at_start']}; run took {report.get('seconds')} s.", ""]
    head = [label for _, label in SUMMARY_COLUMNS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["summary"]:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in summary_cells(row)) + " |")
    lines += ["", "Targets:", ""]
    for t in report["targets"]:
        state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        lines.append(f"- {t['target']}: **{state}** (value {t.get('value')})"
                     + (f" — {t['why']}" if t.get("why") else ""))
    for scale in report["scales"]:
        columns, rows = shape_table(report, scale)
        lines += ["", f"Median µs per program, scale {scale}:", "", "| " + " | ".join(columns) + " |",
                  "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    for scale, block in report["scales"].items():
        twins = block.get("twins") or {}
        if not twins:
            continue
        lines += ["", f"Scaling, scale {scale} ÷ scale {next(iter(twins.values()))['scale']} (median per template "
                  "program, both measured side by side in this run):", "",
                  "| engine | " + " | ".join(TEMPLATE_ORDER) + " |", "|" + "---|" * (len(TEMPLATE_ORDER) + 1)]
        for engine, twin in twins.items():
            high = _shape_medians(report, int(scale), engine)
            low = {k.split("/", 1)[1]: r.get("median_us") for k, r in (twin.get("runs") or {}).items()}
            cells = [f"{high[t] / low[t]:.2f}×" if high.get(t) and low.get(t) else "-" for t in TEMPLATE_ORDER]
            lines.append(f"| {engine} | " + " | ".join(cells) + " |")
    lines += ["", "Batch throughput (programs/s):", "", "| scale | engine | one by one | execute_many | "
              "execute_many, parallel |", "|---|---|---|---|---|"]
    for scale, block in report["scales"].items():
        for engine, result in block["engines"].items():
            batch = result.get("batch") or {}
            if not batch:
                continue
            cells = [_fmt(batch.get(k, {}).get("per_s")) + (f" (n={batch[k]['n']})" if k in batch else "")
                     for k in ("one_by_one", "many", "many_parallel")]
            lines.append(f"| {scale} | {engine} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(report: dict, out: Path) -> None:
    """``bench.json`` (without the per-program answers), ``bench.md`` and ``latency.png``."""
    slim = json.loads(json.dumps(report))
    for block in slim["scales"].values():
        for result in block["engines"].values():
            for run in (result.get("runs") or {}).values():
                for key in ("answers", "peer_answers", "finishes", "incomparable"):
                    run.pop(key, None)
            for part in ("batch", "evtc"):
                for key in ("answers", "many_answers", "peer_answers", "finishes", "incomparable",
                            "many_incomparable"):
                    (result.get(part) or {}).pop(key, None)
    report.clear()
    report.update(slim)
    (out / "bench.json").write_text(json.dumps(slim, indent=1, ensure_ascii=False) + "\n")
    (out / "bench.md").write_text(markdown(slim))
    plot(slim, out / "latency.png")


def plot(report: dict, path: Path) -> None:
    """Two log-log panels against KB size (entities): median template latency, and load time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (latency, load) = plt.subplots(1, 2, figsize=(12, 4.8))
    for axis, key, label in ((latency, "template_median_us", "median µs per template program"),
                             (load, "load_s", "KB load time, s")):
        series: dict[str, list[tuple[float, float]]] = {}
        for row in report["summary"]:
            value = row.get(key)
            if row["status"] == "ok" and value:
                entities = _entities(report, row["scale"])
                series.setdefault(row["engine"], []).append((entities, value))
        for engine, points in series.items():
            points.sort()
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=engine)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("KB size (entities)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
        if series:
            axis.legend(fontsize=7)
    latency.set_title("Latency against KB size")
    load.set_title("Load time against KB size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _entities(report: dict, scale: int) -> int:
    native = report["scales"].get(str(scale), {}).get("engines", {}).get("native") or {}
    return native.get("entities") or 8120 * scale


def main(argv: list[str] | None = None) -> int:
    """``python -m evaluation.bench worker JOB`` (internal)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "worker":
        return serve(Path(argv[1]))
    print("usage: python -m evaluation.bench worker JOB.json   (the command is: synkqa bench)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
