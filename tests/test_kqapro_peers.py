"""kqapro.peers: full-KoPL programs on ``kopl`` (in process) and ``kopl-engine`` (child process).

The ``kopl`` wheel's own example KB and expected answers (``kopl/test/test_example.py``) hold
through :class:`KoplPeer` with programs written as KQA Pro JSON; each of our rules fires its
note on a small KB built to trigger it; ``kopl-engine`` answers the simple programs, and
:func:`compare_engine` names why the others cannot be compared.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import pytest

from kqapro.answers import Answer
from kqapro.peers import (KoplEnginePeer, KoplPeer, PeerEngineError, PeerRawResult, compare_engine,
                          normalize_program, same_value_text)
from ontology.errors import ProgramError

pytestmark = pytest.mark.peers

pytest.importorskip("kopl", reason="the kopl package is not installed; pip install '.[peers]'")


def F(name: str) -> dict:
    return {"function": "Find", "inputs": [name], "dependencies": []}


def ALL() -> dict:
    return {"function": "FindAll", "inputs": [], "dependencies": []}


def S(function: str, inputs: list[str], deps: list[int]) -> dict:
    return {"function": function, "inputs": inputs, "dependencies": deps}


def players() -> list[dict]:
    """FindAll;FilterConcept(basketball player) -- steps 0 and 1."""
    return [ALL(), S("FilterConcept", ["basketball player"], [0])]


def drafted(relation: str = "drafted by") -> list[dict]:
    """Find(LeBron James);Relate(relation, forward) -- steps 0 and 1."""
    return [F("LeBron James"), S("Relate", [relation, "forward"], [0])]


def attr(name: str, key: str) -> list[dict]:
    return [F(name), S("QueryAttr", [key], [0])]


def names(*items: str) -> Answer:
    return Answer.of("names", items)


def values(*items: str) -> Answer:
    return Answer.of("values", items)


YES, NO = Answer.verdict("yes"), Answer.verdict("no")


@pytest.fixture(scope="module")
def example_kb() -> dict:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from kopl.test.test_example import example_kb
    return copy.deepcopy(example_kb)


@pytest.fixture(scope="module")
def peer(example_kb) -> KoplPeer:
    return KoplPeer(example_kb)


# Every expected answer of kopl/test/test_example.py (one case per assertion there), plus
# FindAll, And, Or and What on their own.
EXAMPLE_CASES = [
    ("Find", [F("LeBron James Jr."), S("What", [], [0])], names("LeBron James Jr.")),
    ("Relate", [F("LeBron James Jr."), S("Relate", ["father", "forward"], [0]), S("What", [], [1])],
     names("LeBron James")),
    ("SelectBetween", [F("LeBron James Jr."), F("LeBron James Jr."), S("Relate", ["father", "forward"], [1]),
                       S("SelectBetween", ["height", "greater"], [0, 2])], names("LeBron James")),
    ("SelectAmong", [F("LeBron James"), F("LeBron James Jr."), S("Or", [], [0, 1]),
                     S("SelectAmong", ["height", "largest"], [2])], names("LeBron James")),
    ("QueryAttr", attr("LeBron James", "height"), values("206 centimetre")),
    ("QueryRelationQualifier", [F("LeBron James"), F("Cleveland Cavaliers"),
                                S("QueryRelationQualifier", ["drafted by", "point in time"], [0, 1])],
     values("2003-06-26")),
    ("QueryAttrQualifier", [F("Akron"), S("QueryAttrQualifier", ["population", "199110", "point in time"], [0])],
     values("2010")),
    ("QueryAttrUnderCondition", [F("Akron"),
                                 S("QueryAttrUnderCondition", ["population", "point in time", "2010"], [0])],
     values("199110")),
    ("FilterConcept-none", [F("Cleveland Cavaliers"), S("FilterConcept", ["basketball player"], [0]),
                            S("What", [], [1])], names()),
    ("FilterConcept", [F("Cleveland Cavaliers"), S("FilterConcept", ["basketball team"], [0]), S("What", [], [1])],
     names("Cleveland Cavaliers")),
    ("FilterConcept-subclass", [ALL(), S("FilterConcept", ["athlete"], [0]), S("Count", [], [1])],
     Answer.count(2)),
    ("FilterNum-188", players() + [S("FilterNum", ["height", "188 centimetre", ">"], [1]), S("What", [], [2])],
     names("LeBron James")),
    ("FilterNum-180", players() + [S("FilterNum", ["height", "180 centimetre", ">"], [1]), S("Count", [], [2])],
     Answer.count(2)),
    ("FilterNum-no-unit", players() + [S("FilterNum", ["height", "180", ">"], [1]), S("Count", [], [2])],
     Answer.count(0)),
    ("FilterStr", players() + [S("FilterStr", ["sex or gender", "male"], [1]), S("What", [], [2])],
     names("LeBron James", "LeBron James Jr.")),
    ("FilterYear-2003", players() + [S("FilterYear", ["work period (start)", "2003", "="], [1]), S("What", [], [2])],
     names("LeBron James")),
    ("FilterYear-2000", players() + [S("FilterYear", ["work period (start)", "2000", "="], [1]), S("What", [], [2])],
     names()),
    ("FilterDate", players() + [S("FilterDate", ["date of birth", "1984-12-30", "="], [1]), S("What", [], [2])],
     names("LeBron James")),
    ("QFilterDate", drafted() + [S("QFilterDate", ["point in time", "2003-06-26", "="], [1]), S("What", [], [2])],
     names("Cleveland Cavaliers")),
    ("QFilterYear", drafted() + [S("QFilterYear", ["point in time", "2003", "="], [1]), S("What", [], [2])],
     names("Cleveland Cavaliers")),
    ("QFilterStr", drafted("member of sports team")
     + [S("QFilterStr", ["position played on team/speciality", "small forward"], [1]), S("What", [], [2])],
     names("Cleveland Cavaliers")),
    ("QFilterNum", drafted("member of sports team") + [S("QFilterNum", ["sport number", "23", "="], [1]),
                                                        S("What", [], [2])],
     names("Cleveland Cavaliers")),
    ("Count", players() + [S("Count", [], [1])], Answer.count(2)),
    ("VerifyStr-yes", attr("LeBron James", "sex or gender") + [S("VerifyStr", ["male"], [1])], YES),
    ("VerifyStr-no", attr("LeBron James", "sex or gender") + [S("VerifyStr", ["female"], [1])], NO),
    ("VerifyNum-yes", attr("LeBron James", "height") + [S("VerifyNum", ["206 centimetre", "="], [1])], YES),
    ("VerifyNum-no", attr("LeBron James", "height") + [S("VerifyNum", ["208 centimetre", "="], [1])], NO),
    ("VerifyDate-yes", attr("LeBron James", "date of birth") + [S("VerifyDate", ["1984-12-30", "="], [1])], YES),
    ("VerifyDate-no", attr("LeBron James", "date of birth") + [S("VerifyDate", ["1983-12-30", "="], [1])], NO),
    ("VerifyYear-yes", attr("LeBron James", "date of birth") + [S("VerifyYear", ["1984", "="], [1])], YES),
    ("VerifyYear-no", attr("LeBron James", "date of birth") + [S("VerifyYear", ["1983", "="], [1])], NO),
    ("VerifyNum-not-sure", players() + [S("QueryAttr", ["height"], [1]), S("VerifyNum", ["200 centimetre", ">"], [2])],
     Answer.verdict("not sure")),
    ("QueryRelation", [F("LeBron James Jr."), F("LeBron James"), S("QueryRelation", [], [0, 1])],
     Answer.of("relations", ["father"])),
    ("FindAll", [ALL(), S("What", [], [0])],
     names("Akron", "Cleveland Cavaliers", "LeBron James", "LeBron James Jr.")),
    ("And", [F("LeBron James"), *players()[0:1], S("FilterConcept", ["athlete"], [1]), S("And", [], [0, 2]),
             S("What", [], [3])], names("LeBron James")),
    ("And-empty", [F("LeBron James"), F("Akron"), S("And", [], [0, 1]), S("Count", [], [2])], Answer.count(0)),
    ("Or", [F("Akron"), F("LeBron James"), S("Or", [], [0, 1]), S("What", [], [2])],
     names("Akron", "LeBron James")),
    ("What-QueryName-alias", [F("Akron"), S("QueryName", [], [0])], names("Akron")),
]


CASE = {name: program for name, program, _ in EXAMPLE_CASES}


@pytest.mark.parametrize("program, expected", [c[1:] for c in EXAMPLE_CASES], ids=[c[0] for c in EXAMPLE_CASES])
def test_kopl_example_answers(peer, program, expected):
    result = peer.run(program)
    assert result.error is None, result.error
    assert result.answer == expected


def test_every_function_has_an_example_case():
    from kqapro.functions import FUNCTIONS
    used = {normalize_program(program)[i]["function"] for _, program, _ in EXAMPLE_CASES
            for i in range(len(program))}
    assert used == set(FUNCTIONS)


def test_peer_leaves_the_callers_kb_alone(example_kb):
    before = json.dumps(example_kb, sort_keys=True)
    KoplPeer(example_kb).run([F("Akron"), S("QueryAttr", ["population"], [0])])
    assert json.dumps(example_kb, sort_keys=True) == before


def test_kopl_is_silent(example_kb, capsys):
    KoplPeer(example_kb)
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_dependencies_are_followed_not_positions(peer):
    # kopl's forward would join the last two branches; the dependencies say Find(Akron) is
    # unused by the And and the program asks for LeBron James Jr.'s father only.
    program = [F("LeBron James Jr."), S("Relate", ["father", "forward"], [0]), F("LeBron James"),
               S("And", [], [1, 2]), S("What", [], [3])]
    assert peer.run(program).answer == names("LeBron James")


# ---- each rule's note, on a KB built to trigger it -------------------------------------------

def q(value, unit="1") -> dict:
    return {"type": "quantity", "value": value, "unit": unit}


def fact(key: str, value: dict, qualifiers: dict | None = None) -> dict:
    return {"key": key, "value": value, "qualifiers": qualifiers or {}}


def edge(relation: str, obj: str, direction: str = "forward", qualifiers: dict | None = None) -> dict:
    return {"relation": relation, "direction": direction, "object": obj, "qualifiers": qualifiers or {}}


def entity(name: str, attributes=(), relations=(), concepts=()) -> dict:
    return {"name": name, "instanceOf": list(concepts), "attributes": list(attributes),
            "relations": list(relations)}


@pytest.fixture(scope="module")
def rules_kb() -> dict:
    year = {"type": "year", "value": 1999}
    return {
        "concepts": {"C1": {"name": "city", "subclassOf": []}, "C2": {"name": "Tower", "subclassOf": ["C1"]}},
        "entities": {
            "E1": entity("Hub", [fact("h", q(10, "ft"))],
                         [edge("road", "E2", qualifiers={"since": [year]}),
                          edge("road", "E2", qualifiers={"since": [{"type": "year", "value": 2005}]})]),
            "E2": entity("Tower", [fact("h", q(7, "foot")), fact("h", q(9, "foot")), fact("x", q(2.000001)),
                                   fact("y", q(-2.5))], [edge("road", "E1", "backward")], ["C1"]),
            "E3": entity("Spire", [fact("h", q(7, "aa")), fact("x", q(2.000001))], concepts=["C1"]),
            "E4": entity("Mast", [fact("h", q(5, "foot"))], concepts=["C2"]),
            "E5": entity("Dome", [fact("x", q(2.000001))]),
        },
    }


@pytest.fixture(scope="module")
def rules(rules_kb) -> KoplPeer:
    return KoplPeer(rules_kb)


def test_count_duplicates(rules):
    result = rules.run([ALL(), S("FilterNum", ["h", "6 foot", ">"], [0]), S("Count", [], [1])])
    assert result.answer == Answer.count(1) and "count-duplicates" in result.notes     # kopl: 2 (two facts)
    result = rules.run([F("Hub"), S("Relate", ["road", "forward"], [0]), S("Count", [], [1])])
    assert result.answer == Answer.count(1) and "count-duplicates" in result.notes     # two road facts
    assert rules.run([F("Hub"), S("Count", [], [0])]).notes == ()


def test_concepts_dropped(rules):
    result = rules.run([ALL(), S("Count", [], [0])])
    assert result.answer == Answer.count(5) and result.notes == ("concepts-dropped",)   # kopl: 7
    # FilterConcept(city) would also keep the concept Tower (a subclass of city)
    result = rules.run([ALL(), S("FilterConcept", ["city"], [0]), S("What", [], [1])])
    assert result.answer == names("Mast", "Spire", "Tower")
    result = rules.run([F("Tower"), S("QueryAttr", ["y"], [0])])     # a concept and an entity share the name
    assert result.answer == values("-2.5") and result.notes == ("concepts-dropped",)


def test_select_between_keeps_ties(rules):
    result = rules.run([F("Dome"), F("Spire"), S("SelectBetween", ["x", "greater"], [0, 1])])
    assert result.answer == names("Dome", "Spire") and result.notes == ("select-tie",)
    raw = rules.engine.SelectBetween(rules.engine.Find("Dome"), rules.engine.Find("Spire"), "x", "greater")
    assert raw in ("Dome", "Spire")                                   # kopl: one of them


def test_select_among_keeps_ties(rules):
    result = rules.run([ALL(), S("SelectAmong", ["x", "smallest"], [0])])
    assert result.answer == names("Dome", "Spire", "Tower") and result.notes == ("concepts-dropped",)


def test_unit_vote(rules):
    # one candidate in ft, one in aa: kopl takes the first seen (ft, Hub), ours the smallest unit text
    program = [F("Hub"), F("Spire"), S("SelectBetween", ["h", "greater"], [0, 1])]
    result = rules.run(program)
    assert result.answer == names("Spire") and result.notes == ("unit-vote",)
    assert rules.engine.SelectBetween(rules.engine.Find("Hub"), rules.engine.Find("Spire"), "h", "greater") == "Hub"
    # Tower listed twice (two road facts) votes once per fact in ours, twice in kopl: same unit
    # here, so no note
    program = [F("Hub"), S("Relate", ["road", "forward"], [0]), F("Mast"),
               S("SelectBetween", ["h", "less"], [1, 2])]
    result = rules.run(program)
    assert result.answer == names("Mast") and result.notes == ()


def test_unit_vote_distinct_candidates(rules_kb):
    # left: Hub twice (one ft fact each time -> 2 kopl votes), right: Spire, Dome with one aa fact
    # each -> 2 votes; kopl: tie, first seen ft. Ours: ft 1, aa 2 -> aa.
    kb = copy.deepcopy(rules_kb)
    kb["entities"]["E5"]["attributes"].append(fact("h", q(8, "aa")))
    kb["entities"]["E6"] = entity("Root", relations=[edge("to", "E1"), edge("to", "E1", qualifiers={"n": [q(2)]})])
    peer = KoplPeer(kb)
    program = [F("Root"), S("Relate", ["to", "forward"], [0]), F("Spire"), F("Dome"), S("Or", [], [2, 3]),
               S("SelectBetween", ["h", "greater"], [1, 4])]
    result = peer.run(program)
    assert result.answer == names("Dome") and result.notes == ("unit-vote",)


def test_empty_select(rules):
    result = rules.run([ALL(), S("SelectAmong", ["nokey", "largest"], [0])])
    assert result.answer == names() and result.notes == ("concepts-dropped", "empty-select")
    result = rules.run([F("Hub"), F("Dome"), S("SelectBetween", ["y", "less"], [0, 1])])
    assert result.answer == names() and result.notes == ("empty-select",)
    with pytest.raises(IndexError):                                   # what kopl does
        rules.engine.SelectBetween(rules.engine.Find("Hub"), rules.engine.Find("Dome"), "y", "less")


def test_missing_backward(peer, rules):
    # kopl's example KB writes no backward edges: kopl's own Relate finds nothing
    result = peer.run([F("LeBron James"), S("Relate", ["father", "backward"], [0]), S("What", [], [1])])
    assert result.answer == names("LeBron James Jr.") and result.notes == ("missing-backward",)
    # the rules KB writes Tower's backward copy of one road fact but not of the other
    result = rules.run([F("Tower"), S("Relate", ["road", "backward"], [0]),
                        S("QFilterYear", ["since", "2000", ">"], [1]), S("What", [], [2])])
    assert result.answer == names("Hub") and result.notes == ("concepts-dropped", "missing-backward")


def test_backward_edges_written_make_no_note():
    kb = {"concepts": {}, "entities": {
        "A": entity("A", relations=[edge("r", "B")]), "B": entity("B", relations=[edge("r", "A", "backward")])}}
    result = KoplPeer(kb).run([F("B"), S("Relate", ["r", "backward"], [0]), S("What", [], [1])])
    assert result.answer == names("A") and result.notes == ()


def test_duplicate_items(peer):
    result = peer.run(players() + [S("QueryAttr", ["sex or gender"], [1])])
    assert result.answer == values("male") and result.notes == ("concepts-dropped", "duplicate-items")


def test_values_through_our_value_model(rules):
    # kopl's str() prints 2.000001 as "2" and -2.5 as "-2"
    assert rules.run([F("Dome"), S("QueryAttr", ["x"], [0])]).answer == values("2.000001")
    assert rules.run([F("Tower"), S("QueryAttr", ["y"], [0])]).answer == values("-2.5")
    assert rules.run([F("Tower"), S("QueryAttr", ["h"], [0])]).answer == values("7 foot", "9 foot")


def test_kopl_exceptions_are_error_results(rules):
    result = rules.run([ALL(), S("FilterNum", ["h", "abc", ">"], [0]), S("Count", [], [1])])
    assert result.answer is None and result.error.startswith("ValueError: ")
    assert result.notes == ("concepts-dropped",)
    result = rules.run([F("Hub"), S("QueryAttrUnderCondition", ["h", "no such qualifier", "1"], [0])])
    assert result.error == "KeyError: 'no such qualifier'"
    long = "x" * 500
    result = rules.run([F("Hub"), S("QueryAttrUnderCondition", ["h", long, "1"], [0])])
    assert len(result.error) <= len("KeyError: ") + 200


@pytest.mark.parametrize("program", [
    [],
    [S("Frobnicate", [], [])],
    [F("Hub"), S("What", [], [])],
    [F("Hub"), S("What", [], [1])],
    [F("Hub"), S("Relate", ["road"], [0]), S("What", [], [1])],
    [F("Hub"), S("Relate", ["road", "forward"], [0])],                 # ends in entities
])
def test_malformed_programs_raise(rules, program):
    with pytest.raises(ProgramError):
        rules.run(program)


def test_viskop_dependency_padding_accepted(rules):
    program = [{"function": "Find", "inputs": ["Hub"], "dependencies": [-1, -1]},
               {"function": "What", "inputs": [], "dependencies": [0, -1]}]
    assert rules.run(program).answer == names("Hub")


# ---- kopl-engine ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def engine(example_kb, tmp_path_factory):
    pytest.importorskip("kopl_engine", reason="the kopl-engine package is not installed; pip install '.[peers]'")
    path = tmp_path_factory.mktemp("kopl-engine") / "kb.json"
    path.write_text(json.dumps(example_kb))
    with KoplEnginePeer(path) as peer:
        yield peer


SIMPLE = [
    (CASE["Relate"], "LeBron James"),
    (attr("LeBron James", "height"), "206 centimetre"),
    (attr("Akron", "population"), "199110"),
    (attr("LeBron James", "date of birth"), "1984-12-30"),
    (attr("LeBron James", "work period (start)"), "2003"),
    (players() + [S("Count", [], [1])], "2"),
    (attr("LeBron James", "sex or gender") + [S("VerifyStr", ["male"], [1])], "yes"),
    (attr("LeBron James", "height") + [S("VerifyNum", ["208 centimetre", "="], [1])], "no"),
    (CASE["QueryRelation"], "father"),
    (CASE["QueryRelationQualifier"], "2003-06-26"),
    (CASE["QueryAttrQualifier"], "2010"),
    (CASE["SelectBetween"], "LeBron James"),
    (CASE["What-QueryName-alias"], "Akron"),                                   # QueryName sent as What
]


def test_engine_answers_simple_programs(engine, peer, example_kb):
    raws = engine.run_many([p for p, _ in SIMPLE])
    assert [r.text for r in raws] == [t for _, t in SIMPLE]
    for (program, _), raw in zip(SIMPLE, raws):
        assert compare_engine(peer.run(program).answer, raw, program, example_kb) == ("agree", None)


@pytest.mark.parametrize("program, reason", [
    (players() + [S("What", [], [1])], "first-item-only"),
    (players() + [S("QueryAttr", ["height"], [1])], "first-item-only"),
    (attr("LeBron James", "nokey"), "empty-as-no"),
    ([F("Nobody"), S("What", [], [0])], "empty-as-no"),
    ([ALL(), S("Count", [], [0])], "concepts-included"),               # engine 8: concepts counted
    (attr("LeBron James", "nokey") + [S("VerifyStr", ["x"], [1])], "verify-empty-yes"),
    (CASE["QueryAttrUnderCondition"], "under-condition-unsupported"),
])
def test_engine_incomparable(engine, peer, example_kb, program, reason):
    raw = engine.run(program)
    assert compare_engine(peer.run(program).answer, raw, program, example_kb) == ("incomparable", reason)


def test_engine_crash_restarts_and_continues(engine, peer, example_kb):
    crashes = engine.crashes
    programs = [
        [F("LeBron James"), S("Relate", ["father", "sideways"], [0]), S("What", [], [1])],   # exit 125
        attr("LeBron James", "height"),
        [F("LeBron James"), F("Akron"), S("SelectBetween", ["height", "bigger"], [0, 1])],    # exit 234
        [F("LeBron James Jr."), S("Relate", ["father", "forward"], [0]), S("What", [], [1])],
        [{"function": "Find", "inputs": ["Akron"]}],                                           # malformed
    ]
    raws = engine.run_many(programs)
    assert raws[0] == PeerRawResult(None, "crashed (exit 125)")
    assert raws[1] == PeerRawResult("206 centimetre")
    assert raws[2] == PeerRawResult(None, "crashed (exit 234)")
    assert raws[3] == PeerRawResult("LeBron James")
    assert raws[4].text is None and raws[4].error.startswith("ProgramError")
    assert engine.crashes == crashes + 2
    ours = peer.run(programs[0]).answer                                   # kopl: the empty set
    assert compare_engine(ours, raws[0], programs[0], example_kb) == ("incomparable", "crashed")
    assert compare_engine(names(), raws[4], programs[4], example_kb) == ("incomparable", "invalid-program")


def test_engine_crash_kills_only_a_forked_copy(engine):
    """The child loads the KB once and runs programs in forked copies of itself: a program
    that kills the engine (SIGSEGV on Verify* after a qualifier query, exit 125 on a bad
    direction) costs a copy, not a reload, and the same child answers the next program."""
    pid, crashes = engine._proc.pid, engine.crashes
    segv = CASE["QueryAttrQualifier"] + [S("VerifyYear", ["2010", "="], [1])]
    bad_direction = [F("LeBron James"), S("Relate", ["father", "sideways"], [0]), S("What", [], [1])]
    height = attr("LeBron James", "height")
    raws = engine.run_many([segv, height, bad_direction, height, segv])
    assert [r.error for r in raws] == ["crashed (exit -11)", None, "crashed (exit 125)", None, "crashed (exit -11)"]
    assert raws[1].text == raws[3].text == "206 centimetre"
    assert engine._proc.pid == pid and engine.crashes == crashes + 3


def test_engine_missing_file(tmp_path):
    with pytest.raises(PeerEngineError, match="no such KB JSON file"):
        KoplEnginePeer(tmp_path / "missing.json").start()


@pytest.fixture(scope="module")
def engine_rules(rules_kb, tmp_path_factory):
    pytest.importorskip("kopl_engine", reason="the kopl-engine package is not installed; pip install '.[peers]'")
    kb = copy.deepcopy(rules_kb)
    kb["entities"]["E7"] = entity("Spire", [fact("x", q(100.0)), fact("z", q(1.5, "metre"))])   # a 2nd Spire
    kb["entities"]["E8"] = entity("Stack", [fact("x", q(100.0)), fact("z", q(1.5, "metre"))])
    path = tmp_path_factory.mktemp("kopl-engine-rules") / "kb.json"
    path.write_text(json.dumps(kb))
    with KoplEnginePeer(path) as peer:
        yield kb, KoplPeer(kb), peer


@pytest.mark.parametrize("program, text, verdict", [
    ([F("Stack"), S("QueryAttr", ["x"], [0])], "100.0", ("agree", None)),        # a JSON float: "100.0"
    ([F("Stack"), S("QueryAttr", ["z"], [0])], "1.5 metre", ("agree", None)),
    ([F("Dome"), S("QueryAttr", ["x"], [0])], "2.0", ("incomparable", "near-integer-rounded")),
    # a concept and an entity named Tower: the engine happened to keep the entity; agreement wins
    ([F("Tower"), S("QueryAttr", ["y"], [0])], "-2.5", ("agree", None)),
    ([F("Spire"), S("QueryAttr", ["x"], [0])], "2.0", ("incomparable", "one-entity-per-name")),
    ([F("Spire"), S("Count", [], [0])], "1", ("incomparable", "one-entity-per-name")),
    ([ALL(), S("FilterNum", ["h", "6 foot", ">"], [0]), S("Count", [], [1])], "2",
     ("incomparable", "count-duplicates")),
])
def test_engine_numbers_and_structural_reasons(engine_rules, program, text, verdict):
    kb, kopl, engine = engine_rules
    raw = engine.run(program)
    assert raw.text == text
    assert compare_engine(kopl.run(program).answer, raw, program, kb, kopl=kopl) == verdict


def test_compare_engine_without_running_it(peer, example_kb):
    program = players() + [S("What", [], [1])]
    ours = peer.run(program).answer
    assert compare_engine(ours, PeerRawResult("LeBron James"), program, example_kb) == \
        ("incomparable", "first-item-only")
    assert compare_engine(ours, PeerRawResult("Akron"), program, example_kb) == ("disagree", None)
    count = players() + [S("Count", [], [1])]
    assert compare_engine(Answer.count(2), PeerRawResult("3"), count, example_kb) == ("disagree", None)
    assert compare_engine(Answer.count(2), PeerRawResult(None, "engine: Dependency Error!"), count,
                          example_kb) == ("incomparable", "engine-error")
    assert compare_engine(Answer.count(2), PeerRawResult(None, "garbled output (UnicodeDecodeError)"), count,
                          example_kb) == ("incomparable", "garbled-output")


@pytest.mark.parametrize("engine_text, ours, same", [
    ("199110", "199110", True), ("100.0", "100", True), ("100000000000000000000.0", "1e+20", True),
    ("206 centimetre", "206 centimetre", True), ("206.0 centimetre", "206 centimetre", True),
    ("206 centimetre", "206 metre", False), ("206", "206 centimetre", False), ("2.0", "2.000001", False),
    ("1984-12-30", "1984-12-30", True), ("male", "female", False),
])
def test_same_value_text(engine_text, ours, same):
    assert same_value_text(engine_text, ours) is same


def test_engine_timeout_restarts(example_kb, tmp_path):
    pytest.importorskip("kopl_engine", reason="the kopl-engine package is not installed; pip install '.[peers]'")
    path = tmp_path / "kb.json"
    path.write_text(json.dumps(example_kb))
    with KoplEnginePeer(path, timeout=1e-9) as engine:     # no answer can arrive in a nanosecond
        raw = engine.run(attr("LeBron James", "height"))
        assert raw.text is None and raw.error.startswith("timeout") and engine.crashes == 1
        engine.timeout = 60.0
        assert engine.run(attr("LeBron James", "height")) == PeerRawResult("206 centimetre")
