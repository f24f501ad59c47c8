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

import operator
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kopl2sparql.answer import Answer
from kopl2sparql.errors import ExecutionError, ProgramTypeError, unknown_name_message
from kopl2sparql.kbindex import EMPTY, KBIndex, Multi
from kopl2sparql.program import COMPARATORS, OPERATORS, Program, Step, ValueType
from ontology import Schema

COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
           "=": operator.eq, "!=": operator.ne}
"""Comparator symbol -> function; the keys are exactly ``program.COMPARATORS``."""
assert set(COMPARE) == set(COMPARATORS)

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")


def parse_number(text: str, step: int | None = None) -> Decimal:
    """A number argument (``1990``, ``-2.5``) as an exact Decimal; exponents are refused.

    :raises ProgramTypeError: if ``text`` is not a plain decimal literal.
    """
    if not _NUMBER.match(text):
        raise ProgramTypeError(f"not a number: {text!r}", step=step)
    return Decimal(text)


class Names(tuple):
    """QueryName's value: entity labels in name order (a distinct type so traces can tell it apart)."""


@dataclass(frozen=True)
class TraceStep:
    """The value on top of the stack after one step (1-based ``index``)."""

    index: int
    step: str
    value: Answer

    def to_dict(self) -> dict[str, Any]:
        """JSON shape used by ``synkqa execute --trace``."""
        return {"step": self.index, "function": self.step, "kind": self.value.kind,
                "value": self.value.canonical()}


def _answer_direct(kind: str, values: tuple, _new=object.__new__, _cls=Answer) -> Answer:
    answer = _new(_cls)
    answer.__dict__.update(kind=kind, values=values)
    return answer


# A frozen dataclass's __init__ sets each field through object.__setattr__, a third of the
# time of rendering a one-name answer. Answer has no __post_init__ and no __slots__, so
# filling its __dict__ builds the same object (the guard keeps this honest if Answer changes).
_answer = (Answer if hasattr(Answer, "__slots__") or hasattr(Answer, "__post_init__")
           else _answer_direct)
_YES, _NO = Answer.boolean(True), Answer.boolean(False)


def to_answer(value: Any) -> Answer:
    """Render an interpreter value (entity set, names, number, bool) as an :class:`Answer`."""
    kind = type(value)
    if kind is bool:
        return _YES if value else _NO
    if kind is frozenset or kind is set:
        return _answer("entities", tuple(sorted(value)) if len(value) > 1 else tuple(value))
    if kind is Names:
        return _answer("entities", tuple(value))
    if kind is int:
        return _answer("number", (str(value),))    # already canonical; format_number costs µs
    if kind is str:
        return _answer("string", (value,))
    if isinstance(value, (frozenset, set)):
        return _answer("entities", tuple(sorted(value)))
    if isinstance(value, Names):
        return _answer("entities", tuple(value))
    return Answer.number(value)


VALUE_WORDS = {ValueType.ENTITIES: "an entity set", ValueType.NAMES: "entity names (QueryName's output)",
               ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
               ValueType.STRING: "a text value"}
_ARITY = {name: len(op.args) for name, op in OPERATORS.items()}
_KIND = {frozenset: ValueType.ENTITIES, Names: ValueType.NAMES, bool: ValueType.BOOL,
         int: ValueType.NUMBER, Decimal: ValueType.NUMBER, str: ValueType.STRING}


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
        self._forward = index.forward
        self._inverse = index.inverse
        self._values = index.values
        self._resolve = schema.resolve
        self._labels = schema.entity_labels
        # Labels and altLabels, for "did you mean" (the index itself only knows names).
        sch = schema
        self._words = {table: {w: name for name, info in getattr(sch, table).items()
                               for w in (info.label, *info.alt_labels)}
                       for table in ("relations", "attributes")}
        self._handlers = {
            "Find": self._find, "Relate": self._relate, "RelateInv": self._relate_inv,
            "QueryName": self._query_name, "QueryAttr": self._query_attr, "Count": self._count,
            "Compare": self._compare, "Argmax": self._argmax, "Argmin": self._argmin,
            "And": self._and, "Or": self._or, "Diff": self._diff, "VerifyRel": self._verify_rel,
            "FilterNum": self._filter_num, "VerifyNum": self._verify_num,
        }

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
        handlers = self._handlers
        arity = _ARITY
        for i, step in enumerate(steps, 1):
            handler = handlers.get(step.op)
            if handler is None:
                raise ProgramTypeError(
                    unknown_name_message("function", step.op, OPERATORS), source=program.source,
                    span=step.span, step=i)
            if len(step.args) != arity[step.op]:
                raise ProgramTypeError(
                    f"{step.op} takes {len(OPERATORS[step.op].args)} argument(s), got {len(step.args)}",
                    source=program.source, span=step.span, step=i)
            handler(step, stack, i)
            if record is not None:
                record.append(TraceStep(i, step.text(), to_answer(stack[-1])))
        return stack

    def _pop(self, stack: list, want: ValueType, step: Step, i: int):
        if not stack:
            raise ProgramTypeError(f"{step.op} needs {VALUE_WORDS[want]} but the stack is empty",
                                   span=step.span, step=i)
        value = stack.pop()
        got = _KIND.get(type(value))
        if got is not want:
            raise ProgramTypeError(f"{step.op} needs {VALUE_WORDS[want]}, got {VALUE_WORDS.get(got, 'something else')}",
                                   span=step.span, step=i)
        return value

    def _entities(self, text: str, i: int) -> frozenset:
        """The entities ``text`` names (a name, else a label); unknown is an error."""
        types = self._types
        if text in types:
            return frozenset((text,))
        names = self._resolve(text)
        if not names or any(n not in types for n in names):
            raise ExecutionError(f"unknown entity '{text}'", step=i)
        return frozenset(names)

    def _relation(self, step: Step, i: int, table: dict) -> dict:
        rel = step.args[0]
        adjacency = table.get(rel)
        if adjacency is None:
            raise ProgramTypeError(unknown_name_message("relation", rel, table, self._words["relations"]),
                                   span=step.span, step=i)
        return adjacency

    def _attribute(self, step: Step, i: int) -> tuple[str, dict]:
        attr = step.args[0]
        values = self._values.get(attr)
        if values is None:
            raise ProgramTypeError(unknown_name_message("attribute", attr, self._values, self._words["attributes"]),
                                   span=step.span, step=i)
        return attr, values

    @staticmethod
    def _comparator(symbol: str, step: Step, i: int):
        fn = COMPARE.get(symbol)
        if fn is None:
            raise ProgramTypeError(f"unknown comparator '{symbol}'; use one of {' '.join(COMPARATORS)}",
                                   span=step.span, step=i)
        return fn

    # ---- operators ---------------------------------------------------------------------

    def _find(self, step, stack, i):
        stack.append(self._entities(step.args[0], i))

    def _relate(self, step, stack, i):
        adjacency = self._relation(step, i, self._forward)
        stack.append(_neighbours(adjacency, self._pop(stack, ValueType.ENTITIES, step, i)))

    def _relate_inv(self, step, stack, i):
        adjacency = self._relation(step, i, self._inverse)
        stack.append(_neighbours(adjacency, self._pop(stack, ValueType.ENTITIES, step, i)))

    def _query_name(self, step, stack, i):
        labels = self._labels
        members = sorted(self._pop(stack, ValueType.ENTITIES, step, i))
        stack.append(Names([labels.get(m, m) for m in members] if labels else members))

    def _query_attr(self, step, stack, i):
        attr, values = self._attribute(step, i)
        members = self._pop(stack, ValueType.ENTITIES, step, i)
        if len(members) != 1:
            got = "none" if not members else str(len(members))
            raise ExecutionError(f"QueryAttr({attr}) needs exactly one entity, got {got}", step=i)
        (entity,) = members
        value = values.get(entity)
        if value is None:
            raise ExecutionError(f"{entity} has no {attr}", step=i)
        if type(value) is Multi:
            raise ExecutionError(f"{entity} has {len(value)} values of {attr}", step=i)
        stack.append(value)

    def _count(self, step, stack, i):
        stack.append(len(self._pop(stack, ValueType.ENTITIES, step, i)))

    def _compare(self, step, stack, i):
        fn = self._comparator(step.args[0], step, i)
        right = self._pop(stack, ValueType.NUMBER, step, i)
        left = self._pop(stack, ValueType.NUMBER, step, i)
        stack.append(fn(left, right))

    def _argmax(self, step, stack, i):
        stack.append(self._extreme(step, stack, i, largest=True))

    def _argmin(self, step, stack, i):
        stack.append(self._extreme(step, stack, i, largest=False))

    def _extreme(self, step, stack, i, largest: bool) -> frozenset:
        _, values = self._attribute(step, i)
        members = self._pop(stack, ValueType.ENTITIES, step, i)
        best = best_value = None
        for entity in members:
            value = values.get(entity)
            if value is None:
                continue
            if type(value) is Multi:
                value = value[-1] if largest else value[0]
            if (best is None or (value > best_value if largest else value < best_value)
                    or (value == best_value and entity < best)):
                best, best_value = entity, value
        return EMPTY if best is None else frozenset((best,))

    def _and(self, step, stack, i):
        right = self._pop(stack, ValueType.ENTITIES, step, i)
        left = self._pop(stack, ValueType.ENTITIES, step, i)
        stack.append(left & right)

    def _or(self, step, stack, i):
        right = self._pop(stack, ValueType.ENTITIES, step, i)
        left = self._pop(stack, ValueType.ENTITIES, step, i)
        stack.append(left | right)

    def _diff(self, step, stack, i):
        right = self._pop(stack, ValueType.ENTITIES, step, i)
        left = self._pop(stack, ValueType.ENTITIES, step, i)
        stack.append(left - right)

    def _verify_rel(self, step, stack, i):
        adjacency = self._relation(step, i, self._forward)
        targets = self._entities(step.args[1], i)
        members = self._pop(stack, ValueType.ENTITIES, step, i)
        stack.append(any(not targets.isdisjoint(adjacency.get(e, EMPTY)) for e in members))

    def _filter_num(self, step, stack, i):
        _, values = self._attribute(step, i)
        fn = self._comparator(step.args[1], step, i)
        bound = parse_number(step.args[2], i)
        members = self._pop(stack, ValueType.ENTITIES, step, i)
        kept = []
        for entity in members:
            value = values.get(entity)
            if value is None:
                continue
            if type(value) is Multi:
                if any(fn(v, bound) for v in value):
                    kept.append(entity)
            elif fn(value, bound):
                kept.append(entity)
        stack.append(frozenset(kept))

    def _verify_num(self, step, stack, i):
        fn = self._comparator(step.args[0], step, i)
        bound = parse_number(step.args[1], i)
        stack.append(fn(self._pop(stack, ValueType.NUMBER, step, i), bound))


def _neighbours(adjacency: dict[str, frozenset[str]], members: frozenset[str]) -> frozenset[str]:
    if len(members) == 1:
        for only in members:
            return adjacency.get(only, EMPTY)
    return EMPTY.union(*(adjacency.get(e, EMPTY) for e in members))


__all__ = ["Interpreter", "TraceStep", "to_answer", "parse_number", "COMPARE", "Names"]
