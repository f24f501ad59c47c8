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

from kopl2sparql.errors import ProgramTypeError, unknown_name_message
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import COMPARATORS, ArgKind, Program, Step, ValueType
from kopl2sparql.types import COUNT_WORD, TYPE_WORD, Cardinality, CheckedProgram, StepType, Value

__all__ = ["Cardinality", "Value", "StepType", "CheckedProgram", "check", "ensure_checked", "clear_check_cache"]   # the types re-exported

_NAME = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)


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


MAX_STEPS = 1000
"""The longest program accepted. KQA Pro's programs have under twenty steps; a 10,000-step
chain compiles to SPARQL nested deeper than Oxigraph's parser survives (it crashed)."""

_PASSED: dict[int, tuple[object, set]] = {}    # per schema: program shapes that passed


def ensure_checked(program: Program, schema, allow_prefix: bool = False) -> None:
    """:func:`check` for engines that only need to know the program is well typed, cached.

    The checker reads an entity name only through its classes, so programs of one shape (a
    template with other slot fillings) pass or fail together: one check serves them all.

    :raises ProgramError: for an ill-typed program.
    """
    entry = _PASSED.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_PASSED) > 64:
            _PASSED.clear()
        entry = _PASSED[id(schema)] = (schema, set())
    passed = entry[1]
    # The same program again (EV-TC, evaluation): its steps are the key, cheaper than its shape.
    try:
        again = (program.steps, allow_prefix)
        if again in passed:
            return
    except TypeError:                        # unhashable arguments: the checker says why
        again = None
    from kopl2sparql.shapes import program_shape
    shape = program_shape(program.steps, schema) if again is not None else None
    key = (shape[0], allow_prefix) if shape is not None else None
    if key is None or key not in passed:
        check(program, schema, allow_prefix)
    if len(passed) > 200_000:                # bound the memory of a long-running process
        passed.clear()
    if key is not None:
        passed.add(key)
    if again is not None:
        passed.add(again)


def clear_check_cache() -> None:
    """Forget which program shapes passed (timed runs start cold)."""
    _PASSED.clear()


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
        if len(steps) > MAX_STEPS:
            raise ProgramTypeError(f"the program has {len(steps):,} steps; at most {MAX_STEPS:,} are accepted "
                                   "(a query that long would nest deeper than a SPARQL engine parses)",
                                   self.source, None, None)
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
        kinds = {TYPE_WORD[t] for t in op.pops}
        if need == 1:
            wants = TYPE_WORD[op.pops[0]]
        elif len(kinds) == 1:
            noun = {ValueType.ENTITIES: "entity sets", ValueType.NUMBER: "numbers"}.get(op.pops[0], "values")
            wants = f"{COUNT_WORD.get(need, need)} {noun}"
        else:
            wants = " and ".join(TYPE_WORD[t] for t in op.pops)
        if not stack:
            has = "the stack is empty"
        else:
            shown = "; ".join(f"{v.describe()} from step {v.step + 1}" for v in stack)
            has = f"the stack has {COUNT_WORD.get(len(stack), len(stack))} ({shown})"
        self.fail(f"{step.op} needs {wants}, but {has}", index)

    def wrong_operand(self, index: int, step: Step, op, slot: int, value: Value) -> None:
        which = ""
        if len(op.pops) > 1:
            which = f" as its {('first', 'second', 'third')[slot]} operand"
        producer = self.program.steps[value.step].op
        extra = ""
        if value.type is ValueType.NAMES:
            extra = " (QueryName renders a final answer; use the entity set before it)"
        self.fail(f"{step.op} needs {TYPE_WORD[op.pops[slot]]}{which}, but step {value.step + 1} "
                  f"({producer}) gives {value.describe()}{extra}", index)

    # -- typing: each operator's rule is its ``check`` (kopl2sparql.operators); these
    # -- helpers are what the rules share
    def rule(self, index: int, step: Step, inputs: tuple[Value, ...]) -> Value:
        return OPERATORS[step.op].check(self, index, step, inputs)

    def within(self, classes: frozenset[str] | None, cls: str | None) -> bool:
        """Is every member of a set of ``classes`` an instance of ``cls``?"""
        if cls is None:
            return True
        if not classes:
            return False
        schema = self.view.schema
        return all(cls in schema.ancestors(c) for c in classes)

    def narrow(self, classes: frozenset[str] | None, cls: str | None) -> frozenset[str] | None:
        """Classes of the members of a set of ``classes`` that are instances of ``cls``."""
        if cls is None:
            return classes
        return self.view.schema.common(classes, frozenset((cls,)))

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
