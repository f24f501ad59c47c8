"""Execution-validated reranking (EV-TC, the paper's Fig. 1 loop).

For each question: take the ranker's top-k templates, fill each from the question,
execute them in rank order through an executor (SPARQL on the embedded Oxigraph store by
default), and let a selection rule pick among the candidates a validator accepts. The
paper's configuration is the option-set validator and the first-passing rule; when no
candidate passes, the rank-1 candidate is returned (the fallback).

Every prediction records the selected rank, the number of executions and each
candidate's outcome, so rank statistics and error types come from the same run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone

from kopl2sparql.errors import ModelError
from parsers.base import (Candidate, Executor, Prediction, ProgramRunner, Query, as_runner,
                          queries_from)
from parsers.template import TemplateClassifier, _check_questions, _not_fitted, instantiate
from parsers.validators import (EXECUTION_ERROR, NOT_EXAMINED, UNFILLABLE, SelectionRule, Trial,
                                Validator, Verdict, get_selection, get_validator)


_UNFILLABLE = Verdict.fail(UNFILLABLE)


class ExecutionValidatedParser(BaseEstimator):
    """EV-TC: a ranker's top-k templates, executed and validated in rank order.

    :param ranker: an estimator with ``fit(questions, template_ids)`` and
        ``rank(questions, k) -> (template_ids, scores)``; default :class:`TemplateClassifier`.
    :param k: candidates per question (paper: 5; its ablation uses 1, 2, 3, 5).
    :param validator: a :class:`~parsers.validators.Validator` or its name (default the
        paper's option-set rule, ``"options"``).
    :param selection: a :class:`~parsers.validators.SelectionRule` or its name (default
        ``"first"``).

    Learned: ``ranker_``. :meth:`from_fitted` wraps an already trained ranker (how the
    study reuses each TC seed for EV-TC without training twice).
    """

    predicts_program = True

    def __init__(self, ranker=None, k: int = 5, validator: str | Validator = "options",
                 selection: str | SelectionRule = "first"):
        self.ranker = ranker
        self.k = k
        self.validator = validator
        self.selection = selection

    @classmethod
    def from_fitted(cls, ranker, **params) -> "ExecutionValidatedParser":
        """EV-TC over a ranker that is already fitted (it is used as is, not cloned)."""
        parser = cls(ranker=ranker, **params)
        parser.ranker_ = ranker
        return parser

    @property
    def needs_choices(self) -> bool:
        return get_validator(self.validator).needs_choices

    def fit(self, questions, template_ids) -> "ExecutionValidatedParser":
        """Fit a clone of the ranker. Returns ``self``."""
        base = self.ranker if self.ranker is not None else TemplateClassifier()
        self.ranker_ = clone(base).fit(questions, template_ids)
        return self

    def rank(self, questions, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ranker's top-k template ids and scores."""
        _not_fitted(self, "ranker_")
        return self.ranker_.rank(_check_questions(questions), self._k(k))

    def _k(self, k: int | None) -> int:
        k = self.k if k is None else k
        if int(k) < 1:
            raise ModelError(f"k must be at least 1, got {k}")
        return int(k)

    def answer(self, queries: Sequence[Query | dict | str], executor: Executor | ProgramRunner,
               ranking: tuple[np.ndarray, np.ndarray] | None = None, k: int | None = None) -> list[Prediction]:
        """Select one candidate program per query.

        :param ranking: precomputed ``rank(questions, >= k)`` output, so one ranking serves
            several values of k (only its first k columns are used).
        :raises ModelError: when the validator needs options and a query has none.
        """
        queries = queries_from(queries)
        k = self._k(k)
        validator, rule = get_validator(self.validator), get_selection(self.selection)
        if validator.needs_choices:
            for query in queries:
                if query.choices is None:
                    raise ModelError(f"EV-TC validates candidates against the options, but question "
                                     f"{query.id or query.question!r} has no 'choices'; give choices "
                                     "or use a system that runs open-ended (e.g. tc)")
        if ranking is None:
            ranking = self.rank([q.question for q in queries], k)
        ids, scores = ranking
        if len(ids) != len(queries):
            raise ModelError(f"ranking has {len(ids)} rows for {len(queries)} queries")
        runner = as_runner(executor)
        return [self.decide(q, ids[i, :k], scores[i, :k], runner, validator, rule)
                for i, q in enumerate(queries)]

    def decide(self, query: Query, template_ids, scores, runner: ProgramRunner,
               validator: Validator | None = None, rule: SelectionRule | None = None) -> Prediction:
        """Run the selection loop for one query over its ranked candidates."""
        validator = validator or get_validator(self.validator)
        rule = rule or get_selection(self.selection)
        # Plain Python numbers: iterating numpy scalars costs more than the rest of the loop.
        template_ids = [int(t) for t in template_ids]
        scores = [float(s) for s in scores]
        seen: list[Trial] = []

        def trials() -> Iterator[Trial]:
            for rank, (tid, score) in enumerate(zip(template_ids, scores), start=1):
                program = instantiate(tid, query.question)
                if program is None:
                    trial = Trial(rank, tid, score, None, None, _UNFILLABLE)
                else:
                    execution = runner.run(program)
                    verdict = (validator.check(query, program, execution, runner) if execution.ok
                               else Verdict.fail(EXECUTION_ERROR))
                    trial = Trial(rank, tid, score, program, execution, verdict)
                seen.append(trial)
                yield trial

        chosen = rule.select(trials())
        fallback = chosen is None
        if fallback:
            # The paper's fallback: the rank-1 candidate, whatever its verdict.
            chosen = seen[0] if seen else next(trials())
        candidates = tuple(
            Candidate(t.rank, t.template_id, t.score, t.program,
                      t.execution.canonical if t.execution else None, t.verdict.outcome,
                      executed=t.execution is not None)
            for t in seen)
        examined = {c.rank for c in candidates}
        candidates += tuple(Candidate(rank, tid, score, None, outcome=NOT_EXAMINED)
                            for rank, (tid, score) in enumerate(zip(template_ids, scores), start=1)
                            if rank not in examined)
        return Prediction(
            query.id, chosen.program,
            chosen.execution.canonical if chosen.execution else None,
            template_id=chosen.template_id,
            selected_rank=None if fallback else chosen.rank,
            fallback=fallback,
            executions=sum(1 for t in seen if t.execution is not None),
            candidates=candidates)
