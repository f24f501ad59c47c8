"""Reading a question's entities and numbers from the KB's own labels, for any KB.

**Entities.** :class:`LabelLinker` indexes every entity's label (``rdfs:label``, or whatever
label predicate the KB's :class:`~ontology.kbschema.Schema` was read with) and its local
name, as word sequences. A question is scanned left to right; at each word the longest
label that starts there wins (``Northport University`` before ``Northport``), and matched
words are not reused. Case matters for one-word labels (a department called "History"
is not linked in "the history of ..."); labels of two or more words, or with a digit or an
underscore (``Org_0042``), match in any case. A label that names several entities (two
people called "Alex Kim") yields one mention with every referent: the parser enumerates
programs for each and lets execution decide.

**Numbers.** Digits with optional thousands separators, a decimal part, a currency sign
and a scale word (``50,000``, ``2.5 million``, ``$30 billion``), with the comparator the
words before them ask for (``more than``, ``over``, ``before``, ``at least``, ``taller
than``, ...; ``None`` when nothing says) and the words after them (units: ``cm``,
``inhabitants``, ``billion dollars``). :meth:`NumberMention.value_for` converts a number
into an attribute's unit: an attribute whose name or labels say ``billion`` stores
billions, so "500 billion dollars" is ``500`` and "2 trillion" is ``2000`` there, and
``2 million`` people is ``2000000``.

**Masking.** :attr:`LinkedQuestion.masked` is the question with every entity mention
replaced by ``⟦Class⟧`` (the class of its first referent), the form
:func:`parsers.answer_type.tokenize` reads as an entity token: the rest of the parser never
sees a KB's names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kopl2sparql.answer import format_number

__all__ = ["Mention", "NumberMention", "LinkedQuestion", "LabelLinker", "linker_for", "comparator_before"]

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.,][0-9]+)*|[^\sA-Za-z0-9_]")
"""Words (letters, digits, underscores; ``50,000`` and ``2.5`` stay one word) and single
punctuation marks, the units both labels and questions are cut into."""


@dataclass(frozen=True)
class Mention:
    """An entity mention: words ``[first, last)`` of the question, characters ``[start, end)``,
    the entity names the text stands for (name order) and the class of each."""

    start: int
    end: int
    text: str
    names: tuple[str, ...]
    classes: tuple[str | None, ...]
    first: int = 0
    last: int = 0


_SCALES = {"thousand": Decimal(10) ** 3, "k": Decimal(10) ** 3, "million": Decimal(10) ** 6,
           "m": Decimal(10) ** 6, "mn": Decimal(10) ** 6, "billion": Decimal(10) ** 9,
           "bn": Decimal(10) ** 9, "b": Decimal(10) ** 9, "trillion": Decimal(10) ** 12}


@dataclass(frozen=True)
class NumberMention:
    """A number in the question. ``value`` is as written (``2.5`` for "2.5 million"),
    ``scale`` the scale word's factor (1 without one); ``comparator`` what the words before
    it ask for; ``after`` the (lower-case) words that follow (units)."""

    start: int
    end: int
    text: str
    value: Decimal
    scale: Decimal
    comparator: str | None
    year_like: bool
    after: tuple[str, ...]
    first: int = 0

    def value_for(self, unit_scale: Decimal = Decimal(1)) -> str:
        """The number in an attribute's unit (``unit_scale`` = 10**9 for an attribute kept in
        billions), as a program argument."""
        absolute = self.value * self.scale
        if unit_scale != 1 and self.scale != 1:
            return format_number(absolute / unit_scale)
        return format_number(absolute if unit_scale == 1 else self.value)


@dataclass(frozen=True)
class LinkedQuestion:
    question: str
    mentions: tuple[Mention, ...]
    numbers: tuple[NumberMention, ...]
    masked: str
    words: tuple[str, ...]                 # the question's words, lower case

    @property
    def entity_names(self) -> list[str]:
        """Every referent of every mention, in order of mention."""
        return [n for m in self.mentions for n in m.names]


# ---- comparators -----------------------------------------------------------------------------

_GT_WORDS = frozenset(("more", "greater", "larger", "bigger", "higher", "taller", "over", "above", "exceeding",
                       "exceeds", "exceed", "exceeded", "after", "later", "beyond", "richer", "heavier", "longer",
                       "wider", "newer", "since", "upwards", "excess", "older"))
_LT_WORDS = frozenset(("less", "fewer", "smaller", "lower", "shorter", "under", "below", "before", "earlier",
                       "prior", "beneath", "poorer", "lighter", "narrower", "younger", "until", "till"))
# "older than 1950" is read as a later year? No: an *entity* older than a year is one born
# or founded before it. Years flip the direction of age words; see comparator_before.
_AGE_WORDS = {"older": "<", "younger": ">"}
_NOT = {"<": ">=", ">": "<="}
_AT_LEAST = re.compile(r"\b(at least|no less than|no fewer than|not less than|not fewer than|minimum of|"
                       r"a minimum of)\s*$")
_AT_MOST = re.compile(r"\b(at most|no more than|not more than|up to|maximum of|a maximum of)\s*$")
_EXACTLY = re.compile(r"\b(exactly|precisely|equal to|equals|equal)\s*$")
_OR_MORE = re.compile(r"^\s*(?:[a-z]+\s+){0,2}?(or more|or above|or higher|or greater|or over)\b")
_OR_LESS = re.compile(r"^\s*(?:[a-z]+\s+){0,2}?(or less|or fewer|or below|or lower|or under)\b")


def comparator_before(before: list[str], after_text: str = "", year: bool = False) -> str | None:
    """The comparator the words before a number ask for (the last few words, lower case),
    or ``None``. ``after_text``: the text right after it ("or more")."""
    text = " ".join(before)
    if _AT_LEAST.search(text) or _OR_MORE.search(after_text):
        return ">="
    if _AT_MOST.search(text) or _OR_LESS.search(after_text):
        return "<="
    if _EXACTLY.search(text):
        return "="
    # The nearest comparative word wins ("more people than 5" is rare; "born after 1990" is
    # not); "not taller than" is "at most".
    for i in range(len(before) - 1, -1, -1):
        w = before[i]
        negated = i > 0 and before[i - 1] in ("not", "no", "never")
        if year and w in _AGE_WORDS:
            return _NOT.get(_AGE_WORDS[w]) if negated else _AGE_WORDS[w]
        if w in _GT_WORDS:
            return "<=" if negated else ">"
        if w in _LT_WORDS:
            return ">=" if negated else "<"
        if w.endswith("er") and len(w) > 4 and w not in ("number", "other", "whether", "together", "either",
                                                        "neither", "per", "ever", "never", "her", "after"):
            return None                    # an unknown comparative: direction unknown
    return None


# ---- the linker --------------------------------------------------------------------------------

class LabelLinker:
    """Entity mentions and numbers of questions, from one KB's labels (see the module docstring)."""

    def __init__(self, schema):
        self.schema = schema
        by_words: dict[tuple[str, ...], set[str]] = {}
        for name in schema.entity_iris:
            for text in {schema.label(name), name}:
                words = tuple(_WORD.findall(text))
                if words:
                    by_words.setdefault(words, set()).add(name)
        self._exact = {k: tuple(sorted(v)) for k, v in by_words.items()}
        folded: dict[tuple[str, ...], set[str]] = {}
        for words, names in by_words.items():
            if len(words) > 1 or any(ch.isdigit() or ch == "_" for w in words for ch in w):
                folded.setdefault(tuple(w.lower() for w in words), set()).update(names)
        self._folded = {k: tuple(sorted(v)) for k, v in folded.items()}
        self._longest = max((len(k) for k in self._exact), default=1)
        # Words that begin some label: most question words begin none, and are skipped at once.
        self._starts = {k[0] for k in self._exact} | {k[0] for k in self._folded}

    def _class(self, name: str) -> str | None:
        classes = self.schema.entity_classes(name)
        return min(classes) if classes else None

    def link(self, question: str) -> LinkedQuestion:
        """Mentions and numbers of ``question`` (cached per linker and question)."""
        return _link(self, question)

    def _link(self, question: str) -> LinkedQuestion:
        spans = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(question)]
        words = [w for _, _, w in spans]
        lower = [w.lower() for w in words]
        mentions: list[Mention] = []
        i = 0
        n = len(words)
        while i < n:
            found = None
            if words[i] in self._starts or lower[i] in self._starts:
                for size in range(min(self._longest, n - i), 0, -1):
                    key = tuple(words[i:i + size])
                    names = self._exact.get(key) or self._folded.get(tuple(lower[i:i + size]))
                    if names:
                        found = (size, names)
                        break
            if found is None:
                i += 1
                continue
            size, names = found
            start, end = spans[i][0], spans[i + size - 1][1]
            mentions.append(Mention(start, end, question[start:end], names,
                                    tuple(self._class(x) for x in names), i, i + size))
            i += size
        taken = {j for m in mentions for j in range(m.first, m.last)}
        numbers = []
        for j, (start, end, w) in enumerate(spans):
            if j in taken:
                continue
            parsed = _number_word(lower[j], lower[j - 1] if j else "", lower[j - 2] if j > 1 else "")
            if parsed is None:
                continue
            value, scale = parsed
            nxt = lower[j + 1] if j + 1 < n else ""
            if scale == 1 and nxt in ("thousand", "million", "billion", "trillion", "bn", "mn"):
                scale = _SCALES[nxt]
            after_from = j + 2 if (scale != 1 and nxt in _SCALES) else j + 1
            before = [x for x in lower[max(0, j - 4):j] if x not in ("$", "€", "£", "the", "a", "of", "year")]
            year_like = scale == 1 and w.isdigit() and 1000 <= value <= 2100
            after_text = " ".join(lower[after_from:after_from + 4])
            comparator = comparator_before(before, after_text, year=year_like)
            if not w[0].isdigit() and comparator is None:
                continue                  # "one", "ten" are numbers only after "more than", "over", ...
            numbers.append(NumberMention(start, end, w, value, scale, comparator, year_like,
                                         tuple(lower[after_from:after_from + 3]), j))
        # "between 170 and 180": a lower and an upper bound.
        for a, b in zip(numbers, numbers[1:]):
            if (a.comparator is None and b.comparator is None and a.first >= 1 and lower[a.first - 1] == "between"
                    and "and" in lower[a.first + 1:b.first]):
                i = numbers.index(a)
                numbers[i:i + 2] = [_with_comparator(a, ">="), _with_comparator(b, "<=")]
                break
        masked = question
        for m in reversed(mentions):
            masked = masked[:m.start] + f"⟦{m.classes[0] or 'Thing'}⟧" + masked[m.end:]
        return LinkedQuestion(question, tuple(mentions), tuple(numbers), masked, tuple(lower))


_NUMBER_WORDS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven",
                                              "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen",
                                              "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12})
_SUFFIXED = re.compile(r"([0-9]+(?:\.[0-9]+)?)(k|m|mn|bn|b)")
_GROUPED = re.compile(r"[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?")


def _number_word(w: str, prev: str, prev2: str) -> tuple[Decimal, Decimal] | None:
    """``(value, scale)`` of a word that writes a number: digits (``50,000``, ``2.5``),
    digits with a scale suffix (``5bn``, ``20k``), or a small number word (``five``)."""
    if w[0].isdigit():
        m = _SUFFIXED.fullmatch(w)
        if m:
            return Decimal(m.group(1)), _SCALES[m.group(2)]
        text = w.replace(",", "") if _GROUPED.fullmatch(w) else w
        try:
            return Decimal(text), Decimal(1)
        except InvalidOperation:
            return None
    value = _NUMBER_WORDS.get(w)
    if value is None or (w == "hundred" and prev in _NUMBER_WORDS) or (w == "dozen" and prev != "a"):
        return None
    return Decimal(value), Decimal(1)


def _with_comparator(n: NumberMention, comparator: str) -> NumberMention:
    from dataclasses import replace
    return replace(n, comparator=comparator)


@lru_cache(maxsize=20_000)
def _link(linker: LabelLinker, question: str) -> LinkedQuestion:
    return linker._link(question)


@lru_cache(maxsize=8)
def linker_for(schema) -> LabelLinker:
    """The linker of a KB's schema (built once per schema: one pass over its labels)."""
    return LabelLinker(schema)
