"""KQA Pro's function-list form of a program, both ways.

KQA Pro writes a program as a post-order list of steps
``{"function": F, "inputs": [str, ...], "dependencies": [int, ...]}`` where
``dependencies`` are the 0-based indices of the steps whose outputs a step consumes
(see ``/work/shared/KOPL.md`` §2). :func:`to_kqapro` computes them from the stack
discipline; :func:`from_kqapro` rebuilds them the same way and refuses a list whose
stated dependencies say otherwise (a tree that is not in post-order cannot be a stack
program).

Mapping (SynKQA-Pro KoPL -> KQA Pro), where the semantics match:

=========================  ==========================================  =====================
SynKQA-Pro                 KQA Pro                                     note
=========================  ==========================================  =====================
Find(e)                    Find [e]
Relate(r)                  Relate [r, "forward"]                       input is the head
RelateInv(r)               Relate [r, "backward"]                      input is the tail
QueryName()                What []
QueryAttr(a)               QueryAttr [a]
Count()                    Count []
And() / Or()               And [] / Or []                              two dependencies
FilterNum(a, op, v)        FilterNum [a, v, op]                        op in = != < >
VerifyNum(op, v)           VerifyNum [v, op]                           op in = != < >
Argmax(a);QueryName()      SelectAmong [a, "largest"]                  two steps -> one
Argmin(a);QueryName()      SelectAmong [a, "smallest"]                 two steps -> one
=========================  ==========================================  =====================

``SelectAmong`` keeps every tied entity where ``Argmax`` keeps the one with the smallest
id; on this KB's attribute values ties are rare but possible, so the pair is a mapping of
the program, not a promise of identical answers on every KB.

No counterpart in KQA Pro's 27 functions:

- ``Compare(op)`` of two numbers: KQA Pro compares two *entities* with ``SelectBetween``
  (returning a name), never two numbers to a yes/no.
- ``VerifyRel(r, e)``: KQA Pro verifies only values (``VerifyStr/Num/Year/Date``).
- ``Diff()``: no set difference.
- ``Argmax(a)`` / ``Argmin(a)`` not immediately followed by ``QueryName()``: KQA Pro's
  ``SelectAmong`` returns names, so its output cannot feed ``Relate``, ``Count``, ...
- ``FilterNum`` / ``VerifyNum`` with ``>=`` or ``<=``: KQA Pro's comparison ops are
  ``= != < >``.

Extension: with ``strict=False`` (the default) such steps are written in the same list
format under the SynKQA-Pro function name and arguments (``{"function": "Compare",
"inputs": [">"], ...}``, ``{"function": "FilterNum", "inputs": [a, v, ">="], ...}``), so
every program converts and converts back unchanged: ``from_kqapro(to_kqapro(p)) == p``.
KQA Pro's own engines (``kopl``, ``kopl-engine``) do not run the extension steps. With
``strict=True`` :func:`to_kqapro` raises :class:`NoKQAProCounterpart` instead.

KQA Pro functions with no SynKQA-Pro counterpart (``FindAll``, ``FilterConcept``,
``FilterStr``, ``FilterYear``, ``FilterDate``, the ``QFilter*`` family,
``SelectBetween``, ``QueryAttrUnderCondition``, ``QueryRelation``, the qualifier queries,
``VerifyStr/Year/Date``) are refused by :func:`from_kqapro` with the list of what is
supported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ProgramError, ProgramSyntaxError, ProgramTypeError
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step

__all__ = ["to_kqapro", "from_kqapro", "NoKQAProCounterpart", "KQAPRO_OPS", "EXTENSION_FUNCTIONS"]

KQAPRO_OPS = ("=", "!=", "<", ">")
"""Comparison operators KQA Pro's FilterNum / VerifyNum know."""

EXTENSION_FUNCTIONS = ("Compare", "VerifyRel", "Diff", "Argmax", "Argmin")
"""SynKQA-Pro functions written under their own name (plus FilterNum/VerifyNum with >= <=)."""

_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)
_SIMPLE = {"Find": "Find", "QueryName": "What", "QueryAttr": "QueryAttr", "Count": "Count",
           "And": "And", "Or": "Or"}
_SIMPLE_BACK = {v: k for k, v in _SIMPLE.items()}
_SELECT = {"Argmax": "largest", "Argmin": "smallest"}
_SELECT_BACK = {v: k for k, v in _SELECT.items()}
_DIRECTION = {"Relate": "forward", "RelateInv": "backward"}
_DIRECTION_BACK = {v: k for k, v in _DIRECTION.items()}

_WHY_NOT = {
    "Compare": "KQA Pro compares two entities with SelectBetween, never two numbers",
    "VerifyRel": "KQA Pro verifies only attribute values, not relations",
    "Diff": "KQA Pro has no set difference",
    "Argmax": "KQA Pro's SelectAmong returns names, so only Argmax(a);QueryName() maps",
    "Argmin": "KQA Pro's SelectAmong returns names, so only Argmin(a);QueryName() maps",
}


class NoKQAProCounterpart(ProgramError):
    """``to_kqapro(..., strict=True)`` met a step KQA Pro cannot express."""

    kind = "no KQA Pro counterpart"


def to_kqapro(program: Program | str, strict: bool = False) -> list[dict]:
    """The program as KQA Pro's post-order function list.

    >>> to_kqapro("Find(Country_001);RelateInv(located_in);Argmax(population);QueryName()")[-1]
    {'function': 'SelectAmong', 'inputs': ['population', 'largest'], 'dependencies': [1]}

    :raises NoKQAProCounterpart: with ``strict=True``, at the first step without a KQA Pro
        counterpart (see the module docstring).
    :raises ProgramTypeError: when a step pops more values than the stack holds, or names
        an unknown function.
    :raises ProgramSyntaxError: when given a text that does not parse.
    """
    if isinstance(program, str):
        from kopl2sparql.syntax import parse
        program = parse(program)
    steps = program.steps
    out: list[dict] = []
    stack: list[int] = []   # indices into ``out`` of the values on the stack
    i = 0
    while i < len(steps):
        step = steps[i]
        op = OPERATORS.get(step.op)
        if op is None:
            _fail(ProgramTypeError, program, i, f"unknown function '{step.op}'")
        need = len(op.pops)
        if len(stack) < need:
            _fail(ProgramTypeError, program, i,
                  f"{step.op} pops {need} value{'s' if need > 1 else ''}, the stack holds {len(stack)}")
        deps = stack[len(stack) - need:] if need else []
        del stack[len(stack) - need:]
        args = list(step.args)
        consumed = 1
        if step.op in _SIMPLE:
            function, inputs = _SIMPLE[step.op], args
        elif step.op in _DIRECTION:
            function, inputs = "Relate", [args[0], _DIRECTION[step.op]]
        elif step.op in _SELECT and i + 1 < len(steps) and steps[i + 1].op == "QueryName":
            function, inputs = "SelectAmong", [args[0], _SELECT[step.op]]
            consumed = 2
        elif step.op == "FilterNum" and args[1] in KQAPRO_OPS:
            function, inputs = "FilterNum", [args[0], args[2], args[1]]
        elif step.op == "VerifyNum" and args[0] in KQAPRO_OPS:
            function, inputs = "VerifyNum", [args[1], args[0]]
        else:
            if strict:
                why = _WHY_NOT.get(step.op) or (
                    f"KQA Pro's {step.op} knows only the operators {' '.join(KQAPRO_OPS)}")
                _fail(NoKQAProCounterpart, program, i, f"{step.text()}: {why}")
            # Extension: our own function, in the same list format. FilterNum/VerifyNum keep
            # KQA Pro's argument order so that only the operator is foreign.
            function = step.op
            if step.op == "FilterNum":
                inputs = [args[0], args[2], args[1]]
            elif step.op == "VerifyNum":
                inputs = [args[1], args[0]]
            else:
                inputs = args
        out.append({"function": function, "inputs": inputs, "dependencies": deps})
        stack.append(len(out) - 1)
        i += consumed
    return out


def _fail(cls, program: Program, index: int, message: str):
    step = program.steps[index]
    if program.source is not None and step.span is not None:
        source, span = program.source, step.span
    else:
        source = program.canonical()
        start = len(";".join(s.text() for s in program.steps[:index])) + (1 if index else 0)
        span = (start, start + len(step.text()))
    raise cls(message, source, span, index + 1)


def from_kqapro(steps: Sequence[Mapping]) -> Program:
    """Read KQA Pro's function list back into a program.

    ``dependencies`` may be omitted (the peer engines ignore them too); when present they
    must be the ones the post-order sequence implies.

    :raises ProgramSyntaxError: naming the 1-based step, for a malformed step, a KQA Pro
        function without SynKQA-Pro counterpart, wrong inputs or inconsistent dependencies.
    """
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise ProgramSyntaxError(f"a KQA Pro program is a list of steps, not {type(steps).__name__}")
    if not steps:
        raise ProgramSyntaxError("empty KQA Pro program")
    out: list[Step] = []
    stack: list[int] = []   # indices of KQA steps whose values are on the stack
    for index, item in enumerate(steps):
        number = index + 1
        if not isinstance(item, Mapping) or "function" not in item:
            raise ProgramSyntaxError("each KQA Pro step is an object with a \"function\" key",
                                     step=number)
        function = item["function"]
        inputs = item.get("inputs", [])
        if not isinstance(function, str):
            raise ProgramSyntaxError(f"\"function\" must be a string, not {type(function).__name__}",
                                     step=number)
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(x, (str, int)) and
                                                            not isinstance(x, bool) for x in inputs):
            raise ProgramSyntaxError(f"{function}: \"inputs\" must be a list of strings", step=number)
        inputs = [str(x) for x in inputs]
        ours = _steps_for(function, inputs, number)
        # Dependencies: what this step pops, in post-order.
        need = len(OPERATORS[ours[0].op].pops)
        if len(stack) < need:
            raise ProgramSyntaxError(f"{function} needs {need} input{'s' if need > 1 else ''} but "
                                     f"only {len(stack)} earlier step{'s' if len(stack) != 1 else ''} "
                                     "left a value", step=number)
        implied = stack[len(stack) - need:] if need else []
        stated = item.get("dependencies")
        if stated is not None and not (isinstance(stated, (list, tuple)) and
                                       all(type(d) is int for d in stated)):
            raise ProgramSyntaxError(f"{function}: \"dependencies\" must be a list of step indices",
                                     step=number)
        if stated is not None and list(stated) != implied:
            raise ProgramSyntaxError(f"{function}: dependencies {list(stated)} do not match the "
                                     f"post-order sequence (expected {implied})", step=number)
        del stack[len(stack) - need:]
        stack.append(index)
        out.extend(ours)
    return Program(tuple(out))


def _number(text: str) -> str:
    """Numbers in the canonical form the parser gives (``35000.0`` -> ``35000``), so that a
    program read from KQA Pro equals the same program parsed from text. Anything else is
    left for the type checker to refuse with its position."""
    return format_number(text) if _DECIMAL.fullmatch(text) else text


def _steps_for(function: str, inputs: list[str], number: int) -> list[Step]:
    """Our step(s) for one KQA Pro step."""
    def want(n: int, what: str) -> None:
        if len(inputs) != n:
            raise ProgramSyntaxError(f"{function} takes {n} input{'s' if n != 1 else ''} ({what}), "
                                     f"got {len(inputs)}", step=number)

    if function in _SIMPLE_BACK:
        op = _SIMPLE_BACK[function]
        n = len(OPERATORS[op].args)
        want(n, ", ".join(k.value for k in OPERATORS[op].args) or "none")
        return [Step(op, tuple(inputs))]
    if function == "Relate":
        want(2, "relation, direction")
        if inputs[1] not in _DIRECTION_BACK:
            raise ProgramSyntaxError(f"Relate: direction must be forward or backward, got "
                                     f"{inputs[1]!r}", step=number)
        return [Step(_DIRECTION_BACK[inputs[1]], (inputs[0],))]
    if function == "SelectAmong":
        want(2, "key, largest|smallest")
        if inputs[1] not in _SELECT_BACK:
            raise ProgramSyntaxError(f"SelectAmong: op must be largest or smallest, got "
                                     f"{inputs[1]!r}", step=number)
        return [Step(_SELECT_BACK[inputs[1]], (inputs[0],)), Step("QueryName")]
    if function == "FilterNum":
        want(3, "key, value, op")
        return [Step("FilterNum", (inputs[0], inputs[2], _number(inputs[1])))]
    if function == "VerifyNum":
        want(2, "value, op")
        return [Step("VerifyNum", (inputs[1], _number(inputs[0])))]
    if function in EXTENSION_FUNCTIONS:
        op = OPERATORS[function]
        want(len(op.args), ", ".join(k.value for k in op.args) or "none")
        return [Step(function, tuple(inputs))]
    supported = sorted({*_SIMPLE_BACK, "Relate", "SelectAmong", "FilterNum", "VerifyNum"})
    raise ProgramSyntaxError(
        f"KQA Pro function '{function}' has no SynKQA-Pro counterpart; supported: "
        f"{', '.join(supported)} (and the extensions {', '.join(EXTENSION_FUNCTIONS)})", step=number)
