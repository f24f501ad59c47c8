"""Metrics and error analysis over gold records and predictions.

Answer accuracy compares canonical answer strings; program exact match compares
canonical program strings (the paper: "exact string equality between the predicted
program serialization and the gold serialization"). Percentages are rounded to two
decimals only when tables are written; here they are plain floats in [0, 100].

Error types (one per question, first matching rule wins):

``Correct``                    right answer, and the gold program (or no program predicted)
``CorrectAnswerWrongProgram``  right answer from a different program (the paper's 19)
``WrongAnswer``                a system without programs picked a wrong option
``SlotFillError``              gold template, but its slots could not be filled or were filled differently
``ExecutionFailure``           the gold program was selected yet its answer differs (an engine fault; expected 0)
``SpuriousPass``               a wrong template passed validation with a wrong answer (the paper's 115)
``NoCandidatePassed``          no candidate passed validation; the rank-1 fallback was wrong
``WrongTemplate``              a wrong template was predicted (unvalidated systems)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from parsers.base import Prediction

ERROR_TYPES = ("Correct", "CorrectAnswerWrongProgram", "WrongAnswer", "SlotFillError",
               "ExecutionFailure", "SpuriousPass", "NoCandidatePassed", "WrongTemplate")

Record = Mapping[str, Any]


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def _check(records: Sequence[Record], predictions: Sequence[Prediction]) -> None:
    if len(records) != len(predictions):
        raise ValueError(f"{len(records)} records but {len(predictions)} predictions")


def normalise_program(text: str | None) -> str | None:
    """Canonical form for comparison: whitespace is not part of a program."""
    return None if text is None else "".join(text.split())


def answer_correct(record: Record, prediction: Prediction) -> bool:
    return prediction.answer is not None and prediction.answer == record["answer"]


def program_match(record: Record, prediction: Prediction) -> bool:
    return (prediction.program is not None
            and normalise_program(prediction.program) == normalise_program(record["kopl"]))


def _flags(records: Sequence[Record], predictions: Sequence[Prediction]) -> tuple[list[bool], list[bool]]:
    _check(records, predictions)
    return ([answer_correct(r, p) for r, p in zip(records, predictions)],
            [program_match(r, p) for r, p in zip(records, predictions)])


def _score(correct: Sequence[bool], exact: Sequence[bool]) -> dict[str, float | int]:
    n, c, e = len(correct), sum(correct), sum(exact)
    return {"n": n, "correct": c, "exact": e, "accuracy": _pct(c, n), "program_em": _pct(e, n)}


def score(records: Sequence[Record], predictions: Sequence[Prediction]) -> dict[str, float | int]:
    """``{"n", "correct", "exact", "accuracy", "program_em"}`` (percentages)."""
    return _score(*_flags(records, predictions))


def breakdown(records: Sequence[Record], predictions: Sequence[Prediction],
              key: str | Callable[[Record], Any],
              flags: tuple[list[bool], list[bool]] | None = None) -> dict[Any, dict[str, float | int]]:
    """:func:`score` per value of ``key`` (a record field such as ``hops``, ``reasoning``,
    ``template_id``, or a function of the record), keys sorted."""
    correct, exact = flags if flags is not None else _flags(records, predictions)
    get = key if callable(key) else (lambda r: r[key])
    groups: dict[Any, list[int]] = {}
    for i, record in enumerate(records):
        groups.setdefault(get(record), []).append(i)
    return {value: _score([correct[i] for i in idx], [exact[i] for i in idx])
            for value, idx in sorted(groups.items(), key=lambda kv: kv[0])}


def error_type(record: Record, prediction: Prediction) -> str:
    """The error type of one prediction (see the module docstring for the rules)."""
    validated = bool(prediction.candidates)
    if answer_correct(record, prediction):
        if prediction.program is None or program_match(record, prediction):
            return "Correct"
        return "CorrectAnswerWrongProgram"
    if prediction.program is None and prediction.template_id is None:
        return "WrongAnswer"
    if prediction.template_id == record["template_id"]:
        if program_match(record, prediction):
            return "ExecutionFailure"
        return "SlotFillError"
    if validated:
        return "NoCandidatePassed" if prediction.fallback else "SpuriousPass"
    return "WrongTemplate"


def error_counts(records: Sequence[Record], predictions: Sequence[Prediction]) -> dict[str, int]:
    """Count of every error type (all of :data:`ERROR_TYPES`, zeros included)."""
    _check(records, predictions)
    counts = Counter(error_type(r, p) for r, p in zip(records, predictions))
    return {name: counts.get(name, 0) for name in ERROR_TYPES}


def gold_ranks(records: Sequence[Record], ranked_ids: np.ndarray) -> list[int | None]:
    """1-based rank of each record's gold template in a full ranking (``None``: absent)."""
    ranked_ids = np.asarray(ranked_ids)
    gold = np.array([int(r["template_id"]) for r in records])
    hits = ranked_ids == gold[:, None]
    found = hits.any(axis=1)
    ranks = hits.argmax(axis=1) + 1
    return [int(r) if f else None for r, f in zip(ranks, found)]


def rank_histogram(ranks: Sequence[int | None], max_rank: int) -> dict[str, int]:
    """``{"1": n1, ..., str(max_rank): n, "none": n_absent_or_deeper}``."""
    counts = Counter(ranks)
    out = {str(r): counts.get(r, 0) for r in range(1, max_rank + 1)}
    out["none"] = sum(v for r, v in counts.items() if r is None or r > max_rank)
    return out


def topk_coverage(ranks: Sequence[int | None], ks: Sequence[int]) -> dict[int, float]:
    """Percentage of questions whose gold template is within the top k, for each k."""
    n = len(ranks)
    return {k: _pct(sum(1 for r in ranks if r is not None and r <= k), n) for k in ks}


def mean_rank(ranks: Sequence[int | None]) -> float | None:
    """Average gold rank over questions where the gold template is ranked at all."""
    present = [r for r in ranks if r is not None]
    return sum(present) / len(present) if present else None


def selected_ranks(predictions: Sequence[Prediction], k: int) -> dict[str, int]:
    """How often each rank was selected by EV-TC; ``fallback`` when nothing passed."""
    counts = Counter("fallback" if p.fallback else str(p.selected_rank) for p in predictions)
    out = {str(r): counts.get(str(r), 0) for r in range(1, k + 1)}
    out["fallback"] = counts.get("fallback", 0)
    return out


def mean_executions(predictions: Sequence[Prediction]) -> float:
    """Average number of programs executed per question."""
    return sum(p.executions for p in predictions) / len(predictions) if predictions else 0.0


def mean_examined(predictions: Sequence[Prediction]) -> float:
    """Average number of candidates EV-TC looked at per question, up to and including the
    selected one (unfillable candidates included, though they are never executed). This is
    the paper's "executed candidates" count: its 2.47 is exactly its mean selected rank."""
    if not predictions:
        return 0.0
    return sum(sum(1 for c in p.candidates if c.outcome != "not-examined") if p.candidates else 1
               for p in predictions) / len(predictions)


def outcome_counts(predictions: Sequence[Prediction]) -> dict[str, int]:
    """Validation outcomes over all candidates of all questions (EV-TC), sorted by name."""
    counts = Counter(c.outcome for p in predictions for c in p.candidates)
    return dict(sorted(counts.items()))


def confusions(records: Sequence[Record], predictions: Sequence[Prediction]) -> list[dict[str, Any]]:
    """Wrong-program predictions grouped by (gold template, predicted template, error type),
    most frequent first: which templates are mistaken for which, and how."""
    counts = Counter((int(r["template_id"]), p.template_id, error_type(r, p))
                     for r, p in zip(records, predictions) if not program_match(r, p))
    return [{"gold": g, "predicted": t, "error": e, "count": n}
            for (g, t, e), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], str(kv[0][1]), kv[0][2]))]


def evaluate(records: Sequence[Record], predictions: Sequence[Prediction]) -> dict[str, Any]:
    """Everything the tables need about one system's predictions, as plain data."""
    flags = _flags(records, predictions)
    result: dict[str, Any] = {
        "overall": _score(*flags),
        "by_hops": breakdown(records, predictions, "hops", flags),
        "by_reasoning": breakdown(records, predictions, "reasoning", flags),
        "by_template": breakdown(records, predictions, "template_id", flags),
        "errors": error_counts(records, predictions),
        "confusions": confusions(records, predictions),
        "mean_executions": mean_executions(predictions),
    }
    if any(p.candidates for p in predictions):
        k = max(len(p.candidates) for p in predictions)
        result["selected_ranks"] = selected_ranks(predictions, k)
        result["mean_examined"] = mean_examined(predictions)
        result["outcomes"] = outcome_counts(predictions)
    return result
