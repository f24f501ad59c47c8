"""The SynKQA-Pro benchmark: questions, gold programs and answers, ten options, JSONL files.

One build (seed 42) writes ``train.jsonl`` (100,000), ``validation.jsonl`` (10,000) and
``test.jsonl`` (10,000) plus ``manifest.json`` under :func:`synkqa.benchmark.paths.dataset_dir`,
and beside them the small open-ended ``compositional.jsonl`` (questions beyond the nine
templates, :mod:`synkqa.benchmark.compositional`), recorded under its own manifest key.
The record format is documented in ``docs/DATASET.md``.

How a question is made (paper §2):

1. A template is drawn with the paper's weights (``templates.json``).
2. Its slots are drawn from the KB's entity lists, which are read back from RDF (a SPARQL
   query on the store), never from the generator's Python objects. Two templates have
   constraints: CompareCityPopulation takes two *distinct* cities, and
   WorkAndBornIntersection takes the employer and the birth city of one person, so its
   answer is never empty. VerifyEmployment pairs a person with their true employer half of
   the time (:data:`VERIFY_TRUE_EMPLOYER_RATE`) and with a uniformly drawn organisation
   otherwise, so both ``yes`` and ``no`` are common (the paper does not say how it drew them).
3. The surface form: train questions use the train paraphrase, test questions the test
   paraphrase, validation questions alternate (even index train, odd index test).
4. The gold answer is the result of executing the gold program on **both** engines, the
   native interpreter and the compiled SPARQL on Oxigraph; any difference aborts the build
   with :class:`EngineDisagreement`.
5. Ten options: the gold answer plus nine distractors of the same kind (see
   :func:`make_choices`), shuffled.

Randomness: each split has two generators seeded from ``(seed, split)`` strings, one for the
questions and one for the options, so changing how options are drawn does not change which
questions are asked. Python's ``random.Random`` seeded with a string is stable across runs
and platforms, and no set or dict iteration order feeds the output, so the same seed gives
byte-identical files.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from pathlib import Path

import orjson

from ontology import paper
from kopl2sparql.answer import Answer, format_number
from kopl2sparql.compiler import compile_program
from kopl2sparql.dialects import PORTABLE
from kopl2sparql.errors import (DatasetError, EngineDisagreement, ExecutionError, ProgramError, safe_text,
                                unknown_name_message)
from kopl2sparql.kqapro import to_kqapro
from kopl2sparql.program import Program, Step
from kopl2sparql.syntax import parse
from ontology import ENTITY_NS, NS, RDFS
from store.executor import SparqlExecutor, typecheck
from synkqa.benchmark.executors import get_executor
from synkqa.benchmark import paths
from synkqa.benchmark.kbgen import NAME_PREFIX
from synkqa.benchmark.templates import Template, templates

__all__ = [
    "SPLITS", "SPLIT_SIZES", "NUM_CHOICES", "BOOLEAN_FILLERS", "VERIFY_TRUE_EMPLOYER_RATE",
    "NUMERIC_RADIUS", "PAPER_TABLE_II", "PAPER_TEST_TEMPLATE_COUNTS", "FORMAT_VERSION",
    "KBEntities", "Draft", "sample_split", "make_choices", "GoldEngines", "build",
    "ensure_dataset", "progress_bar", "check_split_file", "load_split", "iter_split", "split_stats",
    "dataset_stats",
]

SPLITS = ("train", "validation", "test")
SPLIT_SIZES = {"train": 100_000, "validation": 10_000, "test": 10_000}
"""Questions per split (paper Table II)."""

NUM_CHOICES = 10
"""Options per question, gold answer included (paper §2, after KQA Pro)."""

BOOLEAN_FILLERS = ("unknown", "not sure", "cannot be determined", "not enough information",
                   "unclear", "maybe", "undetermined", "insufficient data")
"""The eight 'unknown' fillers beside ``yes`` and ``no``. The paper says "eight 'unknown'
fillers" but the ten options must be distinct, so these are eight different ways of not
answering. None of them is a word of another option, so exact string matching is safe."""

VERIFY_TRUE_EMPLOYER_RATE = 0.5
"""Share of VerifyEmployment questions whose organisation is the person's true employer
(the rest draw any organisation, which is the true one with probability 1/800)."""

NUMERIC_RADIUS = 10
"""Numeric distractors come from gold ± this many units (of the gold value's last digit),
never negative: years and counts stay plausible (paper: 'a local neighborhood')."""

FORMAT_VERSION = 1
"""Bumped whenever the files change for the same seed; a cached dataset with another
version (or other templates) is rebuilt by :func:`ensure_dataset`."""

PAPER_TABLE_II = {
    split: {"questions": row["questions"], "avg_words": row["words_mean"], "std_words": row["words_std"],
            "avg_steps": row["steps_mean"], "unique_answers": row["unique_answers"]}
    for split, row in paper.TABLE_II.items()
}
"""Table II of the paper (mean ± std over questions) under the keys of ``dataset stats``."""

PAPER_TEST_TEMPLATE_COUNTS = {template: row[0] for template, row in paper.TABLE_XI.items()}
"""Questions per template in the paper's test split (Table XI, column N); the paper does
not publish train or validation counts."""

_CLASS_OF_PREFIX = {prefix: cls for cls, prefix in NAME_PREFIX.items()}


def entity_class(name: str) -> str:
    """Class of an entity from its canonical name: ``City_0736`` -> ``City``."""
    try:
        return _CLASS_OF_PREFIX[name.rsplit("_", 1)[0]]
    except KeyError:
        raise DatasetError(f"not a canonical entity name: {name!r}") from None


def word_count(question: str) -> int:
    """Words of a question as Table II counts them: whitespace-separated tokens."""
    return len(question.split())


# ---- the KB, read back from RDF ----------------------------------------------------------

@dataclass(frozen=True)
class KBEntities:
    """What slot sampling and distractors need from the KB, read from the store.

    ``names[cls]`` lists the entity names of a class in id order; ``employer`` and
    ``birth_city`` map each person to the name of their organisation and birth city.
    """

    names: dict[str, tuple[str, ...]]
    employer: dict[str, str]
    birth_city: dict[str, str]

    @classmethod
    def from_store(cls, store) -> "KBEntities":
        """Read entity names (``rdfs:label``) per class and each person's two edges.

        :param store: anything with ``query(sparql) -> SelectResult`` (``OxigraphStore``,
            ``EndpointStore``).
        :raises DatasetError: if the KB has no entities of a class the templates need.
        """
        rows = store.query(
            f"SELECT ?cls ?name WHERE {{ ?e a ?cls ; <{RDFS}label> ?name . "
            f"FILTER(STRSTARTS(STR(?e), \"{ENTITY_NS}\")) }}").rows
        by_class: dict[str, list[str]] = {}
        for cls_iri, name in rows:
            by_class.setdefault(cls_iri[len(NS):] if cls_iri.startswith(NS) else cls_iri, []).append(name)
        names = {c: tuple(sorted(v)) for c, v in sorted(by_class.items())}
        edges = store.query(
            f"SELECT ?p ?org ?city WHERE {{ ?e <{NS}works_at> ?o ; <{NS}born_in> ?c ; "
            f"<{RDFS}label> ?p . ?o <{RDFS}label> ?org . ?c <{RDFS}label> ?city }}").rows
        employer = {p: org for p, org, _ in edges}
        birth_city = {p: city for p, _, city in edges}
        for t in templates():
            for _, slot_class in t.slots:
                if not names.get(slot_class):
                    raise DatasetError(f"the KB has no {slot_class} entities (template {t.name} needs them)")
        if not employer:
            raise DatasetError("the KB has no person with both works_at and born_in edges")
        return cls(names, employer, birth_city)


# ---- questions -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Draft:
    """A question before execution: template, slot values and surface form."""

    split: str
    index: int
    template: Template
    slots: tuple[tuple[str, str], ...]  # (slot name, entity name) in skeleton order
    paraphrase: str                     # "train" or "test"

    @property
    def id(self) -> str:
        return f"{self.split}-{self.index:05d}"

    @property
    def question(self) -> str:
        return self.template.question(self.paraphrase, **dict(self.slots))

    @property
    def kopl(self) -> str:
        return self.template.program_text(**dict(self.slots))


def _paraphrase_for(split: str, index: int) -> str:
    if split == "train":
        return "train"
    if split == "test":
        return "test"
    # Validation: an exact 50/50 mixture that does not depend on the random stream.
    return "train" if index % 2 == 0 else "test"


def _sample_slots(t: Template, kb: KBEntities, persons: Sequence[str], rng: random.Random
                  ) -> tuple[tuple[str, str], ...]:
    """Slot values for one question of template ``t`` (constraints in the module docstring)."""
    if t.name == "CompareCityPopulation":
        (n1, cls), (n2, _) = t.slots
        a, b = rng.sample(kb.names[cls], 2)
        return ((n1, a), (n2, b))
    if t.name == "WorkAndBornIntersection":
        person = rng.choice(persons)
        values = {"Organization": kb.employer[person], "City": kb.birth_city[person]}
        return tuple((name, values[cls]) for name, cls in t.slots)
    if t.name == "VerifyEmployment":
        person = rng.choice(persons)
        org = (kb.employer[person] if rng.random() < VERIFY_TRUE_EMPLOYER_RATE
               else rng.choice(kb.names["Organization"]))
        values = {"Person": person, "Organization": org}
        return tuple((name, values[cls]) for name, cls in t.slots)
    return tuple((name, rng.choice(kb.names[cls])) for name, cls in t.slots)


def sample_split(kb: KBEntities, split: str, seed: int = 42, size: int | None = None) -> list[Draft]:
    """Draw the questions of one split (templates by weight, then slots), deterministically."""
    return list(_iter_split(kb, split, seed, size))


def _iter_split(kb: KBEntities, split: str, seed: int = 42, size: int | None = None) -> Iterator[Draft]:
    """:func:`sample_split`'s questions one by one (the build hands them out as they come)."""
    _check_split(split)
    size = SPLIT_SIZES[split] if size is None else size
    rng = random.Random(f"synkqa-{seed}-{split}-questions")
    items = templates()
    drawn = rng.choices(items, weights=[t.weight for t in items], k=size)
    # People who can anchor the constructive templates (all of them in the generated KB).
    persons = tuple(p for p in kb.names["Person"] if p in kb.employer)
    for i, t in enumerate(drawn):
        yield Draft(split, i, t, _sample_slots(t, kb, persons, rng), _paraphrase_for(split, i))


# ---- options -------------------------------------------------------------------------------

# The options are drawn once per question, 120,000 times a build, and Random.sample and
# Random.shuffle spend most of their time in a Python-level call per random number. For a
# plain ``random.Random`` (whose numbers come from ``getrandbits``) these two do what
# CPython's do, with the same calls to ``getrandbits`` in the same order, so they draw the
# same options from the same stream. :func:`_fast_random_ok` checks that against the
# running Python's own functions once; on any difference, or for another generator class,
# the stdlib functions are used.

def _sample(rng: random.Random, population: Sequence, k: int) -> list:
    """``rng.sample(population, k)``."""
    if type(rng) is not random.Random or not _fast_random_ok():
        return rng.sample(population, k)
    return _fast_sample(rng.getrandbits, population, k)


def _shuffle(rng: random.Random, x: list) -> None:
    """``rng.shuffle(x)``."""
    if type(rng) is not random.Random or not _fast_random_ok():
        rng.shuffle(x)
        return
    _fast_shuffle(rng.getrandbits, x)


def _fast_sample(getrandbits, population: Sequence, k: int) -> list:
    n = len(population)
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    result = [None] * k
    setsize = 21                                 # CPython's choice between its two methods
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    if n <= setsize:
        pool = list(population)
        for i in range(k):
            m = n - i                            # randbelow(m): draw bit_length(m) bits until < m
            bits = m.bit_length()
            j = getrandbits(bits)
            while j >= m:
                j = getrandbits(bits)
            result[i] = pool[j]
            pool[j] = pool[m - 1]
    else:
        selected: set[int] = set()
        bits = n.bit_length()
        for i in range(k):
            j = getrandbits(bits)                # randbelow(n), again while already selected
            while j >= n or j in selected:
                j = getrandbits(bits)
            selected.add(j)
            result[i] = population[j]
    return result


def _fast_shuffle(getrandbits, x: list) -> None:
    for i in range(len(x) - 1, 0, -1):
        m = i + 1
        bits = m.bit_length()
        j = getrandbits(bits)
        while j >= m:
            j = getrandbits(bits)
        x[i], x[j] = x[j], x[i]


_FAST_RANDOM: list[bool] = []


def _fast_random_ok() -> bool:
    """Whether :func:`_fast_sample` and :func:`_fast_shuffle` match this Python's
    ``Random.sample`` and ``Random.shuffle`` (both methods of sample, the draws after them)."""
    if not _FAST_RANDOM:
        ok = True
        for n, k in ((20, 9), (120, 10), (1200, 10), (6000, 3), (85, 10), (86, 10), (10, 10), (5, 2)):
            a, b = random.Random(f"check-{n}-{k}"), random.Random(f"check-{n}-{k}")
            for _ in range(50):
                x, y = list(range(10)), list(range(10))
                a.shuffle(x)
                _fast_shuffle(b.getrandbits, y)
                ok = ok and x == y and a.sample(range(n), k) == _fast_sample(b.getrandbits, range(n), k)
            ok = ok and a.random() == b.random()
        _FAST_RANDOM.append(ok)
    return _FAST_RANDOM[0]


@lru_cache(maxsize=4096)
def _numeric_pool(gold: str) -> tuple[str, ...]:
    """The numbers within :data:`NUMERIC_RADIUS` units of ``gold`` (not itself, not negative)."""
    value = Decimal(gold)
    # One unit of the gold value's last digit: 1 for years and counts.
    unit = Decimal(1).scaleb(min(value.as_tuple().exponent, 0))
    pool = [value + k * unit for k in range(-NUMERIC_RADIUS, NUMERIC_RADIUS + 1)]
    return tuple(format_number(v) for v in pool if v >= 0 and v != value)


def _numeric_distractors(gold: str, rng: random.Random) -> list[str]:
    pool = _numeric_pool(gold)
    # For a non-negative gold value k = 1..RADIUS are always there (at least ten members).
    if len(pool) < NUM_CHOICES - 1:
        raise DatasetError(f"cannot draw {NUM_CHOICES - 1} non-negative neighbours of {gold}")
    return _sample(rng, pool, NUM_CHOICES - 1)


def _entity_distractors(values: tuple[str, ...], kb: KBEntities, rng: random.Random) -> list[str]:
    classes = {entity_class(v) for v in values}
    if len(classes) != 1:
        raise DatasetError(f"cannot draw distractors for a mixed-class answer {values}")
    pool = kb.names[classes.pop()]
    gold, size = "|".join(values), len(values)
    if size == 1:
        # Nine other entities of the class: one draw of ten, minus the gold one if drawn.
        return [name for name in _sample(rng, pool, NUM_CHOICES) if name != gold][:NUM_CHOICES - 1]
    found: list[str] = []
    seen = {gold}
    while len(found) < NUM_CHOICES - 1:
        # Same-length lists in the canonical form of answers (names sorted, joined by |).
        candidate = "|".join(sorted(_sample(rng, pool, size)))
        if candidate not in seen:
            seen.add(candidate)
            found.append(candidate)
    return found


def make_choices(answer: Answer, kb: KBEntities, rng: random.Random) -> list[str]:
    """Ten distinct options containing ``answer.canonical()``, shuffled with ``rng``.

    Entity answers get entities of the same class; lists of k entities get other sorted
    lists of k entities of that class; numbers get a neighbourhood of the gold value
    (± :data:`NUMERIC_RADIUS`, no negatives); booleans get ``yes``, ``no`` and the eight
    :data:`BOOLEAN_FILLERS`.

    :raises DatasetError: for an empty entity answer (no same-length distractors exist).
    """
    gold = answer.canonical()
    if answer.kind == "bool":
        choices = ["yes", "no", *BOOLEAN_FILLERS]
    elif answer.kind == "number":
        choices = [gold, *_numeric_distractors(gold, rng)]
    elif answer.kind == "entities":
        if not answer.values:
            raise DatasetError("cannot make options for an empty answer")
        choices = [gold, *_entity_distractors(answer.values, kb, rng)]
    else:  # pragma: no cover - Answer.kind is a closed set
        raise DatasetError(f"unknown answer kind {answer.kind!r}")
    _shuffle(rng, choices)
    return choices


# ---- gold answers on two engines ----------------------------------------------------------

class GoldEngines:
    """Executes gold programs on the native interpreter and on SPARQL over Oxigraph.

    :meth:`run` returns the program's KQA Pro form, its SPARQL text and the answer both
    engines agree on, or raises :class:`EngineDisagreement` naming the program and both
    answers (an error on one side and an answer on the other is a disagreement too).
    :meth:`run_many` does the same for many distinct questions at once (what :func:`build`
    uses): every program still runs on both engines, the SPARQL side batched (programs of
    one template share a query, their entities bound by ``VALUES``: ``SparqlExecutor.execute_many``).

    Per-skeleton caching (why the build takes seconds, not minutes): the first instance of
    each template with pairwise-distinct slot values is its *prototype*; it is parsed, type
    checked and converted to KQA Pro form once. Every later instance is the prototype with
    entity names swapped in (steps, KQA Pro inputs, and the KQA Pro list's JSON text): type
    checking depends only on the slots' classes, which a template fixes. The SPARQL,
    recorded and executed, is the compiler's own (compiled once per shape, the names
    substituted into its text). The first renamed instance of every template and every
    :attr:`VERIFY_EVERY`-th question are still parsed and converted from scratch and
    compared (a mismatch fails the build), and the test suite compares a sample against
    ``to_kqapro``. In :meth:`run_many` every :attr:`VERIFY_EVERY`-th program's query also
    runs on its own, unbatched, and must give the batched outcome.

    Identical programs (the same question drawn twice) are executed once per engine and
    the answer reused: both engines are deterministic over a read-only KB.
    :attr:`executed` counts the distinct programs run on both engines.
    """

    VERIFY_EVERY = 97

    def __init__(self, seed: int = 42, scale: int = 1):
        self.native = get_executor("native", seed, scale)
        self.sparql = get_executor("oxigraph", seed, scale)
        self.kb = KBEntities.from_store(self.sparql.store)
        self._prototypes: dict[int, _Prototype] = {}
        self._answers: dict[str, Answer] = {}
        self._portable: SparqlExecutor | None = None
        self.executed = 0          # distinct programs run on both engines
        self._count = 0

    def use_sparql_store(self, store) -> None:
        """Run the SPARQL side on another store (e.g. a modified copy of the KB)."""
        self.sparql = SparqlExecutor(store, self.sparql.schema, name="oxigraph")
        self._portable = None
        self._answers.clear()

    def run(self, draft: Draft) -> tuple[list, str, Answer]:
        """``(kqapro_program, sparql, answer)`` for one question.

        :raises EngineDisagreement: if the engines give different answers (or one fails).
        """
        instance = self._instance(draft)
        program = instance.program()
        compiled = compile_program(program, self.sparql.schema)   # prepared per shape: the names substituted
        answer = self._answers.get(draft.kopl)
        if answer is None:
            outcomes = []
            for engine in (lambda: self.native.interpreter.run(program),
                           lambda: self.sparql.run_compiled(compiled)):
                try:
                    outcomes.append(engine())
                except (ExecutionError, ProgramError) as exc:
                    outcomes.append(exc)
            native, sparql = outcomes
            if not isinstance(native, Answer) or native != sparql:
                raise _disagreement(draft, native, sparql, compiled.sparql)
            answer = self._answers[draft.kopl] = native
            self.executed += 1
        return instance.kqapro(), compiled.sparql, answer

    def run_many(self, drafts: Sequence[Draft]) -> list[tuple[Answer, bytes, str]]:
        """``(answer, kqapro_json, sparql)`` for each of ``drafts``, distinct questions (the
        caller removes repeats), in order; ``kqapro_json`` is ``orjson.dumps`` of the KQA
        Pro list :meth:`run` returns.

        Both engines run every program: the native interpreter one by one, SPARQL batched
        per template on the portable queries the dataset records.

        :raises EngineDisagreement: at the first question (in order) whose engines differ.
        """
        instances = [self._instance(d) for d in drafts]
        programs = [i.program() for i in instances]
        native = self.native.execute_many(programs)
        sparql_engine = self._portable_executor()
        sparql = sparql_engine.execute_many(programs)
        schema = self.sparql.schema
        out = []
        for n, (draft, instance, program, a, b) in enumerate(zip(drafts, instances, programs, native, sparql)):
            compiled = compile_program(program, schema)       # cached: what execute_many ran, batched
            if n % self.VERIFY_EVERY == 0:
                try:
                    single = sparql_engine.run_compiled(compiled)
                except (ExecutionError, ProgramError) as exc:
                    single = exc
                if not _same_outcome(single, b):
                    raise EngineDisagreement(
                        f"the batched and the single SPARQL query disagree on {draft.id} "
                        f"({draft.template.name}):\n  program: {draft.kopl}\n  batched: {_show(b)}\n"
                        f"  single:  {_show(single)}\n  query:\n{compiled.sparql}")
            if not isinstance(a, Answer) or a != b:
                raise _disagreement(draft, a, b, compiled.sparql)
            out.append((a, instance.kqapro_json(), compiled.sparql))
        self.executed += len(out)
        return out

    def _portable_executor(self) -> SparqlExecutor:
        """The SPARQL side compiling the portable dialect: the queries the dataset records."""
        if self._portable is None:
            if self.sparql.dialect == PORTABLE:
                self._portable = self.sparql
            else:
                self._portable = SparqlExecutor(self.sparql.store, self.sparql.schema, name=self.sparql.name)
        return self._portable

    def _instance(self, draft: Draft) -> "_Instance":
        self._count += 1
        proto = self._prototypes.get(draft.template.id)
        values = tuple(v for _, v in draft.slots)
        if proto is None:
            program = parse(draft.kopl)
            typecheck(program, self.sparql.schema)
            program = Program(tuple(Step(s.op, s.args) for s in program.steps))    # no spans
            proto = _Prototype(values, program, to_kqapro(program))
            if len(set(values)) == len(values):
                self._prototypes[draft.template.id] = proto
            return _Instance(proto, _Swap(values, values))
        proto.uses += 1
        made = _Instance(proto, _Swap(proto.values, values))
        # The first renamed instance of every template is always checked, so a change in
        # the parser's or the KQA Pro converter's output fails the build at once rather
        # than by chance.
        if proto.uses == 1 or self._count % self.VERIFY_EVERY == 0:
            program = parse(draft.kopl)
            kqapro = to_kqapro(program)
            if ((program, kqapro) != (made.program(), made.kqapro())
                    or orjson.dumps(kqapro) != made.kqapro_json()):
                raise DatasetError(f"per-skeleton cache diverged from a fresh parse on {draft.kopl} "
                                   f"(template {draft.template.name}); this is a bug in synkqa.benchmark.dataset")
        return made


def _disagreement(draft: Draft, native, sparql, query: str) -> EngineDisagreement:
    return EngineDisagreement(
        f"engines disagree on the gold program of {draft.id} ({draft.template.name}):\n"
        f"  program: {draft.kopl}\n"
        f"  native:  {_show(native)}\n"
        f"  sparql:  {_show(sparql)}\n"
        f"  query:\n{query}")


def _same_outcome(a, b) -> bool:
    """Two outcomes of one program agree: equal answers, or errors of the same kind."""
    if isinstance(a, Answer) or isinstance(b, Answer):
        return a == b
    return type(a) is type(b)


def _show(outcome) -> str:
    if isinstance(outcome, Answer):
        return f"{outcome.canonical()!r} ({outcome.kind})"
    return f"error: {str(outcome).splitlines()[0]}"


class _Swap:
    """Renames entities inside a program or a KQA Pro list."""

    def __init__(self, old: tuple[str, ...], new: tuple[str, ...]):
        self.names = dict(zip(old, new))

    def program(self, program: Program) -> Program:
        names = self.names
        steps = []
        for s in program.steps:
            args = s.args
            # Steps without a renamed argument are shared with the prototype (Steps are frozen).
            steps.append(Step(s.op, tuple([names.get(a, a) for a in args]))
                         if any(a in names for a in args) else s)
        return Program(tuple(steps))

    def kqapro(self, steps: list) -> list:
        return [{"function": f["function"], "inputs": [self.names.get(a, a) for a in f["inputs"]],
                 "dependencies": list(f["dependencies"])} for f in steps]


_HOLE = re.compile(rb'"\\u0000([0-9]+)\\u0000"')
"""A slot in a prototype's KQA Pro JSON: the string ``"\\0<k>\\0"`` as orjson escapes it."""


@dataclass
class _Prototype:
    """One parsed instance of a template, from which later instances are renamed."""

    values: tuple[str, ...]
    program: Program            # without spans, so its steps can be shared
    kqapro: list
    uses: int = 0
    _json: tuple | None = None

    def kqapro_json(self, values: tuple[str, ...]) -> bytes:
        """``orjson.dumps`` of the KQA Pro list renamed to ``values``, by splicing the names
        into the JSON text of the list renamed to placeholders (strings no KoPL argument
        contains, so every hole is an input that was one of the prototype's names)."""
        if self._json is None:
            holes = tuple(f"\0{k}\0" for k in range(len(self.values)))
            raw = orjson.dumps(_Swap(self.values, holes).kqapro(self.kqapro))
            parts = _HOLE.split(raw)
            self._json = tuple(parts[0::2]), tuple(int(k) for k in parts[1::2])
        pieces, slots = self._json
        out = [pieces[0]]
        for slot, piece in zip(slots, pieces[1:]):
            out.append(orjson.dumps(values[slot]))
            out.append(piece)
        return b"".join(out)


@dataclass(frozen=True)
class _Instance:
    """A question's program and KQA Pro list, renamed from the prototype on demand."""

    proto: _Prototype
    swap: _Swap

    def program(self) -> Program:
        return self.swap.program(self.proto.program)

    def kqapro(self) -> list:
        return self.swap.kqapro(self.proto.kqapro)

    def kqapro_json(self) -> bytes:
        proto = self.proto
        if len(set(proto.values)) != len(proto.values):     # not a registered prototype: plainly
            return orjson.dumps(self.kqapro())
        return proto.kqapro_json(tuple(self.swap.names[v] for v in proto.values))


# ---- building the files -------------------------------------------------------------------

def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise DatasetError(unknown_name_message("split", split, SPLITS))


def templates_digest() -> str:
    """sha256 of the shipped ``templates.json`` (a cached dataset from other templates is stale)."""
    raw = resources.files("synkqa.benchmark").joinpath("data/templates.json").read_bytes()
    return hashlib.sha256(raw).hexdigest()


def _record(draft: Draft, program: list, sparql: str, answer: str, choices: list[str]) -> dict:
    t = draft.template
    return {"id": draft.id, "split": draft.split, "question": draft.question, "choices": choices,
            "answer": answer, "kopl": draft.kopl, "program": program, "sparql": sparql,
            "template_id": t.id, "template": t.name, "reasoning": t.reasoning, "hops": t.hops}


def _line(record: dict) -> bytes:
    # orjson writes exactly what json.dumps(ensure_ascii=False, separators=(",", ":")) writes
    # for these records (strings, ints, lists, dicts in insertion order), several times faster.
    return orjson.dumps(record) + b"\n"


# A line is written in two parts, which concatenated are exactly ``_line(_record(...))``
# (compact JSON of a dict is its members' JSON, in order, between braces): the start, from
# the id to the options, depends on the question; the tail, from the answer on, only on
# the program (template and slot values), so it is made once per distinct program, by the
# process that executed it. The test suite compares the two ways on a build.

def _line_start(draft: Draft, choices: list[str]) -> bytes:
    """``{"id":…,"split":…,"question":…,"choices":[…]`` (no closing brace)."""
    return orjson.dumps({"id": draft.id, "split": draft.split, "question": draft.question,
                         "choices": choices})[:-1]


def _tail(draft: Draft, answer: Answer, kqapro_json: bytes, sparql: str) -> bytes:
    """``,"answer":…,"hops":…}`` and the newline: the rest of the line after the options."""
    t = draft.template
    fixed = orjson.dumps({"template_id": t.id, "template": t.name, "reasoning": t.reasoning, "hops": t.hops})
    return b"".join((b',"answer":', orjson.dumps(answer.canonical()), b',"kopl":', orjson.dumps(draft.kopl),
                     b',"program":', kqapro_json, b',"sparql":', orjson.dumps(sparql), b",", fixed[1:], b"\n"))


Gold = tuple[Answer, bytes]
"""What a distinct program contributes to its records: the agreed answer and the line's tail."""


def _gold(engines: "GoldEngines", drafts: list[Draft]) -> list[Gold]:
    """Execute distinct questions on both engines (:meth:`GoldEngines.run_many`)."""
    if not drafts:
        return []
    return [(answer, _tail(d, answer, kqapro_json, sparql))
            for d, (answer, kqapro_json, sparql) in zip(drafts, engines.run_many(drafts))]


CHUNK = 2000
"""Questions per unit of work: each chunk's new programs go to one worker together (SPARQL
batches are per chunk), and its lines are written as soon as they are back."""

MAX_WORKERS = 4
"""Worker processes at most (each holds its own compiler caches)."""

_WORKER_ENGINES: "GoldEngines | None" = None    # a worker's engines: inherited through fork, never pickled


def _forked_gold(drafts: list[Draft]) -> list[Gold]:
    return _gold(_WORKER_ENGINES, drafts)


def _compositional_lines(engines: "GoldEngines", seed: int) -> tuple[bytes, int, dict[str, int]]:
    """The compositional split as JSONL bytes, its record count and its count per part."""
    from synkqa.benchmark import compositional
    records = compositional.build_records(engines.native, engines._portable_executor(), seed)
    parts: dict[str, int] = {}
    for r in records:
        parts[r["part"]] = parts.get(r["part"], 0) + 1
    return b"".join(_line(r) for r in records), len(records), parts


def _forked_compositional(seed: int) -> tuple[bytes, int, dict[str, int]]:
    return _compositional_lines(_WORKER_ENGINES, seed)


def _worker_init(parent: int, engines: "GoldEngines") -> None:
    import signal
    import sys

    global _WORKER_ENGINES
    _WORKER_ENGINES = engines
    # Ctrl-C is the parent's to handle (it stops the pool); a worker would only add a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        # A parent killed outright (SIGKILL, SIGTERM) takes its workers with it at once,
        # rather than leaving them to finish a chunk and fail on the closed pipe.
        try:
            import ctypes
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:                               # it died before the prctl
        os._exit(1)


def _default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:                       # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


class _Workers:
    """Runs :func:`_gold` on chunks of questions, in forked processes that share the engines
    (and the KB) copy-on-write, or here when there is one worker, no ``fork`` or this is a
    daemon process (which may not have children). Results come back in chunk order; a
    worker that dies (killed, out of memory) fails the build with a :class:`DatasetError`."""

    def __init__(self, engines: "GoldEngines", workers: int):
        self.engines, self.workers, self.pool = engines, workers, None

    def __enter__(self) -> "_Workers":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if (self.workers > 1 and "fork" in multiprocessing.get_all_start_methods()
                and not multiprocessing.current_process().daemon):
            # With fork the initializer's arguments reach the workers by inheritance.
            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                            initializer=_worker_init, initargs=(os.getpid(), self.engines))
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)   # on an error the queued chunks are dropped
            self.pool = None

    def submit(self, drafts: list[Draft]):
        """Queue one chunk's new questions; :meth:`result` gives their :data:`Gold`. With
        workers they start at once (the workers run ahead of the caller); without, they
        are executed when their result is asked for."""
        return drafts if self.pool is None else self.pool.submit(_forked_gold, drafts)

    def submit_compositional(self, seed: int):
        """Queue the compositional split (:mod:`synkqa.benchmark.compositional`): with
        workers it is drawn and executed in one of them while this process writes the
        other splits."""
        return ("compositional", seed) if self.pool is None else self.pool.submit(_forked_compositional, seed)

    def compositional_result(self, handle) -> tuple[bytes, int, dict[str, int]]:
        if self.pool is None:
            return _compositional_lines(self.engines, handle[1])
        from concurrent.futures.process import BrokenProcessPool

        try:
            return handle.result()
        except BrokenProcessPool:
            raise DatasetError("a worker process of the dataset build died (killed, or out of memory?); "
                               "nothing was written") from None

    def result(self, handle) -> list[Gold]:
        if self.pool is None:
            return _gold(self.engines, handle)
        from concurrent.futures.process import BrokenProcessPool

        try:
            result = handle.result()
        except BrokenProcessPool:
            raise DatasetError("a worker process of the dataset build died (killed, or out of memory?); "
                               "nothing was written") from None
        self.engines.executed += len(result)          # the workers' counts stay in the workers
        return result


Progress = Callable[[str, int, int], None]
"""``progress(split, done, total)``, called every few hundred questions."""


def build(seed: int = 42, out: Path | None = None, progress: Progress | None = None,
          sizes: dict[str, int] | None = None, engines: GoldEngines | None = None,
          workers: int | None = None, compositional: bool | None = None) -> Path:
    """Generate the three splits and write them atomically; returns the directory.

    The files appear together: they are written beside their final names and renamed only
    after every question of every split has been executed on both engines, so a failed or
    interrupted build leaves an earlier dataset untouched.

    The programs are executed by ``workers`` forked processes (default: one per CPU, at
    most :data:`MAX_WORKERS`), a chunk of questions at a time, while this process draws the
    options and writes the lines in order; the files are the same for any number of workers.

    :param sizes: split sizes (default :data:`SPLIT_SIZES`); smaller sizes are for tests.
    :param engines: the gold engines (default: native and Oxigraph on the KB of ``seed``).
    :param compositional: also write the compositional split (``compositional.jsonl``, see
        :mod:`synkqa.benchmark.compositional`); default: when ``sizes`` is not given.
    :raises EngineDisagreement: if the engines disagree on any gold program.
    """
    out = paths.dataset_dir(seed) if out is None else Path(out)
    if compositional is None:
        compositional = sizes is None
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    for split in sizes:
        _check_split(split)
    with _gc_paused():
        return _build(seed, out, progress, sizes, engines, workers, compositional)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while building: the build allocates millions of small
    objects and makes almost no cycles, and collections walk every live object (the KB
    index, the caches): without them a one-process build needs 40 % less CPU. Reference
    counting still frees memory."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build(seed: int, out: Path, progress: Progress | None, sizes: dict[str, int],
           engines: "GoldEngines | None", workers: int | None, compositional: bool = False) -> Path:
    engines = GoldEngines(seed) if engines is None else engines
    kb = engines.kb
    workers = _default_workers() if workers is None else max(1, workers)
    if sum(sizes.values()) < 2 * CHUNK:
        workers = 1                                  # a pool costs more than it saves
    manifest = {"format_version": FORMAT_VERSION, "seed": seed, "templates_sha256": templates_digest(),
                "splits": {}}
    with ExitStack() as stack:
        runner = stack.enter_context(_Workers(engines, workers))
        # The manifest is entered first so that it is renamed last: a complete manifest
        # means complete split files.
        manifest_tmp = stack.enter_context(paths.atomic_path(out / "manifest.json"))
        temporaries = [manifest_tmp]
        # The small compositional split goes first, so that a worker draws and executes it
        # while the others start on the first chunks and this process writes.
        composed = runner.submit_compositional(seed) if compositional else None
        # Every split's questions are drawn and queued first, a chunk at a time, so the
        # workers start on the first chunk at once and go on to the next split while this
        # process writes the current one. A program is executed in the chunk where it first
        # occurs (in file order: train, validation, test).
        seen: set[tuple] = set()
        plans = []
        for split in SPLITS:
            if split not in sizes:
                continue
            drafts: list[Draft] = []
            chunks = [(start, end, new, runner.submit(new))
                      for start, end, new in _chunks(_iter_split(kb, split, seed, sizes[split]), seen, drafts)]
            plans.append((split, drafts, chunks))
        known: dict[tuple, Gold] = {}
        for split, drafts, chunks in plans:
            tmp = stack.enter_context(paths.atomic_path(out / f"{split}.jsonl"))
            temporaries.append(tmp)
            manifest["splits"][split] = _write_split(tmp, split, kb, seed, drafts, chunks, runner, known,
                                                     progress)
        if composed is not None:
            from synkqa.benchmark.compositional import FILE
            data, count, parts = runner.compositional_result(composed)
            tmp = stack.enter_context(paths.atomic_path(out / FILE))
            temporaries.append(tmp)
            tmp.write_bytes(data)
            manifest["compositional"] = {"file": FILE, "questions": count, "bytes": len(data),
                                         "sha256": hashlib.sha256(data).hexdigest(), "parts": parts}
        manifest_tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        for tmp in temporaries:
            # mkstemp creates 0600 files; a dataset is meant to be read by others.
            os.chmod(tmp, 0o644)
    return out


def _key(draft: Draft) -> tuple:
    """Questions with one key have one program (the kopl text is the template's skeleton
    filled with the slots)."""
    return draft.template.id, draft.slots


def _chunks(drafts: Iterable[Draft], seen: set[tuple], into: list[Draft]
            ) -> Iterator[tuple[int, int, list[Draft]]]:
    """``(start, end, new)`` per :data:`CHUNK` questions, appended to ``into`` as they are
    drawn: ``new`` are the questions of ``into[start:end]`` whose program is not in ``seen``
    (nor earlier in the chunk); ``seen`` gets them."""
    new: list[Draft] = []
    start = len(into)
    for draft in drafts:
        into.append(draft)
        key = _key(draft)
        if key not in seen:
            seen.add(key)
            new.append(draft)
        if len(into) - start == CHUNK:
            yield start, len(into), new
            new, start = [], len(into)
    if len(into) > start:
        yield start, len(into), new


def _write_split(path: Path, split: str, kb: KBEntities, seed: int, drafts: list[Draft],
                 chunks: list[tuple], runner: _Workers, known: dict[tuple, Gold],
                 progress: Progress | None) -> dict:
    """Write one split's lines in order as the chunks' results come in: the options are
    drawn here, in question order, from the split's option stream."""
    rng = random.Random(f"synkqa-{seed}-{split}-choices")
    digest = hashlib.sha256()
    n_bytes = 0
    size = len(drafts)
    with open(path, "wb") as fh:
        for start, end, new, handle in chunks:
            known.update(zip(map(_key, new), runner.result(handle)))
            lines = []
            for i in range(start, end):
                draft = drafts[i]
                answer, tail = known[_key(draft)]
                lines.append(_line_start(draft, make_choices(answer, kb, rng)) + tail)
                if progress is not None and (i % 500 == 499 or i == size - 1):
                    progress(split, i + 1, size)
            block = b"".join(lines)
            fh.write(block)
            digest.update(block)
            n_bytes += len(block)
    return {"file": f"{split}.jsonl", "questions": size, "bytes": n_bytes, "sha256": digest.hexdigest()}


def _manifest_ok(directory: Path, seed: int) -> bool:
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if (manifest.get("format_version") != FORMAT_VERSION or manifest.get("seed") != seed
            or manifest.get("templates_sha256") != templates_digest()
            or set(manifest.get("splits", {})) != set(SPLITS)):
        return False
    for split, info in manifest["splits"].items():
        if info.get("questions") != SPLIT_SIZES[split]:
            return False
        file = directory / info["file"]
        if not file.is_file() or file.stat().st_size != info["bytes"]:
            return False
    # Datasets cached before the compositional split existed are rebuilt once (the three
    # splits come out byte-identical).
    info = manifest.get("compositional")
    if not isinstance(info, dict) or not isinstance(info.get("file"), str):
        return False
    file = directory / info["file"]
    return file.is_file() and file.stat().st_size == info.get("bytes")


@contextmanager
def progress_bar(console=None) -> Iterator[Progress]:
    """A rich progress bar (one row per split, on stderr) as a :data:`Progress` callback."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                               TextColumn, TimeElapsedColumn, TimeRemainingColumn)

    console = console or Console(stderr=True)
    columns = (TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with RichProgress(*columns, console=console) as bar:
        tasks: dict[str, int] = {}

        def update(split: str, done: int, total: int) -> None:
            if split not in tasks:
                tasks[split] = bar.add_task(split, total=total)
            bar.update(tasks[split], completed=done)

        yield update


def ensure_dataset(seed: int = 42, show_progress: bool = True) -> Path:
    """Directory of the full dataset for ``seed``, building it on first use (or when stale).

    Other commands call this; a build shows a progress bar on stderr unless
    ``show_progress`` is false.
    """
    directory = paths.dataset_dir(seed)
    if not _manifest_ok(directory, seed):
        if show_progress:
            with progress_bar() as update:
                build(seed, directory, progress=update)
        else:
            build(seed, directory)
    return directory


def _file_summary(path: Path) -> tuple[int, int, str]:
    """``(records, bytes, sha256)`` of a JSONL file in one pass; a last line without its
    newline (a file cut mid-record) counts as a record."""
    digest = hashlib.sha256()
    lines = size = 0
    last = b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
    return lines + (last != b"\n"), size, digest.hexdigest()


def check_split_file(path: Path | str) -> None:
    """A split file read from a directory that has a ``manifest.json`` (written by
    :func:`build`) must be what the manifest records: its record count, bytes and sha256.
    Every reader of split files calls this (``iter_split``, and ``evaluation.runner.load_splits``
    for ``evaluate --data`` and the other study commands), so a file truncated or edited after
    the build is one clear error rather than statistics or accuracies of the wrong questions.

    Files with no manifest beside them (a user's own JSONL), files the manifest does not
    list, and missing files (their reader reports them) are not checked.

    :raises DatasetError: naming the file and what differs, or a manifest that cannot be read.
    """
    path = Path(path)
    manifest_path = path.parent / "manifest.json"
    if not path.is_file() or not manifest_path.is_file():
        return
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except OSError as exc:
        raise DatasetError(f"cannot read {manifest_path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        raise DatasetError(f"{manifest_path} is not valid JSON, so the files beside it cannot be checked "
                           "(rebuild the dataset with `synkqa dataset build`, or remove it to read the "
                           "files as they are)") from None
    if not isinstance(manifest, dict) or "splits" not in manifest:
        return                                   # not a dataset manifest (some other tool's file)
    splits = manifest["splits"]
    entries = splits.values() if isinstance(splits, dict) else ()
    if not isinstance(splits, dict) or not all(isinstance(info, dict) for info in entries):
        raise DatasetError(f"{manifest_path}: 'splits' is not a mapping of split entries (edited by hand?)")
    extra = manifest.get("compositional")
    if isinstance(extra, dict):
        entries = [*entries, extra]
    info = next((info for info in entries if info.get("file") == path.name), None)
    if info is None:
        return
    want = {"questions": info.get("questions"), "bytes": info.get("bytes"), "sha256": info.get("sha256")}
    if not (isinstance(want["questions"], int) and isinstance(want["bytes"], int)
            and isinstance(want["sha256"], str)):
        raise DatasetError(f"{manifest_path}: the entry of {path.name} lacks questions, bytes or sha256 "
                           "(edited by hand?)")
    records, size, sha256 = _file_summary(path)
    if records != want["questions"]:
        differs = f"{records:,} records, {manifest_path.name} says {want['questions']:,}"
    elif size != want["bytes"]:
        differs = f"{size:,} bytes, {manifest_path.name} says {want['bytes']:,}"
    elif sha256 != want["sha256"]:
        differs = f"sha256 {sha256[:16]}…, {manifest_path.name} says {safe_text(want['sha256'], 64)[:16]}…"
    else:
        return
    raise DatasetError(f"{path}: {differs} (file truncated or edited after the build? rebuild the dataset "
                       f"with `synkqa dataset build`, or remove {manifest_path.name} to read the files as they are)")


def iter_split(split: str, seed: int = 42, directory: Path | None = None) -> Iterator[dict]:
    """Records of one split, in file order (builds the dataset on first use).

    :raises DatasetError: for a missing file, a line that is not JSON, or a file that differs
        from the ``manifest.json`` beside it (:func:`check_split_file`).
    """
    _check_split(split)
    directory = ensure_dataset(seed) if directory is None else Path(directory)
    path = directory / f"{split}.jsonl"
    if not path.is_file():
        raise DatasetError(f"no {split} split at {path}")
    check_split_file(path)
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not UTF-8 text (byte {exc.start + 1})") from None
            except ValueError as exc:
                raise DatasetError(f"{path}:{number}: not a JSON record ({exc})") from None
            except RecursionError:
                raise DatasetError(f"{path}:{number}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise DatasetError(f"{path}:{number}: not a JSON record (a {type(record).__name__})")
            yield record


def load_split(split: str, seed: int = 42, directory: Path | None = None) -> list[dict]:
    """All records of ``split`` (``train``, ``validation`` or ``test``) as dicts.

    :raises DatasetError: for an unknown split name (with a suggestion) or an unreadable file.
    """
    return list(iter_split(split, seed, directory))


# ---- statistics (Table II) -----------------------------------------------------------------

_STATS_FIELDS = {"question": str, "kopl": str, "answer": str, "template_id": int}


def split_stats(records: Iterable[dict], where: str = "") -> dict:
    """Table II columns for one split plus the per-template counts."""
    words, steps, answers, per_template = [], [], set(), Counter()
    for number, r in enumerate(records, 1):
        for key, kind in _STATS_FIELDS.items():
            if not isinstance(r.get(key), kind) or isinstance(r.get(key), bool):
                what = "missing" if r.get(key) is None else f"a {type(r.get(key)).__name__}"
                raise DatasetError(f"{where}{':' if where else 'record '}{number}: field '{key}' "
                                   f"must be {'an integer' if kind is int else 'a string'}, not {what}")
        words.append(word_count(r["question"]))
        steps.append(r["kopl"].count(";") + 1)
        answers.add(r["answer"])
        per_template[r["template_id"]] += 1
    n = len(words)
    return {
        "questions": n,
        "avg_words": statistics.fmean(words) if n else 0.0,
        "std_words": statistics.pstdev(words) if n else 0.0,
        "avg_steps": statistics.fmean(steps) if n else 0.0,
        "unique_answers": len(answers),
        "templates": {t.id: per_template.get(t.id, 0) for t in templates()},
    }


def dataset_stats(seed: int = 42, directory: Path | None = None) -> dict:
    """Table II and per-template counts for every split, beside the paper's numbers."""
    where = {split: str((Path(directory) if directory is not None else paths.dataset_dir(seed)) / f"{split}.jsonl")
             for split in SPLITS}
    ours = {split: split_stats(iter_split(split, seed, directory), where[split]) for split in SPLITS}
    return {
        "seed": seed,
        "splits": ours,
        "paper": PAPER_TABLE_II,
        "templates": [
            {"id": t.id, "name": t.name, "weight": t.weight,
             **{split: ours[split]["templates"][t.id] for split in SPLITS},
             **{f"{split}_expected": round(t.weight * ours[split]["questions"], 1) for split in SPLITS},
             "test_paper": PAPER_TEST_TEMPLATE_COUNTS[t.id]}
            for t in templates()],
    }
