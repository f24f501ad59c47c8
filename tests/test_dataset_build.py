"""How ``dataset build`` makes its lines (issue 18): forked workers execute each distinct
program on both engines and return the line's tail, the parent draws the options and writes
the lines in order. The lines must be what the one-question-at-a-time path gives
(``GoldEngines.run``, ``make_choices`` with the stdlib's ``sample``/``shuffle``, ``_record``),
for any number of workers, and a disagreement found in a worker must still abort the build.
About ten seconds on small builds (marked slow); the full build's byte-identity is in
``test_dataset.py``."""

from __future__ import annotations

import random

import pytest

from kopl2sparql.errors import EngineDisagreement
from synkqa.benchmark import dataset as ds

SIZES = {"train": 3000, "validation": 600, "test": 1400}      # 5,000 questions: the pool is used


@pytest.fixture(scope="module")
def engines(kb_turtle):
    return ds.GoldEngines(42, 1)


@pytest.fixture(scope="module")
def forked(engines, tmp_path_factory):
    return ds.build(42, tmp_path_factory.mktemp("forked") / "d", sizes=SIZES, engines=engines, workers=2)


class _StdlibRandom(random.Random):
    """A generator of another class: ``make_choices`` uses ``Random.sample``/``shuffle`` on it."""


@pytest.mark.slow
def test_lines_are_the_records_of_the_one_by_one_path(forked, engines):
    reference = ds.GoldEngines.__new__(ds.GoldEngines)        # same executors, fresh caches
    reference.__dict__.update(native=engines.native, sparql=engines.sparql, kb=engines.kb, _prototypes={},
                              _answers={}, _portable=None, executed=0, _count=0)
    for split, size in SIZES.items():
        rng = _StdlibRandom(f"synkqa-42-{split}-choices")
        lines = (forked / f"{split}.jsonl").read_bytes().splitlines(keepends=True)
        assert len(lines) == size
        for draft, line in zip(ds.sample_split(engines.kb, split, 42, size), lines):
            program, sparql, answer = reference.run(draft)
            choices = ds.make_choices(answer, engines.kb, rng)
            assert line == ds._line(ds._record(draft, program, sparql, answer.canonical(), choices)), draft.id


@pytest.mark.slow
def test_any_number_of_workers_gives_the_same_files(forked, engines, tmp_path):
    before = engines.executed
    here = ds.build(42, tmp_path / "one", sizes=SIZES, engines=engines, workers=1)
    distinct = engines.executed - before
    three = ds.build(42, tmp_path / "three", sizes=SIZES, engines=engines, workers=3)
    assert engines.executed - before == 2 * distinct          # the workers' programs are counted too
    for name in ("train.jsonl", "validation.jsonl", "test.jsonl", "manifest.json"):
        assert (here / name).read_bytes() == (forked / name).read_bytes() == (three / name).read_bytes()


@pytest.mark.slow
def test_progress_is_reported_in_order_up_to_each_split_size(engines, tmp_path):
    calls = []
    ds.build(42, tmp_path / "p", sizes=SIZES, engines=engines, workers=2,
             progress=lambda split, done, total: calls.append((split, done, total)))
    for split, size in SIZES.items():
        done = [d for s, d, total in calls if s == split and total == size]
        assert done == sorted(done) and done[-1] == size and len(done) == -(-size // 500)
    assert [s for s, _, _ in calls] == sorted((s for s, _, _ in calls), key=list(SIZES).index)


@pytest.mark.slow
def test_a_disagreement_in_a_worker_aborts_the_build(kb_turtle, engines, tmp_path):
    import pyoxigraph as ox
    from ontology import ENTITY_NS, NS
    from store.oxigraph import OxigraphStore

    out = ds.build(42, tmp_path / "d", sizes={"test": 300}, engines=engines)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    broken_engines = ds.GoldEngines(42, 1)
    broken = OxigraphStore()
    broken.load_turtle(kb_turtle)
    person = "Person_00371"
    broken.raw.remove(ox.Quad(ox.NamedNode(ENTITY_NS + person), ox.NamedNode(NS + "born_in"),
                              ox.NamedNode(ENTITY_NS + broken_engines.kb.birth_city[person]), ox.DefaultGraph()))
    broken_engines.use_sparql_store(broken)
    # Questions about Person_00371's birth place or its birth city's natives disagree; the
    # first of them in file order is named, whichever worker met it.
    sizes = {"train": 20_000, "validation": 2000, "test": 2000}
    with pytest.raises(EngineDisagreement) as here:
        ds.build(42, out, sizes=sizes, engines=broken_engines, workers=1)
    with pytest.raises(EngineDisagreement) as forked:
        ds.build(42, out, sizes=sizes, engines=broken_engines, workers=2)
    assert str(forked.value) == str(here.value)
    assert str(here.value).startswith("engines disagree on the gold program of train-")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("n,k", [(20, 9), (11, 9), (120, 10), (1200, 10), (6000, 10), (800, 2), (6000, 3),
                                 (85, 10), (86, 10), (10, 10), (3, 0)])
def test_fast_sample_and_shuffle_draw_what_the_stdlib_draws(n, k):
    assert ds._fast_random_ok()
    a, b = random.Random(f"{n}-{k}"), random.Random(f"{n}-{k}")
    population = tuple(f"E_{i:05d}" for i in range(n))
    for _ in range(200):
        assert a.sample(population, k) == ds._sample(b, population, k)
        x, y = list(population[:10]), list(population[:10])
        a.shuffle(x)
        ds._shuffle(b, y)
        assert x == y
    assert a.getstate() == b.getstate()
    with pytest.raises(ValueError):
        ds._sample(b, population, n + 1)
