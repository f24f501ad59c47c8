"""Program model: immutable steps evaluated left to right on a stack.

A KoPL program is a post-order sequence of function calls; branches start with ``Find``
and are joined by binary operators (``And``, ``Compare``, ...). The same flat
representation carries KQA Pro's 27 functions: the operators themselves (signature, typing
rule, native semantics, SPARQL lowering) are in :mod:`kopl2sparql.operators`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class ArgKind(str, Enum):
    """What a textual argument of a step names."""

    ENTITY = "entity"          # an entity's name (Person_00371) or label ("Ada Lovelace")
    RELATION = "relation"      # object property local name, e.g. born_in
    ATTRIBUTE = "attribute"    # datatype property local name, e.g. population
    COMPARATOR = "comparator"  # one of COMPARATORS
    NUMBER = "number"          # decimal literal, e.g. 1990 or 12.5


class ValueType(str, Enum):
    """What a step leaves on the stack."""

    ENTITIES = "entities"  # a set of entities
    NAMES = "names"        # QueryName's rendering of a set (final answers)
    NUMBER = "number"
    STRING = "string"      # a non-numeric attribute value (text, date, year), as written in the KB
    BOOL = "bool"


COMPARATORS = (">", "<", ">=", "<=", "=", "!=")


@dataclass(frozen=True)
class Step:
    """One function call. ``span`` locates it in the source text and is not compared."""

    op: str
    args: tuple[str, ...] = ()
    span: tuple[int, int] | None = field(default=None, compare=False, repr=False)
    arg_spans: tuple[tuple[int, int], ...] | None = field(default=None, compare=False, repr=False)

    def text(self) -> str:
        """Canonical text of the step: ``Relate(born_in)``, no spaces."""
        return f"{self.op}({','.join(self.args)})"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Program:
    """An ordered tuple of steps. ``source`` is the text it was parsed from, if any."""

    steps: tuple[Step, ...]
    source: str | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, *steps: Step | tuple) -> "Program":
        """Build from steps or ``(op, arg, ...)`` tuples: ``Program.of(("Find", "X"), ("Count",))``."""
        built = [s if isinstance(s, Step) else Step(s[0], tuple(str(a) for a in s[1:])) for s in steps]
        return cls(tuple(built))

    def canonical(self) -> str:
        """The serialisation program exact match compares: steps joined by ``;``, no spaces."""
        return ";".join(step.text() for step in self.steps)

    def prefix(self, n: int) -> "Program":
        """The first ``n`` steps (a prefix leaves possibly several values on the stack)."""
        return Program(self.steps[:n], self.source)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __str__(self) -> str:
        return self.canonical()
