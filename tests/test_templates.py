"""The nine templates as data: Table III skeletons, weights, paraphrases and their separation."""

from __future__ import annotations

import json
import re

import pytest

from kopl2sparql.errors import DatasetError
from kopl2sparql.syntax import parse
from synkqa.benchmark import templates as templates_module
from synkqa.benchmark.templates import Template, by_name, templates

FIG2 = "The city where Person_00371 was born is located in which country?"

# Table III of the paper, in DESIGN.md's canonical spelling.
TABLE_III = {
    0: ("BirthYear", "attribute", 1, 0.10, "Find(P);QueryAttr(birth_year)"),
    1: ("BirthCity", "multi-hop", 1, 0.10, "Find(P);Relate(born_in);QueryName()"),
    2: ("BirthCountry", "multi-hop", 2, 0.15, "Find(P);Relate(born_in);Relate(located_in);QueryName()"),
    3: ("EmployerHQCountry", "multi-hop", 3, 0.10,
        "Find(P);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()"),
    4: ("CountBornIn", "count", 1, 0.12, "Find(C);RelateInv(born_in);Count()"),
    5: ("CompareCityPopulation", "compare", 1, 0.10,
        "Find(C1);QueryAttr(population);Find(C2);QueryAttr(population);Compare(>)"),
    6: ("ArgmaxCityInCountry", "argmax", 2, 0.10, "Find(K);RelateInv(located_in);Argmax(population);QueryName()"),
    7: ("WorkAndBornIntersection", "set", 2, 0.13,
        "Find(O);RelateInv(works_at);Find(C);RelateInv(born_in);And();QueryName()"),
    8: ("VerifyEmployment", "verify", 1, 0.10, "Find(P);VerifyRel(works_at,O)"),
}
EXAMPLE = {"Person": "Person_00371", "City": "City_0736", "City1": "City_0001", "City2": "City_0002",
           "Country": "Country_038", "Org": "Org_0042"}


def _with_letters(t: Template) -> str:
    """The skeleton with slots spelled as in DESIGN.md (P, C, C1, C2, K, O)."""
    short = {"Person": "P", "City": "C", "City1": "C1", "City2": "C2", "Country": "K", "Org": "O"}
    return t.skeleton.format(**short)


def test_the_nine_templates_of_table_iii():
    items = templates()
    assert [t.id for t in items] == list(range(9))
    for t in items:
        name, reasoning, hops, weight, program = TABLE_III[t.id]
        assert (t.name, t.reasoning, t.hops, t.weight, _with_letters(t)) == (name, reasoning, hops, weight, program)


def test_weights_give_the_papers_average_program_length():
    assert sum(t.weight for t in templates()) == pytest.approx(1.0)
    assert sum(t.weight * t.steps for t in templates()) == pytest.approx(3.84)


def test_skeletons_instantiate_to_canonical_programs():
    for t in templates():
        slots = {name: EXAMPLE[name] for name in t.slot_names}
        program = t.program(**slots)
        assert program.canonical() == t.program_text(**slots)
        assert len(program) == t.steps
        for name, cls in t.slots:
            assert EXAMPLE[name].startswith({"Organization": "Org"}.get(cls, cls) + "_")


def test_skeletons_type_check(kb_schema):
    typecheck = pytest.importorskip("kopl2sparql.typecheck")
    for t in templates():
        # The examples are KB entities of the slot's class, so the check sees real classes
        # (an entity the schema does not know would type-check as any class).
        for name, cls in t.slots:
            assert kb_schema.entity_classes(EXAMPLE[name]) == frozenset({cls}), (t.name, name)
        typecheck.check(t.program(**{name: EXAMPLE[name] for name in t.slot_names}), kb_schema)


def test_fig2_sentence_is_the_birth_country_test_paraphrase():
    assert by_name("BirthCountry").question("test", Person="Person_00371") == FIG2


def test_paraphrases_are_separated_between_splits():
    items = templates()
    train, test = {t.train for t in items}, {t.test for t in items}
    assert len(train) == len(test) == 9          # one distinct form per template and split
    assert not train & test                      # no test form is a train form, and vice versa
    for t in items:
        for kind in ("train", "test"):
            text = t.paraphrase(kind)
            assert set(re.findall(r"\{(\w+)\}", text)) == set(t.slot_names)
            assert text.endswith("?") and text[0].isupper()


def test_test_paraphrases_are_longer_on_average():
    def words(kind):
        return sum(t.weight * len(t.paraphrase(kind).split()) for t in templates())
    assert words("test") > words("train")


def test_same_class_slots_keep_their_order_in_both_forms():
    # Slot filling takes same-class mentions in order of first mention (DESIGN.md), so the
    # paraphrases must mention City1 before City2.
    t = by_name("CompareCityPopulation")
    for kind in ("train", "test"):
        text = t.paraphrase(kind)
        assert text.index("{City1}") < text.index("{City2}")


def test_unknown_template_name_suggests_the_closest():
    with pytest.raises(KeyError, match="did you mean BirthCountry"):
        by_name("BirthCountri")
    with pytest.raises(ValueError, match="paraphrase"):
        by_name("BirthYear").paraphrase("validation")


def test_inconsistent_templates_file_is_rejected(monkeypatch, tmp_path):
    raw = json.loads(templates_module.resources.files("synkqa.benchmark").joinpath("data/templates.json").read_text())

    def load(mutate):
        data = json.loads(json.dumps(raw))
        mutate(data)
        (tmp_path / "data").mkdir(exist_ok=True)
        (tmp_path / "data" / "templates.json").write_text(json.dumps(data))
        monkeypatch.setattr(templates_module.resources, "files", lambda _pkg: tmp_path)
        templates_module.templates.cache_clear()
        try:
            return templates_module.templates()
        finally:
            monkeypatch.undo()
            templates_module.templates.cache_clear()

    assert len(load(lambda d: None)) == 9
    with pytest.raises(DatasetError, match="also a train paraphrase"):
        load(lambda d: d[1].__setitem__("test", d[0]["train"]))
    with pytest.raises(DatasetError, match="slots"):
        load(lambda d: d[5].__setitem__("test", "Is {City1} big?"))
    with pytest.raises(DatasetError, match="weights sum"):
        load(lambda d: d[0].__setitem__("weight", 0.5))
    with pytest.raises(DatasetError, match="no train text"):
        load(lambda d: d[3].__setitem__("train", "TODO"))
    assert templates()[2].name == "BirthCountry"   # the real file is back


def test_parse_of_every_question_shape_round_trips_slots():
    # The question text carries exactly the slot values (what the parsers' slot filling needs).
    pattern = re.compile(r"\b(Person|City|Country|Org)_[0-9]+\b")
    for t in templates():
        slots = {name: EXAMPLE[name] for name in t.slot_names}
        for kind in ("train", "test"):
            found = pattern.finditer(t.question(kind, **slots))
            assert [m.group(0) for m in found] == [slots[name] for name, _ in t.slots]
        assert parse(t.program_text(**slots))
