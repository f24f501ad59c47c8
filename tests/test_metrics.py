"""Metric computations on tiny hand-made records and predictions with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation import metrics
from evaluation.tables import Table
from parsers.base import Candidate, Prediction


def rec(answer, kopl, template_id, hops=1, reasoning="attribute"):
    return {"answer": answer, "kopl": kopl, "template_id": template_id, "hops": hops, "reasoning": reasoning}


RECORDS = [
    rec("1964", "Find(P1);QueryAttr(birth_year)", 0, 1, "attribute"),
    rec("Country_062", "Find(P1);Relate(born_in);Relate(located_in);QueryName()", 2, 2, "multi-hop"),
    rec("Country_062", "Find(P2);Relate(born_in);Relate(located_in);QueryName()", 2, 2, "multi-hop"),
    rec("yes", "Find(P3);VerifyRel(works_at,O1)", 8, 1, "verify"),
]
PREDICTIONS = [
    Prediction("a", "Find(P1); QueryAttr(birth_year)", "1964", 0),                      # correct (spaces ignored)
    Prediction("b", "Find(P1);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()",
               "Country_062", 3),                                                       # right answer, wrong program
    Prediction("c", "Find(P2);Relate(born_in);QueryName()", "City_0001", 1),            # wrong template
    Prediction("d", None, None, 8),                                                     # gold template, unfillable
]


def test_accuracy_and_program_em():
    s = metrics.score(RECORDS, PREDICTIONS)
    assert (s["n"], s["correct"], s["exact"]) == (4, 2, 1)
    assert s["accuracy"] == 50.0 and s["program_em"] == 25.0
    with pytest.raises(ValueError):
        metrics.score(RECORDS, PREDICTIONS[:3])


def test_breakdowns_by_hop_reasoning_and_template():
    by_hops = metrics.breakdown(RECORDS, PREDICTIONS, "hops")
    assert list(by_hops) == [1, 2]
    assert by_hops[1] == {"n": 2, "correct": 1, "exact": 1, "accuracy": 50.0, "program_em": 50.0}
    assert by_hops[2] == {"n": 2, "correct": 1, "exact": 0, "accuracy": 50.0, "program_em": 0.0}
    by_template = metrics.breakdown(RECORDS, PREDICTIONS, "template_id")
    assert by_template[2]["n"] == 2 and by_template[8]["accuracy"] == 0.0
    by_kind = metrics.breakdown(RECORDS, PREDICTIONS, lambda r: r["reasoning"] == "multi-hop")
    assert by_kind[True]["correct"] == 1 and by_kind[False]["correct"] == 1


def test_error_types():
    kinds = [metrics.error_type(r, p) for r, p in zip(RECORDS, PREDICTIONS)]
    assert kinds == ["Correct", "CorrectAnswerWrongProgram", "WrongTemplate", "SlotFillError"]
    counts = metrics.error_counts(RECORDS, PREDICTIONS)
    assert set(counts) == set(metrics.ERROR_TYPES) and sum(counts.values()) == 4
    assert counts["SpuriousPass"] == 0


def test_error_types_of_validated_and_optionless_systems():
    record = RECORDS[1]
    cand = (Candidate(1, 1, 0.5, "x", "City_0001", "not-in-options", True),)
    passed_wrong = Prediction("b", "Find(P1);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()",
                              "Country_001", 3, selected_rank=2, executions=2, candidates=cand)
    fallback = Prediction("b", "Find(P1);Relate(born_in);QueryName()", "City_0001", 1, fallback=True,
                          executions=5, candidates=cand)
    gold_but_wrong = Prediction("b", record["kopl"], "Country_999", 2)
    random_pick = Prediction("b", None, "Country_001")
    random_right = Prediction("b", None, "Country_062")
    assert metrics.error_type(record, passed_wrong) == "SpuriousPass"
    assert metrics.error_type(record, fallback) == "NoCandidatePassed"
    assert metrics.error_type(record, gold_but_wrong) == "ExecutionFailure"
    assert metrics.error_type(record, random_pick) == "WrongAnswer"
    assert metrics.error_type(record, random_right) == "Correct"


def test_confusions_group_wrong_programs():
    rows = metrics.confusions(RECORDS, PREDICTIONS)
    assert {(r["gold"], r["predicted"], r["error"]) for r in rows} == {
        (2, 3, "CorrectAnswerWrongProgram"), (2, 1, "WrongTemplate"), (8, 8, "SlotFillError")}


def test_gold_ranks_and_coverage():
    ranking = np.array([[0, 2, 8], [3, 1, 2], [2, 0, 1], [1, 3, 0]])
    ranks = metrics.gold_ranks(RECORDS, ranking)
    assert ranks == [1, 3, 1, None]
    assert metrics.rank_histogram(ranks, 2) == {"1": 2, "2": 0, "none": 2}
    assert metrics.topk_coverage(ranks, [1, 2, 3]) == {1: 50.0, 2: 50.0, 3: 75.0}
    assert metrics.mean_rank(ranks) == pytest.approx(5 / 3)
    assert metrics.mean_rank([None]) is None


def test_selected_ranks_and_executions():
    preds = [Prediction("a", "p", "x", 0, selected_rank=1, executions=1),
             Prediction("b", "p", "x", 0, selected_rank=3, executions=3),
             Prediction("c", "p", "x", 0, fallback=True, executions=4),
             Prediction("d", "p", "x", 0, selected_rank=3, executions=2)]
    assert metrics.selected_ranks(preds, 3) == {"1": 1, "2": 0, "3": 2, "fallback": 1}
    assert metrics.mean_executions(preds) == 2.5
    assert metrics.mean_executions([]) == 0.0


def test_evaluate_bundles_everything():
    result = metrics.evaluate(RECORDS, PREDICTIONS)
    assert result["overall"]["accuracy"] == 50.0
    assert set(result) >= {"by_hops", "by_reasoning", "by_template", "errors", "confusions", "mean_executions"}
    assert "selected_ranks" not in result                       # no EV-TC candidates here


def test_table_markdown_and_json():
    table = Table("t", "V", "Demo", ["Model", "Ours", "Paper"], [["TC", 43.2666, None], ["a|b", 1, 2.5]],
                  ["a note"])
    md = table.markdown()
    assert "| TC | 43.27 | – |" in md and "a\\|b" in md and "- a note" in md
    assert table.to_json()["rows"][0] == ["TC", 43.2666, None]


# ---- study records are validated where they are read ----------------------------------------

GOOD_RECORD = {"id": "test-00000", "split": "test", "question": "In which year was Person_01503 born?",
               "choices": ["1959", "1960"], "answer": "1959", "kopl": "Find(Person_01503);QueryAttr(birth_year)",
               "template_id": 0, "template": "BirthYear", "reasoning": "attribute", "hops": 1}


@pytest.mark.parametrize("change, message", [
    ({"answer": None}, "missing field 'answer'"),
    ({"hops": None}, "missing field 'hops'"),
    ({"reasoning": None}, "missing field 'reasoning'"),
    ({"template_id": None}, "missing field 'template_id'"),
    ({"template_id": "0"}, "field 'template_id' must be an integer, not str"),
    ({"hops": True}, "field 'hops' must be an integer, not bool"),
    ({"choices": "1959"}, "field 'choices' must be a list, not str"),
    ({"choices": [1959]}, "field 'choices' must be a list of strings"),
])
def test_a_bad_study_record_is_named_with_its_line(tmp_path, change, message):
    import json
    from kopl2sparql.errors import DatasetError
    from evaluation.runner import load_splits
    record = {k: v for k, v in {**GOOD_RECORD, **change}.items() if v is not None}
    (tmp_path / "test.jsonl").write_text(json.dumps(GOOD_RECORD) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(DatasetError, match=f"test.jsonl:2: {message}"):
        load_splits(("test",), data_dir=tmp_path)


def test_a_good_study_record_loads(tmp_path):
    import json
    from evaluation.runner import load_splits
    (tmp_path / "test.jsonl").write_text(json.dumps(GOOD_RECORD) + "\n")
    assert load_splits(("test",), data_dir=tmp_path)["test"][0]["answer"] == "1959"
