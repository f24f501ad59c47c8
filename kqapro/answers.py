"""The canonical answer of a full-KoPL program, the form every engine's answer is compared in.

An answer is a kind and a sorted tuple of distinct texts: sets, not lists, because SPARQL's
``SELECT DISTINCT`` and the native interpreter both answer with sets (rule
``answers-are-sets`` in docs/FULL_KOPL.md; ``kopl`` lists one name per entity, duplicates
included).

========== ============================================ ===============================
kind       functions                                    items
========== ============================================ ===============================
names      What, SelectBetween, SelectAmong             entity names
count      Count                                        one decimal integer
values     QueryAttr, QueryAttrUnderCondition,          value texts (``206 centimetre``,
           QueryAttrQualifier, QueryRelationQualifier   ``2010``, ``1984-12-30``, ``male``)
relations  QueryRelation                                relation names
verdict    VerifyStr/Num/Year/Date                      ``yes``, ``no`` or ``not sure``
========== ============================================ ===============================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

KINDS = ("names", "count", "values", "relations", "verdict")
VERDICTS = ("yes", "no", "not sure")


@dataclass(frozen=True)
class Answer:
    kind: str
    items: tuple[str, ...]

    @classmethod
    def of(cls, kind: str, items: Iterable[str]) -> "Answer":
        if kind not in KINDS:
            raise ValueError(kind)
        return cls(kind, tuple(sorted(set(items))))

    @classmethod
    def count(cls, n: int) -> "Answer":
        return cls("count", (str(int(n)),))

    @classmethod
    def verdict(cls, word: str) -> "Answer":
        if word not in VERDICTS:
            raise ValueError(word)
        return cls("verdict", (word,))

    @property
    def text(self) -> str:
        """Items joined with ``|`` (an empty set is the empty string)."""
        return "|".join(self.items)

    def to_json(self) -> object:
        """A count as a number, a verdict as its word, every other kind as a list."""
        if self.kind == "count":
            return int(self.items[0])
        if self.kind == "verdict":
            return self.items[0]
        return list(self.items)

    def __str__(self) -> str:
        return self.text
