"""The small public API (synkqa.api): the calls the CLI and the web service are built on."""

from __future__ import annotations

from pathlib import Path

import pytest

import synkqa.api as sk
from kopl2sparql.errors import ConfigError, DatasetError, ExecutionError, ProgramSyntaxError, ProgramTypeError

CAMPUS = Path(__file__).parent / "fixtures" / "kb" / "campus.ttl"


@pytest.fixture(scope="module")
def campus():
    return sk.open_kb(CAMPUS)


def test_execute_and_trace_on_any_kb_and_both_engines(campus):
    for backend in ("native", "oxigraph"):
        assert sk.execute("Find(Alex Kim);Relate(advisor);QueryName()", campus, backend).canonical() \
            == "Ada Lovelace|Edsger Dijkstra"
        steps = sk.trace("Find(Alex Kim);Relate(advisor)", campus, backend)
        assert [s.value.canonical() for s in steps] == ["s01|s02", "p01|p04"]
    assert sk.execute("Find(Alex Kim);Count()", campus, cross_check=True).canonical() == "2"


def test_programs_as_text_json_text_or_list(campus):
    steps = [{"function": "Find", "inputs": ["Alex Kim"], "dependencies": []},
             {"function": "Count", "inputs": [], "dependencies": [0]}]
    import json
    assert sk.execute(steps, campus).canonical() == "2"
    assert sk.execute(json.dumps(steps), campus).canonical() == "2"
    with pytest.raises(ProgramSyntaxError, match="not valid KQA Pro JSON"):
        sk.read_program("[{")


def test_compile_and_typecheck_use_the_kbs_schema(campus):
    compiled = sk.compile("Find(Calculus I);RelateInv(teaches);Count()", campus)
    assert "cv:teaches cid:k1" in compiled.sparql and compiled.form == "select-number"
    assert sk.typecheck("Find(Calculus I);QueryAttr(title)", campus).answer_kind == "string"
    with pytest.raises(ProgramTypeError, match="did you mean teaches"):
        sk.compile("Find(Ada Lovelace);Relate(teachs);QueryName()", campus)


def test_default_kb_is_synkqa(kb_turtle):
    assert sk.execute("Find(Person_00371);Relate(born_in);QueryName()").canonical() == "City_0359"
    with pytest.raises(ExecutionError, match="unknown entity"):
        sk.execute("Find(Person_99999);QueryName()")


def test_open_kb_refuses_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        sk.open_kb(tmp_path / "none.ttl")


def test_evaluate_scores_by_id():
    gold = [{"id": 1, "answer": "7", "kopl": "Find(City_0001);RelateInv(born_in);Count()"},
            {"id": 2, "answer": "no", "kopl": "Find(Person_00001);VerifyRel(works_at,Org_0001)"}]
    predicted = [{"id": 2, "answer": "yes", "program": None},
                 {"id": 1, "answer": "7", "program": "Find(City_0001);RelateInv(born_in);Count()"}]
    assert sk.evaluate(gold, predicted) == {"n": 2, "correct": 1, "exact": 1, "accuracy": 50.0, "program_em": 50.0}
    with pytest.raises(DatasetError, match="no gold record"):
        sk.evaluate(gold, [{"id": 9, "answer": "x"}])
