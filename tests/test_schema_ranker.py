"""The schema-aware ranker: features from the schema's words, pairwise training, and
ranking under paraphrase shift and for templates it never saw."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kopl2sparql.errors import ModelError
from parsers.enumerate import enumerate_programs
from parsers.schema_ranker import FEATURES, QuestionView, SchemaRanker, feature_matrix, features, lexicon
from synkqa.benchmark.templates import by_name, templates

PREFIX = {"Person": ("Person", 6000, 5), "City": ("City", 1200, 4), "Country": ("Country", 120, 3),
          "Organization": ("Org", 800, 4)}


def template_records(paraphrase: str, per_template: int, seed: int = 0, kb=None,
                     skip: tuple[str, ...] = ()) -> list[dict]:
    """Questions of every template in one paraphrase, with gold program and template id.

    Entities are drawn from the KB's id ranges; with ``kb`` (a KBIndex) the intersection
    template's slots come from one person, as the dataset draws them (non-empty answer).
    """
    rng = random.Random(seed)
    out = []
    for t in templates():
        if t.name in skip:
            continue
        for _ in range(per_template):
            values: dict[str, str] = {}
            if t.name == "WorkAndBornIntersection" and kb is not None:
                person = rng.choice(kb.members["Person"])
                values = {"Org": next(iter(kb.forward["works_at"][person])),
                          "City": next(iter(kb.forward["born_in"][person]))}
            else:
                for slot, cls in t.slots:
                    prefix, n, width = PREFIX[cls]
                    while True:
                        name = f"{prefix}_{rng.randrange(n):0{width}d}"
                        if name not in values.values():
                            break
                    values[slot] = name
            out.append({"question": t.question(paraphrase, **values), "kopl": t.program_text(**values),
                        "template_id": t.id, "template": t.name})
    return out


@pytest.fixture(scope="module")
def ranker():
    train = template_records("train", 40, seed=1)
    return SchemaRanker(max_questions=None).fit([r["question"] for r in train], [r["kopl"] for r in train],
                                                groups=[r["template_id"] for r in train])


def test_vectorised_features_equal_the_definition():
    questions = [r["question"] for r in template_records("test", 3, seed=2)] + [
        "Is Person_00001 older than Person_00002?", "Which is the oldest company headquartered in City_0013?",
        "Is City_0001 at least as large as City_0002 in area?", "Name the least populous city of Country_001",
        "How many people were born in the same city as Person_00003?", "Person_00001, City_0003 and Org_0001"]
    for q in questions:
        view = QuestionView.of(q)
        candidates = enumerate_programs(q)
        rows = np.vstack([features(view, c) for c in candidates])
        assert np.array_equal(feature_matrix(view, candidates), rows), q


def test_lexicon_aligns_the_schema_words():
    view = QuestionView.of("The organization Person_00001 works for is headquartered in which country?")
    ev = view.evidence
    assert ev[("relation", "headquarters_in")] == 1.0            # "headquartered" ~ "headquarters"
    assert ev[("relation", "works_at")] == 1.0                   # "works for"
    assert ev[("relation", "born_in")] == 0.0
    assert "born" in lexicon().words[("relation", "born_in")]
    taller = QuestionView.of("Is Person_00001 taller than Person_00002?")
    assert taller.evidence[("attribute", "height_cm")] == 1.0     # "taller" -> "tall"
    assert taller.compare_cue == ">"
    older = QuestionView.of("Is Person_00001 older than Person_00002?")
    assert older.compare_year_cue == "<"                         # older = an earlier birth year
    assert QuestionView.of("Which city has the fewest people?").extreme_cue == "min"


def test_learned_weights_point_the_right_way(ranker):
    w = ranker.weights()
    assert set(w) == set(FEATURES)
    assert w["type_match"] > 0 > w["type_mismatch"]
    assert w["unexplained_relational_words"] < 0 and w["rel_unevidenced"] < 0
    assert w["compare_match"] > 0 > w["compare_mismatch"]
    assert w["count_with_cue"] > w["count_without_cue"]
    # VerifyEmployment questions have one candidate only (nothing to contrast): 8 templates.
    assert ranker.unreachable_ == 0 and ranker.n_questions_ == 8 * 40


def test_paraphrase_shift_test_wording_ranked_first(ranker):
    """Trained on the train paraphrases only, it ranks the gold program first for the
    test paraphrases of every template."""
    for r in template_records("test", 15, seed=3):
        top = ranker.rank(r["question"])[0][0]
        assert top.text == r["kopl"], (r["template"], r["question"], top.text)


def test_birth_country_beats_employer_hq_country(ranker):
    q = "The city where Person_00371 was born is located in which country?"
    ranked = [c.text for c, _ in ranker.rank(q)]
    gold = "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"
    spurious = "Find(Person_00371);Relate(works_at);Relate(headquarters_in);Relate(located_in);QueryName()"
    assert ranked[0] == gold and ranked.index(spurious) > 0


def test_templates_never_seen_in_training():
    held = ("EmployerHQCountry", "WorkAndBornIntersection")
    train = template_records("train", 40, seed=4, skip=held)
    ranker = SchemaRanker(max_questions=None).fit([r["question"] for r in train], [r["kopl"] for r in train])
    for name in held:
        t = by_name(name)
        for r in template_records("test", 40, seed=5):
            if r["template_id"] != t.id:
                continue
            assert ranker.rank(r["question"])[0][0].text == r["kopl"], r["question"]


def test_compositions_beyond_the_templates(ranker):
    cases = {
        "How tall is Person_00042?": "Find(Person_00042);QueryAttr(height_cm)",
        "In which city is Org_0050 headquartered?": "Find(Org_0050);Relate(headquarters_in);QueryName()",
        "How many people work at Org_0060?": "Find(Org_0060);RelateInv(works_at);Count()",
        "Who is the tallest employee of Org_0070?": "Find(Org_0070);RelateInv(works_at);Argmax(height_cm);QueryName()",
        "Which city in Country_044 has the smallest population?":
            "Find(Country_044);RelateInv(located_in);Argmin(population);QueryName()",
    }
    for q, gold in cases.items():
        assert ranker.rank(q)[0][0].text == gold, q


def test_training_is_deterministic_and_sampled():
    train = template_records("train", 30, seed=6)
    qs, ps, groups = [r["question"] for r in train], [r["kopl"] for r in train], [r["template_id"] for r in train]
    a = SchemaRanker(max_questions=90, random_state=7).fit(qs, ps, groups=groups)
    b = SchemaRanker(max_questions=90, random_state=7).fit(qs, ps, groups=groups)
    assert np.array_equal(a.coef_, b.coef_) and a.n_questions_ <= 90


def test_errors():
    with pytest.raises(ModelError, match="not fitted"):
        SchemaRanker().rank("In which year was Person_00001 born?")
    with pytest.raises(ModelError, match="one gold program per question"):
        SchemaRanker().fit(["q1", "q2"], ["Find(Person_1);QueryAttr(birth_year)"])
    with pytest.raises(ModelError, match="no training question"):
        SchemaRanker().fit(["no entity here"], ["Find(Person_1);QueryAttr(birth_year)"])


def test_ranking_with_a_limit_is_the_head_of_the_full_ranking(ranker):
    """rank(limit=k) sorts only the candidates that can reach the first k places: it must
    return exactly the first k of the full ranking, ties and all."""
    ties = 0
    for r in template_records("test", 4, seed=7) + template_records("train", 2, seed=8):
        candidates = enumerate_programs(r["question"])
        full = ranker.rank(r["question"], candidates)
        scores = [round(s, 9) for _, s in full]
        ties += len(scores) - len(set(scores))
        for k in (1, 2, 3, 5, 10, len(full), len(full) + 3):
            assert ranker.rank(r["question"], candidates, limit=k) == full[:k], (r["question"], k)
    assert ties > 0   # the tie-break on length and text was exercised
