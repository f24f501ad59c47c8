"""``synkqa systems | train | predict | evaluate | reproduce`` in-process, on the study fixture
(a small hand-made dataset in the real record format, over the real scale-1 KB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from synkqa.cli import app

FIXTURES = Path(__file__).parent / "fixtures" / "study"
DATA = ["--data", str(FIXTURES)]
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    """predict inputs: the fixture's test questions with choices, and the same without."""
    root = tmp_path_factory.mktemp("predict")
    records = lines(FIXTURES / "test.jsonl")
    with_choices, without = root / "mc.jsonl", root / "open.jsonl"
    with_choices.write_text("".join(json.dumps({"id": r["id"], "question": r["question"], "choices": r["choices"]}) + "\n"
                                    for r in records))
    without.write_text("".join(json.dumps({"id": r["id"], "question": r["question"]}) + "\n" for r in records))
    return records, with_choices, without


def test_systems_lists_the_registry():
    result = invoke("systems", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["systems"]][:6] == ["random", "majority", "prototype", "tc", "ev-tc", "oracle"]
    from parsers import registry
    assert data["best"] == {"with_choices": registry.best_system(True).name,
                            "open_ended": registry.best_system(False).name}


def test_train_caches_the_model(kb_store):
    first = invoke("train", "--system", "tc", "--seed", "5", *DATA, "--json")
    assert first.exit_code == 0, first.output
    info = json.loads(first.stdout)
    assert Path(info["model"]).is_file() and info["model"].endswith(".pkl") and info["train_questions"] == 54
    assert 0 <= info["validation_template_accuracy"] <= 100
    again = json.loads(invoke("train", "--system", "ev-tc", "--seed", "5", *DATA, "--json").stdout)
    assert again["cached"] and again["model"] == info["model"]


def test_predict_with_choices(questions, tmp_path, kb_store):
    records, with_choices, _ = questions
    out = tmp_path / "pred.jsonl"
    result = invoke("predict", "--system", "ev-tc", "--input", with_choices, "--output", out, *DATA)
    assert result.exit_code == 0, result.output
    predicted = lines(out)
    assert [p["id"] for p in predicted] == [r["id"] for r in records]
    assert all(set(p) == {"id", "program", "answer"} for p in predicted)
    assert sum(p["answer"] == r["answer"] for p, r in zip(predicted, records)) == len(records)
    random_out = tmp_path / "random.jsonl"
    assert invoke("predict", "-s", "random", "-i", with_choices, "-o", random_out).exit_code == 0
    assert all(p["program"] is None and p["answer"] in r["choices"] for p, r in zip(lines(random_out), records))


def test_predict_without_choices(questions, tmp_path, kb_store):
    records, _, without = questions
    out = tmp_path / "open.jsonl"
    refused = invoke("predict", "--system", "ev-tc", "--input", without, "--output", out, *DATA)
    assert refused.exit_code == 1
    assert "needs an option set" in refused.stderr and "choices" in refused.stderr
    assert not out.exists()
    assert invoke("predict", "--system", "random", "-i", without, "-o", out).exit_code == 1
    ok = invoke("predict", "--system", "tc", "--input", without, "--output", out, *DATA)
    assert ok.exit_code == 0, ok.output
    predicted = lines(out)
    assert [p["id"] for p in predicted] == [r["id"] for r in records]
    # TC answers open-ended; an unfillable top-1 template gives no program and no answer
    assert all((p["program"] is None) == (p["answer"] is None) for p in predicted)
    assert sum(p["program"] is not None for p in predicted) > len(records) // 2


def test_predict_bad_inputs(tmp_path):
    out = tmp_path / "out.jsonl"
    missing = invoke("predict", "-s", "tc", "-i", tmp_path / "nope.jsonl", "-o", out, *DATA)
    assert missing.exit_code == 1 and "input file not found" in missing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "question": "Does Person_00001 work for Org_0001?"}\n{not json\n')
    bad = invoke("predict", "-s", "tc", "-i", broken, "-o", out, *DATA)
    assert bad.exit_code == 1 and "broken.jsonl:2" in bad.stderr
    no_question = tmp_path / "noq.jsonl"
    no_question.write_text('{"id": "1", "text": "hello"}\n')
    bad = invoke("predict", "-s", "tc", "-i", no_question, "-o", out, *DATA)
    assert bad.exit_code == 1 and "no 'question'" in bad.stderr
    oracle = invoke("predict", "-s", "oracle", "-i", no_question.with_name("noq.jsonl"), "-o", out)
    assert oracle.exit_code == 1


def test_unknown_system_suggests_a_name(tmp_path):
    result = invoke("evaluate", "--system", "evtc", *DATA)
    assert result.exit_code == 1
    assert "unknown system 'evtc'; did you mean ev-tc?" in result.stderr


def test_evaluate_json(kb_store):
    result = invoke("evaluate", "--system", "ev-tc", *DATA, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["overall"]["n"] == 18 and data["overall"]["accuracy"] == 100.0
    assert data["k"] == 5 and data["ranks"]["coverage"]["5"] == 100.0
    assert sum(data["selected_ranks"].values()) == 18
    k1 = json.loads(invoke("evaluate", "-s", "ev-tc", "--k", "1", *DATA, "--json").stdout)
    tc = json.loads(invoke("evaluate", "-s", "tc", *DATA, "--json").stdout)
    assert k1["overall"]["accuracy"] == tc["overall"]["accuracy"]
    text = invoke("evaluate", "-s", "prototype", "--split", "validation", *DATA)
    assert text.exit_code == 0 and "by reasoning type" in text.stdout
    assert invoke("evaluate", "-s", "tc", "--split", "dev", *DATA).exit_code == 1
    assert invoke("evaluate", "-s", "tc", "--backend", "sqlite", *DATA).exit_code == 2


@pytest.mark.slow
def test_reproduce_smoke_is_deterministic_with_any_number_of_workers(tmp_path, kb_store):
    first, second = tmp_path / "a", tmp_path / "b"
    result = invoke("reproduce", "--out", first, "--seeds", "0,1", "--workers", "2", *DATA)
    assert result.exit_code == 0, result.output
    # The first run spreads its stages over forked workers, the second runs them in one
    # process (without the compositional study, which costs most here): everything else but
    # the timings must come out byte for byte the same.
    assert invoke("reproduce", "--out", second, "--seeds", "0,1", "--workers", "1", "--no-compositional",
                  *DATA).exit_code == 0
    tables = sorted(p.name for p in (first / "tables").iterdir())
    assert len(tables) == 22 and "table_v.md" in tables and "table_xi.json" in tables
    figures = sorted(p.name for p in (first / "figures").iterdir())
    assert figures == ["fig2_example_trace.png", "fig3_accuracy_by_hop.png", "fig4_em_by_hop.png",
                       "fig5_error_types.png", "fig6_topk_ablation.png", "fig7_accuracy_by_reasoning.png"]
    for path in second.rglob("*"):
        if path.is_file() and "runtime" not in path.name and path.name != "SUMMARY.md":
            # timings are the only nondeterministic files
            assert path.read_bytes() == (first / path.relative_to(second)).read_bytes(), path
    assert not (second / "compositional.md").exists() and (first / "compositional.md").exists()
    summary_first, summary_second = ((d / "SUMMARY.md").read_text() for d in (first, second))
    assert summary_first.startswith(summary_second) and "## Compositional questions" in summary_first
    table_v = json.loads((first / "tables" / "table_v.json").read_text())
    assert table_v["columns"] == ["Model", "Answer accuracy", "Paper", "Program EM", "Paper", "Seed std"]
    assert [row[2] for row in table_v["rows"]] == [9.93, 15.17, 33.79, 43.27, 98.85, 100.0]
    table_i = json.loads((first / "tables" / "table_i.json").read_text())
    assert table_i["rows"][0] == ["Total entities", 8120, 8120]
    runtime = json.loads((first / "runtime.json").read_text())
    assert runtime["raw"]["tc"]["ms_per_question"] > 0 and runtime["raw"]["ratio"] > 0
    summary = (first / "SUMMARY.md").read_text()
    assert "Where our numbers differ" in summary and "table_ix.md" in summary
    assert "## Beyond the paper" in summary and (first / "generalization.md").exists()
    assert invoke("reproduce", "--seeds", "0,x", *DATA).exit_code == 2
