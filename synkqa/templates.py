"""The nine SynKQA-Pro templates (paper Table III), read from ``data/templates.json``.

Templates are data: parsers read the slot types and skeletons, the generator reads the
paraphrases and weights. A slot is ``(name, class)``; the skeleton and the paraphrases
refer to slots as ``{name}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from kopl2sparql.program import Program


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
        return getattr(self, paraphrase).format(**slots)

    @property
    def steps(self) -> int:
        return self.skeleton.count(";") + 1


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    """All templates, ordered by id."""
    raw = json.loads(resources.files("synkqa").joinpath("data/templates.json").read_text())
    return tuple(Template(id=t["id"], name=t["name"], reasoning=t["reasoning"], hops=t["hops"],
                          weight=t["weight"], slots=tuple(tuple(s) for s in t["slots"]),
                          skeleton=t["skeleton"], train=t["train"], test=t["test"])
                 for t in sorted(raw, key=lambda t: t["id"]))


def by_name(name: str) -> Template:
    for t in templates():
        if t.name == name:
            return t
    raise KeyError(name)
