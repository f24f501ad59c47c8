"""A schema-aware ranker: scores a (question, program) pair by what the program *says*.

A program's relations, attributes and the classes its values pass through are read with
their ontology labels and altLabels (``headquarters_in``: "headquarters in",
"headquartered in", "based in", "HQ", ...), stemmed, and aligned with the question's
words, as PER-KBQA aligns generated names to the schema. The pair is described by a few
dozen *generic* features — none of them names a word of a training question:

- **alignment**: how well each relation / attribute of the program is evidenced by the
  question (best label match, as a fraction of the label's words), how many of them have
  no evidence, and how many schema words of the question the program leaves unexplained
  (relation/attribute words and class words apart);
- **answer type**: whether the program's answer type fits the type the question asks for
  (:mod:`parsers.answer_type`, read from the question, not from options);
- **operators**: counting cues (``how many``, ``number of``) against ``Count``; superlatives
  (``largest``, ``least``, ``oldest``) against ``Argmax``/``Argmin`` and their direction;
  comparatives (``larger``, ``fewer``, ``older``) against ``Compare`` and its comparator;
- **shape**: steps, hops, inverse hops, entity coverage.

A linear model over these features is trained *pairwise* (gold program minus each
enumerated wrong program, as RnG-KBQA's contrastive ranker learns from its enumerated
negatives), on the train split only. Every enumerated candidate is type-correct and uses
the question's entities, so the negatives are hard ones by construction; a second round
weights the negatives the first model still ranks above or near the gold (bootstrapping).

The train split holds nine sentence shapes. Features keyed on question words would learn
those nine sentences; these features only learn *how much* alignment, type agreement and
operator cues matter, which carries over to wordings and compositions never seen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from kopl2sparql.errors import ModelError
from parsers.answer_type import (BOOL, ExpectedType, compatible, expected_type, stem, tokenize,
                                 _is_year_attribute)
from parsers.enumerate import Candidate, Shape, enumerate_programs

__all__ = ["SchemaLexicon", "QuestionView", "FEATURES", "features", "feature_matrix", "SchemaRanker",
           "lexicon"]

# ---- the schema's words ------------------------------------------------------------------------

# Function words only: wh-words stay, because labels use them ("when born" for birth_year,
# "who" for Person) and a question's "when"/"who" is evidence for those items.
_STOP = frozenset(("in", "at", "of", "for", "by", "the", "a", "an", "to", "on", "is", "was", "were",
                   "are", "be", "been", "that", "this", "there", "does", "do", "did", "has", "have",
                   "had", "and", "or", "with", "as", "from", "it", "its", "their", "his", "her", "they",
                   "he", "she", "than", "some", "any", "me", "you", "please", "s"))


def _degree_bases(word: str) -> list[str]:
    """Possible positive forms of a comparative/superlative adjective, by English spelling:
    taller -> tall, larger -> large, bigger -> big, wealthiest -> wealthy."""
    for suffix in ("est", "er"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            base = word[:-len(suffix)]
            out = [base, base + "e"]
            if len(base) > 2 and base[-1] == base[-2]:
                out.append(base[:-1])
            if base.endswith("i"):
                out.append(base[:-1] + "y")
            return out
    return []


def _stems(text: str) -> frozenset[str]:
    words = re.findall(r"[A-Za-z0-9]+", text.lower())
    return frozenset(stem(w) for w in words if w not in _STOP)


@dataclass(frozen=True)
class SchemaLexicon:
    """Stemmed label/altLabel word sets of every schema item.

    ``phrases[item]`` is a tuple of stem sets (one per label); items are ``("relation",
    name)``, ``("attribute", name)`` and ``("class", name)``. ``words[item]`` is their
    union; ``relational_vocabulary`` the words of all relations and attributes,
    ``class_vocabulary`` those of all classes.
    """

    phrases: dict[tuple[str, str], tuple[frozenset[str], ...]]
    words: dict[tuple[str, str], frozenset[str]]
    relational_vocabulary: frozenset[str]
    class_vocabulary: frozenset[str]
    year_attributes: frozenset[str]

    @classmethod
    def from_schema(cls, schema) -> "SchemaLexicon":
        phrases: dict[tuple[str, str], tuple[frozenset[str], ...]] = {}
        for kind, table in (("relation", schema.relations), ("attribute", schema.attributes),
                            ("class", schema.classes)):
            for name, info in table.items():
                texts = [info.label, *info.alt_labels, name.replace("_", " ")]
                sets = {s for s in (_stems(t) for t in texts) if s}
                phrases[(kind, name)] = tuple(sorted(sets, key=lambda s: (len(s), sorted(s))))
        words = {item: frozenset().union(*sets) for item, sets in phrases.items()}
        rel_vocab = frozenset().union(*(w for (k, _), w in words.items() if k != "class"))
        class_vocab = frozenset().union(*(w for (k, _), w in words.items() if k == "class"))
        years = frozenset(a for a, info in schema.attributes.items() if _is_year_attribute(info))
        return cls(phrases, words, rel_vocab, class_vocab, years)


@lru_cache(maxsize=4)
def lexicon(schema=None) -> SchemaLexicon:
    """The lexicon of ``schema`` (default: the shipped ontology), cached."""
    if schema is None:
        from parsers.base import default_schema
        schema = default_schema()
    return SchemaLexicon.from_schema(schema)


# ---- operator cues (English, not the dataset's wording) ------------------------------------------

_GT = frozenset(("more", "larger", "bigger", "greater", "higher", "taller", "richer", "wealthier",
                 "heavier", "longer", "exceed", "exceeds", "above", "wider", "huger"))
_LT = frozenset(("less", "fewer", "smaller", "lower", "shorter", "poorer", "below", "lesser", "tinier",
                 "narrower"))
_YEAR_GT = frozenset(("younger", "newer", "later", "after"))       # a larger year
_YEAR_LT = frozenset(("older", "earlier", "before"))               # a smaller year
_MAX = frozenset(("most", "largest", "biggest", "greatest", "highest", "tallest", "richest",
                  "wealthiest", "maximum", "max", "top", "heaviest", "longest", "widest"))
_MIN = frozenset(("least", "fewest", "smallest", "lowest", "shortest", "poorest", "minimum", "min",
                  "tiniest", "narrowest"))
_YEAR_MAX = frozenset(("youngest", "newest", "latest"))
_YEAR_MIN = frozenset(("oldest", "earliest"))
_EQUAL = frozenset(("same", "equal", "identical"))
# Gradable adjectives name the dimension they grade: "taller" is about height, "older"
# about age, "more populous" about population. The noun is added as *evidence* for items
# labelled with it (never as a word the program must explain).
_ADJECTIVE_NOUNS = {"tall": "height", "short": "height", "old": "age", "young": "age",
                    "rich": "wealth", "poor": "wealth", "wealthy": "wealth", "populous": "population",
                    "populated": "population", "crowded": "population", "big": "size", "large": "size",
                    "small": "size", "huge": "size", "tiny": "size"}
_AT_LEAST = re.compile(r"\b(at least|no less than|no fewer than|or more|not less than|not fewer than)\b")
_AT_MOST = re.compile(r"\b(at most|no more than|or less|or fewer|not more than)\b")
_COUNT = re.compile(r"\b(how many|number of|count|total of)\b")


@dataclass(frozen=True)
class QuestionView:
    """What the features need from a question, computed once per question."""

    question: str
    stems: frozenset[str]
    relational_words: frozenset[str]          # question stems that are relation/attribute words
    class_words: frozenset[str]               # question stems that are class words
    expected: ExpectedType
    count_cue: bool
    extreme_cue: str | None                   # "max" / "min" (non-year reading)
    extreme_year_cue: str | None              # "max" / "min" for year attributes
    compare_cue: str | None                   # ">", "<", ">=", "<=", "=" (non-year reading)
    compare_year_cue: str | None              # the same for year attributes
    evidence: dict[tuple[str, str], float]    # schema item -> best label match in [0, 1]
    entities: int

    @classmethod
    def of(cls, question: str, lex: SchemaLexicon | None = None) -> "QuestionView":
        lex = lex or lexicon()
        tokens = tokenize(question)
        words = [t.text for t in tokens if not t.is_entity]
        stems = set(t.stem for t in tokens if not t.is_entity and t.text not in _STOP)
        # "taller" is evidence for an item labelled "tall": add the positive form's stem
        # when the schema's vocabulary has it (Snowball keeps degrees apart).
        vocabulary = lex.relational_vocabulary | lex.class_vocabulary
        for w in words:
            for base in _degree_bases(w):
                if stem(base) in vocabulary:
                    stems.add(stem(base))
        literal = frozenset(stems)
        for w in words:
            for form in (w, *_degree_bases(w)):
                noun = _ADJECTIVE_NOUNS.get(form)
                if noun is not None:
                    stems.add(stem(noun))
        stems = frozenset(stems)
        text = " ".join(t.text for t in tokens)
        wordset = set(words)

        def direction(up: frozenset[str], down: frozenset[str]) -> str | None:
            has_up, has_down = bool(wordset & up), bool(wordset & down)
            return "max" if has_up and not has_down else "min" if has_down and not has_up else None

        extreme = direction(_MAX, _MIN)
        extreme_year = direction(_YEAR_MAX, _YEAR_MIN) or extreme

        def comparator(up: frozenset[str], down: frozenset[str]) -> str | None:
            d = direction(up, down)
            base = ">" if d == "max" else "<" if d == "min" else None
            if _AT_LEAST.search(text):
                return ">="
            if _AT_MOST.search(text):
                return "<="
            if base is None and wordset & _EQUAL:
                return "="
            return base

        compare = comparator(_GT, _LT)
        compare_year = comparator(_YEAR_GT, _YEAR_LT) if wordset & (_YEAR_GT | _YEAR_LT) else compare
        evidence = {item: max((len(p & stems) / len(p) for p in phrases), default=0.0)
                    for item, phrases in lex.phrases.items()}
        return cls(question, stems, literal & lex.relational_vocabulary, literal & lex.class_vocabulary,
                   expected_type(question), bool(_COUNT.search(text)), extreme, extreme_year,
                   compare, compare_year, evidence, sum(t.is_entity for t in tokens))


# ---- features ----------------------------------------------------------------------------------

FEATURES = (
    "type_match", "type_mismatch", "type_exact",
    "rel_evidence_mean", "rel_evidence_min", "rel_unevidenced",
    "attr_evidence", "attr_unevidenced",
    "unexplained_relational_words", "unexplained_class_words", "explained_class_words",
    "count_with_cue", "count_without_cue", "cue_without_count",
    "extreme_match", "extreme_mismatch", "extreme_without_cue", "cue_without_extreme",
    "compare_match", "compare_mismatch", "compare_without_cue", "cue_without_compare",
    "bool_verify", "steps", "hops", "inverse_hops", "coverage",
)
"""Names of the pair features, in column order."""
_INDEX = {name: i for i, name in enumerate(FEATURES)}


def _shape_words(shape: Shape, lex: SchemaLexicon) -> tuple[frozenset[str], frozenset[str]]:
    """(relation+attribute words, class words) a shape's items can explain."""
    rel = frozenset().union(*(lex.words[("relation", r)] for r, _ in shape.relations),
                            *(lex.words[("attribute", a)] for a in shape.attributes))
    cls = frozenset().union(*(lex.words[("class", c)] for c in shape.classes))
    return rel, cls


def features(view: QuestionView, candidate: Candidate | Shape, lex: SchemaLexicon | None = None,
             coverage: float = 1.0) -> np.ndarray:
    """The feature vector (:data:`FEATURES`) of one (question, program) pair."""
    lex = lex or lexicon()
    if isinstance(candidate, Candidate):
        shape, coverage = candidate.shape, candidate.coverage
    else:
        shape = candidate
    f = np.zeros(len(FEATURES))
    fit = compatible(view.expected, shape.answer_type)
    if fit is not None:
        f[_INDEX["type_match"]] = float(fit)
        f[_INDEX["type_mismatch"]] = float(not fit)
        f[_INDEX["type_exact"]] = float(fit and len(view.expected.allowed) == 1)
    ev = view.evidence
    rel_ev = [ev[("relation", r)] for r in dict.fromkeys(r for r, _ in shape.relations)]
    if rel_ev:
        f[_INDEX["rel_evidence_mean"]] = sum(rel_ev) / len(rel_ev)
        f[_INDEX["rel_evidence_min"]] = min(rel_ev)
        f[_INDEX["rel_unevidenced"]] = sum(e == 0.0 for e in rel_ev)
    else:
        f[_INDEX["rel_evidence_min"]] = 1.0
    if shape.attributes:
        attr_ev = [ev[("attribute", a)] for a in shape.attributes]
        f[_INDEX["attr_evidence"]] = min(attr_ev)
        f[_INDEX["attr_unevidenced"]] = sum(e == 0.0 for e in attr_ev)
    rel_words, class_words = _shape_words(shape, lex)
    explained = rel_words | class_words
    f[_INDEX["unexplained_relational_words"]] = len(view.relational_words - explained)
    f[_INDEX["unexplained_class_words"]] = len(view.class_words - explained)
    f[_INDEX["explained_class_words"]] = len(view.class_words & class_words)

    has_count = "Count" in shape.ops
    f[_INDEX["count_with_cue"]] = float(has_count and view.count_cue)
    f[_INDEX["count_without_cue"]] = float(has_count and not view.count_cue)
    f[_INDEX["cue_without_count"]] = float(view.count_cue and not has_count)

    year_attr = bool(shape.attributes) and shape.attributes[-1] in lex.year_attributes
    if shape.extreme is not None:
        cue = view.extreme_year_cue if year_attr else view.extreme_cue
        want = "max" if shape.extreme == "Argmax" else "min"
        if cue is None:
            f[_INDEX["extreme_without_cue"]] = 1.0
        else:
            f[_INDEX["extreme_match"]] = float(cue == want)
            f[_INDEX["extreme_mismatch"]] = float(cue != want)
    elif view.extreme_cue is not None or view.extreme_year_cue is not None:
        f[_INDEX["cue_without_extreme"]] = 1.0
    if shape.comparator is not None:
        cue = view.compare_year_cue if year_attr else view.compare_cue
        if cue is None:
            f[_INDEX["compare_without_cue"]] = 1.0
        else:
            f[_INDEX["compare_match"]] = float(cue == shape.comparator)
            f[_INDEX["compare_mismatch"]] = float(cue != shape.comparator)
    elif view.compare_cue is not None and shape.answer_type == BOOL:
        f[_INDEX["cue_without_compare"]] = 1.0
    f[_INDEX["bool_verify"]] = float("VerifyRel" in shape.ops)
    f[_INDEX["steps"]] = shape.steps
    f[_INDEX["hops"]] = shape.hops
    f[_INDEX["inverse_hops"]] = sum(d == "-" for _, d in shape.relations)
    f[_INDEX["coverage"]] = coverage
    return f


class _Block:
    """The question-independent part of the features of a sequence of shapes, as arrays,
    so that a question's features are a handful of numpy operations (the same numbers as
    :func:`features`, which stays the readable definition; a test holds them equal)."""

    def __init__(self, shapes: Sequence[Shape], lex: SchemaLexicon):
        rels = sorted(n for k, n in lex.phrases if k == "relation")
        attrs = sorted(n for k, n in lex.phrases if k == "attribute")
        vocab = sorted(lex.relational_vocabulary | lex.class_vocabulary)
        self.rels, self.attrs = rels, attrs
        self.vocab = {w: i for i, w in enumerate(vocab)}
        n = len(shapes)
        self.rel_mask = np.zeros((n, len(rels)), dtype=bool)
        self.attr_mask = np.zeros((n, len(attrs)), dtype=bool)
        self.explained = np.zeros((n, len(vocab)), dtype=bool)
        self.class_explained = np.zeros((n, len(vocab)), dtype=bool)
        self.count = np.zeros(n, dtype=bool)
        self.extreme = np.zeros(n, dtype=int)             # +1 Argmax, -1 Argmin
        self.comparator = np.array([s.comparator or "" for s in shapes], dtype=object)
        self.year_attr = np.zeros(n, dtype=bool)
        self.is_bool = np.zeros(n, dtype=bool)
        self.static = np.zeros((n, 4))                   # bool_verify, steps, hops, inverse_hops
        self.types = [s.answer_type for s in shapes]
        for i, shape in enumerate(shapes):
            for r, _ in shape.relations:
                self.rel_mask[i, rels.index(r)] = True
            for a in shape.attributes:
                self.attr_mask[i, attrs.index(a)] = True
            rel_words, class_words = _shape_words(shape, lex)
            for w in rel_words | class_words:
                self.explained[i, self.vocab[w]] = True
            for w in class_words:
                self.class_explained[i, self.vocab[w]] = True
            self.count[i] = "Count" in shape.ops
            self.extreme[i] = {"Argmax": 1, "Argmin": -1}.get(shape.extreme, 0)
            self.year_attr[i] = bool(shape.attributes) and shape.attributes[-1] in lex.year_attributes
            self.is_bool[i] = shape.answer_type == BOOL
            self.static[i] = ("VerifyRel" in shape.ops, shape.steps, shape.hops,
                              sum(d == "-" for _, d in shape.relations))
        self.n_rel = self.rel_mask.sum(axis=1)
        self.n_attr = self.attr_mask.sum(axis=1)

    def features(self, view: QuestionView, coverage: np.ndarray) -> np.ndarray:
        n = len(self.types)
        f = np.zeros((n, len(FEATURES)))
        col = _INDEX
        fits = {t: compatible(view.expected, t) for t in set(self.types)}
        fit = np.array([fits[t] is True for t in self.types])
        known = view.expected.known
        if known:
            f[:, col["type_match"]] = fit
            f[:, col["type_mismatch"]] = ~fit
            if len(view.expected.allowed) == 1:
                f[:, col["type_exact"]] = fit
        ev_rel = np.array([view.evidence[("relation", r)] for r in self.rels])
        ev_attr = np.array([view.evidence[("attribute", a)] for a in self.attrs])
        has_rel = self.n_rel > 0
        f[:, col["rel_evidence_mean"]] = np.where(has_rel, (self.rel_mask * ev_rel).sum(axis=1)
                                                  / np.maximum(self.n_rel, 1), 0.0)
        f[:, col["rel_evidence_min"]] = np.where(has_rel, np.where(self.rel_mask, ev_rel, np.inf).min(axis=1), 1.0)
        f[:, col["rel_unevidenced"]] = (self.rel_mask & (ev_rel == 0.0)).sum(axis=1)
        has_attr = self.n_attr > 0
        f[:, col["attr_evidence"]] = np.where(has_attr, np.where(self.attr_mask, ev_attr, np.inf).min(axis=1), 0.0)
        f[:, col["attr_unevidenced"]] = (self.attr_mask & (ev_attr == 0.0)).sum(axis=1)
        qrel = [self.vocab[w] for w in view.relational_words]
        qcls = [self.vocab[w] for w in view.class_words]
        f[:, col["unexplained_relational_words"]] = len(qrel) - self.explained[:, qrel].sum(axis=1)
        f[:, col["unexplained_class_words"]] = len(qcls) - self.explained[:, qcls].sum(axis=1)
        f[:, col["explained_class_words"]] = self.class_explained[:, qcls].sum(axis=1)
        cue = view.count_cue
        f[:, col["count_with_cue"]] = self.count & cue
        f[:, col["count_without_cue"]] = self.count & (not cue)
        f[:, col["cue_without_count"]] = (~self.count) & cue
        code = {"max": 1, "min": -1, None: 0}
        ext_cue = np.where(self.year_attr, code[view.extreme_year_cue], code[view.extreme_cue])
        has_ext = self.extreme != 0
        f[:, col["extreme_without_cue"]] = has_ext & (ext_cue == 0)
        f[:, col["extreme_match"]] = has_ext & (ext_cue != 0) & (ext_cue == self.extreme)
        f[:, col["extreme_mismatch"]] = has_ext & (ext_cue != 0) & (ext_cue != self.extreme)
        if view.extreme_cue is not None or view.extreme_year_cue is not None:
            f[:, col["cue_without_extreme"]] = ~has_ext
        cmp_cue = np.where(self.year_attr, view.compare_year_cue or "", view.compare_cue or "")
        has_cmp = self.comparator != ""
        f[:, col["compare_without_cue"]] = has_cmp & (cmp_cue == "")
        f[:, col["compare_match"]] = has_cmp & (cmp_cue != "") & (cmp_cue == self.comparator)
        f[:, col["compare_mismatch"]] = has_cmp & (cmp_cue != "") & (cmp_cue != self.comparator)
        if view.compare_cue is not None:
            f[:, col["cue_without_compare"]] = (~has_cmp) & self.is_bool
        f[:, col["bool_verify"]:col["inverse_hops"] + 1] = self.static
        f[:, col["coverage"]] = coverage
        return f


_BLOCKS: dict[tuple, tuple[_Block, tuple]] = {}


def _block(shapes: tuple[Shape, ...], lex: SchemaLexicon) -> _Block:
    # Shapes live in the enumerator's cache, so their ids are stable; the tuple of shapes is
    # kept beside the block so the ids cannot be reused while the entry exists.
    key = (id(lex), tuple(id(s) for s in shapes))
    hit = _BLOCKS.get(key)
    if hit is None:
        if len(_BLOCKS) > 4096:
            _BLOCKS.clear()
        hit = _BLOCKS[key] = (_Block(shapes, lex), shapes)
    return hit[0]


def feature_matrix(view: QuestionView, candidates: Sequence[Candidate], lex: SchemaLexicon | None = None) -> np.ndarray:
    """Features of every candidate of one question (``[n, len(FEATURES)]``), row ``i`` equal
    to ``features(view, candidates[i])``."""
    lex = lex or lexicon()
    if not candidates:
        return np.zeros((0, len(FEATURES)))
    block = _block(tuple(c.shape for c in candidates), lex)
    return block.features(view, np.array([c.coverage for c in candidates], dtype=float))


# ---- the ranker --------------------------------------------------------------------------------

def _check_texts(values, what: str) -> list[str]:
    if isinstance(values, str):
        raise ModelError(f"expected a list of {what}, got one string")
    values = list(values)
    if not all(isinstance(v, str) for v in values):
        raise ModelError(f"{what} must be strings")
    return values


class SchemaRanker(BaseEstimator):
    """Pairwise logistic regression over :data:`FEATURES`.

    :param C: inverse L2 regularisation of the logistic regression (chosen on validation).
    :param max_questions: training questions used (a stratified, seeded sample of the
        train split: its nine sentence shapes are covered long before 100,000 questions).
    :param hard_rounds: bootstrap rounds that up-weight the negatives the previous model
        ranks at or above the gold (0: one round, every negative weighted alike).
    :param hard_weight: weight of those hard negatives.
    :param random_state: seed of the sample.

    Learned: ``coef_`` (one weight per feature), ``n_questions_``, ``n_pairs_``,
    ``unreachable_`` (training questions whose gold program the enumerator does not build).
    """

    def __init__(self, C: float = 10.0, max_questions: int = 3000, hard_rounds: int = 1,
                 hard_weight: float = 3.0, random_state: int = 0):
        self.C = C
        self.max_questions = max_questions
        self.hard_rounds = hard_rounds
        self.hard_weight = hard_weight
        self.random_state = random_state

    # -- training
    def fit(self, questions, programs, groups=None) -> "SchemaRanker":
        """Learn from questions and their gold program texts. Returns ``self``.

        ``groups`` (e.g. template ids) stratifies the sample when ``max_questions`` is
        smaller than the data.
        """
        questions = _check_texts(questions, "questions")
        programs = _check_texts(programs, "programs")
        if len(questions) != len(programs) or not questions:
            raise ModelError(f"need one gold program per question (got {len(questions)} questions, "
                             f"{len(programs)} programs), and at least one")
        chosen = _sample(len(questions), self.max_questions, groups, self.random_state)
        lex = lexicon()
        blocks = []                      # (features, gold index) per question
        unreachable = 0
        for i in chosen:
            candidates = enumerate_programs(questions[i])
            gold = _normalise(programs[i])
            index = next((j for j, c in enumerate(candidates) if c.text == gold), None)
            if index is None:
                unreachable += 1
                continue
            if len(candidates) < 2:
                continue
            blocks.append((feature_matrix(QuestionView.of(questions[i], lex), candidates, lex), index))
        if not blocks:
            raise ModelError("no training question has a gold program among its enumerated candidates")
        weights = None
        for round_ in range(1 + max(0, int(self.hard_rounds))):
            X, y, w = _pairs(blocks, weights)
            model = LogisticRegression(C=self.C, fit_intercept=False, max_iter=2000)
            model.fit(X, y, sample_weight=w)
            coef = model.coef_[0]
            # Hard negatives for the next round: those scored at or above the gold minus a margin.
            weights = []
            for feats, gold in blocks:
                scores = feats @ coef
                hard = scores >= scores[gold] - 1.0
                weights.append(np.where(hard, float(self.hard_weight), 1.0))
        self.coef_ = coef
        self.n_questions_ = len(blocks)
        self.n_pairs_ = int(sum(len(f) - 1 for f, _ in blocks))
        self.unreachable_ = unreachable
        return self

    # -- scoring
    def score_candidates(self, question: str, candidates: Sequence[Candidate]) -> np.ndarray:
        """One score per candidate (higher is better)."""
        check_is_fitted(self, "coef_")
        if not candidates:
            return np.zeros(0)
        lex = lexicon()
        return feature_matrix(QuestionView.of(question, lex), candidates, lex) @ self.coef_

    def rank(self, question: str, candidates: Sequence[Candidate] | None = None, limit: int | None = None
             ) -> list[tuple[Candidate, float]]:
        """Candidates best first with their scores (only the first ``limit``, if given). Ties
        go to the shorter program, then to the smaller program text, so the order is
        deterministic."""
        try:
            check_is_fitted(self, "coef_")
        except Exception:
            raise ModelError("SchemaRanker is not fitted yet: call fit(questions, programs)") from None
        if candidates is None:
            candidates = enumerate_programs(question)
        scores = self.score_candidates(question, candidates)
        indices: Sequence[int] = range(len(candidates))
        if limit is not None and 0 < limit < len(candidates):
            # Sort only the candidates that can reach the first ``limit`` places: rounding
            # is monotone and moves a score by at most 5e-10, so none of them scores below
            # the limit-th best raw score minus 1e-9. (A question has ~40 candidates and
            # the parser reads ~10: sorting them all was a tenth of its time.)
            floor = np.partition(scores, len(scores) - limit)[len(scores) - limit] - 1e-8
            indices = np.flatnonzero(scores >= floor).tolist()
        order = sorted(indices,
                       key=lambda i: (-round(float(scores[i]), 9), candidates[i].shape.steps, candidates[i].text))
        if limit is not None:
            order = order[:limit]
        return [(candidates[i], float(scores[i])) for i in order]

    def weights(self) -> dict[str, float]:
        """Learned weight of every feature (for reports and sanity checks)."""
        check_is_fitted(self, "coef_")
        return {name: float(w) for name, w in zip(FEATURES, self.coef_)}


def _normalise(program: str) -> str:
    return "".join(program.split())


def _sample(n: int, limit: int | None, groups, seed: int) -> list[int]:
    """Indices of at most ``limit`` items, stratified by ``groups``, seeded, sorted."""
    if limit is None or n <= limit:
        return list(range(n))
    rng = np.random.default_rng(seed)
    if groups is None:
        return sorted(rng.choice(n, size=limit, replace=False).tolist())
    groups = np.asarray(list(groups))
    out: list[int] = []
    values = sorted(set(groups.tolist()))
    per = max(1, limit // len(values))
    for value in values:
        idx = np.flatnonzero(groups == value)
        take = min(len(idx), per)
        out.extend(rng.choice(idx, size=take, replace=False).tolist())
    return sorted(out)


def _pairs(blocks, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairwise differences gold − negative (label 1) and their negation (label 0)."""
    diffs, sample_w = [], []
    for b, (feats, gold) in enumerate(blocks):
        negatives = np.delete(np.arange(len(feats)), gold)
        d = feats[gold] - feats[negatives]
        diffs.append(d)
        sample_w.append(np.ones(len(negatives)) if weights is None else weights[b][negatives])
    D = np.vstack(diffs)
    W = np.concatenate(sample_w)
    X = np.vstack([D, -D])
    y = np.concatenate([np.ones(len(D)), np.zeros(len(D))])
    return X, y, np.concatenate([W, W])
