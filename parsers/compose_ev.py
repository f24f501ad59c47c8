"""``schema-ev`` over a compositional program space, with refinement from execution feedback.

For each question (any KB with labels):

1. **link** entities from the KB's labels and read the numbers (:mod:`parsers.linking`);
   a label naming several entities gives one candidate set per referent;
2. **enumerate** the typed programs its entities, numbers and cues allow
   (:mod:`parsers.compose`: filters, verifications, ``Diff``/``Or``/``And``, counts compared,
   superlatives over derived sets, chains of up to four hops, ``VerifyRel`` after hops);
3. **rank** them (:mod:`parsers.compose_ranker`); candidates whose answer type contradicts
   the question's are dropped before anything runs;
4. **execute and validate** in rank order (SPARQL on the store by default) near the top
   (``rollback_confidence``, as in :mod:`parsers.open_ended`): an entity answer must be
   non-empty; a count or yes/no answer must come from a trace without an empty step where
   emptiness means a wrong program (EVER's stepwise check: an empty set may only be counted,
   subtracted or joined by ``Or``, or be what a filter leaves) — a non-empty entity answer
   of a program without ``Or`` already proves every step non-empty, so it costs no query;
5. **refine** (PER-KBQA's refinement, without a language model): when every candidate near
   the top fails, the three best failures are edited *where they failed*: their trace names
   the first step that gave nothing, and the edits are the enumerated programs that differ
   from the failure in exactly that step (another relation or direction, attribute,
   comparator or set operator there), best-scored first, plus the reversed comparator of a
   filter there when the question's words did not give it. Up to ``refine_budget`` edits
   are executed and validated like any candidate. Edits that would only turn a legitimately
   empty answer into a non-empty one (a number rescaled, ``And`` made ``Or``, a stated
   comparator reversed) are not made. Selected edits carry ``template_id = REFINED`` in the
   prediction's examined candidates.

Training: the pairwise ranker learns from the questions it is given (template ids or gold
program texts, like every registered system) plus, by default, the *train part* of the
compositional split (wordings 0 and 1 of every kind; :mod:`synkqa.benchmark.compositional`),
drawn from the KB. Validation and test wordings are never read.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Iterator, Sequence
from decimal import Decimal
from itertools import product
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

import parsers.trace_validators  # noqa: F401  (registers options-if-given and the open validators)
from kopl2sparql.errors import ExecutionError, ModelError, ProgramError
from parsers.base import (Candidate as Examined, Executor, Prediction, ProgramRunner, Query, as_runner,
                          default_schema, queries_from, schema_of)
from parsers.compose import CShape, cues_of, shapes_for_signature, signature_of, unit_scale
from parsers.compose_ranker import FEATURES, ComposeRanker, ComposeView, block_of, feature_matrix, schema_lexicon
from parsers.linking import LinkedQuestion, linker_for
from parsers.validators import (EXECUTION_ERROR, NOT_EXAMINED, SelectionRule, Trial, Validator, Verdict,
                                get_selection, get_validator)

__all__ = ["CompositionalParser", "REFINED", "MODEL_KEY", "Ranked"]

REFINED = -2
"""``template_id`` of an examined candidate that refinement made."""
NO_TEMPLATE = -1
MAX_MENTIONS = 3
MAX_READINGS = 6
"""Referent combinations tried for ambiguous labels (each a set of candidates)."""


def _code_fingerprint() -> str:
    digest = hashlib.sha256(",".join(FEATURES).encode())
    here = Path(__file__).parent
    for name in ("answer_type.py", "linking.py", "compose.py", "compose_ranker.py", "compose_ev.py"):
        digest.update((here / name).read_bytes())
    digest.update((here.parent / "synkqa" / "benchmark" / "compositional.py").read_bytes())
    return digest.hexdigest()[:8]


MODEL_KEY = f"schema-ev-compose-{_code_fingerprint()}"


class Ranked:
    """One candidate: a shape filled for one reading of the question."""

    __slots__ = ("shape", "names", "score", "_text", "linked", "scales")

    def __init__(self, shape: CShape, names: tuple[str, ...], score: float, linked: LinkedQuestion, scales):
        self.shape, self.names, self.score, self.linked, self.scales = shape, names, score, linked, scales
        self._text = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.shape.fill(self.names, self.linked, self.scales)
        return self._text


class _Ranking:
    """Every candidate of one question as arrays (score, steps, type fit); :class:`Ranked`
    objects, and program texts, are made only for the candidates asked for."""

    def __init__(self, linked: LinkedQuestion, view: ComposeView, parts, scales):
        self.linked, self.view, self.scales = linked, view, scales
        self.parts = parts
        scores = np.concatenate([p[2] for p in parts])
        steps = np.concatenate([p[4].static[:, 3] for p in parts])
        fit = np.concatenate([p[3] for p in parts])
        reading = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
        index = np.concatenate([np.arange(len(p[1])) for p in parts])
        self.scores, self.reading, self.index, self.fit = scores, reading, index, fit
        self.order = np.lexsort((index, reading, steps, -np.round(scores, 9)))

    def top(self, n: int | None, typed: bool = True) -> list[Ranked]:
        """The best ``n`` candidates (all when ``None``); ``typed``: only those whose answer
        type fits the question's (unless none does)."""
        order = self.order
        if typed and self.view.expected.known:
            kept = order[self.fit[order]]
            if len(kept):
                order = kept
        if n is not None:
            order = order[:n]
        out = []
        for j in order:
            names, shapes = self.parts[self.reading[j]][:2]
            out.append(Ranked(shapes[self.index[j]], names, float(self.scores[j]), self.linked, self.scales))
        return out


_SCALES: dict[int, tuple[object, dict[str, Decimal]]] = {}


def _scales(schema) -> dict[str, Decimal]:
    """Each attribute's unit factor (:func:`parsers.compose.unit_scale`), per schema (kept
    beside it, so that its id cannot be reused while the entry exists)."""
    found = _SCALES.get(id(schema))
    if found is None or found[0] is not schema:
        found = _SCALES[id(schema)] = (schema, {a: unit_scale(info) for a, info in schema.attributes.items()})
    return found[1]


class CompositionalParser(BaseEstimator):
    """Link, enumerate, rank, execute, validate, refine (see the module docstring).

    :param k: candidates executed at most before refinement.
    :param validator: an extra validator (registry name or object) run after the built-in
        checks; the default adds the option-set rule when a question has options.
    :param selection: ``first`` or ``best`` (as for the other execution-validated systems).
    :param C, negatives, hard_rounds: the ranker's.
    :param max_questions: template training questions used (a stratified sample).
    :param rollback_confidence: open-ended, candidates the ranker rejects in favour of the
        top one with at least this pairwise probability are not tried.
    :param refine: edit failed candidates where they failed (step 5).
    :param refine_budget: edited programs executed at most per question.
    :param compositional_training: also learn from the compositional split's train part.
    """

    predicts_program = True
    needs_choices = False

    def __init__(self, k: int = 10, validator: str | Validator = "options-if-given", selection: str = "first",
                 C: float = 1.0, negatives: int = 80, hard_rounds: int = 1, max_questions: int | None = 3000,
                 random_state: int = 0, rollback_confidence: float | None = 0.9, refine: bool = True,
                 refine_budget: int = 8, compositional_training: bool = True):
        self.k = k
        self.validator = validator
        self.selection = selection
        self.C = C
        self.negatives = negatives
        self.hard_rounds = hard_rounds
        self.max_questions = max_questions
        self.random_state = random_state
        self.rollback_confidence = rollback_confidence
        self.refine = refine
        self.refine_budget = refine_budget
        self.compositional_training = compositional_training

    # ---- candidates ---------------------------------------------------------------------------

    def readings(self, question: str, schema) -> tuple[LinkedQuestion, list[tuple[tuple[str, ...], tuple[CShape, ...]]]]:
        """The linked question and, per reading (one referent per mention), its names and shapes."""
        linked = linker_for(schema).link(question)
        mentions = linked.mentions[:MAX_MENTIONS]
        if not mentions:
            return linked, []
        cues = cues_of(linked)
        out = []
        # One reading per referent and per class of it: an entity typed both Professor and
        # Student is read as either (its relations differ).
        options = []
        for m in mentions:
            pairs = []
            for name, cls in zip(m.names, m.classes):
                classes = sorted(schema.entity_classes(name) or ()) or [cls]
                pairs.extend((name, c) for c in classes)
            options.append(pairs[:4])
        for combo in product(*options):
            if len(out) >= MAX_READINGS:
                break
            names = tuple(n for n, _ in combo)
            if len(set(names)) < len(names):
                continue
            classes = tuple(c for _, c in combo)
            if any(c is None for c in classes):
                continue
            shapes = shapes_for_signature(signature_of(classes, linked, cues), schema)
            if shapes:
                out.append((names, shapes))
        return linked, out

    def rank(self, question: str, schema=None) -> list[Ranked]:
        """Every candidate of ``question`` with its score, best first (ties: fewer steps, then
        enumeration order)."""
        schema = schema or default_schema()
        ranking = self._rank(question, schema)
        return [] if ranking is None else ranking.top(None, typed=False)

    def _rank(self, question: str, schema) -> "_Ranking | None":
        coef = self._fitted()
        linked, readings = self.readings(question, schema)
        if not readings:
            return None
        lex = schema_lexicon(schema)
        view = ComposeView.of(linked, cues_of(linked), schema, lex)
        numbers = min(len(linked.numbers), 2)
        parts = []
        for names, shapes in readings:
            block = block_of(shapes, schema, lex, numbers)
            parts.append((names, shapes, block.score(view, coef), block.type_fit(view), block))
        return _Ranking(linked, view, parts, _scales(schema))

    # ---- training -----------------------------------------------------------------------------

    def fit(self, questions, targets) -> "CompositionalParser":
        """Learn the ranker from questions and their gold programs (texts) or template ids,
        plus the compositional train part. Returns ``self``."""
        from parsers.open_ended import _gold_programs
        if isinstance(questions, str):
            raise ModelError("expected a list of questions, got one string")
        questions, targets = list(questions), list(targets)
        if len(questions) != len(targets) or not questions:
            raise ModelError(f"need one target per question (got {len(questions)} questions, "
                             f"{len(targets)} targets), and at least one")
        chosen = _sample(len(questions), self.max_questions,
                         [t if isinstance(t, int) else -1 for t in targets], self.random_state)
        qs = [questions[i] for i in chosen]
        programs, _ = _gold_programs(qs, [targets[i] for i in chosen])
        pairs = list(zip(qs, programs))
        if self.compositional_training:
            pairs += compositional_training_pairs()
        schema = default_schema()
        blocks, unreachable = [], 0
        for question, gold in pairs:
            gold = "".join(gold.split())
            ranked_blocks = self._training_block(question, gold, schema)
            if ranked_blocks is None:
                unreachable += 1
                continue
            blocks.append(ranked_blocks)
        if not blocks:
            raise ModelError("no training question has its gold program among the enumerated candidates")
        self.ranker_ = ComposeRanker(C=self.C, negatives=self.negatives, hard_rounds=self.hard_rounds,
                                     random_state=self.random_state).fit(blocks)
        self.n_training_ = len(blocks)
        self.unreachable_ = unreachable
        return self

    def _training_block(self, question: str, gold: str, schema):
        linked, readings = self.readings(question, schema)
        if not readings:
            return None
        lex = schema_lexicon(schema)
        view = ComposeView.of(linked, cues_of(linked), schema, lex)
        scales = _scales(schema)
        numbers = min(len(linked.numbers), 2)
        feats, index, offset = [], None, 0
        for names, shapes in readings:
            f = feature_matrix(view, shapes, schema, lex, numbers)
            if index is None:
                for i, s in enumerate(shapes):
                    if s.fill(names, linked, scales) == gold:
                        index = offset + i
                        break
            feats.append(f)
            offset += len(shapes)
        if index is None or offset < 2:
            return None
        return np.vstack(feats), index

    def _fitted(self) -> np.ndarray:
        ranker = getattr(self, "ranker_", None)
        if ranker is None:
            raise ModelError("CompositionalParser is not fitted yet: call fit(questions, programs) or load a "
                             "trained model (synkqa train --system schema-ev)")
        return ranker.coef_

    def with_options(self, k: int | None = None, validator=None, selection=None) -> "CompositionalParser":
        """A copy sharing the fitted ranker, with other answering options."""
        out = copy.copy(self)
        if k is not None:
            out.k = k
        if validator is not None:
            out.validator = validator
        if selection is not None:
            out.selection = selection
        return out

    # ---- answering ---------------------------------------------------------------------------

    def answer(self, queries: Sequence[Query | dict | str], executor: Executor | ProgramRunner,
               **_ignored) -> list[Prediction]:
        """One prediction per query (open-ended when a query has no ``choices``)."""
        self._fitted()
        if int(self.k) < 1:
            raise ModelError(f"k must be at least 1, got {self.k}")
        queries = queries_from(queries)
        validator, rule = get_validator(self.validator), get_selection(self.selection)
        if validator.needs_choices:
            for query in queries:
                if query.choices is None:
                    raise ModelError(f"validator '{validator.name}' needs options, but question "
                                     f"{query.id or query.question!r} has none")
        runner = as_runner(executor)
        return [self.decide(q, runner, validator, rule) for q in queries]

    def decide(self, query: Query, runner: ProgramRunner, validator: Validator | None = None,
               rule: SelectionRule | None = None) -> Prediction:
        from parsers.open_ended import template_of
        validator = validator or get_validator(self.validator)
        rule = rule or get_selection(self.selection)
        schema = schema_of(runner)
        ranking = self._rank(query.question, schema)
        top = [] if ranking is None else ranking.top(int(self.k))
        if top and query.choices is None and self.rollback_confidence is not None:
            margin = math.log(self.rollback_confidence / (1.0 - self.rollback_confidence))
            top = [r for r in top if r.score >= top[0].score - margin]
        if not top:
            return Prediction(query.id, None, None, template_id=None, fallback=True)
        seen: list[Trial] = []
        refined_ranks: set[int] = set()

        def judge(rank: int, program: str, score: float, shape: CShape | None) -> Trial:
            execution = runner.run(program)
            if not execution.ok:
                verdict = Verdict.fail(EXECUTION_ERROR)
            else:
                verdict = _check(program, shape if rank == 1 else None, execution, runner, schema)
                if verdict.passed:
                    verdict = validator.check(query, program, execution, runner)
            trial = Trial(rank, NO_TEMPLATE, score, program, execution, verdict)
            seen.append(trial)
            return trial

        def trials() -> Iterator[Trial]:
            for rank, r in enumerate(top, start=1):
                yield judge(rank, r.text, r.score, r.shape)
            if not self.refine or query.choices is not None:
                return
            tried = {t.program for t in seen}
            budget = int(self.refine_budget)
            guessed = {r.text for r in top if r.shape.guessed_ops}
            located = [_located(t, runner, schema) for t in seen]
            for program, score in _edits(located, ranking.top(400), tried, schema, guessed):
                if budget <= 0:
                    return
                budget -= 1
                rank = len(seen) + 1
                refined_ranks.add(rank)
                tried.add(program)
                yield judge(rank, program, score, None)

        chosen = rule.select(trials())
        fallback = chosen is None
        if fallback:
            # Nothing passed: the best-ranked candidate that executed (an empty answer may be right).
            chosen = next((t for t in seen if t.execution is not None and t.execution.ok and t.rank <= len(top)),
                          seen[0])
        examined = tuple(Examined(t.rank, REFINED if t.rank in refined_ranks else NO_TEMPLATE, t.score, t.program,
                                  t.execution.canonical if t.execution else None, t.verdict.outcome, executed=True)
                         for t in seen)
        done = {c.rank for c in examined}
        examined += tuple(Examined(rank, NO_TEMPLATE, r.score, r.text, outcome=NOT_EXAMINED)
                          for rank, r in enumerate(top, start=1) if rank not in done)
        return Prediction(query.id, chosen.program, chosen.execution.canonical if chosen.execution else None,
                          template_id=template_of(chosen.program),
                          selected_rank=None if fallback else chosen.rank, fallback=fallback,
                          executions=len(seen), candidates=examined)


# ---- validation ---------------------------------------------------------------------------------

EMPTY_ANSWER = "empty"
TRACE_EMPTY = "trace-empty"


def _check(program: str, shape: CShape | None, execution, runner: ProgramRunner, schema) -> Verdict:
    """The built-in checks: a non-empty entity answer, and no empty step where emptiness
    means a wrong program (see the module docstring). ``shape`` is given for the top
    candidate only: its empty answer is accepted when a filter the question stated emptied
    a set that had members ("none of them"); lower candidates must find something.

    Most answers prove their trace clean without a query: a non-empty set, a count above
    zero, an attribute value (``QueryAttr`` fails on an empty set) were computed from
    non-empty sets all the way (an operand of ``Or`` or the subtracted side of ``Diff``
    may be empty, and is allowed to be). Only a count of zero, a yes/no built on a count,
    and a "no" from ``VerifyRel`` need the step values."""
    answer = execution.answer
    if answer.kind == "entities":
        if answer.values:
            return Verdict.ok()
        # "Which employees ... taller than 205 cm?" may have no answer: a filter whose
        # comparator the question stated, emptying a set that had members, says "none".
        if shape is not None and not shape.guessed_ops and "FilterNum(" in program:
            first = _empty_step(program, execution, runner, schema, first=True)
            if first and _steps(program)[first - 1].startswith("FilterNum("):
                return Verdict.ok()
        return Verdict.fail(EMPTY_ANSWER)
    if answer.kind == "number":
        if not program.endswith("Count()") or answer.values[0] != "0":
            return Verdict.ok()
    elif answer.kind == "bool":
        if "Count()" not in program and not ("VerifyRel(" in program and answer.values[0] == "no"):
            return Verdict.ok()
    failed = _empty_step(program, execution, runner, schema)
    return Verdict.ok() if failed is None else Verdict.fail(f"{TRACE_EMPTY}@{failed}")


_ALLOWED_EMPTY_BEFORE = frozenset(("Count", "Or"))


def _empty_step(program: str, execution, runner: ProgramRunner, schema, first: bool = False) -> int | None:
    """The 1-based step whose entity set is empty where it must not be (``first``: the first
    empty set at all), else ``None``."""
    from parsers.trace_validators import _checked, _step_values
    try:
        checked = _checked(program, schema)
        values = _step_values(checked.program, execution, runner.executor)
    except (ProgramError, ExecutionError):
        return 0
    if values is None:
        return None
    steps = checked.program.steps
    consumers: dict[int, tuple[str, int]] = {}
    for st in checked.steps:
        for pos, value in enumerate(st.inputs):
            consumers[value.step] = (st.step.op, pos)
    for i, (step, value) in enumerate(zip(steps, values)):
        if value.kind != "entities" or value.values:
            continue
        op, pos = consumers.get(i, ("", 0))
        if not first and (op in _ALLOWED_EMPTY_BEFORE or (op == "Diff" and pos == 1) or step.op == "FilterNum"):
            continue
        return i + 1
    return None


# ---- refinement -------------------------------------------------------------------------------------

def _steps(program: str) -> list[str]:
    return program.split(";")


def _edits(seen: list[Trial], ranked: list[Ranked], tried: set[str], schema,
           guessed: set[str] = frozenset()) -> Iterator[tuple[str, float]]:
    """Edited programs of the best failed candidates, best first: first the enumerated
    candidates that differ from a failure in exactly the step that failed (its relation,
    direction, attribute, comparator or operator), then edits outside the enumerated
    space (a comparator flipped, a number rescaled, ``And`` made ``Or``, ``Diff`` operands
    swapped)."""
    failed = [t for t in seen if not t.verdict.passed and t.program]
    failed.sort(key=lambda t: -t.score)
    by_steps: dict[int, list[Ranked]] = {}
    for r in ranked[:400]:
        by_steps.setdefault(r.shape.steps, []).append(r)
    out: list[tuple[float, str]] = []
    emitted = set(tried)
    for t in failed[:3]:
        steps = _steps(t.program)
        where = _failed_step(t.verdict.outcome, len(steps))
        if where is None:
            continue                       # nothing says where it went wrong: no edit
        for r in by_steps.get(len(steps), ()):
            other = _steps(r.text)
            diff = [i for i, (a, b) in enumerate(zip(steps, other)) if a != b]
            if len(diff) == 1 and diff[0] == where and r.text not in emitted:
                emitted.add(r.text)
                out.append((r.score, r.text))
        if t.program in guessed:
            for program in _local_edits(steps, where):
                if program not in emitted:
                    emitted.add(program)
                    out.append((t.score - 2.0, program))
    out.sort(key=lambda x: -x[0])
    for score, program in out:
        yield program, score


def _located(t: Trial, runner: ProgramRunner, schema) -> Trial:
    """``t`` with an empty answer's verdict naming the first step that gave nothing (the
    trace is read only here, on the way to refinement)."""
    if t.verdict.outcome != EMPTY_ANSWER or t.execution is None or not t.execution.ok:
        return t
    step = _empty_step(t.program, t.execution, runner, schema, first=True)
    if not step:
        return t
    return Trial(t.rank, t.template_id, t.score, t.program, t.execution, Verdict.fail(f"{EMPTY_ANSWER}@{step}"))


def _failed_step(outcome: str, n: int) -> int | None:
    """0-based index of the step a verdict blames."""
    if "@" in outcome:
        try:
            return max(0, int(outcome.rsplit("@", 1)[1]) - 1)
        except ValueError:
            return None
    return None


_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=": "!="}


def _local_edits(steps: list[str], where: int) -> Iterator[str]:
    """The one edit outside the enumerated space: a comparator the question's words did not
    give, reversed, in the filter that emptied the set (or the one after it)."""
    for i in (where, where + 1):
        if i >= len(steps):
            continue
        op, _, rest = steps[i].partition("(")
        args = rest[:-1].split(",") if rest[:-1] else []
        if op == "FilterNum" and len(args) == 3:
            a, cmp_, value = args
            yield ";".join(steps[:i] + [f"FilterNum({a},{_FLIP.get(cmp_, cmp_)},{value})"] + steps[i + 1:])


# ---- training data -------------------------------------------------------------------------------

def compositional_training_pairs(seed: int = 42) -> list[tuple[str, str]]:
    """``(question, gold program)`` of the compositional split's train part, drawn from the
    SynKQA-Pro KB of ``seed`` (the same questions ``dataset build`` writes)."""
    from synkqa.benchmark import compositional
    from synkqa.benchmark.executors import get_executor
    native = get_executor("native", seed)
    return [(d.question, d.kopl) for d in compositional.draw(native, seed, parts=("train",))
            if d.part == "train"]


def _sample(n: int, limit: int | None, groups, seed: int) -> list[int]:
    from parsers.schema_ranker import _sample as sample
    return sample(n, limit, groups, seed)
