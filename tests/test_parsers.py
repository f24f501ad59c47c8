"""Parsers: the estimator contract, slot filling, each baseline, and the system registry."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from kopl2sparql.errors import ConfigError, ModelError
from kopl2sparql.syntax import parse
from parsers import registry
from parsers.base import ProgramRunner, Query
from parsers.baselines import (MajorityTemplate, Oracle, PrototypeRetrieval, RandomChoice,
                               normalise_entities, template_of)
from parsers.rerank import ExecutionValidatedParser
from parsers.template import TemplateClassifier, fill_slots, instantiate, mentions
from synkqa.benchmark.templates import templates

FIXTURES = Path(__file__).parent / "fixtures" / "study"


def _load(split):
    return [json.loads(line) for line in (FIXTURES / f"{split}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def train():
    return _load("train")


@pytest.fixture(scope="module")
def test_records():
    return _load("test")


@pytest.fixture(scope="module")
def executor(kb_store):
    from synkqa.benchmark.executors import get_executor
    return get_executor("oxigraph")


ESTIMATORS = [RandomChoice(random_state=3), MajorityTemplate(), PrototypeRetrieval(),
              TemplateClassifier(random_state=1), Oracle(),
              ExecutionValidatedParser(ranker=TemplateClassifier(random_state=2), k=3)]


# ---- the scikit-learn contract ---------------------------------------------------------

@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_estimator_contract(estimator, train):
    questions = [r["question"] for r in train]
    ids = [r["template_id"] for r in train]
    def params(est):  # nested estimators compare by identity, so compare their reprs
        return {k: repr(v) for k, v in est.get_params().items()}

    fresh = clone(estimator)
    assert params(fresh) == params(estimator)                      # __init__ only stores parameters
    assert params(type(fresh)(**fresh.get_params(deep=False))) == params(fresh)
    before = set(vars(fresh))
    assert fresh.fit(questions, ids) is fresh                      # fit returns self
    learned = set(vars(fresh)) - before
    assert learned, "fit learned nothing"
    assert all(name.endswith("_") for name in learned), learned    # learned state ends in _
    assert params(clone(fresh)) == params(fresh)
    assert not any(name.endswith("_") for name in vars(clone(fresh)))  # clone drops learned state


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_not_fitted_is_a_clear_error(estimator, executor):
    query = Query("Does Person_00371 work for Org_0000?", choices=("yes", "no"), gold_program="Find(Person_00371);VerifyRel(works_at,Org_0000)")
    with pytest.raises(ModelError, match="not fitted"):
        clone(estimator).answer([query], executor)


def test_fit_rejects_mismatched_targets():
    with pytest.raises(ModelError, match="as many template ids"):
        TemplateClassifier().fit(["a question"], [0, 1])
    with pytest.raises(ModelError, match="list of questions"):
        TemplateClassifier().fit("one string", [0])


# ---- slot filling ----------------------------------------------------------------------

def test_mentions_by_class_in_order_of_first_mention():
    found = mentions("Is City_0002 larger than City_0001, and was Person_00371's employer Org_0042 "
                     "in City_0002 or Country_038?")
    assert found == {"City": ["City_0002", "City_0001"], "Person": ["Person_00371"],
                     "Organization": ["Org_0042"], "Country": ["Country_038"]}
    assert mentions("No entity here, nor in XPerson_001 or Person_0037x.") == {}


def test_same_type_slots_take_mentions_in_order():
    compare = templates()[5]
    assert fill_slots(compare, "Does City_0900 have a larger population than City_0010?") == \
        {"City1": "City_0900", "City2": "City_0010"}
    assert fill_slots(compare, "Is City_0010 larger than City_0900 by population?") == \
        {"City1": "City_0010", "City2": "City_0900"}


def test_unfillable_templates_are_none():
    assert fill_slots(templates()[5], "How many people were born in City_0001?") is None      # one city, two slots
    assert fill_slots(templates()[5], "Is City_0001 larger than City_0001?") is None          # distinct mentions only
    assert fill_slots(templates()[8], "In which year was Person_00001 born?") is None         # no organisation
    assert instantiate(0, "How many people were born in City_0001?") is None                  # no person


def test_extra_mentions_are_ignored_and_programs_are_canonical():
    question = "Does Person_00371 work for Org_0122?"
    program = instantiate(1, question)                 # BirthCity from a VerifyEmployment question
    assert program == "Find(Person_00371);Relate(born_in);QueryName()"
    for t in templates():
        text = instantiate(t, "Person_00001 Org_0002 City_0003 City_0004 Country_005")
        assert text is not None and parse(text).canonical() == text
        assert template_of(text) == t.id
    assert template_of("Find(Person_00001);Count()") is None


def test_type_tokens_for_prototypes():
    assert normalise_entities("Does Person_00371 work for Org_0122 in City_0001, Country_038?") == \
        "Does PERSON work for ORG in CITY, COUNTRY?"


# ---- the estimators ----------------------------------------------------------------------

def test_template_classifier_ranks_with_probabilities(train, test_records):
    tc = TemplateClassifier(random_state=0).fit([r["question"] for r in train], [r["template_id"] for r in train])
    questions = [r["question"] for r in test_records]
    ids, probs = tc.rank(questions, k=5)
    assert ids.shape == probs.shape == (len(questions), 5)
    assert np.all(np.diff(probs, axis=1) <= 0)                   # best first
    proba = tc.predict_proba(questions)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(ids[:, 0], tc.predict(questions))
    full, _ = tc.rank(questions, k=99)                          # k beyond the classes: all of them
    assert full.shape[1] == len(tc.classes_) == 9
    # trained on train paraphrases, it reads them perfectly
    assert (tc.predict([r["question"] for r in train]) == [r["template_id"] for r in train]).all()
    again = TemplateClassifier(random_state=0).fit([r["question"] for r in train], [r["template_id"] for r in train])
    assert np.array_equal(again.predict_proba(questions), proba)  # same seed, same model


def test_majority_template_ties_go_to_the_smaller_id():
    model = MajorityTemplate().fit(["a", "b", "c", "d"], [4, 2, 2, 4])
    assert model.template_ == 2
    assert list(model.predict(["x", "y"])) == [2, 2]
    ids, scores = model.rank(["x"], k=2)
    assert list(ids[0]) == [2, 4] and scores[0, 0] > scores[0, 1]


def test_prototype_retrieval_uses_type_normalised_centroids(train, test_records):
    model = PrototypeRetrieval().fit([r["question"] for r in train], [r["template_id"] for r in train])
    assert np.allclose(np.linalg.norm(model.centroids_, axis=1), 1.0)
    assert not any("person_" in term for term in model.vectorizer_.vocabulary_)   # ids never become features
    sims = model.decision_function([r["question"] for r in test_records])
    assert sims.shape == (len(test_records), 9) and (sims <= 1.0 + 1e-9).all()
    assert list(model.predict([train[0]["question"]])) == [train[0]["template_id"]]


def test_random_choice_is_seeded_per_question_and_uniform():
    queries = [Query(f"question {i}", tuple(f"option {j}" for j in range(10)), id=f"q{i}") for i in range(2000)]
    model = RandomChoice(random_state=7).fit()
    first = model.answer(queries)
    assert [p.answer for p in first] == [p.answer for p in model.answer(queries)]
    assert first[5].answer == model.answer(queries[5:6])[0].answer        # whatever the batch
    assert all(p.program is None for p in first)
    counts = Counter(p.answer for p in first)
    assert len(counts) == 10 and min(counts.values()) > 140               # ~200 each
    other = RandomChoice(random_state=8).fit().answer(queries)
    assert [p.answer for p in other] != [p.answer for p in first]
    with pytest.raises(ModelError, match="has none"):
        model.answer([Query("no options here")])


def test_oracle_executes_gold_programs(test_records, executor):
    predictions = Oracle().fit().answer(test_records, executor)
    assert [p.answer for p in predictions] == [r["answer"] for r in test_records]
    assert [p.template_id for p in predictions] == [r["template_id"] for r in test_records]
    with pytest.raises(ModelError, match="gold"):
        Oracle().fit().answer([Query("What is the birth year of Person_00001?")], executor)


def test_template_systems_answer_by_executing_top1(train, test_records, executor):
    tc = TemplateClassifier().fit([r["question"] for r in train], [r["template_id"] for r in train])
    runner = ProgramRunner(executor)
    predictions = tc.answer(test_records, runner)
    assert runner.calls == sum(p.program is not None for p in predictions)
    for record, p in zip(test_records, predictions):
        if p.program == record["kopl"]:
            assert p.answer == record["answer"]
    # the gold program of a record, through the runner, gives the gold answer
    assert runner.run(test_records[0]["kopl"]).canonical == test_records[0]["answer"]


# ---- registry ----------------------------------------------------------------------------

def test_registry_names_best_and_did_you_mean():
    assert registry.system_names()[:6] == ["random", "majority", "prototype", "tc", "ev-tc", "oracle"]
    # best: the strongest registered system that needs no gold programs (and, open-ended, no options)
    best, best_open = registry.get_spec("best"), registry.get_spec("best", with_choices=False)
    usable = [registry.get_spec(n) for n in registry.system_names() if not registry.get_spec(n).needs_gold]
    assert best.strength == max(s.strength for s in usable) >= registry.get_spec("ev-tc").strength
    assert not best_open.needs_choices and not best_open.needs_gold
    assert best_open.strength >= registry.get_spec("tc").strength
    with pytest.raises(ConfigError, match="did you mean ev-tc"):
        registry.get_spec("ev_tc")
    with pytest.raises(ConfigError, match="reserved"):
        registry.register_system(registry.SystemSpec("best", "x", "x", make=lambda s: None,
                                                     predicts_program=False, needs_choices=False))


def test_trained_models_are_cached_under_deterministic_names(train):
    spec = registry.get_spec("tc")
    questions, ids = [r["question"] for r in train], [r["template_id"] for r in train]
    model, path, cached = registry.train(spec, 11, questions, ids)
    assert path.name == f"tc-seed11-{registry.fingerprint(questions, ids)}.pkl" and not cached
    again, path2, cached2 = registry.train(registry.get_spec("ev-tc"), 11, questions, ids)  # EV-TC shares TC's model
    assert cached2 and path2 == path
    assert np.array_equal(again.predict_proba(questions), model.predict_proba(questions))
    assert registry.fingerprint(questions[1:], ids[1:]) != registry.fingerprint(questions, ids)
    with pytest.raises(ModelError, match="synkqa train --system tc --seed 12"):
        registry.load(spec, 12, registry.fingerprint(questions, ids))
