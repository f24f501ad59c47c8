"""The paper's surface syntax: ``Find(Person_00371);Relate(born_in);QueryName()``.

Grammar (whitespace, including newlines, is allowed around every token; a trailing ``;``
is accepted; :meth:`Program.canonical` prints neither)::

    program  := step (";" step)* [";"]
    step     := NAME "(" [arg ("," arg)*] ")"
    arg      := NAME | LABEL | COMPARATOR | NUMBER  -- which one is fixed by OPERATORS[op].args
    NAME     := [A-Za-z0-9_]+                     -- relations, attributes, entity names
    LABEL    := [^(),;]+                          -- entities only: an entity's label, e.g.
                                                  -- Find(Ada Lovelace); surrounding spaces dropped
    NUMBER   := -?[0-9]+(.[0-9]+)?                -- normalised by answer.format_number

Every :class:`Step` carries ``span`` (the step's characters in the source) and
``arg_spans`` (each argument's characters, surrounding spaces excluded), so the type
checker and the engines can underline a culprit.

Parsing is one compiled regular expression per step; only when it does not match does a
slower scanner (:func:`_diagnose`) work out which token is wrong, so correct programs pay
nothing for good error messages.
"""

from __future__ import annotations

import re

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ProgramSyntaxError, unknown_name_message
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import COMPARATORS, ArgKind, Program, Step

__all__ = ["parse"]

# A well-formed step, with the separator that follows it. ``[^();]`` keeps a missing ")"
# from swallowing the next step: the fast path fails and the scanner explains why.
_STEP = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^();]*)\)\s*(;|\Z)", re.ASCII)
_NAME = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)
_SPACE = re.compile(r"\s*", re.ASCII)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_COMPARATORS = frozenset(COMPARATORS)
_WS = " \t\n\r\f\v"  # what ``\s`` means under re.ASCII: the same whitespace everywhere
_NAME_KINDS = (ArgKind.ENTITY, ArgKind.RELATION, ArgKind.ATTRIBUTE)

_KIND_WORD = {
    ArgKind.ENTITY: "entity",
    ArgKind.RELATION: "relation",
    ArgKind.ATTRIBUTE: "attribute",
    ArgKind.COMPARATOR: "comparator",
    ArgKind.NUMBER: "number",
}


def parse(text: str) -> Program:
    """Parse a program in the paper's syntax.

    >>> parse("Find(Person_00371); Relate(born_in);QueryName();").canonical()
    'Find(Person_00371);Relate(born_in);QueryName()'

    :raises ProgramSyntaxError: with the 1-based step number and the span of the culprit
        (unknown function with a suggestion, missing parenthesis, wrong number of
        arguments, malformed names, comparators or numbers, empty program or step).
    :raises TypeError: when ``text`` is not a string (a programming error, not user input).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, not {type(text).__name__}")
    steps: list[Step] = []
    pos, end = 0, len(text)
    match = _STEP.match
    while True:
        m = match(text, pos)
        if m is None:
            if steps and _SPACE.match(text, pos).end() == end:
                break  # trailing ";" (possibly followed by spaces)
            _diagnose(text, pos, len(steps) + 1)
        steps.append(_step(text, m, len(steps) + 1))
        pos = m.end()
        if pos >= end or not m.group(3):
            break
    return Program(tuple(steps), text)


def _fast_pattern(kinds: tuple[ArgKind, ...]) -> re.Pattern:
    """Arguments of one operator written compactly (no spaces): the common case."""
    parts = {ArgKind.COMPARATOR: "(>=|<=|!=|>|<|=)", ArgKind.NUMBER: r"(-?[0-9]+(?:\.[0-9]+)?)"}
    return re.compile(",".join(parts.get(k, "([A-Za-z0-9_]+)") for k in kinds), re.ASCII)


def _make_step_direct(op, args, span, arg_spans, _new=object.__new__, _cls=Step):
    step = _new(_cls)
    step.__dict__.update(op=op, args=args, span=span, arg_spans=arg_spans)
    return step


# A frozen dataclass's __init__ sets each field through object.__setattr__, which is half of
# the parse time of a short program. Step has no __post_init__ and no __slots__, so filling
# its __dict__ directly builds the same object; the guard keeps this honest if Step changes.
_make_step = (Step if hasattr(Step, "__slots__") or hasattr(Step, "__post_init__")
              else _make_step_direct)

# Per operator: (pattern of its compact arguments, number of arguments, positions of numbers).
_FAST_ARGS = {name: (_fast_pattern(op.args), len(op.args),
                     tuple(i for i, k in enumerate(op.args) if k is ArgKind.NUMBER))
              for name, op in OPERATORS.items()}
_CANONICAL_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?", re.ASCII)


def _step(text: str, m: re.Match, number: int) -> Step:
    """Build one step from a fast-path match, checking the operator and its arguments."""
    name = m.group(1)
    fast_args = _FAST_ARGS.get(name)
    if fast_args is None:
        raise ProgramSyntaxError(unknown_name_message("function", name, OPERATORS),
                                 text, m.span(1), number)
    pattern, arity, numbers = fast_args
    inner_start, inner_end = m.span(2)
    fast = pattern.fullmatch(text, inner_start, inner_end)
    if fast is None:
        return _slow_step(text, m, name, OPERATORS[name], number)
    span = (m.start(1), inner_end + 1)
    if arity == 0:
        return _make_step(name, (), span, ())
    if arity == 1 and not numbers:
        return _make_step(name, (fast.group(1),), span, (fast.span(1),))
    args = fast.groups()
    for i in numbers:
        if not _CANONICAL_NUMBER.fullmatch(args[i]) or args[i] == "-0":
            args = args[:i] + (format_number(args[i]),) + args[i + 1:]
    return _make_step(name, args, span, tuple(fast.span(i) for i in range(1, arity + 1)))


def _slow_step(text: str, m: re.Match, name: str, op, number: int) -> Step:
    """Arguments with spaces, or wrong ones: split by hand to locate each argument."""
    inner = m.group(2)
    inner_start = m.start(2)
    close = m.end(2) + 1
    if not inner.strip(_WS):
        args: tuple[str, ...] = ()
        spans: tuple[tuple[int, int], ...] = ()
    else:
        arg_list, span_list = [], []
        offset = inner_start
        for piece in inner.split(","):
            stripped = piece.strip(_WS)
            if stripped:
                start = offset + len(piece) - len(piece.lstrip(_WS))
                span_list.append((start, start + len(stripped)))
            else:
                # An empty argument (``Relate(,x)``): point at where it should be.
                span_list.append((offset, offset + max(len(piece), 1)))
            arg_list.append(stripped)
            offset += len(piece) + 1
        args, spans = tuple(arg_list), tuple(span_list)
    kinds = op.args
    if len(args) != len(kinds):
        _arity_error(text, name, kinds, args, spans, (inner_start - 1, close), number)
    args = tuple(_argument(text, name, kind, arg, span, number)
                 for kind, arg, span in zip(kinds, args, spans))
    return Step(name, args, (m.start(1), close), spans)


def _argument(text: str, op: str, kind: ArgKind, arg: str, span: tuple[int, int], number: int) -> str:
    """Check the lexical shape of one argument; returns its canonical text."""
    if kind is ArgKind.ENTITY and arg:
        return arg                 # a name or a label ("Ada Lovelace"): the KB decides
    if kind in _NAME_KINDS:
        if _NAME.fullmatch(arg):
            return arg
        word = _KIND_WORD[kind]
        if not arg:
            raise ProgramSyntaxError(f"{op}: missing {word} name", text, span, number)
        bad = next(i for i, ch in enumerate(arg) if not (ch.isascii() and (ch.isalnum() or ch == "_")))
        at = span[0] + bad
        raise ProgramSyntaxError(
            f"{op}: bad character {arg[bad]!r} in {word} name {arg!r} "
            "(names use letters, digits and _)", text, (at, at + 1), number)
    if kind is ArgKind.COMPARATOR:
        if arg in _COMPARATORS:
            return arg
        shown = " ".join(COMPARATORS)
        what = f"unknown comparator {arg!r}" if arg else "missing comparator"
        raise ProgramSyntaxError(f"{op}: {what}; expected one of {shown}", text, span, number)
    # ArgKind.NUMBER
    if _NUMBER.fullmatch(arg):
        return format_number(arg)
    what = f"expected a decimal number, got {arg!r}" if arg else "missing number"
    raise ProgramSyntaxError(f"{op}: {what}", text, span, number)


def _arity_error(text, name, kinds, args, spans, parens, number):
    want = len(kinds)
    listed = ", ".join(_KIND_WORD[k] for k in kinds)
    takes = (f"takes no arguments" if not want else
             f"takes {want} argument{'s' if want > 1 else ''} ({listed})")
    got = len(args)
    message = f"{name} {takes}, got {got}"
    if got > want:
        # Underline the surplus arguments.
        span = (spans[want][0], spans[-1][1]) if want < got else parens
    else:
        span = parens
    raise ProgramSyntaxError(message, text, span, number)


def _diagnose(text: str, pos: int, number: int):
    """Find out why the step starting at ``pos`` did not match, and raise about it."""
    end = len(text)
    pos = _SPACE.match(text, pos).end()
    if pos >= end:
        if number == 1:
            raise ProgramSyntaxError("empty program", text, (0, max(end, 1)), None)
        raise ProgramSyntaxError("expected a step after ';'", text, (pos, pos + 1), number)
    ch = text[pos]
    if ch == ";":
        raise ProgramSyntaxError("empty step (two ';' in a row)" if number > 1 else "empty step before ';'",
                                 text, (pos, pos + 1), number)
    ident = _IDENT.match(text, pos)
    if ident is None:
        raise ProgramSyntaxError(f"expected a function name, found {ch!r}", text, (pos, pos + 1), number)
    name = ident.group()
    if name not in OPERATORS:
        raise ProgramSyntaxError(unknown_name_message("function", name, OPERATORS),
                                 text, ident.span(), number)
    after = _SPACE.match(text, ident.end()).end()
    if after >= end or text[after] != "(":
        found = f"found {text[after]!r}" if after < end else "found the end of the program"
        if after >= end:
            after = ident.end()  # right after the name, not after trailing newlines
        raise ProgramSyntaxError(f"missing '(' after {name}; {found}", text, (after, after + 1), number)
    scan = after + 1
    while scan < end and text[scan] not in "();":
        scan += 1
    if scan >= end or text[scan] != ")":
        found = f"found {text[scan]!r}" if scan < end else "found the end of the program"
        if scan >= end:
            scan = len(text.rstrip())  # right after the last character, not after newlines
        raise ProgramSyntaxError(f"missing ')' to close {name}(; {found}", text, (scan, scan + 1), number)
    nxt = _SPACE.match(text, scan + 1).end()
    if nxt < end and text[nxt] != ";":
        raise ProgramSyntaxError(f"expected ';' between steps, found {text[nxt]!r}",
                                 text, (nxt, nxt + 1), number)
    # The fast pattern and this scanner accept the same language; reaching here is a bug,
    # but the user still deserves a located error rather than a traceback.
    raise ProgramSyntaxError("cannot parse this step", text, (pos, scan + 1), number)
