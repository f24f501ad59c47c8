"""The SynKQA-Pro dataset: sizes, template mix, options, gold answers on both engines,
determinism, paraphrase separation and the CLI.

The full 120,000-question dataset is built once per session (``dataset_dir``) through the
CLI, into the cache where ``ensure_dataset`` finds it. Byte-identity is checked by a second,
independent build of the validation and test splits (every split has its own random
streams, so building two splits gives the same bytes as building all three).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter

import pytest
from typer.testing import CliRunner

from kopl2sparql.answer import Answer
from kopl2sparql.errors import DatasetError, EngineDisagreement
from kopl2sparql.kqapro import to_kqapro
from kopl2sparql.syntax import parse
from synkqa.benchmark import dataset as ds
from synkqa.cli import app
from synkqa.benchmark.templates import by_name, templates

pytestmark = pytest.mark.slow        # builds the dataset: in the full suite, not the fast tier

FIG2 = "The city where Person_00371 was born is located in which country?"
ENTITY = re.compile(r"\b(Person|City|Country|Org)_[0-9]+\b")


SLIM = ("id", "split", "question", "choices", "answer", "kopl", "template_id")


@pytest.fixture(scope="session")
def dataset_dir(synkqa_home):
    result = CliRunner().invoke(app, ["dataset", "build", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["seed"] == 42 and report["directory"] == str(ds.paths.dataset_dir(42))
    return ds.paths.dataset_dir(42)


@pytest.fixture(scope="session")
def splits(dataset_dir):
    """Every record; train records keep only the fields the tests read (memory: 120,000
    full records with their SPARQL and KQA Pro lists take over half a gigabyte)."""
    out = {split: ds.load_split(split, 42, dataset_dir) for split in ("validation", "test")}
    out["train"] = [{k: r[k] for k in SLIM} for r in ds.iter_split("train", 42, dataset_dir)]
    return {split: out[split] for split in ds.SPLITS}


@pytest.fixture(scope="session")
def kb_entities(kb_store):
    return ds.KBEntities.from_store(kb_store)


def _shape(question: str) -> str:
    """The question with entity mentions replaced by their class (the paraphrase it came from)."""
    return ENTITY.sub(lambda m: "{" + m.group(1) + "}", question)


# ---- sizes and mix -----------------------------------------------------------------------------

def test_split_sizes_are_exact(splits, dataset_dir):
    assert {s: len(r) for s, r in splits.items()} == {"train": 100_000, "validation": 10_000, "test": 10_000}
    manifest = json.loads((dataset_dir / "manifest.json").read_text())
    assert manifest["seed"] == 42
    for split, info in manifest["splits"].items():
        data = (dataset_dir / info["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info["sha256"] and len(data) == info["bytes"]
        assert info["questions"] == len(splits[split])


def test_record_fields_and_ids(splits):
    keys = ["id", "split", "question", "choices", "answer", "kopl", "program", "sparql",
            "template_id", "template", "reasoning", "hops"]
    for split, records in splits.items():
        assert [r["id"] for r in records[:3]] == [f"{split}-{i:05d}" for i in range(3)]
        assert len({r["id"] for r in records}) == len(records)
        assert all(r["split"] == split for r in records)
    for split in ("validation", "test"):
        for r in splits[split]:
            assert list(r) == keys
            assert r["split"] == split
            t = templates()[r["template_id"]]
            assert (r["template"], r["reasoning"], r["hops"]) == (t.name, t.reasoning, t.hops)


def test_template_counts_follow_the_weights(splits):
    for split, records in splits.items():
        n = len(records)
        counts = Counter(r["template_id"] for r in records)
        for t in templates():
            sigma = math.sqrt(n * t.weight * (1 - t.weight))
            assert abs(counts[t.id] - n * t.weight) < 4 * sigma, (split, t.name, counts[t.id])


def test_average_program_steps_is_the_papers(splits):
    for split, records in splits.items():
        steps = sum(len(parse(r["kopl"])) for r in records) / len(records)
        assert steps == pytest.approx(3.84, abs=0.02), split


def test_stats_match_a_recount(splits, dataset_dir):
    stats = ds.dataset_stats(42, dataset_dir)
    for split, records in splits.items():
        ours = stats["splits"][split]
        words = [len(r["question"].split()) for r in records]
        assert ours["questions"] == len(records)
        assert ours["avg_words"] == pytest.approx(sum(words) / len(words))
        assert ours["unique_answers"] == len({r["answer"] for r in records})
    # The paraphrase shift the paper describes: test questions are longer than train ones.
    assert stats["splits"]["test"]["avg_words"] > stats["splits"]["train"]["avg_words"]
    assert stats["paper"]["test"]["avg_words"] == 8.30
    assert [row["test_paper"] for row in stats["templates"]] == [971, 1003, 1502, 1041, 1228, 971, 968, 1348, 968]


# ---- paraphrases ----------------------------------------------------------------------------

def test_each_split_uses_its_paraphrases(splits):
    by_id = {t.id: t for t in templates()}
    shapes = {s: Counter() for s in ds.SPLITS}
    for split, records in splits.items():
        for r in records:
            t, shape = by_id[r["template_id"]], _shape(r["question"])
            forms = {k: re.sub(r"\{(\w+?)\d?\}", lambda m: "{" + {"Organization": "Org"}.get(m.group(1), m.group(1)) + "}",
                               t.paraphrase(k)) for k in ("train", "test")}
            kind = "train" if shape == forms["train"] else "test" if shape == forms["test"] else None
            assert kind is not None, r["question"]
            shapes[split][kind] += 1
    assert shapes["train"] == {"train": 100_000}
    assert shapes["test"] == {"test": 10_000}
    assert shapes["validation"] == {"train": 5_000, "test": 5_000}


def test_no_test_question_shape_occurs_in_train(splits):
    train = {_shape(r["question"]) for r in splits["train"]}
    test = {_shape(r["question"]) for r in splits["test"]}
    assert len(train) == len(test) == 9 and not train & test


def test_fig2_sentence(splits):
    assert by_name("BirthCountry").question("test", Person="Person_00371") == FIG2
    birth_country = [r for r in splits["test"] if r["template"] == "BirthCountry"]
    assert birth_country and all(
        r["question"] == FIG2.replace("Person_00371", ENTITY.search(r["question"]).group(0)) for r in birth_country)


def test_question_mentions_are_the_program_entities(splits):
    for r in splits["validation"][:2000]:
        mentioned = [m.group(0) for m in ENTITY.finditer(r["question"])]
        in_program = [a for step in parse(r["kopl"]) for a in step.args if ENTITY.fullmatch(a)]
        assert mentioned == in_program


# ---- slots ------------------------------------------------------------------------------------

def test_slot_constraints(splits, kb_entities):
    records = [r for s in ds.SPLITS for r in splits[s]]
    compare = [r for r in records if r["template_id"] == by_name("CompareCityPopulation").id]
    assert compare and all(len(set(re.findall(r"City_\d+", r["kopl"]))) == 2 for r in compare)
    intersect = [r for r in records if r["template_id"] == by_name("WorkAndBornIntersection").id]
    assert intersect and all(r["answer"] for r in intersect)
    verify = Counter(r["answer"] for r in records if r["template_id"] == by_name("VerifyEmployment").id)
    share = verify["yes"] / (verify["yes"] + verify["no"])
    # Half drawn from the true employer, half uniform (1/800 of which hit it anyway).
    assert set(verify) == {"yes", "no"} and 0.47 < share < 0.53
    people = set(kb_entities.names["Person"])
    assert all(p in people for r in records[:5000] for p in re.findall(r"Person_\d+", r["kopl"]))


# ---- options ----------------------------------------------------------------------------------

def test_ten_distinct_options_with_the_gold_answer(splits):
    for records in splits.values():
        for r in records:
            choices = r["choices"]
            assert len(choices) == 10 and len(set(choices)) == 10 and r["answer"] in choices, r["id"]


def test_options_match_the_answer_type(splits):
    fillers = {"yes", "no", *ds.BOOLEAN_FILLERS}
    positions = Counter()
    for r in splits["test"]:
        gold, choices = r["answer"], r["choices"]
        positions[choices.index(gold)] += 1
        if gold in ("yes", "no"):
            assert set(choices) == fillers
        elif gold.isdigit():
            values = [int(c) for c in choices]
            assert all(v >= 0 and abs(v - int(gold)) <= ds.NUMERIC_RADIUS for v in values)
        else:
            members = gold.split("|")
            prefix = members[0].rsplit("_", 1)[0]
            for c in choices:
                parts = c.split("|")
                assert len(parts) == len(members) and parts == sorted(parts)
                assert all(p.rsplit("_", 1)[0] == prefix for p in parts)
    # Shuffled: the gold answer is not parked in one position.
    assert len(positions) == 10 and max(positions.values()) < 1.2 * len(splits["test"]) / 10


def test_make_choices_edge_cases(kb_entities):
    rng = random.Random(0)
    zero = ds.make_choices(Answer.number(0), kb_entities, rng)
    assert sorted(int(c) for c in zero)[0] == 0 and all(int(c) >= 0 for c in zero) and len(set(zero)) == 10
    pair = Answer.entities(["Person_00001", "Person_00002"])
    options = ds.make_choices(pair, kb_entities, rng)
    assert "Person_00001|Person_00002" in options and all(c.count("|") == 1 for c in options)
    decimal = ds.make_choices(Answer.number("12.5"), kb_entities, rng)
    assert "12.5" in decimal and len(set(decimal)) == 10
    assert all(abs(float(c) - 12.5) <= 1.0 + 1e-9 for c in decimal)   # ten tenths either side
    with pytest.raises(DatasetError, match="empty answer"):
        ds.make_choices(Answer.entities([]), kb_entities, rng)


# ---- gold answers -------------------------------------------------------------------------------

def test_gold_answers_re_executed_on_both_engines(splits, kb_schema):
    from kopl2sparql.compiler import compile_program
    from synkqa.benchmark.executors import get_executor

    native, sparql = get_executor("native", 42, 1), get_executor("oxigraph", 42, 1)
    rng = random.Random(7)
    sample = []
    for records in splits.values():
        by_template: dict[int, list] = {}
        for r in records:
            by_template.setdefault(r["template_id"], []).append(r)
        for group in by_template.values():
            sample += rng.sample(group, 15)
    # Train records in the fixture are slimmed; read the sampled ones in full (line i+1 is train-i).
    full = {r["id"]: r for split in ("validation", "test") for r in splits[split]}
    lines = {int(r["id"].split("-")[1]) for r in sample if r["split"] == "train"}
    with open(ds.paths.dataset_dir(42) / "train.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i in lines:
                record = json.loads(line)
                full[record["id"]] = record
    for r in (full[s["id"]] for s in sample):
        program = parse(r["kopl"])
        assert native.execute(program).canonical() == r["answer"], r["id"]
        assert sparql.execute(program).canonical() == r["answer"], r["id"]
        assert r["sparql"] == compile_program(program, kb_schema).sparql, r["id"]
        assert r["program"] == to_kqapro(program), r["id"]


def _engines_without(kb_turtle, relation: str, people: list[str]) -> ds.GoldEngines:
    """Gold engines whose SPARQL side runs on a copy of the KB missing ``relation`` edges of
    ``people`` (a real store with different data, so the engines really disagree)."""
    from store.oxigraph import OxigraphStore

    engines = ds.GoldEngines(42, 1)
    broken = OxigraphStore()
    broken.load_turtle(kb_turtle)
    target = {"born_in": engines.kb.birth_city, "works_at": engines.kb.employer}[relation]
    for person in people:
        broken.raw.remove(_quad(person, relation, target[person]))
    engines.use_sparql_store(broken)
    return engines


def test_engine_disagreement_names_the_program(kb_turtle):
    engines = _engines_without(kb_turtle, "born_in", ["Person_00371"])
    draft = ds.Draft("test", 0, by_name("BirthCountry"), (("Person", "Person_00371"),), "test")
    with pytest.raises(EngineDisagreement) as info:
        engines.run(draft)
    message = str(info.value)
    assert "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()" in message
    assert "native:  'Country_" in message and "sparql:  '' (entities)" in message
    # A program that does not touch the missing edge still agrees.
    other = ds.Draft("test", 1, by_name("BirthYear"), (("Person", "Person_00371"),), "test")
    assert engines.run(other)[2].kind == "number"


def test_failed_build_leaves_the_earlier_files(tmp_path, kb_turtle, kb_entities):
    out = ds.build(42, tmp_path / "d", sizes={"test": 2000})
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # Without any works_at edge on the SPARQL side, the first EmployerHQCountry,
    # WorkAndBornIntersection or VerifyEmployment question disagrees.
    engines = _engines_without(kb_turtle, "works_at", list(kb_entities.names["Person"]))
    with pytest.raises(EngineDisagreement):
        ds.build(42, out, sizes={"validation": 1000, "test": 1000}, engines=engines)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def _quad(subject: str, relation: str, obj: str):
    import pyoxigraph as ox
    from ontology import ENTITY_NS, NS
    return ox.Quad(ox.NamedNode(ENTITY_NS + subject), ox.NamedNode(NS + relation),
                   ox.NamedNode(ENTITY_NS + obj), ox.DefaultGraph())


# ---- files, caching, CLI ------------------------------------------------------------------------

def test_second_build_is_byte_identical(tmp_path, dataset_dir):
    sizes = {"validation": 10_000, "test": 10_000}
    out = ds.build(42, tmp_path / "again", sizes=sizes)
    for split in sizes:
        assert (out / f"{split}.jsonl").read_bytes() == (dataset_dir / f"{split}.jsonl").read_bytes()
    first = json.loads((dataset_dir / "manifest.json").read_text())
    second = json.loads((out / "manifest.json").read_text())
    assert second["splits"] == {s: first["splits"][s] for s in sizes}
    assert not list(out.glob(".*.part"))
    assert oct((out / "test.jsonl").stat().st_mode & 0o777) == "0o644"


def test_small_build_with_another_seed_differs(tmp_path):
    sizes = {"train": 300, "validation": 100, "test": 100}
    a = ds.build(42, tmp_path / "a", sizes=sizes)
    b = ds.build(7, tmp_path / "b", sizes=sizes)
    assert (a / "test.jsonl").read_bytes() != (b / "test.jsonl").read_bytes()
    assert len(ds.load_split("train", 42, a)) == 300


def test_ensure_dataset_reuses_and_repairs_the_cache(dataset_dir, splits):
    before = (dataset_dir / "test.jsonl").stat().st_mtime_ns
    assert ds.ensure_dataset(42, show_progress=False) == dataset_dir
    assert (dataset_dir / "test.jsonl").stat().st_mtime_ns == before
    manifest = dataset_dir / "manifest.json"
    saved = manifest.read_bytes()
    data = json.loads(saved)
    data["templates_sha256"] = "0" * 64
    manifest.write_text(json.dumps(data))
    assert not ds._manifest_ok(dataset_dir, 42)           # stale -> would rebuild
    manifest.write_bytes(saved)
    assert ds._manifest_ok(dataset_dir, 42)


def test_unknown_split_suggests_a_name(dataset_dir):
    with pytest.raises(DatasetError, match="did you mean validation"):
        ds.load_split("valdation", 42, dataset_dir)


def test_cli_stats_json_and_table(dataset_dir):
    runner = CliRunner()
    result = runner.invoke(app, ["dataset", "stats", "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["splits"]["train"]["questions"] == 100_000
    assert stats["splits"]["test"]["avg_steps"] == pytest.approx(3.84, abs=0.02)
    table = runner.invoke(app, ["dataset", "stats"], terminal_width=200)
    assert table.exit_code == 0
    assert "Table II" in table.stdout and "7.44 ± 2.74" in table.stdout and "BirthCountry" in table.stdout
    assert "1,502" in table.stdout                        # the paper's BirthCountry test count


def test_cli_usage_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["dataset", "stats", "--dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["dataset", "stats", "--dir", str(empty)])
    assert result.exit_code == 1 and "no train split" in result.stderr
    assert runner.invoke(app, ["dataset", "--help"]).exit_code == 0
