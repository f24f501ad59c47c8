"""Ranking compositional programs: generic features of a (question, program) pair and a
pairwise linear model over them.

The features extend :mod:`parsers.schema_ranker`'s (label alignment of relations and
attributes, answer type, count / superlative / comparative cues, shape) with what the
wider program space needs, again without a single feature keyed on a question word:

- **local evidence**: an attribute a number is compared with should be named *near the
  number* ("over 190 **cm**", "**revenue** above 5 billion", "born after 1990" against
  a year attribute); a superlative's attribute near the superlative ("largest **area**",
  "**highest-earning**"); a number counted by ``Count;VerifyNum`` next to the counted
  class ("more than 5 **employees**");
- **years**: a four-digit number between 1000 and 2100 against a year attribute, other
  numbers against other attributes;
- **set operators**: a negation ("not", "except", "other than", ...) against ``Diff``,
  and which branch is subtracted (the entity mentioned after the negation); "or"/"either"
  against ``Or``;
- **comparison order**: the entity after "than" / "compared with" is the second operand;
- **shape**: hops after a superlative or a set operator, comparators the words did not give.

Weights are learned from gold-minus-negative differences (RnG-KBQA's contrastive ranking),
negatives sampled per question, a second round up-weighting the negatives the first model
still ranks near the gold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.linear_model import LogisticRegression

from parsers.answer_type import ExpectedType, compatible, expected_type, stem
from parsers.compose import CShape, Cues
from parsers.linking import LinkedQuestion
from parsers.schema_ranker import (_ADJECTIVE_NOUNS, _AT_LEAST, _AT_MOST, _COUNT, _EQUAL, _GT, _LT, _MAX, _MIN,
                                   _STOP, _YEAR_GT, _YEAR_LT, _YEAR_MAX, _YEAR_MIN, SchemaLexicon, _degree_bases)

__all__ = ["FEATURES", "ComposeView", "feature_matrix", "block_of", "ComposeRanker", "schema_lexicon"]

FEATURES = (
    "type_match", "type_mismatch", "type_exact",
    "rel_evidence_mean", "rel_evidence_min", "rel_unevidenced",
    "attr_evidence", "attr_unevidenced",
    "unexplained_relational_words", "unexplained_class_words", "explained_class_words",
    "count_with_cue", "count_without_cue", "cue_without_count",
    "extreme_match", "extreme_mismatch", "extreme_without_cue", "cue_without_extreme", "extreme_local",
    "compare_match", "compare_mismatch", "compare_without_cue", "cue_without_compare", "compare_order",
    "filters", "filter_local", "filter_local_min", "year_match", "year_mismatch", "verify_num", "verify_local",
    "count_class", "count_noun_unused", "diff", "diff_order", "union", "union_scope", "cue_without_union", "conj",
    "verify_rel",
    "steps", "hops", "inverse_hops", "post_hops", "guessed_ops",
)
_COL = {name: i for i, name in enumerate(FEATURES)}

_NEG_WORDS = frozenset(("not", "never", "except", "excluding", "exclude", "besides", "without", "outside"))
_NEG_PAIRS = {("apart", "from"), ("aside", "from"), ("other", "than"), ("else", "than"), ("but", "not"),
              ("no", "longer")}
_CONTRACTED = frozenset(("don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven", "hadn", "won",
                         "can", "couldn", "wouldn", "shouldn"))
_REFERENCE = frozenset(("than", "versus", "vs"))
_CLAUSE = frozenset(("and", "or", "but", ",", ";", "whose", "which", "who", "that", "while", "where"))
_REFERENCE_PAIRS = {("compared", "with"), ("compared", "to"), ("relative", "to"), ("as", "opposed")}


@lru_cache(maxsize=8)
def schema_lexicon(schema) -> SchemaLexicon:
    """The stemmed label words of every schema item (:class:`SchemaLexicon`), where an item
    without a label also gets its local name's words split at case changes and underscores
    (``enrolledIn``: "enrolled in"), so a KB that only *uses* a property still names it."""
    from parsers.answer_type import _is_year_attribute
    from parsers.schema_ranker import _stems
    phrases: dict[tuple[str, str], tuple[frozenset[str], ...]] = {}
    for kind, table in (("relation", schema.relations), ("attribute", schema.attributes),
                        ("class", schema.classes)):
        for name, info in table.items():
            split = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
            texts = [info.label, *info.alt_labels, name.replace("_", " "), split]
            sets = {x for x in (_stems(t) for t in texts) if x}
            phrases[(kind, name)] = tuple(sorted(sets, key=lambda x: (len(x), sorted(x))))
    words = {item: frozenset().union(*sets) for item, sets in phrases.items()}
    rel_vocab = frozenset().union(*(w for (k, _), w in words.items() if k != "class"))
    class_vocab = frozenset().union(*(w for (k, _), w in words.items() if k == "class"))
    years = frozenset(a for a, info in schema.attributes.items()
                      if info.value_type == "year" or _is_year_attribute(info))
    return SchemaLexicon(phrases, words, rel_vocab, class_vocab, years)


_WORD_STEMS: dict[int, tuple[SchemaLexicon, dict[str, tuple[str, ...]]]] = {}


def _stems_of(words: Sequence[str], lex: SchemaLexicon) -> frozenset[str]:
    """Stems of ``words`` with degree bases and the nouns gradable adjectives grade."""
    entry = _WORD_STEMS.get(id(lex))
    if entry is None or entry[0] is not lex or len(entry[1]) > 200_000:
        entry = _WORD_STEMS[id(lex)] = (lex, {})
    cache = entry[1]
    out: set[str] = set()
    for w in words:
        found = cache.get(w)
        if found is None:
            found = cache[w] = _word_stems(w, lex)
        out.update(found)
    return frozenset(out)


def _word_stems(w: str, lex: SchemaLexicon) -> tuple[str, ...]:
    if not w or not w[0].isalpha() or w in _STOP:
        return ()
    vocabulary = lex.relational_vocabulary | lex.class_vocabulary
    out = [stem(w)]
    # Derivations Snowball keeps apart ("advises"/"advisor", "teacher"/"teaches"): a label
    # stem that begins with the word's stem, or the other way round, from five letters on.
    s0 = out[0]
    if len(s0) >= 5:
        out.extend(v for v in vocabulary if v != s0 and len(v) >= 5 and (v.startswith(s0) or s0.startswith(v)))
    for base in _degree_bases(w):
        if stem(base) in vocabulary:
            out.append(stem(base))
    for form in (w, *_degree_bases(w)):
        noun = _ADJECTIVE_NOUNS.get(form)
        if noun is not None:
            out.append(stem(noun))
    return tuple(out)


def _evidence(stems: frozenset[str], phrases) -> float:
    return max((len(p & stems) / len(p) for p in phrases), default=0.0)


def _table(stems: frozenset[str], lex: SchemaLexicon, kind: str, names) -> dict[str, float]:
    """Best label match of every item of ``kind`` (0 for items none of whose words occur)."""
    out = {}
    for name in names:
        item = (kind, name)
        out[name] = _evidence(stems, lex.phrases[item]) if stems & lex.words[item] else 0.0
    return out


@dataclass(frozen=True)
class ComposeView:
    """A question as the features read it (computed once per question)."""

    expected: ExpectedType
    evidence_rel: dict[str, float]
    evidence_attr: dict[str, float]
    relational_words: frozenset[str]
    class_words: frozenset[str]
    named_classes: frozenset[str]                 # classes the question names with a class word
    count_cue: bool
    extreme_cue: str | None
    extreme_year_cue: str | None
    compare_cue: str | None
    compare_year_cue: str | None
    local_attr: tuple[dict[str, float], ...]     # per number: attribute -> evidence near it
    local_class: tuple[dict[str, float], ...]    # per number: class -> evidence right after it
    extreme_attr: dict[str, float]                # attribute -> evidence near the superlative
    year_like: tuple[bool, ...]
    count_classes: frozenset[str] | None          # classes the noun after "how many"/"more" names
    union_pair: frozenset[int] | None             # the entities right before and after "or"
    negated_slot: int | None                      # the entity mentioned first after a negation
    reference_slot: int | None                    # the entity mentioned first after "than"
    cues: Cues

    @classmethod
    def of(cls, linked: LinkedQuestion, cues: Cues, schema, lex: SchemaLexicon,
           slots: Sequence[int] | None = None) -> "ComposeView":
        words = list(linked.words)
        in_mention = set()
        for m in linked.mentions:
            in_mention.update(range(m.first, m.last))
        plain = [w if i not in in_mention else "" for i, w in enumerate(words)]
        stems = _stems_of(plain, lex)
        literal = frozenset(stem(w) for w in plain if w and w[0].isalpha() and w not in _STOP)
        ev_rel = _table(stems, lex, "relation", schema.relations)
        ev_attr = _table(stems, lex, "attribute", schema.attributes)
        text = " ".join(w for w in plain if w)
        # "at least"/"at most" bound a number; they are not superlatives.
        wordset = set(plain) - ({"least", "most"} if re.search(r"\bat (least|most)\b", text) else set())

        def direction(up, down):
            has_up, has_down = bool(wordset & up), bool(wordset & down)
            return "max" if has_up and not has_down else "min" if has_down and not has_up else None

        extreme = direction(_MAX, _MIN)
        extreme_year = direction(_YEAR_MAX, _YEAR_MIN) or extreme

        def comparator(up, down):
            d = direction(up, down)
            base = ">" if d == "max" else "<" if d == "min" else None
            if _AT_LEAST.search(text):
                return ">="
            if _AT_MOST.search(text):
                return "<="
            if base is None and wordset & _EQUAL:
                return "="
            return base

        compare = comparator(_GT | {"more", "over"}, _LT)
        compare_year = comparator(_YEAR_GT, _YEAR_LT) if wordset & (_YEAR_GT | _YEAR_LT) else compare
        # Local windows: up to five words before a number and four after it, within its
        # clause ("more than 100,000 people | and an area under 500 km2").
        attr_phrases = {a: lex.phrases[("attribute", a)] for a in schema.attributes}
        class_phrases = {c: lex.phrases[("class", c)] for c in schema.classes}
        local_attr, local_class = [], []
        for num in linked.numbers[:2]:
            j = num.first
            before = []
            for x in reversed(plain[max(0, j - 5):j]):
                if x in _CLAUSE:
                    break
                before.append(x)
            after = []
            for x in plain[j + 1:j + 5]:
                if x in _CLAUSE:
                    break
                after.append(x)
            window = _stems_of(before + after, lex)
            local_attr.append(_table(window, lex, "attribute", attr_phrases))
            after = _stems_of(plain[j + 1:j + 4], lex)
            local_class.append(_table(after, lex, "class", class_phrases))
        ext_attr = {a: 0.0 for a in schema.attributes}
        for j, w in enumerate(plain):
            parts = w.split("-")
            if any(p in _MAX or p in _MIN or p in _YEAR_MAX or p in _YEAR_MIN or (len(p) > 4 and p.endswith("est"))
                   for p in parts):
                window = _stems_of(plain[max(0, j - 1):j + 4], lex)
                for a, v in _table(window, lex, "attribute", attr_phrases).items():
                    ext_attr[a] = max(ext_attr[a], v)
        order = list(range(len(linked.mentions))) if slots is None else list(slots)

        def first_mention_after(positions):
            best = None
            for p in positions:
                for slot, m in enumerate(linked.mentions):
                    if m.first > p:
                        if best is None or m.first < linked.mentions[best].first:
                            best = slot
                        break
            return best

        negations, references = [], []
        for j, w in enumerate(plain):
            nxt = plain[j + 1] if j + 1 < len(plain) else ""
            if w in _NEG_WORDS or (w, nxt) in _NEG_PAIRS or (w in _CONTRACTED and nxt == "'"):
                negations.append(j)
            if w in _REFERENCE or (w, nxt) in _REFERENCE_PAIRS:
                references.append(j)
        neg = first_mention_after(negations)
        ref = first_mention_after(references[:1])
        union_pair = None
        for j, w in enumerate(plain):
            if w == "or" and cues.union:
                before = [slot for slot, m in enumerate(linked.mentions) if m.last <= j]
                after = [slot for slot, m in enumerate(linked.mentions) if m.first > j]
                if before and after:
                    union_pair = frozenset((before[-1], after[0]))
                break
        named = frozenset(c for c, v in _table(stems, lex, "class", schema.classes).items() if v >= 1.0)
        return cls(_expected(linked, plain, schema), ev_rel, ev_attr, literal & lex.relational_vocabulary,
                   literal & lex.class_vocabulary, named, bool(_COUNT.search(text)), extreme, extreme_year, compare,
                   compare_year, tuple(local_attr), tuple(local_class), ext_attr,
                   tuple(n.year_like for n in linked.numbers[:2]), _counted_noun(plain, schema), union_pair,
                   order.index(neg) if neg is not None and neg in order else None,
                   order.index(ref) if ref is not None and ref in order else None, cues)


_WH = frozenset(("which", "what", "who", "whom", "whose", "where", "when", "how"))
_AUX = frozenset(("is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "will",
                  "would", "should"))


def _expected(linked: LinkedQuestion, plain: list[str], schema) -> ExpectedType:
    """The question's answer type (:func:`parsers.answer_type.expected_type` on the masked
    question, with the KB's type nouns), with two English rules on top: "which one(s)" asks
    for an entity, and a question with a wh-word that the rules could not read still does
    not ask yes or no."""
    found = expected_type(linked.masked, schema)
    words = [w for w in plain if w]
    entity_types = frozenset(schema.classes)
    for i, w in enumerate(words[:-1]):
        if w in ("which", "what") and words[i + 1] in ("one", "ones"):
            return ExpectedType(entity_types, f"{w} {words[i + 1]}")
        if w == "which" and words[i + 1] in _AUX and not found.known:
            return ExpectedType(entity_types, f"which {words[i + 1]}")
    if not found.known and words and words[0] not in _AUX and any(w in _WH for w in words):
        return ExpectedType(entity_types | {"count", "quantity", "year"}, "wh-word")
    return found


_COUNTED_AFTER = frozenset(("many", "count", "more", "fewer", "less"))
_LONGEST: dict[int, int] = {}


def _longest(lexicon) -> int:
    found = _LONGEST.get(id(lexicon))
    if found is None:
        found = _LONGEST[id(lexicon)] = max((len(k) for k in lexicon), default=1)
    return found


def _counted_noun(plain: list[str], schema) -> frozenset[str] | None:
    """The classes named by the noun a count is about ("how many *cities*", "the number of
    *employees*", "more *people*"), from the KB's type nouns; ``None`` when none is named."""
    from parsers.answer_type import singular, type_lexicon
    lexicon = type_lexicon(schema)
    longest = _longest(lexicon)
    words = list(plain)

    def noun_at(j: int) -> frozenset[str] | None:
        for size in range(min(longest, len(words) - j), 0, -1):
            phrase = tuple(singular(x) for x in words[j:j + size] if x)
            types = lexicon.get(phrase)
            if types:
                classes = frozenset(t for t in types if t in schema.classes)
                if classes:
                    return classes
        return None

    for i, w in enumerate(words):
        if not (w in _COUNTED_AFTER or (w == "of" and i and words[i - 1] == "number")):
            continue
        for j in range(i + 1, min(len(words), i + 5)):
            if not words[j] or words[j] in ("'", "s"):
                continue                      # "how many of X's cities": past the mention
            if words[j] in _AUX or words[j] in _WH or words[j] == "than":
                break                         # the noun phrase has ended
            found = noun_at(j)
            if found:
                return found
        if w == "many":
            # "Of the businesses in X, how many ...": the counted noun came first.
            for j in range(max(0, i - 8), i):
                if words[j] in ("of", "among") and j + 1 < i:
                    for k in range(j + 1, min(i, j + 4)):
                        if words[k] and words[k] not in ("the", "all", "those", "these"):
                            found = noun_at(k)
                            if found:
                                return found
                            break
    return None


class _Block:
    """The question-independent columns of a tuple of shapes, as arrays."""

    def __init__(self, shapes: Sequence[CShape], schema, lex: SchemaLexicon, numbers: int):
        rels, attrs, classes = sorted(schema.relations), sorted(schema.attributes), sorted(schema.classes)
        self.rels, self.attrs, self.classes = rels, attrs, classes
        ri, ai, ci = ({x: i for i, x in enumerate(v)} for v in (rels, attrs, classes))
        vocab = sorted(lex.relational_vocabulary | lex.class_vocabulary)
        self.vocab = {w: i for i, w in enumerate(vocab)}
        years = lex.year_attributes
        n, m = len(shapes), max(numbers, 1)
        self.n = n
        self.types = [s.answer_type for s in shapes]
        self.rel_mask = np.zeros((n, len(rels)), dtype=bool)
        self.attr_mask = np.zeros((n, len(attrs)), dtype=bool)
        self.explained = np.zeros((n, len(vocab)), dtype=bool)
        self.class_explained = np.zeros((n, len(vocab)), dtype=bool)
        self.count_end = np.zeros(n, dtype=bool)
        self.has_count = np.zeros(n, dtype=bool)
        self.extreme = np.zeros(n)
        self.extreme_attr = np.zeros((n, len(attrs)))
        self.extreme_year = np.zeros(n, dtype=bool)
        self.comparator = np.array([s.compare[0] if s.compare else "" for s in shapes], dtype=object)
        self.compare_year = np.zeros(n, dtype=bool)
        self.compare_second = np.array([s.compare[2] if s.compare else -1 for s in shapes])
        self.filter_pairs = np.zeros((n, m * len(attrs)))
        self.n_filters = np.zeros(n)
        self.filter_min_index = [[k * len(attrs) + ai[a] for a, k, _ in s.filters] for s in shapes]
        self.year_uses = np.zeros((n, m))
        self.other_uses = np.zeros((n, m))
        self.verify_num = np.zeros(n)
        self.verify_class = np.zeros((n, m * len(classes)))
        self.diff_slot = np.array([s.diff if s.diff is not None else -1 for s in shapes])
        # Count's class, one-hot over classes with their ancestors (a count of students is
        # a count of people); union scope as the pair of slots under the Or.
        self.counted = np.zeros((n, len(classes)))
        self.has_counted = np.zeros(n, dtype=bool)
        for i, s in enumerate(shapes):
            if "Count" in s.ops and s.counted_class in ci:
                self.has_counted[i] = True
                for a in schema.ancestors(s.counted_class):
                    if a in ci:
                        self.counted[i, ci[a]] = 1.0
        self.union_code = np.array([_pair_code(s.union_slots) for s in shapes])
        width = max((len(x) for x in self.filter_min_index), default=0)
        self.filter_index = np.full((n, max(width, 1)), -1)
        for i, idx in enumerate(self.filter_min_index):
            self.filter_index[i, :len(idx)] = idx
        self.is_bool = np.array([t == "bool" for t in self.types])
        self.type_codes, self.type_names = _codes(self.types)
        self._fits: dict[ExpectedType, np.ndarray] = {}
        self._memo: dict = {}
        self._coef = None
        self.schema = schema
        self.static = np.zeros((n, 9))     # union, conj, verify_rel, steps, hops, inverse, post, guessed
        # A hop is also evidenced, at half strength, by the question naming the class it
        # leads to ("Person_1's *company*" is a works_at hop nobody spells out).
        self.hop_targets = []
        for r in rels:
            info = schema.relations[r]
            self.hop_targets += [info.range, info.domain]
        self.hop_mask = np.zeros((n, 2 * len(rels)), dtype=bool)
        for i, s in enumerate(shapes):
            for r, d in s.relations:
                self.rel_mask[i, ri[r]] = True
                self.hop_mask[i, 2 * ri[r] + (d == "-")] = True
            for a in s.attributes:
                self.attr_mask[i, ai[a]] = True
            words = frozenset().union(*(lex.words[("relation", r)] for r, _ in s.relations),
                                      *(lex.words[("attribute", a)] for a in s.attributes))
            cwords = frozenset().union(*(lex.words[("class", c)] for c in s.classes if ("class", c) in lex.words))
            for w in words | cwords:
                self.explained[i, self.vocab[w]] = True
            for w in cwords:
                self.class_explained[i, self.vocab[w]] = True
            self.count_end[i] = s.ops[-1] == "Count"
            self.has_count[i] = "Count" in s.ops
            if s.extreme:
                self.extreme[i] = s.extreme[0]
                self.extreme_attr[i, ai[s.extreme[1]]] = 1.0
                self.extreme_year[i] = s.extreme[1] in years
            if s.compare and s.query_attrs:
                self.compare_year[i] = s.query_attrs[-1] in years
            for a, k, _ in s.filters:
                self.filter_pairs[i, k * len(attrs) + ai[a]] = 1.0
                self.n_filters[i] += 1
            for k, a in s.values:
                if a is not None and a in years:
                    self.year_uses[i, k] += 1
                else:
                    self.other_uses[i, k] += 1
            if s.verify_num is not None:
                self.verify_num[i] = 1.0
                if s.verify_num[2] is None and s.counted_class in ci:
                    self.verify_class[i, s.verify_num[0] * len(classes) + ci[s.counted_class]] = 1.0
            self.static[i] = (s.union, s.conj, s.verify_rel, s.steps, s.hops, s.inverse_hops, s.post_hops,
                              s.guessed_ops, s.diff is not None)
        self.n_rel = self.rel_mask.sum(axis=1)
        self.n_hop = self.hop_mask.sum(axis=1)
        self.n_attr = self.attr_mask.sum(axis=1)
        self.m = m

    # The features fall into groups. Most depend on a few question facts (the answer type
    # asked, the cues, which entity follows "not" or "than"), so their contribution to the
    # score is memoised per block and per those facts (:meth:`score`); the rest depend on
    # the question's words through the alignment scores and are computed every time.

    def features(self, view: ComposeView) -> np.ndarray:
        """The feature matrix (``[n, len(FEATURES)]``): the readable definition, used for
        training; :meth:`score` gives ``features(view) @ coef`` faster."""
        f = np.zeros((self.n, len(FEATURES)))
        for group in _MEMO_GROUPS + _LIVE_GROUPS:
            getattr(self, "_g_" + group)(view, f)
        return f

    def score(self, view: ComposeView, coef: np.ndarray) -> np.ndarray:
        total = np.zeros(self.n)
        if self._coef is not coef:
            self._memo, self._coef = {}, coef
        for group in _MEMO_GROUPS:
            key = (group, _group_key(group, view))
            part = self._memo.get(key)
            if part is None:
                f = np.zeros((self.n, len(FEATURES)))
                getattr(self, "_g_" + group)(view, f)
                if len(self._memo) > 4096:
                    self._memo.clear()
                part = self._memo[key] = f @ coef
            total += part
        f = np.zeros((self.n, len(FEATURES)))
        for group in _LIVE_GROUPS:
            getattr(self, "_g_" + group)(view, f)
        return total + f @ coef

    def _g_type(self, view, f):
        col = _COL
        if view.expected.known:
            fit = self.type_fit(view)
            f[:, col["type_match"]] = fit
            f[:, col["type_mismatch"]] = ~fit
            if len(view.expected.allowed) == 1:
                f[:, col["type_exact"]] = fit

    def _g_relations(self, view, f):
        col = _COL
        ev_hop = np.array([max(view.evidence_rel[self.rels[j // 2]],
                               0.5 if self.hop_targets[j] in view.named_classes else 0.0)
                           for j in range(2 * len(self.rels))])
        has_rel = self.n_hop > 0
        f[:, col["rel_evidence_mean"]] = np.where(has_rel, (self.hop_mask @ ev_hop) / np.maximum(self.n_hop, 1), 0.0)
        f[:, col["rel_evidence_min"]] = np.where(has_rel, np.where(self.hop_mask, ev_hop, np.inf).min(axis=1), 1.0)
        f[:, col["rel_unevidenced"]] = self.hop_mask @ (ev_hop == 0.0).astype(float)

    def _g_attributes(self, view, f):
        col = _COL
        ev_attr = np.array([view.evidence_attr[a] for a in self.attrs])
        has_attr = self.n_attr > 0
        f[:, col["attr_evidence"]] = np.where(has_attr, np.where(self.attr_mask, ev_attr, np.inf).min(axis=1), 0.0)
        f[:, col["attr_unevidenced"]] = self.attr_mask @ (ev_attr == 0.0).astype(float)
        f[:, col["extreme_local"]] = self.extreme_attr @ np.array([view.extreme_attr[a] for a in self.attrs])
        m = self.m
        local = np.zeros(m * len(self.attrs))
        for k, table in enumerate(view.local_attr[:m]):
            local[k * len(self.attrs):(k + 1) * len(self.attrs)] = [table[a] for a in self.attrs]
        f[:, col["filter_local"]] = (self.filter_pairs @ local) / np.maximum(self.n_filters, 1)
        if len(view.local_attr):
            padded = np.append(local, np.inf)
            lows = padded[self.filter_index].min(axis=1)
            f[:, col["filter_local_min"]] = np.where(np.isinf(lows), 0.0, lows)
        lc = np.zeros(m * len(self.classes))
        for k, table in enumerate(view.local_class[:m]):
            lc[k * len(self.classes):(k + 1) * len(self.classes)] = [table[c] for c in self.classes]
        f[:, col["verify_local"]] = self.verify_class @ lc

    def _g_words(self, view, f):
        col = _COL
        qrel = [self.vocab[w] for w in view.relational_words if w in self.vocab]
        qcls = [self.vocab[w] for w in view.class_words if w in self.vocab]
        f[:, col["unexplained_relational_words"]] = len(qrel) - self.explained[:, qrel].sum(axis=1)
        f[:, col["unexplained_class_words"]] = len(qcls) - self.explained[:, qcls].sum(axis=1)
        f[:, col["explained_class_words"]] = self.class_explained[:, qcls].sum(axis=1)

    def _g_count(self, view, f):
        col = _COL
        cue = view.count_cue
        f[:, col["count_with_cue"]] = self.count_end & cue
        f[:, col["count_without_cue"]] = self.count_end & (not cue)
        f[:, col["cue_without_count"]] = (~self.has_count) & cue

    def _g_extreme(self, view, f):
        col = _COL
        code = {"max": 1, "min": -1, None: 0}
        ext_cue = np.where(self.extreme_year, code[view.extreme_year_cue], code[view.extreme_cue])
        has_ext = self.extreme != 0
        f[:, col["extreme_without_cue"]] = has_ext & (ext_cue == 0)
        f[:, col["extreme_match"]] = has_ext & (ext_cue != 0) & (ext_cue == self.extreme)
        f[:, col["extreme_mismatch"]] = has_ext & (ext_cue != 0) & (ext_cue != self.extreme)
        if view.extreme_cue is not None or view.extreme_year_cue is not None:
            f[:, col["cue_without_extreme"]] = ~has_ext

    def _g_compare(self, view, f):
        col = _COL
        cmp_cue = np.where(self.compare_year, view.compare_year_cue or "", view.compare_cue or "")
        has_cmp = self.comparator != ""
        f[:, col["compare_without_cue"]] = has_cmp & (cmp_cue == "")
        f[:, col["compare_match"]] = has_cmp & (cmp_cue != "") & (cmp_cue == self.comparator)
        f[:, col["compare_mismatch"]] = has_cmp & (cmp_cue != "") & (cmp_cue != self.comparator)
        if view.compare_cue is not None and not view.year_like:
            f[:, col["cue_without_compare"]] = (~has_cmp) & self.is_bool & (self.verify_num == 0)
        if view.reference_slot is not None:
            f[:, col["compare_order"]] = np.where(has_cmp, np.where(self.compare_second == view.reference_slot,
                                                                    1.0, -1.0), 0.0)

    def _g_years(self, view, f):
        col = _COL
        yl = np.zeros(self.m)
        yl[:len(view.year_like)] = view.year_like
        f[:, col["year_match"]] = self.year_uses @ yl + self.other_uses @ (1 - yl)
        f[:, col["year_mismatch"]] = self.year_uses @ (1 - yl) + self.other_uses @ yl

    def _g_sets(self, view, f):
        col = _COL
        if view.count_classes:
            named = np.array([c in view.count_classes for c in self.classes], dtype=float)
            hit = (self.counted @ named) > 0
            f[:, col["count_class"]] = np.where(self.has_counted, np.where(hit, 1.0, -1.0), 0.0)
            f[:, col["count_noun_unused"]] = ~self.has_count
        if view.union_pair is not None:
            code = _pair_code(view.union_pair)
            f[:, col["union_scope"]] = np.where(self.union_code == 0, 0.0,
                                                np.where(self.union_code == code, 1.0, -1.0))
        has_diff = self.static[:, 8] > 0
        if view.negated_slot is not None:
            f[:, col["diff_order"]] = np.where(has_diff, np.where(self.diff_slot == view.negated_slot, 1.0, -1.0), 0.0)
        if view.cues.union:
            f[:, col["cue_without_union"]] = self.static[:, 0] == 0

    def _g_static(self, view, f):
        col = _COL
        f[:, col["filters"]] = self.n_filters
        f[:, col["verify_num"]] = self.verify_num
        f[:, col["diff"]] = self.static[:, 8] > 0
        f[:, col["union"]] = self.static[:, 0]
        f[:, col["conj"]] = self.static[:, 1]
        f[:, col["verify_rel"]] = self.static[:, 2]
        f[:, col["steps"]:col["guessed_ops"] + 1] = self.static[:, 3:8]


    def type_fit(self, view: ComposeView) -> np.ndarray:
        """Whether each shape's answer type fits the question's (all true when unknown); a
        class fits a class above or below it ("which students" of a set of people)."""
        if not view.expected.known:
            return np.ones(self.n, dtype=bool)
        found = self._fits.get(view.expected)
        if found is None:
            ok = np.array([self._fit(view.expected, t) for t in self.type_names])
            found = self._fits[view.expected] = ok[self.type_codes]
        return found

    def _fit(self, expected: ExpectedType, actual: str) -> bool:
        if compatible(expected, actual) is not False:
            return True
        anc = self.schema.ancestors
        return any(a in self.schema.classes and e in self.schema.classes and (e in anc(a) or a in anc(e))
                   for a in actual.split("|") for e in expected.allowed)


_MEMO_GROUPS = ("type", "count", "extreme", "compare", "years", "sets", "static")
_LIVE_GROUPS = ("relations", "attributes", "words")


def _group_key(group: str, view: ComposeView):
    """What a memoised group's features depend on."""
    if group == "type":
        return view.expected
    if group == "count":
        return view.count_cue
    if group == "extreme":
        return view.extreme_cue, view.extreme_year_cue
    if group == "compare":
        return view.compare_cue, view.compare_year_cue, bool(view.year_like), view.reference_slot
    if group == "years":
        return view.year_like
    if group == "sets":
        return view.count_classes, view.union_pair, view.negated_slot, view.cues.union
    return None


def _pair_code(slots) -> int:
    """A set of entity slots as a number (0: none)."""
    return sum(1 << (int(x) + 1) for x in slots)


def _codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
    names = sorted(set(values))
    index = {v: i for i, v in enumerate(names)}
    return np.array([index[v] for v in values], dtype=int), names


_BLOCKS: dict[tuple, tuple[_Block, tuple]] = {}


def block_of(shapes: tuple[CShape, ...], schema, lex: SchemaLexicon, numbers: int) -> "_Block":
    key = (id(schema), id(shapes), numbers)
    hit = _BLOCKS.get(key)
    if hit is None or hit[1] is not shapes:
        if len(_BLOCKS) > 2048:
            _BLOCKS.clear()
        hit = _BLOCKS[key] = (_Block(shapes, schema, lex, numbers), shapes)
    return hit[0]


def feature_matrix(view: ComposeView, shapes: tuple[CShape, ...], schema, lex: SchemaLexicon,
                   numbers: int) -> np.ndarray:
    """Features of every shape for one question (``[len(shapes), len(FEATURES)]``)."""
    if not shapes:
        return np.zeros((0, len(FEATURES)))
    return block_of(shapes, schema, lex, numbers).features(view)


class ComposeRanker:
    """Pairwise logistic regression over :data:`FEATURES` (learned: ``coef_``)."""

    def __init__(self, C: float = 1.0, negatives: int = 80, hard_rounds: int = 1, hard_weight: float = 3.0,
                 random_state: int = 0):
        self.C, self.negatives, self.hard_rounds = C, negatives, hard_rounds
        self.hard_weight, self.random_state = hard_weight, random_state

    def fit(self, blocks: list[tuple[np.ndarray, int]]) -> "ComposeRanker":
        """``blocks``: per training question, its feature matrix and the gold row."""
        rng = np.random.default_rng(self.random_state)
        chosen = []
        for feats, gold in blocks:
            others = np.delete(np.arange(len(feats)), gold)
            if len(others) > self.negatives:
                others = np.sort(rng.choice(others, size=self.negatives, replace=False))
            chosen.append(others)
        coef = None
        for _ in range(1 + max(0, int(self.hard_rounds))):
            diffs, w = [], []
            for b, (feats, gold) in enumerate(blocks):
                neg = chosen[b]
                if coef is not None:
                    # Hard negatives: every row the current model scores near or above the gold.
                    scores = feats @ coef
                    hard = np.flatnonzero(scores >= scores[gold] - 1.0)
                    hard = hard[hard != gold]
                    neg = np.union1d(neg, hard)
                d = feats[gold] - feats[neg]
                diffs.append(d)
                if coef is None:
                    w.append(np.ones(len(neg)))
                else:
                    scores = feats @ coef
                    w.append(np.where(scores[neg] >= scores[gold] - 1.0, self.hard_weight, 1.0))
            D = np.vstack(diffs)
            W = np.concatenate(w)
            X = np.vstack([D, -D])
            y = np.concatenate([np.ones(len(D)), np.zeros(len(D))])
            model = LogisticRegression(C=self.C, fit_intercept=False, max_iter=3000)
            model.fit(X, y, sample_weight=np.concatenate([W, W]))
            coef = model.coef_[0]
        self.coef_ = coef
        self.n_questions_ = len(blocks)
        return self

    def weights(self) -> dict[str, float]:
        return {name: float(w) for name, w in zip(FEATURES, self.coef_)}
