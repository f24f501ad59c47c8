"""The shape every operator has: its signature and its three meanings.

An operator is one class holding, side by side, what the language needs of it:

- the **signature**: ``args`` (what its textual arguments name), ``pops`` (the values it
  takes from the stack, in push order) and ``pushes``;
- :meth:`Operator.check`, the **typing rule**: the value it pushes, given the types of what
  it pops (or a located type error);
- :meth:`Operator.run`, the **native semantics**: its value on the KB index, given the
  values it pops;
- :meth:`Operator.lower`, the **SPARQL lowering**: its fragment, given the fragments of
  what it pops.

The drivers (:mod:`kopl2sparql.typecheck`, :mod:`kopl2sparql.interpreter`,
:mod:`kopl2sparql.compiler`) pop the operands, check their kinds and call these methods
with themselves as the context, so adding an operator is one class here, its entry in
:data:`kopl2sparql.operators.OPERATORS`, and tests.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kopl2sparql.program import ArgKind, Step, ValueType

E, N, B, S = ValueType.ENTITIES, ValueType.NUMBER, ValueType.BOOL, ValueType.STRING
NAMES = ValueType.NAMES
ENTITY, RELATION, ATTRIBUTE = ArgKind.ENTITY, ArgKind.RELATION, ArgKind.ATTRIBUTE
COMPARATOR, NUMBER = ArgKind.COMPARATOR, ArgKind.NUMBER


class Operator:
    """One KoPL function. Subclasses set the signature and implement the three methods."""

    name: ClassVar[str]
    args: ClassVar[tuple[ArgKind, ...]] = ()
    pops: ClassVar[tuple[ValueType, ...]] = ()
    pushes: ClassVar[ValueType]
    doc: ClassVar[str] = ""

    @property
    def arity(self) -> int:
        return len(self.args)

    def check(self, checker, index: int, step: Step, inputs: tuple) -> Any:
        """The typing rule: the :class:`~kopl2sparql.types.Value` pushed, from ``inputs`` (the
        Values popped, in push order); ``checker.fail(...)`` for a type error."""
        raise NotImplementedError(f"no typing rule for {self.name}")

    def run(self, interpreter, step: Step, i: int, *operands) -> Any:
        """The native semantics: the value pushed, from the values popped (push order)."""
        raise NotImplementedError(f"no native semantics for {self.name}")

    def lower(self, compiler, step: Step, i: int, *operands) -> Any:
        """The SPARQL lowering: the fragment pushed, from the fragments popped (push order)."""
        raise NotImplementedError(f"no SPARQL lowering for {self.name}")

    def __repr__(self) -> str:
        return f"<operator {self.name}({', '.join(a.value for a in self.args)})>"
