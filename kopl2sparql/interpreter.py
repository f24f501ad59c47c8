"""The native engine: KoPL programs evaluated on a :class:`~kopl2sparql.kbindex.KBIndex`.

Semantics (DESIGN.md, shared with the SPARQL compiler and checked against it):

- entity sets are sets of distinct entities; ``Count`` counts them;
- ``Find(x)`` is the entity named ``x``, else every entity labelled ``x``;
- ``QueryName`` renders a set as labels (names where there is none) in entity-name order,
  joined by ``|``;
- ``QueryAttr`` needs a set of exactly one entity that has exactly one value of the
  attribute, anything else is an :class:`ExecutionError` naming the step;
- ``Argmax``/``Argmin`` skip members without the attribute, break ties towards the smallest
  entity name, and map the empty set to the empty set; a member with several values
  competes with its largest (Argmax) or smallest (Argmin);
- ``FilterNum`` keeps a member when one of its values satisfies the comparison;
- ``VerifyRel(r, e)`` is ``yes`` when some member has an ``r`` edge to ``e``;
- numbers compare exactly (``int`` and ``Decimal``, never floats);
- ``Find`` (and ``VerifyRel``'s entity) of an entity the KB does not have is an
  :class:`ExecutionError`.

Entity names are the local names of their IRIs; the SPARQL compiler orders by IRI, which
is the same order within one namespace (the SynKQA-Pro ids are zero-padded, so name order
is id order).
"""

from __future__ import annotations

from typing import Any

from kopl2sparql.answer import Answer
from kopl2sparql.errors import ExecutionError, ProgramTypeError
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step
from kopl2sparql.runtime import COMPARE, Names, TraceStep, parse_number, to_answer  # noqa: F401
from kopl2sparql.typecheck import ensure_checked
from ontology import Schema

class Interpreter:
    """Evaluates programs (or program prefixes: their top-of-stack value) on one KB index.
    Stateless between calls; safe to share.

    Every program goes through the type checker first (cached per program shape), so
    names, arities and operand kinds are the checker's to validate, with its positions and
    suggestions; evaluation itself only meets what the KB decides (unknown entities, a
    QueryAttr without exactly one value).

    >>> from kopl2sparql.kbindex import KBIndex
    >>> empty = Schema.from_rdf([])
    >>> Interpreter(KBIndex.from_triples([], empty), empty).run(Program.of(("Find", "Person_00001")))
    Traceback (most recent call last):
    ...
    kopl2sparql.errors.ExecutionError: execution error at step 1: unknown entity 'Person_00001'
    """

    def __init__(self, index: KBIndex, schema: Schema):
        self.index = index
        self.schema = schema
        self._types = index.types
        self.forward = index.forward                 # relation -> subject -> objects
        self.inverse = index.inverse                 # relation -> object -> subjects
        self._values = index.values
        self._resolve = schema.resolve
        self.labels = schema.entity_labels           # what QueryName prints, where not the name

    # ---- public API --------------------------------------------------------------------

    def run(self, program: Program) -> Answer:
        """The value left on top of the stack, as an :class:`Answer`.

        :raises ProgramError: for a program the type checker refuses.
        :raises ExecutionError: unknown entity, or QueryAttr on anything but one entity
            having exactly one value of the attribute.
        """
        self._check(program)
        return to_answer(self._evaluate(program.steps, None)[-1])

    def trace(self, program: Program) -> list[TraceStep]:
        """Every step's value. On an error the steps done so far are on ``error.trace``."""
        self._check(program)
        steps: list[TraceStep] = []
        try:
            self._evaluate(program.steps, steps)
        except ExecutionError as exc:
            exc.trace = steps
            raise
        return steps

    def value(self, program: Program) -> Any:
        """The raw top-of-stack value (frozenset of names, Names, int/Decimal, bool)."""
        self._check(program)
        return self._evaluate(program.steps, None)[-1]

    def _check(self, program: Program) -> None:
        if not program.steps:
            raise ProgramTypeError("empty program", source=program.source)
        ensure_checked(program, self.schema, allow_prefix=True)

    # ---- evaluation (of checked programs) -------------------------------------------------

    def _evaluate(self, steps: tuple[Step, ...], record: list[TraceStep] | None) -> list:
        stack: list = []
        operators = OPERATORS
        for i, step in enumerate(steps, 1):
            op = operators[step.op]
            need = len(op.pops)
            if need:
                operands = stack[-need:]
                del stack[-need:]
                stack.append(op.run(self, step, i, *operands))
            else:
                stack.append(op.run(self, step, i))
            if record is not None:
                record.append(TraceStep(i, step.text(), to_answer(stack[-1])))
        return stack

    # ---- what the operators' native semantics use -----------------------------------------

    def entities(self, text: str, i: int) -> frozenset:
        """The entities ``text`` names (a name, else a label); unknown is an error."""
        types = self._types
        if text in types:
            return frozenset((text,))
        names = self._resolve(text)
        if not names or any(n not in types for n in names):
            raise ExecutionError(f"unknown entity '{text}'", step=i)
        return frozenset(names)

    def relation(self, step: Step, i: int, table: dict) -> dict:
        return table[step.args[0]]

    def attribute(self, step: Step, i: int) -> tuple[str, dict]:
        attr = step.args[0]
        return attr, self._values[attr]

    @staticmethod
    def comparator(symbol: str, step: Step, i: int):
        return COMPARE[symbol]


__all__ = ["Interpreter", "TraceStep", "to_answer", "parse_number", "COMPARE", "Names"]
