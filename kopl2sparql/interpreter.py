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
from kopl2sparql.errors import ExecutionError, ProgramTypeError, unknown_name_message
from kopl2sparql.kbindex import KBIndex
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import COMPARATORS, Program, Step
from kopl2sparql.runtime import (COMPARE, KIND, VALUE_WORDS, Names, TraceStep, parse_number,  # noqa: F401
                                 to_answer)
from ontology import Schema

class Interpreter:
    """Evaluates programs on one KB index. Stateless between calls; safe to share.

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
        # Labels and altLabels, for "did you mean" (the index itself only knows names).
        self._words = {table: {w: name for name, info in getattr(schema, table).items()
                               for w in (info.label, *info.alt_labels)}
                       for table in ("relations", "attributes")}

    # ---- public API --------------------------------------------------------------------

    def run(self, program: Program) -> Answer:
        """The value left on top of the stack, as an :class:`Answer`.

        :raises ExecutionError: unknown entity, or QueryAttr on anything but one entity
            having the attribute.
        :raises ProgramTypeError: for a program that breaks the stack discipline or names
            an unknown relation/attribute (normally caught earlier by the type checker).
        """
        stack = self._evaluate(program, None)
        return to_answer(stack[-1])

    def trace(self, program: Program) -> list[TraceStep]:
        """Every step's value. On an error the steps done so far are on ``error.trace``."""
        steps: list[TraceStep] = []
        try:
            self._evaluate(program, steps)
        except ExecutionError as exc:
            exc.trace = steps
            raise
        return steps

    def value(self, program: Program) -> Any:
        """The raw top-of-stack value (frozenset of names, Names, int/Decimal, bool)."""
        return self._evaluate(program, None)[-1]

    # ---- evaluation --------------------------------------------------------------------

    def _evaluate(self, program: Program, record: list[TraceStep] | None) -> list:
        steps = program.steps
        if not steps:
            raise ProgramTypeError("empty program", source=program.source)
        stack: list = []
        operators = OPERATORS
        kind_of = KIND
        for i, step in enumerate(steps, 1):
            op = operators.get(step.op)
            if op is None:
                raise ProgramTypeError(
                    unknown_name_message("function", step.op, OPERATORS), source=program.source,
                    span=step.span, step=i)
            if len(step.args) != len(op.args):
                raise ProgramTypeError(
                    f"{step.op} takes {len(op.args)} argument(s), got {len(step.args)}",
                    source=program.source, span=step.span, step=i)
            pops = op.pops
            if pops:
                need = len(pops)
                if len(stack) < need:
                    self._underflow(step, i, pops, stack)
                operands = stack[-need:]
                del stack[-need:]
                for want, value in zip(pops, operands):
                    if kind_of.get(type(value)) is not want:
                        self._wrong_kind(step, i, pops, operands)
                stack.append(op.run(self, step, i, *operands))
            else:
                stack.append(op.run(self, step, i))
            if record is not None:
                record.append(TraceStep(i, step.text(), to_answer(stack[-1])))
        return stack

    @staticmethod
    def _wrong_kind(step: Step, i: int, pops: tuple, values: list):
        # The topmost operand is checked first (for programs that skipped the type checker).
        for want, value in reversed(list(zip(pops, values))):
            got = KIND.get(type(value))
            if got is not want:
                raise ProgramTypeError(f"{step.op} needs {VALUE_WORDS[want]}, got "
                                       f"{VALUE_WORDS.get(got, 'something else')}", span=step.span, step=i)

    @classmethod
    def _underflow(cls, step: Step, i: int, pops: tuple, stack: list):
        present = len(stack)
        if present:
            cls._wrong_kind(step, i, pops[-present:], stack)
        want = pops[len(pops) - present - 1]
        raise ProgramTypeError(f"{step.op} needs {VALUE_WORDS[want]} but the stack is empty",
                               span=step.span, step=i)

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
        rel = step.args[0]
        adjacency = table.get(rel)
        if adjacency is None:
            raise ProgramTypeError(unknown_name_message("relation", rel, table, self._words["relations"]),
                                   span=step.span, step=i)
        return adjacency

    def attribute(self, step: Step, i: int) -> tuple[str, dict]:
        attr = step.args[0]
        values = self._values.get(attr)
        if values is None:
            raise ProgramTypeError(unknown_name_message("attribute", attr, self._values, self._words["attributes"]),
                                   span=step.span, step=i)
        return attr, values

    @staticmethod
    def comparator(symbol: str, step: Step, i: int):
        fn = COMPARE.get(symbol)
        if fn is None:
            raise ProgramTypeError(f"unknown comparator '{symbol}'; use one of {' '.join(COMPARATORS)}",
                                   span=step.span, step=i)
        return fn


__all__ = ["Interpreter", "TraceStep", "to_answer", "parse_number", "COMPARE", "Names"]
