"""Program model: immutable steps evaluated left to right on a stack.

A KoPL program is a post-order sequence of function calls; branches start with ``Find``
and are joined by binary operators (``And``, ``Compare``, ...). The same flat
representation carries KQA Pro's 27 functions: adding one means adding an
:class:`Operator` to :data:`OPERATORS` plus its rule in the type checker, interpreter and
compiler, without touching the model.
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
class Operator:
    """Signature of one function: its arguments, what it pops and what it pushes.

    ``pops`` lists operands in push order: for ``Compare`` the first element is the value
    pushed first (the left-hand side).
    """

    name: str
    args: tuple[ArgKind, ...]
    pops: tuple[ValueType, ...]
    pushes: ValueType
    doc: str


def _op(name, args, pops, pushes, doc):
    return name, Operator(name, tuple(args), tuple(pops), pushes, doc)


E, N, B = ValueType.ENTITIES, ValueType.NUMBER, ValueType.BOOL
OPERATORS: dict[str, Operator] = dict([
    _op("Find", [ArgKind.ENTITY], [], E, "the singleton set {entity}"),
    _op("Relate", [ArgKind.RELATION], [E], E, "union of outgoing relation neighbours"),
    _op("RelateInv", [ArgKind.RELATION], [E], E, "union of incoming relation neighbours"),
    _op("QueryName", [], [E], ValueType.NAMES, "names of the set, sorted by entity id, joined with |"),
    _op("QueryAttr", [ArgKind.ATTRIBUTE], [E], N,
        "attribute value of a set of exactly one entity (a number, or a string for text attributes)"),
    _op("Count", [], [E], N, "number of distinct entities"),
    _op("Compare", [ArgKind.COMPARATOR], [N, N], B, "left <op> right, yes/no"),
    _op("Argmax", [ArgKind.ATTRIBUTE], [E], E, "member with the largest value (ties: smallest id)"),
    _op("Argmin", [ArgKind.ATTRIBUTE], [E], E, "member with the smallest value (ties: smallest id)"),
    _op("And", [], [E, E], E, "intersection"),
    _op("Or", [], [E, E], E, "union"),
    _op("Diff", [], [E, E], E, "members of the first set not in the second"),
    _op("VerifyRel", [ArgKind.RELATION, ArgKind.ENTITY], [E], B,
        "yes when some member has the relation to the entity"),
    _op("FilterNum", [ArgKind.ATTRIBUTE, ArgKind.COMPARATOR, ArgKind.NUMBER], [E], E,
        "members whose attribute value satisfies <op> value"),
    _op("VerifyNum", [ArgKind.COMPARATOR, ArgKind.NUMBER], [N], B, "number <op> value, yes/no"),
])
del E, N, B


@dataclass(frozen=True)
class Step:
    """One function call. ``span`` locates it in the source text and is not compared."""

    op: str
    args: tuple[str, ...] = ()
    span: tuple[int, int] | None = field(default=None, compare=False, repr=False)
    arg_spans: tuple[tuple[int, int], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def operator(self) -> Operator:
        return OPERATORS[self.op]

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
