"""The SynKQA-Pro benchmark: questions, gold programs and answers, ten options, JSONL files.

One build (seed 42) writes ``train.jsonl`` (100,000), ``validation.jsonl`` (10,000) and
``test.jsonl`` (10,000) plus ``manifest.json`` under :func:`synkqa.benchmark.paths.dataset_dir`.
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

import hashlib
import json
import os
import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path

import orjson

from ontology import paper
from kopl2sparql.answer import Answer, format_number
from kopl2sparql.compiler import compile_program
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
    _check_split(split)
    size = SPLIT_SIZES[split] if size is None else size
    rng = random.Random(f"synkqa-{seed}-{split}-questions")
    items = templates()
    drawn = rng.choices(items, weights=[t.weight for t in items], k=size)
    # People who can anchor the constructive templates (all of them in the generated KB).
    persons = tuple(p for p in kb.names["Person"] if p in kb.employer)
    return [Draft(split, i, t, _sample_slots(t, kb, persons, rng), _paraphrase_for(split, i))
            for i, t in enumerate(drawn)]


# ---- options -------------------------------------------------------------------------------

def _numeric_distractors(gold: str, rng: random.Random) -> list[str]:
    value = Decimal(gold)
    # One unit of the gold value's last digit: 1 for years and counts.
    unit = Decimal(1).scaleb(min(value.as_tuple().exponent, 0))
    pool = [value + k * unit for k in range(-NUMERIC_RADIUS, NUMERIC_RADIUS + 1)]
    pool = [format_number(v) for v in pool if v >= 0 and v != value]
    # For a non-negative gold value k = 1..RADIUS are always there (at least ten members).
    if len(pool) < NUM_CHOICES - 1:
        raise DatasetError(f"cannot draw {NUM_CHOICES - 1} non-negative neighbours of {gold}")
    return rng.sample(pool, NUM_CHOICES - 1)


def _entity_distractors(values: tuple[str, ...], kb: KBEntities, rng: random.Random) -> list[str]:
    classes = {entity_class(v) for v in values}
    if len(classes) != 1:
        raise DatasetError(f"cannot draw distractors for a mixed-class answer {values}")
    pool = kb.names[classes.pop()]
    gold, size = "|".join(values), len(values)
    if size == 1:
        # Nine other entities of the class: one draw of ten, minus the gold one if drawn.
        return [name for name in rng.sample(pool, NUM_CHOICES) if name != gold][:NUM_CHOICES - 1]
    found: list[str] = []
    seen = {gold}
    while len(found) < NUM_CHOICES - 1:
        # Same-length lists in the canonical form of answers (names sorted, joined by |).
        candidate = "|".join(sorted(rng.sample(pool, size)))
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
    rng.shuffle(choices)
    return choices


# ---- gold answers on two engines ----------------------------------------------------------

class GoldEngines:
    """Executes gold programs on the native interpreter and on SPARQL over Oxigraph.

    :meth:`run` returns the program's KQA Pro form, its SPARQL text and the answer both
    engines agree on, or raises :class:`EngineDisagreement` naming the program and both
    answers (an error on one side and an answer on the other is a disagreement too).

    Per-skeleton caching (why the build takes seconds, not minutes): the first instance of
    each template with pairwise-distinct slot values is its *prototype*; it is parsed, type
    checked and converted to KQA Pro form once. Every later instance is the prototype with
    entity names swapped in (steps, KQA Pro inputs): type checking depends only on the
    slots' classes, which a template fixes. The SPARQL, recorded and executed, is the
    compiler's own (compiled once per shape, the names substituted into its text). The
    first renamed instance of every template and every :attr:`VERIFY_EVERY`-th question are
    still parsed and converted from scratch and compared (a mismatch fails the build), and
    the test suite compares a sample against ``to_kqapro``.

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
        self.executed = 0          # distinct programs run on both engines
        self._count = 0

    def use_sparql_store(self, store) -> None:
        """Run the SPARQL side on another store (e.g. a modified copy of the KB)."""
        self.sparql = SparqlExecutor(store, self.sparql.schema, name="oxigraph")
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
                raise EngineDisagreement(
                    f"engines disagree on the gold program of {draft.id} ({draft.template.name}):\n"
                    f"  program: {draft.kopl}\n"
                    f"  native:  {_show(native)}\n"
                    f"  sparql:  {_show(sparql)}\n"
                    f"  query:\n{compiled.sparql}")
            answer = self._answers[draft.kopl] = native
            self.executed += 1
        return instance.kqapro(), compiled.sparql, answer

    def _instance(self, draft: Draft) -> "_Instance":
        self._count += 1
        proto = self._prototypes.get(draft.template.id)
        values = tuple(v for _, v in draft.slots)
        if proto is None:
            program = parse(draft.kopl)
            typecheck(program, self.sparql.schema)
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
            if (program, to_kqapro(program)) != (made.program(), made.kqapro()):
                raise DatasetError(f"per-skeleton cache diverged from a fresh parse on {draft.kopl} "
                                   f"(template {draft.template.name}); this is a bug in synkqa.benchmark.dataset")
        return made


def _show(outcome) -> str:
    if isinstance(outcome, Answer):
        return f"{outcome.canonical()!r} ({outcome.kind})"
    return f"error: {str(outcome).splitlines()[0]}"


class _Swap:
    """Renames entities inside a program or a KQA Pro list."""

    def __init__(self, old: tuple[str, ...], new: tuple[str, ...]):
        self.names = dict(zip(old, new))

    def program(self, program: Program) -> Program:
        return Program(tuple(Step(s.op, tuple(self.names.get(a, a) for a in s.args)) for s in program.steps))

    def kqapro(self, steps: list) -> list:
        return [{"function": f["function"], "inputs": [self.names.get(a, a) for a in f["inputs"]],
                 "dependencies": list(f["dependencies"])} for f in steps]


@dataclass
class _Prototype:
    """One parsed instance of a template, from which later instances are renamed."""

    values: tuple[str, ...]
    program: Program
    kqapro: list
    uses: int = 0


@dataclass(frozen=True)
class _Instance:
    """A question's program and KQA Pro list, renamed from the prototype on demand."""

    proto: _Prototype
    swap: _Swap

    def program(self) -> Program:
        return self.swap.program(self.proto.program)

    def kqapro(self) -> list:
        return self.swap.kqapro(self.proto.kqapro)


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


Progress = Callable[[str, int, int], None]
"""``progress(split, done, total)``, called every few hundred questions."""


def build(seed: int = 42, out: Path | None = None, progress: Progress | None = None,
          sizes: dict[str, int] | None = None, engines: GoldEngines | None = None) -> Path:
    """Generate the three splits and write them atomically; returns the directory.

    The files appear together: they are written beside their final names and renamed only
    after every question of every split has been executed on both engines, so a failed or
    interrupted build leaves an earlier dataset untouched.

    :param sizes: split sizes (default :data:`SPLIT_SIZES`); smaller sizes are for tests.
    :param engines: the gold engines (default: native and Oxigraph on the KB of ``seed``).
    :raises EngineDisagreement: if the engines disagree on any gold program.
    """
    out = paths.dataset_dir(seed) if out is None else Path(out)
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    for split in sizes:
        _check_split(split)
    engines = GoldEngines(seed) if engines is None else engines
    kb = engines.kb
    manifest = {"format_version": FORMAT_VERSION, "seed": seed, "templates_sha256": templates_digest(),
                "splits": {}}
    with ExitStack() as stack:
        # The manifest is entered first so that it is renamed last: a complete manifest
        # means complete split files.
        manifest_tmp = stack.enter_context(paths.atomic_path(out / "manifest.json"))
        temporaries = [manifest_tmp]
        for split in SPLITS:
            if split not in sizes:
                continue
            tmp = stack.enter_context(paths.atomic_path(out / f"{split}.jsonl"))
            temporaries.append(tmp)
            manifest["splits"][split] = _write_split(tmp, split, kb, engines, seed, sizes[split], progress)
        manifest_tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        for tmp in temporaries:
            # mkstemp creates 0600 files; a dataset is meant to be read by others.
            os.chmod(tmp, 0o644)
    return out


def _write_split(path: Path, split: str, kb: KBEntities, engines: "GoldEngines", seed: int,
                 size: int, progress: Progress | None) -> dict:
    drafts = sample_split(kb, split, seed, size)
    rng = random.Random(f"synkqa-{seed}-{split}-choices")
    digest = hashlib.sha256()
    n_bytes = 0
    with open(path, "wb") as fh:
        for i, draft in enumerate(drafts):
            program, sparql, answer = engines.run(draft)
            line = _line(_record(draft, program, sparql, answer.canonical(), make_choices(answer, kb, rng)))
            fh.write(line)
            digest.update(line)
            n_bytes += len(line)
            if progress is not None and (i % 500 == 499 or i == size - 1):
                progress(split, i + 1, size)
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
    return True


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
