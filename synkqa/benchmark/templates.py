"""The nine SynKQA-Pro templates (paper Table III), read from ``data/templates.json``.

Templates are data: parsers read the slot types and skeletons, the generator reads the
paraphrases and weights. A slot is ``(name, class)``; the skeleton and the paraphrases
refer to slots as ``{name}``.

Every template has exactly two surface forms: ``train`` (used by the train split and half
of validation) and ``test`` (the test split and the other half of validation). The test
forms are written in a wordier register, after the paper's Fig. 2 sentence
("The city where Person_00371 was born is located in which country?"), so the test
split is longer on average, as in the paper's Table II.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from kopl2sparql.errors import DatasetError, unknown_name_message
from kopl2sparql.program import Program

PARAPHRASES = ("train", "test")
"""The two surface forms every template has."""


@dataclass(frozen=True)
class Template:
    id: int
    name: str
    reasoning: str
    hops: int
    weight: float
    slots: tuple[tuple[str, str], ...]   # (slot name, class local name), in skeleton order
    skeleton: str                        # canonical program text with {slot} holes
    train: str                           # train paraphrase with {slot} holes
    test: str                            # test paraphrase with {slot} holes

    def program_text(self, **slots: str) -> str:
        return self.skeleton.format(**slots)

    def program(self, **slots: str) -> Program:
        """The instantiated program, parsed (so spans and validation come with it)."""
        from kopl2sparql.syntax import parse
        return parse(self.program_text(**slots))

    def question(self, paraphrase: str, **slots: str) -> str:
        """Question text; ``paraphrase`` is ``"train"`` or ``"test"``."""
        return self.paraphrase(paraphrase).format(**slots)

    def paraphrase(self, kind: str) -> str:
        """The ``"train"`` or ``"test"`` surface form, with ``{slot}`` holes."""
        if kind not in PARAPHRASES:
            raise ValueError(f"paraphrase must be one of {PARAPHRASES}, not {kind!r}")
        return getattr(self, kind)

    @property
    def slot_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.slots)

    @property
    def steps(self) -> int:
        return self.skeleton.count(";") + 1


def _holes(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


def _validate(items: tuple[Template, ...]) -> None:
    """Reject a templates file the generator would silently mishandle."""
    ids = [t.id for t in items]
    if ids != list(range(len(items))):
        raise DatasetError(f"templates.json: ids must be 0..{len(items) - 1} without gaps, got {ids}")
    total = sum(t.weight for t in items)
    if abs(total - 1.0) > 1e-9:
        raise DatasetError(f"templates.json: weights sum to {total}, not 1")
    train_forms = {t.train for t in items}
    for t in items:
        names = set(t.slot_names)
        for field in ("skeleton", "train", "test"):
            text = getattr(t, field)
            if "TODO" in text:
                raise DatasetError(f"templates.json: template {t.name} has no {field} text yet")
            if _holes(text) != names:
                raise DatasetError(f"templates.json: template {t.name} {field} uses slots "
                                   f"{sorted(_holes(text))}, but its slots are {sorted(names)}")
        # The paraphrase shift is the point of the splits: a test form that is also a
        # train form (of any template) would leak test questions into training.
        if t.test in train_forms:
            raise DatasetError(f"templates.json: test paraphrase of {t.name} is also a train paraphrase")


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    """All templates, ordered by id.

    :raises DatasetError: if ``data/templates.json`` is inconsistent (slot holes that do not
        match the slots, weights not summing to 1, a test form equal to a train form).
    """
    raw = json.loads(resources.files("synkqa.benchmark").joinpath("data/templates.json").read_text())
    items = tuple(Template(id=t["id"], name=t["name"], reasoning=t["reasoning"], hops=t["hops"],
                           weight=t["weight"], slots=tuple(tuple(s) for s in t["slots"]),
                           skeleton=t["skeleton"], train=t["train"], test=t["test"])
                  for t in sorted(raw, key=lambda t: t["id"]))
    _validate(items)
    return items


def by_name(name: str) -> Template:
    """The template called ``name`` (e.g. ``BirthCountry``).

    :raises KeyError: for an unknown name, with a suggestion.
    """
    for t in templates():
        if t.name == name:
            return t
    raise KeyError(unknown_name_message("template", name, [t.name for t in templates()]))
