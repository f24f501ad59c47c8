"""Static checking of KoPL programs: everything that can be known before anything runs.

:func:`check` simulates the stack step by step and records, for every step, the values it
pops and the value it pushes: the value type (:class:`~kopl2sparql.program.ValueType`),
for entity sets the classes they can contain and a cardinality bound
(:class:`Cardinality`). It rejects, with the step number and the culprit underlined:

- unknown functions, wrong arity, malformed names/comparators/numbers (for programs built
  in Python rather than parsed; the parser already refuses these in text);
- stack underflow, operands of the wrong type, values left over at the end;
- relation and attribute names the KB's schema does not know, with a suggestion taken from
  names, labels and altLabels ("unknown relation 'birthplace'; did you mean born_in?");
- domain/range violations that make a result always empty or always undefined:
  ``Relate(located_in)`` on people, ``QueryAttr(population)`` on a country, ``And`` of
  people and cities, ``VerifyRel(born_in, Org_001)``; numeric operators on text attributes.

Everything comes from the :class:`~ontology.Schema` passed in: an entity's classes are its
``rdf:type`` s (an entity the schema does not know, or an untyped one, may be of any class:
whether it exists is for the engines to say), and classes are compared through the
``rdfs:subClassOf`` hierarchy (a set of people may hold students).

Cardinality (how many entities a set can hold, given what the schema says of the data):

- ``ONE``: exactly one. ``Find`` of a name or of a label one entity has (existence is
  checked by the engines); ``Relate`` of a ONE set along a functional relation every
  member of its domain has; ``Argmax``/``Argmin`` of a ONE set on an attribute every
  member of its domain has.
- ``OPT``: zero or one. ``Argmax``/``Argmin`` of a larger set (empty in, empty out);
  ``And``/``Diff``/``FilterNum`` whose input is at most one.
- ``MANY``: anything else (``RelateInv``, ``Or``, ...).

``QueryAttr`` on a set that is not ONE is allowed but needs a runtime check (exactly one
entity, else an :class:`~kopl2sparql.errors.ExecutionError`);
:attr:`StepType.needs_singleton_guard` says so to the compiler and the engines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from kopl2sparql.errors import ProgramTypeError, did_you_mean, unknown_name_message
from kopl2sparql.program import COMPARATORS, OPERATORS, ArgKind, Program, Step, ValueType

__all__ = ["Cardinality", "Value", "StepType", "CheckedProgram", "check"]

_NAME = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)


class Cardinality(str, Enum):
    """Static bound on the size of an entity set."""

    ONE = "one"    # exactly one entity
    OPT = "opt"    # zero or one
    MANY = "many"  # any number

    @property
    def at_most_one(self) -> bool:
        return self is not Cardinality.MANY


ONE, OPT, MANY = Cardinality.ONE, Cardinality.OPT, Cardinality.MANY


class Value(NamedTuple):
    """A value on the stack. ``step`` is the 0-based index of the step that pushed it;
    ``classes`` and ``cardinality`` describe entity sets (and QueryName's names).

    (Value and StepType are named tuples rather than frozen dataclasses because checking
    builds two per step and tuples are three times cheaper to build.)
    """

    type: ValueType
    step: int
    classes: frozenset[str] | None = frozenset()     # None: any class (not known statically)
    cardinality: Cardinality | None = None

    def describe(self) -> str:
        """``Person entities``, ``a number``, ... (for messages)."""
        if self.type in (ValueType.ENTITIES, ValueType.NAMES):
            what = "names of " if self.type is ValueType.NAMES else ""
            return f"{what}{_classes_text(self.classes)} entities"
        return {ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
                ValueType.STRING: "a text value"}[self.type]


class StepType(NamedTuple):
    """What one step does to the stack."""

    index: int                   # 0-based position in the program
    step: Step
    inputs: tuple[Value, ...]    # popped values, in push order (Compare: left, right)
    output: Value                # pushed value
    depth: int                   # stack depth after the step

    @property
    def dependencies(self) -> tuple[int, ...]:
        """0-based indices of the steps whose values this step consumes (KQA Pro's deps)."""
        return tuple(v.step for v in self.inputs)

    @property
    def needs_singleton_guard(self) -> bool:
        """True when the step needs exactly one entity but its input is not statically ONE."""
        return self.step.op == "QueryAttr" and self.inputs[0].cardinality is not ONE


@dataclass(frozen=True)
class CheckedProgram:
    """A program that passed :func:`check`, with the type of every intermediate value."""

    program: Program
    steps: tuple[StepType, ...]
    stack: tuple[Value, ...]     # what remains at the end (bottom first)

    @property
    def complete(self) -> bool:
        """True when exactly one value remains (a full program rather than a prefix)."""
        return len(self.stack) == 1

    @property
    def result(self) -> Value:
        """The final value of a complete program."""
        if len(self.stack) != 1:
            raise ValueError(f"a program prefix leaves {len(self.stack)} values, not one")
        return self.stack[0]

    @property
    def answer_kind(self) -> str:
        """Kind of :class:`~kopl2sparql.answer.Answer` the program gives: entities, number or bool."""
        return _ANSWER_KIND[self.result.type]

    def __getitem__(self, index: int) -> StepType:
        return self.steps[index]

    def __len__(self) -> int:
        return len(self.steps)


_ANSWER_KIND = {ValueType.ENTITIES: "entities", ValueType.NAMES: "entities",
                ValueType.NUMBER: "number", ValueType.BOOL: "bool", ValueType.STRING: "string"}
_TYPE_WORD = {ValueType.ENTITIES: "an entity set", ValueType.NAMES: "an entity set",
              ValueType.NUMBER: "a number", ValueType.BOOL: "a yes/no value",
              ValueType.STRING: "a text value"}
_COUNT_WORD = {1: "one", 2: "two", 3: "three"}


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'AEIOU' else 'a'} {noun}"


def _classes_text(classes: frozenset[str] | None) -> str:
    if classes is None:
        return "any"
    return "/".join(sorted(classes)) if classes else "no"


# ---- schema view ------------------------------------------------------------------------

class _SchemaView:
    """The schema tables in the shape the checker needs, built once per Schema object."""

    def __init__(self, schema):
        self.schema = schema
        self.relations = schema.relations
        self.attributes = schema.attributes
        self.relation_words = {w: n for n, info in schema.relations.items()
                               for w in (info.label, *info.alt_labels)}
        self.attribute_words = {w: n for n, info in schema.attributes.items()
                                for w in (info.label, *info.alt_labels)}
        # (op, args) pairs already found well-formed and known: checking a program again
        # (EV-TC checks thousands of candidates sharing the same steps) skips the work.
        self.good_args: set[tuple[str, tuple]] = set()


_VIEWS: dict[int, _SchemaView] = {}


def _view(schema) -> _SchemaView:
    if schema is None:
        raise TypeError("check() needs the KB's Schema (ontology.Schema), not None")
    view = _VIEWS.get(id(schema))
    if view is None or view.schema is not schema:
        if len(_VIEWS) > 64:                  # schemas come and go in tests; keep a few
            _VIEWS.clear()
        view = _VIEWS[id(schema)] = _SchemaView(schema)
    return view


# ---- the checker ------------------------------------------------------------------------

def check(program: Program | str, schema, allow_prefix: bool = False) -> CheckedProgram:
    """Type-check a program (or parse and check a program text) against a KB's schema.

    ``schema`` is the KB's :class:`ontology.Schema`. With
    ``allow_prefix`` the program may leave several values on the stack (or none, for the
    empty prefix), as program prefixes do when a trace is computed step by step.

    :raises ProgramSyntaxError: when given a text that does not parse.
    :raises ProgramTypeError: with the 1-based step number, the span of the culprit
        and, for unknown names, the closest known one.
    """
    if isinstance(program, str):
        from kopl2sparql.syntax import parse
        program = parse(program)
    return _Checker(program, _view(schema)).run(allow_prefix)


class _Checker:
    def __init__(self, program: Program, view: _SchemaView):
        self.program = program
        self.view = view
        self.source, self.spans, self.arg_spans = _locate(program)

    # -- errors
    def fail(self, message: str, index: int | None, arg: int | None = None):
        if index is None:
            span = None
        elif arg is not None and arg < len(self.arg_spans[index]):
            span = self.arg_spans[index][arg]
        else:
            span = self.spans[index]
        raise ProgramTypeError(message, self.source, span, None if index is None else index + 1)

    # -- driver
    def run(self, allow_prefix: bool) -> CheckedProgram:
        steps = self.program.steps
        if not steps and not allow_prefix:
            raise ProgramTypeError("empty program", self.source, None, None)
        stack: list[Value] = []
        typed: list[StepType] = []
        good_args = self.view.good_args
        for index, step in enumerate(steps):
            op = OPERATORS.get(step.op)
            if op is None:
                self.fail(unknown_name_message("function", step.op, OPERATORS), index)
            key = (step.op, step.args)
            try:
                known = key in good_args
            except TypeError:  # unhashable (non-text) arguments: check_args refuses them
                known = False
            if not known:
                self.check_args(index, step, op)
                if len(good_args) > 200_000:  # bounded: entity names are unbounded
                    good_args.clear()
                good_args.add(key)
            need = len(op.pops)
            if len(stack) < need:
                self.underflow(index, step, op, stack)
            inputs = tuple(stack[len(stack) - need:]) if need else ()
            for slot, (want, value) in enumerate(zip(op.pops, inputs)):
                if value.type is not want:
                    self.wrong_operand(index, step, op, slot, value)
            if need:
                del stack[len(stack) - need:]
            output = self.rule(index, step, inputs)
            stack.append(output)
            typed.append(StepType(index, step, inputs, output, len(stack)))
        if not allow_prefix and len(stack) != 1:
            first = stack[0]
            producers = ", ".join(f"step {v.step + 1} {steps[v.step].op}" for v in stack)
            self.fail(f"the program leaves {len(stack)} values on the stack ({producers}); "
                      "a complete program leaves exactly one (combine them with And, Or, "
                      "Diff or Compare, or drop the extra branch)", first.step)
        return CheckedProgram(self.program, tuple(typed), tuple(stack))

    # -- arguments
    def check_args(self, index: int, step: Step, op) -> None:
        if len(step.args) != len(op.args):
            want = len(op.args)
            self.fail(f"{step.op} takes {want} argument{'' if want == 1 else 's'}, "
                      f"got {len(step.args)}", index)
        for slot, (kind, arg) in enumerate(zip(op.args, step.args)):
            if not isinstance(arg, str):
                self.fail(f"{step.op}: argument {slot + 1} must be text, not {type(arg).__name__}",
                          index, slot)
            if kind is ArgKind.COMPARATOR:
                if arg not in COMPARATORS:
                    self.fail(f"{step.op}: unknown comparator {arg!r}; expected one of "
                              f"{' '.join(COMPARATORS)}", index, slot)
            elif kind is ArgKind.NUMBER:
                if not _NUMBER.fullmatch(arg):
                    self.fail(f"{step.op}: expected a decimal number, got {arg!r}", index, slot)
            elif kind is ArgKind.ENTITY:
                if not arg.strip() or arg != arg.strip() or any(c in arg for c in "\n\r\t"):
                    self.fail(f"{step.op}: an entity is named by a non-empty name or label without "
                              f"surrounding or control whitespace, got {arg!r}", index, slot)
            elif kind is ArgKind.RELATION:
                self.known_relation(index, slot, step.op, arg)
            elif kind is ArgKind.ATTRIBUTE:
                self.known_attribute(index, slot, step.op, arg)

    def known_relation(self, index: int, slot: int, op: str, name: str) -> None:
        view = self.view
        if name in view.relations:
            return
        self.well_formed(index, slot, op, "relation", name)
        if name in view.attributes:
            self.fail(f"'{name}' is an attribute, not a relation; {op} takes a relation "
                      f"({', '.join(sorted(view.relations))})", index, slot)
        self.fail(unknown_name_message("relation", name, view.relations, view.relation_words),
                  index, slot)

    def known_attribute(self, index: int, slot: int, op: str, name: str) -> None:
        view = self.view
        if name in view.attributes:
            return
        self.well_formed(index, slot, op, "attribute", name)
        if name in view.relations:
            self.fail(f"'{name}' is a relation, not an attribute; {op} takes an attribute "
                      f"({', '.join(sorted(view.attributes))})", index, slot)
        self.fail(unknown_name_message("attribute", name, view.attributes, view.attribute_words),
                  index, slot)

    def well_formed(self, index: int, slot: int, op: str, kind: str, name: str) -> None:
        if not _NAME.fullmatch(name):
            self.fail(f"{op}: malformed {kind} name {name!r} (names use letters, digits and _)",
                      index, slot)

    def entity_classes(self, text: str) -> tuple[frozenset[str] | None, int]:
        """Classes of the entities ``text`` names (None: any) and how many it names."""
        schema = self.view.schema
        names = schema.resolve(text)
        if not names:
            return None, 1             # unknown here: the engines report it at run time
        classes: set[str] = set()
        for name in names:
            found = schema.entity_classes(name)
            if found is None:
                return None, len(names)
            classes |= found
        return frozenset(classes), len(names)

    # -- stack errors
    def underflow(self, index: int, step: Step, op, stack: list[Value]) -> None:
        need = len(op.pops)
        kinds = {_TYPE_WORD[t] for t in op.pops}
        if need == 1:
            wants = _TYPE_WORD[op.pops[0]]
        elif len(kinds) == 1:
            noun = {ValueType.ENTITIES: "entity sets", ValueType.NUMBER: "numbers"}.get(op.pops[0], "values")
            wants = f"{_COUNT_WORD.get(need, need)} {noun}"
        else:
            wants = " and ".join(_TYPE_WORD[t] for t in op.pops)
        if not stack:
            has = "the stack is empty"
        else:
            shown = "; ".join(f"{v.describe()} from step {v.step + 1}" for v in stack)
            has = f"the stack has {_COUNT_WORD.get(len(stack), len(stack))} ({shown})"
        self.fail(f"{step.op} needs {wants}, but {has}", index)

    def wrong_operand(self, index: int, step: Step, op, slot: int, value: Value) -> None:
        which = ""
        if len(op.pops) > 1:
            which = f" as its {('first', 'second', 'third')[slot]} operand"
        producer = self.program.steps[value.step].op
        extra = ""
        if value.type is ValueType.NAMES:
            extra = " (QueryName renders a final answer; use the entity set before it)"
        self.fail(f"{step.op} needs {_TYPE_WORD[op.pops[slot]]}{which}, but step {value.step + 1} "
                  f"({producer}) gives {value.describe()}{extra}", index)

    # -- typing rules, one per operator (looked up in _RULES below)
    def rule(self, index: int, step: Step, inputs: tuple[Value, ...]) -> Value:
        rule = _RULES.get(step.op)
        if rule is None:  # an operator added to OPERATORS without its rule: a bug, not user input
            raise NotImplementedError(f"no typing rule for {step.op}")
        return rule(self, index, step, inputs)

    def rule_find(self, index, step, inputs):
        classes, count = self.entity_classes(step.args[0])
        return Value(ValueType.ENTITIES, index, classes, ONE if count == 1 else MANY)

    def rule_relate(self, index, step, inputs):
        op = step.op
        schema = self.view.schema
        rel = self.view.relations[step.args[0]]
        source, target = (rel.domain, rel.range) if op == "Relate" else (rel.range, rel.domain)
        operand = inputs[0]
        if not schema.overlaps(operand.classes, source):
            self.fail(f"{op}({rel.name}) needs {source} entities ({rel.name}: {rel.domain} -> "
                      f"{rel.range}), but step {operand.step + 1} gives {operand.describe()}: "
                      "the result is always empty", index, 0)
        if op == "Relate" and rel.functional and self.within(operand.classes, source):
            # One neighbour each when every member of the domain has exactly one.
            card = operand.cardinality if rel.total else (OPT if operand.cardinality.at_most_one else MANY)
        else:
            card = MANY
        return Value(ValueType.ENTITIES, index, None if target is None else frozenset((target,)), card)

    def within(self, classes: frozenset[str] | None, cls: str | None) -> bool:
        """Is every member of a set of ``classes`` an instance of ``cls``?"""
        if cls is None:
            return True
        if not classes:
            return False
        schema = self.view.schema
        return all(cls in schema.ancestors(c) for c in classes)

    def rule_query_name(self, index, step, inputs):
        operand = inputs[0]
        return Value(ValueType.NAMES, index, operand.classes, operand.cardinality)

    def rule_query_attr(self, index, step, inputs):
        self.attribute_applies(index, step, inputs[0], "the value is undefined")
        attr = self.view.attributes[step.args[0]]
        return Value(ValueType.NUMBER if attr.numeric else ValueType.STRING, index)

    def rule_count(self, index, step, inputs):
        return Value(ValueType.NUMBER, index)

    def rule_yes_no(self, index, step, inputs):
        return Value(ValueType.BOOL, index)

    def rule_select(self, index, step, inputs):
        operand = inputs[0]
        domain = self.attribute_applies(index, step, operand, "the result is always empty", numeric=True)
        attr = self.view.attributes[step.args[0]]
        # A ONE input keeps its member when every entity of the domain has the value.
        card = ONE if operand.cardinality is ONE and attr.total and self.within(operand.classes, domain) else OPT
        return Value(ValueType.ENTITIES, index, self.narrow(operand.classes, domain), card)

    def rule_filter_num(self, index, step, inputs):
        operand = inputs[0]
        domain = self.attribute_applies(index, step, operand, "the result is always empty", numeric=True)
        card = OPT if operand.cardinality.at_most_one else MANY
        return Value(ValueType.ENTITIES, index, self.narrow(operand.classes, domain), card)

    def narrow(self, classes: frozenset[str] | None, cls: str | None) -> frozenset[str] | None:
        """Classes of the members of a set of ``classes`` that are instances of ``cls``."""
        if cls is None:
            return classes
        return self.view.schema.common(classes, frozenset((cls,)))

    def rule_and_diff(self, index, step, inputs):
        op = step.op
        left, right = inputs
        common = self.view.schema.common(left.classes, right.classes)
        if common is not None and not common:
            outcome = ("the intersection is always empty" if op == "And" else
                       "nothing is ever removed, the result is always the first set")
            self.fail(f"{op} of {left.describe()} (step {left.step + 1}) and "
                      f"{right.describe()} (step {right.step + 1}): {outcome}", index)
        if op == "And":
            card = OPT if (left.cardinality.at_most_one or right.cardinality.at_most_one) else MANY
            return Value(ValueType.ENTITIES, index, common, card)
        card = OPT if left.cardinality.at_most_one else MANY
        return Value(ValueType.ENTITIES, index, left.classes, card)

    def rule_or(self, index, step, inputs):
        left, right = inputs
        classes = None if left.classes is None or right.classes is None else left.classes | right.classes
        return Value(ValueType.ENTITIES, index, classes, MANY)

    def rule_verify_rel(self, index, step, inputs):
        schema = self.view.schema
        rel = self.view.relations[step.args[0]]
        operand = inputs[0]
        if not schema.overlaps(operand.classes, rel.domain):
            self.fail(f"VerifyRel({rel.name}, ...) needs {rel.domain} entities "
                      f"({rel.name}: {rel.domain} -> {rel.range}), but step {operand.step + 1} "
                      f"gives {operand.describe()}: the answer is always no", index, 0)
        target, _ = self.entity_classes(step.args[1])
        if not schema.overlaps(target, rel.range):
            self.fail(f"VerifyRel({rel.name}, {step.args[1]}): {rel.name} points to "
                      f"{_a(rel.range)}, not {_a(_classes_text(target))}: the answer is always no",
                      index, 1)
        return Value(ValueType.BOOL, index)

    def attribute_applies(self, index: int, step: Step, operand: Value, outcome: str,
                          numeric: bool = False) -> str | None:
        attr = self.view.attributes[step.args[0]]
        if numeric and not attr.numeric:
            self.fail(f"{step.op}({attr.name}) needs a numeric attribute, but {attr.name} holds "
                      f"{attr.value_type} values", index, 0)
        if not self.view.schema.overlaps(operand.classes, attr.domain):
            self.fail(f"{step.op}({attr.name}) needs {attr.domain} entities ({attr.name} is an "
                      f"attribute of {attr.domain}), but step {operand.step + 1} gives "
                      f"{operand.describe()}: {outcome}", index, 0)
        return attr.domain


_RULES = {
    "Find": _Checker.rule_find,
    "Relate": _Checker.rule_relate,
    "RelateInv": _Checker.rule_relate,
    "QueryName": _Checker.rule_query_name,
    "QueryAttr": _Checker.rule_query_attr,
    "Count": _Checker.rule_count,
    "Compare": _Checker.rule_yes_no,
    "VerifyNum": _Checker.rule_yes_no,
    "Argmax": _Checker.rule_select,
    "Argmin": _Checker.rule_select,
    "FilterNum": _Checker.rule_filter_num,
    "And": _Checker.rule_and_diff,
    "Diff": _Checker.rule_and_diff,
    "Or": _Checker.rule_or,
    "VerifyRel": _Checker.rule_verify_rel,
}
# A new operator in program.OPERATORS needs its typing rule here (tests/test_typecheck.py checks).


def _locate(program: Program):
    """Source text and spans for messages; programs built in Python get their canonical text."""
    steps = program.steps
    if program.source is not None and all(s.span is not None and s.arg_spans is not None
                                          for s in steps):
        return program.source, [s.span for s in steps], [s.arg_spans for s in steps]
    spans, arg_spans, pos, parts = [], [], 0, []
    for step in steps:
        args = [str(a) for a in step.args]
        text = f"{step.op}({','.join(args)})"
        start = pos
        inner = start + len(step.op) + 1
        a_spans = []
        for a in args:
            a_spans.append((inner, inner + len(a)))
            inner += len(a) + 1
        spans.append((start, start + len(text)))
        arg_spans.append(tuple(a_spans))
        parts.append(text)
        pos += len(text) + 1
    return ";".join(parts), spans, arg_spans
