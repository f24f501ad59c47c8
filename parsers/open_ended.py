"""The schema-aware execution-validated parser (``schema-ev``): enumerate, rank, execute,
validate — with or without an option set.

For each question: link its entities, enumerate every well-typed program around them
(:mod:`parsers.enumerate`), rank the programs with the schema-aware ranker
(:mod:`parsers.schema_ranker`), then execute them in rank order through the executor
(SPARQL on the embedded Oxigraph store by default) and let a selection rule pick among
those the validators accept. The default validator chain,
``options-if-given+open`` = option-set membership when the question has options, then
non-empty, answer type and the EVER-style trace check, needs no options, so the same
system answers open-ended and multiple-choice questions; with options they validate too.

Candidates are not limited to the nine templates: a question about a person's height, a
company's founding year or the cities of a country gets a program if its shape is in the
enumerator's grammar. Programs predicted this way are reported with the template id they
match (``None`` when they match none).

Importing this module registers the system as ``schema-ev`` (strength above EV-TC, so
``--system best`` names it with or without options).
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import weakref
from collections.abc import Iterator, Sequence
from functools import lru_cache

from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

import parsers.trace_validators  # noqa: F401  (registers the validators and the "best" rule)
from kopl2sparql.errors import ModelError
from parsers.base import (Candidate as Examined, Executor, Prediction, ProgramRunner, Query, as_runner, schema_of,
                          queries_from)
from parsers.enumerate import MAX_HOPS, enumerate_programs
from parsers.schema_ranker import FEATURES, SchemaRanker
from parsers.validators import (EXECUTION_ERROR, NOT_EXAMINED, SelectionRule, Trial, Validator,
                                Verdict, get_selection, get_validator)

__all__ = ["SchemaValidatedParser", "template_of", "DEFAULT_VALIDATOR", "SYSTEM_NAME", "MODEL_KEY"]

_RANKINGS: "weakref.WeakKeyDictionary[SchemaRanker, dict]" = weakref.WeakKeyDictionary()
"""Per fitted ranker (not pickled with it): question -> its first k ranked candidates."""

SYSTEM_NAME = "schema-ev"
DEFAULT_VALIDATOR = "options-if-given+open"
NO_TEMPLATE = -1
"""``template_id`` recorded for a candidate that matches none of the nine templates."""

def _code_fingerprint() -> str:
    """Hash of the modules that decide what a trained model means (features, cues,
    enumeration), so a cached model trained by other code is never loaded."""
    from pathlib import Path
    digest = hashlib.sha256(",".join(FEATURES).encode())
    here = Path(__file__).parent
    for name in ("answer_type.py", "enumerate.py", "schema_ranker.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:8]


MODEL_KEY = f"{SYSTEM_NAME}-{_code_fingerprint()}"
"""Cache key of trained models (see :func:`_code_fingerprint`)."""

_ENTITY = re.compile(r"\b(Person|City|Country|Org)_[0-9]+\b")


def _signature(program: str) -> str:
    """The program with entities replaced by ``<Class#n>`` in order of first appearance."""
    seen: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = m.group(0)
        if name not in seen:
            seen[name] = f"<{m.group(1)}#{sum(1 for k in seen if k.startswith(m.group(1) + '_'))}>"
        return seen[name]

    return _ENTITY.sub(sub, program)


@lru_cache(maxsize=1)
def _template_signatures() -> dict[str, int]:
    from synkqa.benchmark.templates import templates
    prefix = {"Person": "Person", "City": "City", "Country": "Country", "Organization": "Org"}
    out = {}
    for t in templates():
        counts: dict[str, int] = {}
        values = {}
        for slot, cls in t.slots:
            p = prefix[cls]
            values[slot] = f"{p}_{900000 + counts.get(p, 0)}"
            counts[p] = counts.get(p, 0) + 1
        out[_signature(t.program_text(**values))] = t.id
    return out


def template_of(program: str | None) -> int | None:
    """Id of the template whose skeleton ``program`` instantiates, or ``None``."""
    if program is None:
        return None
    return _template_signatures().get(_signature(program))


def _gold_programs(questions: list[str], targets: Sequence) -> tuple[list[str], list[int | None]]:
    """Gold program texts from program texts, or from template ids filled from the question
    (how the registry trains: it hands over template ids; the dataset's gold program is the
    template filled by first mention, the paper's slot-filling rule)."""
    from parsers.template import instantiate
    programs, groups = [], []
    for q, t in zip(questions, targets):
        if isinstance(t, str):
            programs.append(t)
            groups.append(template_of(t))
            continue
        text = instantiate(int(t), q)
        if text is None:
            raise ModelError(f"template {int(t)} cannot be filled from training question {q!r}")
        programs.append(text)
        groups.append(int(t))
    return programs, groups


class SchemaValidatedParser(BaseEstimator):
    """Enumerate + schema-aware rank + execution validation (``schema-ev``).

    :param k: candidates examined (executed and validated) at most, in rank order.
    :param validator: a validator or its registry name; the default works with and without
        options (``options-if-given+open``).
    :param selection: ``first`` (stop at the first passing candidate) or ``best`` (execute
        all k, take the best-scoring passing one).
    :param C, max_questions, hard_rounds, random_state: the ranker's (:class:`SchemaRanker`).
    :param max_hops: longest relation chain the enumerator builds.
    :param rollback_confidence: open-ended only: candidates the ranker prefers the top one
        to with at least this pairwise probability (``sigmoid(score gap)``, the ranker
        being a pairwise logistic model) are not rolled back to; when nothing closer
        passes, the top candidate's own answer (possibly empty) is returned. An empty answer
        is a fair answer to "which company in City_X ..." when City_X has none; a far-worse
        program that happens to find something is not. ``None``: roll back to any of the k.
        With options, every one of the k may be tried (the options are evidence enough).

    Learned: ``ranker_``. :meth:`fit` takes gold program texts or template ids.
    """

    predicts_program = True
    needs_choices = False

    def __init__(self, k: int = 10, validator: str | Validator = DEFAULT_VALIDATOR,
                 selection: str | SelectionRule = "first", C: float = 10.0, max_questions: int = 3000,
                 hard_rounds: int = 1, random_state: int = 0, max_hops: int = MAX_HOPS,
                 rollback_confidence: float | None = 0.9):
        self.k = k
        self.validator = validator
        self.selection = selection
        self.C = C
        self.max_questions = max_questions
        self.hard_rounds = hard_rounds
        self.random_state = random_state
        self.max_hops = max_hops
        self.rollback_confidence = rollback_confidence

    # -- training
    def fit(self, questions, targets) -> "SchemaValidatedParser":
        """Train the ranker on questions and their gold programs (texts) or template ids.
        Returns ``self``."""
        if isinstance(questions, str):
            raise ModelError("expected a list of questions, got one string")
        questions = list(questions)
        targets = list(targets)
        if len(questions) != len(targets) or not questions:
            raise ModelError(f"need one target per question (got {len(questions)} questions, "
                             f"{len(targets)} targets), and at least one")
        programs, groups = _gold_programs(questions, targets)
        self.ranker_ = SchemaRanker(C=self.C, max_questions=self.max_questions, hard_rounds=self.hard_rounds,
                                    random_state=self.random_state).fit(
            questions, programs, groups=[-1 if g is None else g for g in groups])
        return self

    def with_options(self, k: int | None = None, validator: str | Validator | None = None,
                     selection: str | SelectionRule | None = None) -> "SchemaValidatedParser":
        """A copy sharing the fitted ranker, with other answering options (for the registry)."""
        out = copy.copy(self)
        if k is not None:
            out.k = k
        if validator is not None:
            out.validator = validator
        if selection is not None:
            out.selection = selection
        return out

    def _fitted(self) -> SchemaRanker:
        try:
            check_is_fitted(self, "ranker_")
        except Exception:
            raise ModelError("SchemaValidatedParser is not fitted yet: call fit(questions, programs) "
                             "or load a trained model (synkqa train --system schema-ev)") from None
        return self.ranker_

    # -- answering
    def rank(self, question: str) -> list[tuple[str, float]]:
        """Every enumerated program of ``question`` with its ranker score, best first."""
        ranker = self._fitted()
        return [(c.text, s) for c, s in ranker.rank(question, enumerate_programs(question, max_hops=self.max_hops))]

    def answer(self, queries: Sequence[Query | dict | str], executor: Executor | ProgramRunner,
               **_ignored) -> list[Prediction]:
        """Select one program per query (open-ended when a query has no ``choices``)."""
        self._fitted()
        if int(self.k) < 1:
            raise ModelError(f"k must be at least 1, got {self.k}")
        queries = queries_from(queries)
        validator, rule = get_validator(self.validator), get_selection(self.selection)
        if validator.needs_choices:
            for query in queries:
                if query.choices is None:
                    raise ModelError(f"validator '{validator.name}' needs options, but question "
                                     f"{query.id or query.question!r} has none; use the default "
                                     f"'{DEFAULT_VALIDATOR}' to answer open-ended questions")
        runner = as_runner(executor)
        return [self.decide(q, runner, validator, rule) for q in queries]

    def _ranked(self, ranker: SchemaRanker, question: str, runner: ProgramRunner) -> list:
        """The first ``k`` candidates of ``question``, best first. Remembered per ranker
        when the runner memoises (evaluation), so the same question asked with and without
        options is ranked once; timed runs (no memo) pay for every ranking."""
        # Candidates are typed against the schema of the KB the runner executes on.
        schema = schema_of(runner)
        memo = _RANKINGS.setdefault(ranker, {}) if runner.memo else None
        key = (question, id(schema), self.max_hops, int(self.k))
        if memo is not None and key in memo:
            return memo[key]
        candidates = enumerate_programs(question, schema, max_hops=self.max_hops)
        top = ranker.rank(question, candidates, limit=int(self.k))
        if memo is not None:
            if len(memo) > 100_000:
                memo.clear()
            memo[key] = top
        return top

    def decide(self, query: Query, runner: ProgramRunner, validator: Validator | None = None,
               rule: SelectionRule | None = None) -> Prediction:
        """Rank, execute and validate the candidates of one query."""
        ranker = self._fitted()
        validator = validator or get_validator(self.validator)
        rule = rule or get_selection(self.selection)
        top = self._ranked(ranker, query.question, runner)
        if top and query.choices is None and self.rollback_confidence is not None:
            margin = math.log(self.rollback_confidence / (1.0 - self.rollback_confidence))
            top = [(c, s) for c, s in top if s >= top[0][1] - margin]
        if not top:
            return Prediction(query.id, None, None, template_id=None, fallback=True)
        seen: list[Trial] = []

        def trials() -> Iterator[Trial]:
            for rank, (candidate, score) in enumerate(top, start=1):
                program = candidate.text
                execution = runner.run(program)
                verdict = (validator.check(query, program, execution, runner) if execution.ok
                           else Verdict.fail(EXECUTION_ERROR))
                tid = template_of(program)
                trial = Trial(rank, NO_TEMPLATE if tid is None else tid, score, program, execution, verdict)
                seen.append(trial)
                yield trial

        chosen = rule.select(trials())
        fallback = chosen is None
        if fallback:
            # Nothing passed: the best-ranked candidate that at least executed (else rank 1).
            chosen = next((t for t in seen if t.execution is not None and t.execution.ok), seen[0])
        examined = tuple(
            Examined(t.rank, t.template_id, t.score, t.program, t.execution.canonical if t.execution else None,
                     t.verdict.outcome, executed=t.execution is not None)
            for t in seen)
        done = {c.rank for c in examined}
        examined += tuple(Examined(rank, NO_TEMPLATE if template_of(c.text) is None else template_of(c.text),
                                   s, c.text, outcome=NOT_EXAMINED)
                          for rank, (c, s) in enumerate(top, start=1) if rank not in done)
        return Prediction(query.id, chosen.program, chosen.execution.canonical if chosen.execution else None,
                          template_id=template_of(chosen.program),
                          selected_rank=None if fallback else chosen.rank, fallback=fallback,
                          executions=len(seen), candidates=examined)


