"""What kind of answer a question asks for, read from the question alone, and what kind of
answer a program gives.

The question side is a small set of cue rules, not a model trained on SynKQA-Pro's
wordings (the train split has only nine sentence shapes, so a learned classifier would
learn those nine sentences). The rules know English question syntax — yes/no questions
open with an auxiliary verb, ``how many`` asks for a number, ``when`` for a year, ``who``
for people, ``where`` for a place, and ``which``/``what`` take a head noun — and they
read the head nouns from the ontology: a class label or altLabel names that class
(``nation`` → Country, ``employees`` → Person), a noun-like relation label names the
relation's range (``birthplace`` → City, ``headquarters`` → City), an attribute label names
a number (``population``, ``GDP``; a year when the label says so: ``birth year``). A
vocabulary change in ``ontology/schema.ttl`` therefore reaches these rules without code.

Answer types are the ontology's class names for entity answers (``Person``, ``City``,
``Country``, ``Organization``) and ``year``, ``count``, ``quantity``, ``bool`` otherwise.

>>> expected_type("The city where Person_00371 was born is located in which country?").allowed
frozenset({'Country'})
>>> sorted(expected_type("How many people were born in City_0001?").allowed)
['count', 'quantity']
>>> expected_type("Does Person_00001 work for Org_0002?").allowed
frozenset({'bool'})
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from kopl2sparql.program import Program, ValueType

__all__ = ["ExpectedType", "Token", "tokenize", "stem", "singular", "expected_type",
           "program_answer_type", "compatible", "NUMBER_TYPES", "YEAR", "COUNT", "QUANTITY", "BOOL",
           "UNKNOWN", "type_lexicon"]

YEAR, COUNT, QUANTITY, BOOL = "year", "count", "quantity", "bool"
NUMBER_TYPES = frozenset((YEAR, COUNT, QUANTITY))

# ---- tokens --------------------------------------------------------------------------------

_TOKEN = re.compile(r"\b(Person|City|Country|Org)_[0-9]+\b|⟦([A-Za-z][A-Za-z0-9_]*)⟧|'s\b|’s\b|[A-Za-z]+"
                    r"|[0-9]+(?:\.[0-9]+)?")
"""Words, numbers, SynKQA-Pro canonical names, and ``⟦Class⟧``: an entity mention an entity
linker replaced by its class (any KB; see :mod:`parsers.linking`)."""
_PREFIX_CLASS = {"Person": "Person", "City": "City", "Country": "Country", "Org": "Organization"}


@dataclass(frozen=True)
class Token:
    """One word of a question: ``text`` lower-cased, ``stem`` (Snowball), and for an entity
    mention its canonical ``name`` and ``cls`` (then ``text`` is the class token)."""

    text: str
    stem: str
    name: str | None = None
    cls: str | None = None

    @property
    def is_entity(self) -> bool:
        return self.name is not None


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=20_000)
def stem(word: str) -> str:
    """Snowball (Porter 2) stem of a lower-cased word: ``headquartered``/``headquarters`` ->
    ``headquart``, ``populous``/``population`` -> ``popul``."""
    return _stemmer().stemWord(word.lower())


@lru_cache(maxsize=20_000)
def singular(word: str) -> str:
    """A plural noun's singular by English spelling rules (enough to match head nouns)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@lru_cache(maxsize=50_000)
def tokenize(question: str) -> tuple[Token, ...]:
    """Words of ``question``; entity mentions become one token each, possessive ``'s`` is
    dropped (``Person_00371's employer`` reads as ``<Person> employer``)."""
    out = []
    for m in _TOKEN.finditer(question):
        text = m.group(0)
        if m.group(1) or m.group(2):
            cls = _PREFIX_CLASS[m.group(1)] if m.group(1) else m.group(2)
            out.append(Token(f"<{cls.lower()}>", f"<{cls.lower()}>", name=text, cls=cls))
        elif text in ("'s", "’s"):
            continue
        else:
            low = text.lower()
            out.append(Token(low, stem(low)))
    return tuple(out)


# ---- the lexicon read from the ontology ------------------------------------------------------

AUXILIARIES = frozenset(("is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can",
                         "could", "will", "would", "should", "shall", "may", "might", "must", "isn",
                         "aren", "wasn", "weren", "doesn", "didn", "hasn", "haven"))
PREPOSITIONS = frozenset(("in", "at", "of", "for", "by", "from", "to", "on", "with", "within", "into",
                          "about", "among", "under", "over", "as"))
DETERMINERS = frozenset(("the", "a", "an", "this", "that", "these", "those", "its", "their", "his",
                         "her", "some", "any", "all", "each", "every"))
WH_WORDS = frozenset(("which", "what", "who", "whom", "whose", "where", "when", "how"))
IMPERATIVES = frozenset(("name", "list", "give", "tell", "show", "find", "identify", "state", "return",
                         "provide", "say", "enumerate", "report", "determine", "specify", "get", "count"))
# Words that make a label a verb phrase or an adjective rather than a noun that can head
# "which <noun>": "born in", "works for", "tallest", "populous".
_NOT_NOUN = frozenset(("was", "is", "born", "works", "work", "employs", "employ", "employed", "lies", "situated",
                       "based", "headquartered", "located", "when", "native", "populous", "tall",
                       "living", "founded", "established", "part"))
# Generic nouns that never decide the type; the scan goes on past them ("the name of the city").
_SKIP_NOUNS = frozenset(("name", "names", "one", "ones", "kind", "sort", "type", "exact", "official"))
_NUMBER_WORDS = {("number",): frozenset((COUNT, QUANTITY)), ("count",): frozenset((COUNT,)),
                 ("total",): frozenset((COUNT, QUANTITY)), ("amount",): frozenset((QUANTITY, COUNT)),
                 ("year",): frozenset((YEAR,)), ("date",): frozenset((YEAR,))}
_SUPERLATIVE = re.compile(r"[a-z]{2,}est\Z")


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(singular(w) for w in re.findall(r"[A-Za-z0-9]+", text.lower()))


def _is_year_attribute(info) -> bool:
    return any("year" in _phrase(w) for w in (info.label, *info.alt_labels)) or info.name.endswith("_year")


@lru_cache(maxsize=4)
def type_lexicon(schema=None) -> dict[tuple[str, ...], frozenset[str]]:
    """Head-noun phrases (singular, lower case) -> the answer types they ask for, from the
    ontology's labels and altLabels plus the few number words English has (number, year)."""
    if schema is None:
        from parsers.base import default_schema
        schema = default_schema()
    lexicon: dict[tuple[str, ...], set[str]] = {}

    def add(words: str, types) -> None:
        raw = re.findall(r"[A-Za-z0-9]+", words.lower())
        phrase = _phrase(words)
        if not phrase or phrase[0] in PREPOSITIONS or phrase[-1] in PREPOSITIONS:
            return
        if any(w in _NOT_NOUN for w in (*raw, *phrase)) or _SUPERLATIVE.match(phrase[-1]):
            return
        lexicon.setdefault(phrase, set()).update(types)

    # Classes first, so a word that names both a class and a relation ("employer") keeps
    # both readings; the relation reading adds the range class.
    for name, info in schema.classes.items():
        for w in (name, info.label, *info.alt_labels):
            if w.lower() != "who":          # a pronoun altLabel, handled as a wh-word
                add(w, {name})
    for info in schema.relations.values():
        for w in (info.label, *info.alt_labels):
            add(w, {info.range})
    for info in schema.attributes.values():
        kind = YEAR if _is_year_attribute(info) else QUANTITY
        for w in (info.label, *info.alt_labels):
            add(w, {kind})
    for phrase, types in _NUMBER_WORDS.items():
        lexicon.setdefault(phrase, set()).update(types)
    return {k: frozenset(v) for k, v in lexicon.items()}


# ---- the question side -----------------------------------------------------------------------

@dataclass(frozen=True)
class ExpectedType:
    """The answer types a question allows (empty: unknown, anything goes) and the words that
    decided it (for explanations and tests)."""

    allowed: frozenset[str]
    cue: str

    @property
    def known(self) -> bool:
        return bool(self.allowed)


UNKNOWN = ExpectedType(frozenset(), "")
_LOCATION = frozenset(("City", "Country"))
_AGENTS = frozenset(("Person", "Organization"))


def _head(words: list[str], start: int, lexicon, window: int = 7) -> tuple[frozenset[str], str] | None:
    """The first lexicon phrase in ``words[start:start+window]``, skipping determiners,
    auxiliaries and adjectives; stops at an entity mention or a verb-like break."""
    longest = max(len(k) for k in lexicon)
    i, end = start, min(len(words), start + window)
    while i < end:
        w = words[i]
        if w.startswith("<"):
            # "which of Org_1's workers", "who among City_2's people": a partitive goes on
            # to the noun after the mention; any other mention ends the noun phrase.
            if i > start and words[i - 1] in ("of", "among"):
                i += 1
                continue
            return None
        if w not in _SKIP_NOUNS:
            for n in range(min(longest, len(words) - i), 0, -1):
                phrase = tuple(words[i:i + n])
                types = lexicon.get(phrase)
                if types is None:
                    continue
                nxt = words[i + n] if i + n < len(words) else None
                # An attribute noun directly followed by a class noun is a modifier
                # ("population figure" is not a thing here, but "birth city" is: it is in
                # the lexicon as a whole phrase, tried first because it is longer).
                if types <= NUMBER_TYPES and nxt is not None and lexicon.get((nxt,), frozenset()) - NUMBER_TYPES:
                    break
                return types, " ".join(phrase)
        i += 1
    return None


def _wh_type(words: list[str], i: int, lexicon, nouns: list[str]) -> ExpectedType | None:
    """Type asked by the wh-word at ``words[i]`` (``nouns``: the words in singular)."""
    w = words[i]
    nxt = words[i + 1] if i + 1 < len(words) else ""
    if w == "how":
        if nxt in ("many", "much"):
            return ExpectedType(frozenset((COUNT, QUANTITY)), f"how {nxt}")
        if nxt in ("old", "young"):
            return ExpectedType(frozenset((YEAR, QUANTITY)), f"how {nxt}")
        if nxt:
            return ExpectedType(frozenset((QUANTITY, YEAR, COUNT)), f"how {nxt}")
        return None
    if w in ("who", "whom"):
        # Mostly people, but organisations act too ("Who employs Person_1?").
        return ExpectedType(_AGENTS, w)
    if w == "when":
        return ExpectedType(frozenset((YEAR,)), w)
    if w == "where":
        return ExpectedType(_LOCATION, w)
    if w in ("which", "what", "whose"):
        head = _head(nouns, i + 1, lexicon)
        if head is not None:
            return ExpectedType(head[0], f"{w} ... {head[1]}")
        return None
    return None


@lru_cache(maxsize=50_000)
def expected_type(question: str, schema=None) -> ExpectedType:
    """The answer types ``question`` asks for (see the module docstring for the rules), with
    the type nouns of ``schema`` (default: the shipped ontology).

    Returns :data:`UNKNOWN` (nothing allowed means "no constraint") when no rule applies,
    so a validator built on it never rejects what it cannot judge.
    """
    lexicon = type_lexicon(schema)
    words = [t.text for t in tokenize(question)]
    nouns = [singular(w) for w in words]          # lexicon keys are singular
    if not words:
        return UNKNOWN
    text = " ".join(words)
    # Explicit yes/no markers anywhere.
    if "whether" in words or re.search(r"\b(yes or no|true or false)\b", text):
        return ExpectedType(frozenset((BOOL,)), "whether / yes or no")

    first = 0
    # "Please tell me ...", "Can you tell me where ...", "Do you know which ...": the
    # question proper starts after the frame.
    frame = re.match(r"(please )?((can|could|would|will) you |do you know |i want to know |i wonder )?"
                     r"((please )?(tell|show|give) me |do you know |know )?", text)
    framed = bool(frame and frame.group(0))
    if framed:
        first = len(frame.group(0).split())
    if first < len(words):
        w = words[first]
        if w in WH_WORDS:
            found = _wh_type(words, first, lexicon, nouns)
            if found is not None:
                return found
        # "In which year ...", "For what company ...": a preposition then the wh-word.
        if w in PREPOSITIONS and first + 1 < len(words) and words[first + 1] in WH_WORDS:
            found = _wh_type(words, first + 1, lexicon, nouns)
            if found is not None:
                return found
        if w in AUXILIARIES and not framed:
            return ExpectedType(frozenset((BOOL,)), w)
        if w == "count":
            return ExpectedType(frozenset((COUNT,)), "count")
        if w in IMPERATIVES:
            head = _head(nouns, first + 1, lexicon)
            if head is not None:
                return ExpectedType(head[0], f"{w} ... {head[1]}")
    # A wh-word later in the sentence: "... is located in which country?". Only "which" /
    # "what" followed by a type noun, or "how many", count there; "where"/"who" after a noun
    # are relative pronouns ("the city where ...").
    for i in range(first, len(words)):
        w = words[i]
        if w == "how" and i + 1 < len(words) and words[i + 1] in ("many", "much"):
            return _wh_type(words, i, lexicon, nouns)
        if w in ("which", "what"):
            head = _head(nouns, i + 1, lexicon, window=3)
            if head is not None:
                return ExpectedType(head[0], f"{w} ... {head[1]}")
        if w in ("when", "where", "who", "whom") and (i == first or words[i - 1] in PREPOSITIONS):
            found = _wh_type(words, i, lexicon, nouns)
            if found is not None:
                return found
    # A declarative question ending in "?" with "number of ..." ("The number of people ...?").
    if "number" in words:
        return ExpectedType(frozenset((COUNT, QUANTITY)), "number")
    return UNKNOWN


# ---- the program side ------------------------------------------------------------------------

def program_answer_type(checked, schema=None) -> str:
    """The answer type of a type-checked program (a :class:`~kopl2sparql.typecheck.CheckedProgram`):
    its result's class for entity answers (every class of the schema, ``|``-joined, when the
    checker could not know it, e.g. a Find of an entity the KB does not have), ``count`` for
    Count, ``year`` or ``quantity`` for QueryAttr (year when the attribute's labels say so),
    ``bool`` for Compare/VerifyRel."""
    result = checked.result
    if result.type is ValueType.BOOL:
        return BOOL
    if schema is None and (result.type is ValueType.NUMBER or result.classes is None):
        from parsers.base import default_schema
        schema = default_schema()
    if result.type is ValueType.NUMBER:
        last = checked.program.steps[result.step]
        if last.op == "QueryAttr":
            return YEAR if _is_year_attribute(schema.attributes[last.args[0]]) else QUANTITY
        return COUNT
    classes = sorted(result.classes if result.classes is not None else schema.classes)
    return classes[0] if len(classes) == 1 else "|".join(classes)


def answer_type_of(program: Program | str) -> str:
    """:func:`program_answer_type` of a program or program text (type-checked first).

    :raises ProgramError: for a text that does not parse or a program that is ill-typed.
    """
    from kopl2sparql.typecheck import check
    from parsers.base import default_schema
    return program_answer_type(check(program, default_schema()))


def compatible(expected: ExpectedType, actual: str) -> bool | None:
    """Whether a program's answer type fits; ``None`` when the question's type is unknown."""
    if not expected.known:
        return None
    return actual in expected.allowed or any(part in expected.allowed for part in actual.split("|"))
