"""``synkqa bench`` and the optimisations it measures.

The smoke test runs every engine that is installed at scale 1 with a handful of programs
and checks that each one ran and agreed with native (not how fast). The optimisations are
checked for what matters more than speed: prepared compilation gives exactly the queries
of a fresh compilation, the batch API exactly the outcomes of one-by-one execution, the
shape-keyed type-check cache exactly the checker's verdicts.
"""

from __future__ import annotations

import importlib.util
import json
import random

import pytest
from typer.testing import CliRunner

from evaluation import bench
from kopl2sparql.compiler import clear_caches, compile_program, compiler_for
from kopl2sparql.errors import ExecutionError, ProgramError, ProgramTypeError
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step
from kopl2sparql.syntax import parse
from store.executor import NativeExecutor, SparqlExecutor, typecheck
from synkqa.benchmark.templates import templates
from tests.endpoint_servers import in_ci


@pytest.fixture(scope="module")
def index(kb_turtle, kb_schema):
    return KBIndex.from_turtle(kb_turtle, kb_schema)


@pytest.fixture(scope="module")
def programs(index):
    """Template programs, random programs of every operator, and programs that fail."""
    rng = random.Random(11)
    texts = [t for template in templates() for t in bench.template_texts(template, index, 40, rng)]
    generator = bench.RandomPrograms(index, rng)
    texts += [generator.program() for _ in range(700)]
    texts += ["Find(Person_99999);Relate(born_in);QueryName()",                       # unknown entity
              "Find(City_0001);QueryAttr(population);Find(City_9999);QueryAttr(population);Compare(>)",
              "Find(Country_001);RelateInv(located_in);QueryAttr(population)",        # not one entity
              "Find(Person_00001);VerifyRel(works_at,Org_9999)"]
    rng.shuffle(texts)
    return [parse(t) for t in texts]


def _outcome(run, program):
    try:
        return "answer", run(program)
    except (ExecutionError, ProgramError) as exc:
        return type(exc).__name__, str(exc)


def _as_outcome(value):
    if isinstance(value, Exception):
        return type(value).__name__, str(value)
    return "answer", value


def _renamed(program: Program, index, rng, schema) -> Program:
    """The program with its entities replaced by other entities of the same class (sometimes kept)."""
    names: dict[str, str] = {}
    steps = []
    for step in program.steps:
        args = list(step.args)
        for i, kind in enumerate(OPERATORS[step.op].args):
            classes = schema.entity_classes(args[i]) if kind.value == "entity" else None
            cls = min(classes) if classes else None
            if cls is not None:
                if args[i] not in names:
                    names[args[i]] = rng.choice(index.members[cls]) if rng.random() < 0.8 else args[i]
                args[i] = names[args[i]]
        steps.append(Step(step.op, tuple(args)))
    return Program(tuple(steps))


# ---- the optimisations keep every answer -----------------------------------------------------------

def test_prepared_compilation_gives_the_queries_of_a_fresh_compilation(programs, index, kb_schema):
    """A shape compiled once and re-filled with other names must equal compiling the program itself."""
    clear_caches()
    rng = random.Random(5)
    compared = reused = 0
    for program in programs:
        for variant in (program, _renamed(program, index, rng, kb_schema), _renamed(program, index, rng, kb_schema)):
            try:
                direct = compiler_for(kb_schema).direct(variant.steps)
            except ProgramError:
                continue
            got = compile_program(variant, kb_schema)
            compared += 1
            reused += got.prepared is not None and got.prepared.names != ()
            assert got == direct and got.sparql == direct.sparql, variant.canonical()
    assert compared > 1500 and reused > compared // 2


def test_typecheck_cache_keys_on_classes_not_names(kb_schema):
    good = parse("Find(Person_00001);Relate(born_in);QueryName()")
    typecheck(good, kb_schema)
    typecheck(parse("Find(Person_00777);Relate(born_in);QueryName()"), kb_schema)   # same shape: cached
    with pytest.raises(ProgramTypeError, match="located_in"):
        typecheck(parse("Find(Person_00002);Relate(located_in);QueryName()"), kb_schema)
    with pytest.raises(ProgramTypeError):                                     # same slots, another class
        typecheck(parse("Find(Org_0001);Relate(born_in);QueryName()"), kb_schema)
    # An entity the KB lacks may be of any class: the checker lets it through, the engines refuse it.
    typecheck(Program.of(("Find", "Planet_1"), ("Count",)), kb_schema)


def test_execute_many_gives_the_outcomes_of_execute_on_oxigraph(kb_store, programs, kb_schema):
    single = [_outcome(SparqlExecutor(kb_store, kb_schema).execute, p) for p in programs]
    clear_caches()
    executor = SparqlExecutor(kb_store, kb_schema)
    assert [_as_outcome(o) for o in executor.execute_many(programs, batch_size=64)] == single
    assert [_as_outcome(o) for o in SparqlExecutor(kb_store, kb_schema).execute_many(programs, workers=2)] == single
    assert any(plan is not None for plan in executor._batch_plans.values())
    assert any(plan is None for plan in executor._batch_plans.values())          # Argmax ... LIMIT 1


def test_execute_many_keeps_entities_that_nested_groups_filter_on(kb_store, index, kb_schema):
    """A batch binds entities at the top; one used by a FILTER inside MINUS must stay a constant."""
    text = ("Find(Org_0122);RelateInv(works_at);Find(City_0359);RelateInv(born_in);"
            "Find(Person_00406);Diff();Diff()")
    program = parse(text)
    rng = random.Random(8)
    variants = [program] + [_renamed(program, index, rng, kb_schema) for _ in range(60)]
    native = NativeExecutor(index, kb_schema)
    expected = [_outcome(native.execute, p) for p in variants]
    # The sampled Diff really removes someone somewhere, or the batch could not go wrong.
    assert any(kind == "answer" and len(answer.values) < len(native.execute(Program(p.steps[:2])).values)
               for (kind, answer), p in zip(expected, variants))
    assert [_as_outcome(o) for o in SparqlExecutor(kb_store, kb_schema).execute_many(variants)] == expected
    counting = _CountingStore(kb_store)
    assert [_as_outcome(o) for o in SparqlExecutor(counting, kb_schema, name="endpoint").execute_many(variants)] == expected


def test_execute_many_matches_native_on_families_of_random_shapes(kb_store, index, kb_schema):
    """Each random program with renamed twins: batches of one shape must answer like native."""
    rng = random.Random(23)
    generator = bench.RandomPrograms(index, rng)
    family = []
    for _ in range(150):
        program = parse(generator.program())
        family += [program] + [_renamed(program, index, rng, kb_schema) for _ in range(4)]
    native = NativeExecutor(index, kb_schema)
    expected = [_outcome(native.execute, p) for p in family]
    got = [_as_outcome(o) for o in SparqlExecutor(_CountingStore(kb_store), kb_schema, name="endpoint").execute_many(family)]
    assert [(a[0], a[1] if a[0] == "answer" else None) for a in got] == \
        [(a[0], a[1] if a[0] == "answer" else None) for a in expected]


class _CountingStore:
    """The store seen as an endpoint (no in-process fast path), counting queries."""

    def __init__(self, store):
        self.store, self.queries = store, 0

    def query(self, sparql):
        self.queries += 1
        return self.store.query(sparql)


def test_execute_many_batches_queries_through_the_generic_store_path(kb_store, programs, kb_schema):
    native = NativeExecutor(KBIndex.from_store(kb_store, kb_schema), kb_schema)
    expected = [_outcome(native.execute, p) for p in programs]
    counting = _CountingStore(kb_store)
    outcomes = [_as_outcome(o) for o in SparqlExecutor(counting, kb_schema, name="endpoint").execute_many(programs)]
    assert counting.queries < len(programs)
    # Native and SPARQL agree (error messages may differ in wording, not in kind).
    assert [(a[0], a[1] if a[0] == "answer" else None) for a in outcomes] == \
        [(a[0], a[1] if a[0] == "answer" else None) for a in expected]
    # Template programs share nine shapes: one query per shape and batch (Argmax's ORDER BY ...
    # LIMIT 1 runs one by one) plus a fact-check query per 500 facts.
    rng = random.Random(4)
    index = native.interpreter.index
    templated = [parse(t) for template in templates() for t in bench.template_texts(template, index, 40, rng)]
    counting = _CountingStore(kb_store)
    SparqlExecutor(counting, kb_schema, name="endpoint").execute_many(templated)
    assert counting.queries <= 40 + 8 + 3           # facts: 500 per query


def test_native_execute_many_on_two_cores_matches_one(index, programs, kb_schema):
    native = NativeExecutor(index, kb_schema)
    many = programs * 3                                         # above PARALLEL_MIN: really forks
    sequential = [_as_outcome(o) for o in native.execute_many(many)]
    assert [_as_outcome(o) for o in native.execute_many(many, workers=2)] == sequential


# ---- pieces of the harness ------------------------------------------------------------------------

def test_random_programs_are_well_typed_and_deterministic(index, kb_schema):
    first = [bench.RandomPrograms(index, random.Random(3)).program() for _ in range(1)]
    generator = bench.RandomPrograms(index, random.Random(3))
    texts = [generator.program() for _ in range(300)]
    assert texts[:1] == first
    for text in texts:
        typecheck(parse(text), kb_schema)
    ops = {step.op for text in texts for step in parse(text).steps}
    assert {"Relate", "RelateInv", "And", "Or", "Diff", "Argmax", "FilterNum", "Count", "QueryAttr",
            "Compare", "VerifyRel", "VerifyNum"} <= ops


def test_kopl_engine_comparison_rules():
    from synkqa.benchmark.peers import plan_for

    wide = plan_for("Find(Country_001);RelateInv(located_in);RelateInv(born_in);Relate(works_at);"
                    "RelateInv(works_at);Count()")
    assert "duplicates" in bench.kopl_engine_incomparable(wide)
    assert bench.kopl_engine_incomparable(
        plan_for("Find(Country_001);RelateInv(located_in);RelateInv(born_in);Count()")) is None
    run = {"peer_answers": [["City_0001", "first-name-only"], ["", "empty-as-no"], ["7", None], ["9", None]],
           "finishes": ["names", "names", "count", "count"], "incomparable": [None, None, None, "why"]}
    counts = bench._agree("kopl-engine", run, ["City_0001|City_0002", "", "8", "3"], "error")
    assert (counts["compared"], counts["agree"], counts["disagree"], counts["not_comparable"]) == (3, 2, 1, 1)


def test_bad_options_are_refused():
    from kopl2sparql.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean"):
        bench.parse_engines("native,virtuso")
    with pytest.raises(ConfigError):
        bench.parse_scales("0,1")
    with pytest.raises(ConfigError, match="exactly one --scale"):
        bench.BenchConfig(scales=(1, 10), virtuoso_url="http://127.0.0.1:1/sparql").check()
    result = CliRunner().invoke(_app(), ["bench", "--engines", "oxygraph"])
    assert result.exit_code == 1 and "oxigraph" in result.output


def _app():
    from synkqa.cli import app
    return app


# ---- the smoke test -------------------------------------------------------------------------------

SMOKE = ["--scale", "1", "--n", "3", "--random", "12", "--scans", "2", "--batch", "300", "--evtc", "8",
         "--evtc-train", "600"]


def _require_peers() -> list[str]:
    missing = [m for m in ("kopl", "kopl_engine") if importlib.util.find_spec(m) is None]
    if missing and in_ci():
        pytest.fail(f"CI=true but the peers extra is missing: {missing}", pytrace=False)
    return missing


@pytest.mark.slow
def test_bench_smoke_every_engine_runs_and_agrees(tmp_path):
    missing = _require_peers()
    out = tmp_path / "bench"
    engines = "native,oxigraph-memory,oxigraph-disk,rdflib,kopl,kopl-engine"
    result = CliRunner().invoke(_app(), ["bench", *SMOKE, "--engines", engines, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {r["engine"]: r for r in report["summary"]}
    assert set(rows) == set(engines.split(","))
    for name, row in rows.items():
        if name in ("kopl", "kopl-engine") and name.replace("-", "_") in missing:
            assert row["status"] == "not available" and "peers" in row["reason"]
            continue
        assert row["status"] == "ok", row
        assert row["compared"] > 0 and row["disagree"] == 0, row
        assert row["template_median_us"] > 0 and row["load_s"] >= 0 and row["peak_mb"] > 0
    ours = report["scales"]["1"]["engines"]
    assert ours["native"]["batch"]["n"] == 300 and ours["oxigraph-memory"]["evtc"]["n"] == 8
    assert (out / "bench.json").is_file() and (out / "bench.md").read_text().startswith("Machine:")
    assert (out / "latency.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(out.glob("run-*"))                          # the run's scratch directory is gone


@pytest.mark.slow
@pytest.mark.endpoint
def test_bench_smoke_servers_through_the_fixtures(tmp_path, oxigraph_server, virtuoso_server):
    result = CliRunner().invoke(_app(), [
        "bench", *SMOKE, "--evtc", "0", "--batch", "200", "--engines", "oxigraph-server,virtuoso",
        "--oxigraph-server", oxigraph_server.url, "--virtuoso", virtuoso_server.url,
        "--out", str(tmp_path / "bench"), "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["engine"]: r for r in json.loads(result.stdout)["summary"]}
    for name in ("oxigraph-server", "virtuoso"):
        assert rows[name]["status"] == "ok" and rows[name]["compared"] > 0 and rows[name]["disagree"] == 0, rows[name]


def test_enginebench_still_runs(capsys):
    from evaluation import enginebench

    assert enginebench.main(["--scales", "1", "--n", "5"]) == 0
    assert "| 0 BirthYear |" in capsys.readouterr().out


# ---- beyond the full table's scales (docs/BENCH.md, "Beyond VisKoP's scale") ----------------------

def test_huge_scales_shrink_the_default_work_unless_set():
    from evaluation.bench.config import HUGE_BATCH, HUGE_SCALE

    config = bench.BenchConfig(n=10)
    assert config.sizes(1)["batch"] == 120_000 and config.sizes(1)["evtc"] == 5
    assert config.sizes(HUGE_SCALE)["batch"] == HUGE_BATCH and config.sizes(HUGE_SCALE)["evtc"] == 0
    set_ = bench.BenchConfig(n=10, batch=50, evtc=3)
    assert set_.sizes(HUGE_SCALE)["batch"] == 50 and set_.sizes(HUGE_SCALE)["evtc"] == 3


def test_native_memory_check_says_why():
    from evaluation.bench.config import native_fits

    fits, why = native_fits(1000, 4000.0)
    assert not fits and "4,000 MB" in why and "per scale unit" in why
    assert native_fits(1, 4000.0)[0] and native_fits(1000, None)[0]


def test_lean_schema_answers_like_the_full_one():
    from evaluation.bench.leanschema import lean_schema
    from ontology import Schema, schema_path
    from synkqa.benchmark.world import ensure_turtle

    real = Schema.from_turtle(schema_path(), ensure_turtle(42, 2))
    lean = lean_schema(2, Schema.from_turtle(schema_path(), ensure_turtle(42, 1)))
    assert (lean.classes, lean.relations, lean.attributes) == (real.classes, real.relations, real.attributes)
    assert lean.entity_names() == real.entity_names() and len(lean.entity_iris) == len(real.entity_iris)
    for name in real.entity_iris:
        iri = real.entity_iris[name]
        assert (lean.entity_iris[name], lean.entity_types[name], lean.entity_name(iri), lean.resolve(name)) == \
            (iri, real.entity_types[name], name, real.resolve(name))
    for bad in ("Person_12000", "Person_1", "Person_0001x", "City_2400", "Org_1600", "Country_240", "Nobody", "_"):
        assert lean.resolve(bad) == real.resolve(bad) and lean.entity_classes(bad) == real.entity_classes(bad)
        assert lean.entity_iri(bad) == real.entity_iri(bad)
        assert lean.entity_name(real.entity_namespace + bad) == real.entity_name(real.entity_namespace + bad)
    assert all(lean.members(c) == real.members(c) for c in real.classes)


def test_kqapro_turtle_streams_the_same_bytes_and_runs_on_disk(tmp_path):
    import pyoxigraph as ox

    from evaluation.bench.kqapro_disk import run_disk
    from kqapro.generator import generate
    from kqapro.kb import KB
    from kqapro.rdf import PREFIXES, kb_to_turtle, kb_triples, write_kb_turtle
    from kqapro.sampling import random_programs

    kb = KB.from_json(generate(scale=0.02, seed=3), where="test")
    data = kb_to_turtle(kb)
    assert data == ox.serialize(kb_triples(kb), format=ox.RdfFormat.TURTLE, prefixes=PREFIXES)
    turtle = write_kb_turtle(kb, tmp_path / "kb.ttl")
    assert turtle.read_bytes() == data
    programs = random_programs(kb, 40, seed=1)
    result = run_disk(kb, turtle, programs, tmp_path)
    assert result["disagree"] == 0 and result["agree"] + sum(result["errors"].values()) == 40
    assert result["disk_mb"] > 0 and set(result["p99_us"]) == set(result["median_us"])
    assert not (tmp_path / "oxigraph-disk").exists()


def test_kqapro_scale_that_cannot_fit_is_refused_with_the_reason():
    result = CliRunner().invoke(_app(), ["bench", "--kind", "kqapro", "--scale", "353", "--engines", "native"])
    assert result.exit_code != 0 and "does not fit in memory" in result.output and "per scale unit" in result.output
