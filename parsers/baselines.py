"""The paper's baselines (Table IV): RandomChoice, MajorityTemplate, PrototypeRetrieval, and
the Oracle that executes the gold program.

All are scikit-learn estimators: ``__init__`` stores hyperparameters, ``fit(questions,
template_ids)`` learns and returns ``self``, learned state ends in ``_``. Answering needs an
executor, passed to :meth:`answer`, never stored on the model.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from kopl2sparql.errors import ModelError
from parsers.base import Executor, Prediction, ProgramRunner, Query, as_runner, queries_from
from parsers.template import (ENTITY_PATTERN, TYPE_TOKENS, TemplateAnswerMixin, _check_questions,
                              _not_fitted, ranking_from_scores)
from synkqa.benchmark.templates import templates


def _check_targets(questions, template_ids) -> tuple[list[str], np.ndarray]:
    questions = _check_questions(questions)
    y = np.asarray(template_ids)
    if len(questions) != len(y) or not len(y):
        raise ModelError(f"need as many template ids as questions (got {len(questions)} "
                         f"questions, {len(y)} ids), and at least one")
    return questions, y


def normalise_entities(question: str) -> str:
    """Replace entity mentions by type tokens: ``Person_00371`` -> ``PERSON``."""
    return ENTITY_PATTERN.sub(lambda m: TYPE_TOKENS[m.group(1)], question)


class RandomChoice(BaseEstimator):
    """Picks one of the options uniformly at random; predicts no program.

    The draw is seeded by ``random_state`` and the question's id (or text), so a question
    gets the same pick whatever batch it comes in.
    """

    predicts_program = False
    needs_choices = True

    def __init__(self, random_state: int = 0):
        self.random_state = random_state

    def fit(self, questions=None, template_ids=None) -> "RandomChoice":
        """Nothing to learn; records the training size. Returns ``self``."""
        self.n_train_ = 0 if questions is None else len(_check_questions(questions))
        return self

    def answer(self, queries: Sequence[Query | dict | str], executor: Executor | ProgramRunner | None = None) -> list[Prediction]:
        """One option per query.

        :raises ModelError: when a query has no options (there is nothing to choose from).
        """
        _not_fitted(self, "n_train_")
        out = []
        for query in queries_from(queries):
            if not query.choices:
                raise ModelError(f"RandomChoice picks among the options, but question "
                                 f"{query.id or query.question!r} has none")
            # crc32 of (seed, id): stable across runs and platforms, and cheap (string seeds
            # go through SHA-512).
            key = zlib.crc32(f"{self.random_state}:{query.id or query.question}".encode())
            pick = random.Random(key).randrange(len(query.choices))
            out.append(Prediction(query.id, None, query.choices[pick]))
        return out


class MajorityTemplate(TemplateAnswerMixin, ClassifierMixin, BaseEstimator):
    """Always the most frequent training template (ties: the smaller id), filled and executed.

    Learned: ``classes_`` (template ids by decreasing training frequency are ``order_``),
    ``template_``.
    """

    def __init__(self):
        pass

    def fit(self, questions, template_ids) -> "MajorityTemplate":
        """Count templates. Returns ``self``."""
        _, y = _check_targets(questions, template_ids)
        counts = Counter(int(t) for t in y)
        self.classes_ = np.array(sorted(counts))
        self.order_ = np.array(sorted(counts, key=lambda t: (-counts[t], t)))
        self.template_ = int(self.order_[0])
        return self

    def predict(self, questions) -> np.ndarray:
        _not_fitted(self, "template_")
        return np.full(len(_check_questions(questions)), self.template_)

    def rank(self, questions, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """The same ranking (training frequency order) for every question."""
        _not_fitted(self, "template_")
        n = len(_check_questions(questions))
        k = min(int(k), len(self.order_))
        scores = np.linspace(1.0, 0.0, len(self.order_), endpoint=False)[:k]
        return np.tile(self.order_[:k], (n, 1)), np.tile(scores, (n, 1))


class PrototypeRetrieval(TemplateAnswerMixin, ClassifierMixin, BaseEstimator):
    """Nearest template centroid by cosine similarity over TF-IDF of type-normalised questions.

    Entity mentions become PERSON / CITY / COUNTRY / ORG; each template's prototype is the
    (L2-normalised) mean TF-IDF vector of its training questions. Nothing is optimised.

    Learned: ``vectorizer_``, ``centroids_`` (one row per class), ``classes_``.
    """

    def __init__(self, ngram_range: tuple[int, int] = (1, 2)):
        self.ngram_range = ngram_range

    def fit(self, questions, template_ids) -> "PrototypeRetrieval":
        """Build one centroid per template. Returns ``self``."""
        questions, y = _check_targets(questions, template_ids)
        self.vectorizer_ = TfidfVectorizer(ngram_range=tuple(self.ngram_range))
        features = self.vectorizer_.fit_transform([normalise_entities(q) for q in questions])
        self.classes_ = np.unique(y)
        rows = [np.asarray(features[y == c].mean(axis=0)).ravel() for c in self.classes_]
        self.centroids_ = normalize(np.vstack(rows))
        return self

    def decision_function(self, questions) -> np.ndarray:
        """Cosine similarity to each centroid (columns follow ``classes_``)."""
        _not_fitted(self, "centroids_")
        features = self.vectorizer_.transform([normalise_entities(q) for q in _check_questions(questions)])
        # TF-IDF rows are already L2-normalised, so the dot product is the cosine.
        return np.asarray(features @ self.centroids_.T)

    def predict(self, questions) -> np.ndarray:
        return self.rank(questions, k=1)[0][:, 0]

    def rank(self, questions, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Ranked template ids and cosine similarities, best first."""
        return ranking_from_scores(self.decision_function(questions), self.classes_, k)


class Oracle(BaseEstimator):
    """Executes the gold program: the ceiling every table is read against."""

    predicts_program = True
    needs_choices = False
    needs_gold = True

    def __init__(self):
        pass

    def fit(self, questions=None, template_ids=None) -> "Oracle":
        """Nothing to learn. Returns ``self``."""
        self.n_train_ = 0 if questions is None else len(_check_questions(questions))
        return self

    def answer(self, queries: Sequence[Query | dict | str], executor: Executor | ProgramRunner) -> list[Prediction]:
        """Execute each query's gold program.

        :raises ModelError: when a query carries no gold program (field ``kopl``).
        """
        _not_fitted(self, "n_train_")
        runner = as_runner(executor)
        out = []
        for query in queries_from(queries):
            if not query.gold_program:
                raise ModelError(f"the oracle executes gold programs, but question "
                                 f"{query.id or query.question!r} has none (field 'kopl')")
            result = runner.run(query.gold_program)
            out.append(Prediction(query.id, query.gold_program, result.canonical,
                                  template_id=template_of(query.gold_program), executions=1))
        return out


@lru_cache(maxsize=1)
def _shapes() -> dict[str, int]:
    """Each template's program with every entity slot blanked to ``E``."""
    return {t.skeleton.format(**{slot: "E" for slot, _ in t.slots}): t.id for t in templates()}


def template_of(program: str | None) -> int | None:
    """The template a canonical program instantiates (``None`` if it matches none)."""
    if program is None:
        return None
    return _shapes().get(ENTITY_PATTERN.sub("E", program))
