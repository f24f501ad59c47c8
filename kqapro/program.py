"""Full-KoPL programs: KQA Pro's JSON (steps with real ``dependencies``) and a text syntax.

JSON, as in KQA Pro's dataset::

    [{"function": "Find", "inputs": ["LeBron James Jr."], "dependencies": []},
     {"function": "Relate", "inputs": ["father", "forward"], "dependencies": [0]},
     {"function": "What", "inputs": [], "dependencies": [1]}]

(or ``{"program": [...]}``; missing ``dependencies`` are inferred as below).

Text: ``Find(LeBron James Jr.);Relate(father, forward);What()``. Inputs are separated by
commas and trimmed; balanced parentheses may appear in an input (``work period (start)``);
an input containing ``, ; "``, unbalanced parentheses or outer spaces is written as a JSON
string (``Find("Washington, D.C.")``). Dependencies are inferred the way ``kopl`` does: each
step takes the step before it; Find and FindAll start a branch; a step with two inputs
(And, Or, SelectBetween, QueryRelation, QueryRelationQualifier) joins the branch started
last with the step before it.

A program is a tree: every step but the last is the input of exactly one later step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kqapro.functions import ALIASES, FUNCTIONS
from ontology.errors import ProgramSyntaxError, safe_text, unknown_name_message

MAX_STEPS = 1000
_BARE = re.compile(r'^[^,();"\s](?:[^,;"]*[^,(;"\s])?$')


def _bare(text: str) -> bool:
    """Whether an input can be written unquoted: no , ; " nor outer spaces, parentheses balanced."""
    if not _BARE.match(text):
        return False
    depth = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


@dataclass(frozen=True)
class Step:
    function: str
    inputs: tuple[str, ...]
    dependencies: tuple[int, ...]

    def to_json(self) -> dict:
        return {"function": self.function, "inputs": list(self.inputs),
                "dependencies": list(self.dependencies)}


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]

    def to_json(self) -> list[dict]:
        return [s.to_json() for s in self.steps]

    def text_and_spans(self) -> tuple[str, list[tuple[int, int]], list[list[tuple[int, int]]]]:
        """The text form, the span of each step and of each of its inputs."""
        parts, spans, input_spans = [], [], []
        pos = 0
        for i, step in enumerate(self.steps):
            if i:
                parts.append(";")
                pos += 1
            start = pos
            head = f"{step.function}("
            parts.append(head)
            pos += len(head)
            ispans = []
            for j, arg in enumerate(step.inputs):
                if j:
                    parts.append(", ")
                    pos += 2
                text = arg if _bare(arg) else json.dumps(arg, ensure_ascii=False)
                parts.append(text)
                ispans.append((pos, pos + len(text)))
                pos += len(text)
            parts.append(")")
            pos += 1
            spans.append((start, pos))
            input_spans.append(ispans)
        return "".join(parts), spans, input_spans

    def to_text(self) -> str:
        return self.text_and_spans()[0]

    def __str__(self) -> str:
        return self.to_text()


def infer_dependencies(functions: list[str]) -> list[tuple[int, ...]]:
    """kopl's rule (see the module docstring); raises IndexError-free errors via None."""
    deps: list[tuple[int, ...]] = []
    branches: list[int] = []
    for i, name in enumerate(functions):
        f = FUNCTIONS.get(ALIASES.get(name, name))
        if name in ("Find", "FindAll"):
            deps.append(())
            branches.append(i)
        elif f is not None and f.arity == 2:
            if len(branches) < 2:
                deps.append((-1,))          # reported by check_tree
                continue
            branches.pop()
            deps.append((branches[-1], i - 1))
            branches[-1] = i
        else:
            deps.append((i - 1,) if i else (-1,))
            if branches:
                branches[-1] = i
    return deps


# ---- parsing -----------------------------------------------------------------------------

def parse_program(text: str) -> Program:
    """A program from its JSON or text form (JSON when it starts with ``[`` or ``{``)."""
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProgramSyntaxError(f"not a JSON program: {e.msg}", text, (e.pos, e.pos + 1)) from None
        except RecursionError:
            raise ProgramSyntaxError("not a JSON program: nested too deeply") from None
        return program_from_json(data)
    return parse_text(text)


def program_from_json(data: object) -> Program:
    if isinstance(data, dict) and "program" in data:
        data = data["program"]
    if not isinstance(data, list):
        raise ProgramSyntaxError("a JSON program is a list of steps "
                                 '{"function", "inputs", "dependencies"}')
    if not data:
        raise ProgramSyntaxError("the program has no steps")
    if len(data) > MAX_STEPS:
        raise ProgramSyntaxError(f"the program has {len(data)} steps; at most {MAX_STEPS} are accepted")
    functions, inputs, given = [], [], []
    for i, step in enumerate(data, 1):
        if not isinstance(step, dict) or not isinstance(step.get("function"), str):
            raise ProgramSyntaxError(f"step {i} is not an object with a string 'function'", step=i)
        args = step.get("inputs", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ProgramSyntaxError(f"step {i}: 'inputs' must be a list of strings", step=i)
        deps = step.get("dependencies")
        if deps is not None and (not isinstance(deps, list)
                                 or not all(isinstance(d, int) and not isinstance(d, bool) for d in deps)):
            raise ProgramSyntaxError(f"step {i}: 'dependencies' must be a list of step indexes", step=i)
        functions.append(step["function"])
        inputs.append(tuple(args))
        given.append(None if deps is None else tuple(deps))
    inferred = infer_dependencies(functions)
    steps = tuple(Step(f, a, g if g is not None else d)
                  for f, a, g, d in zip(functions, inputs, given, inferred))
    return _validated(Program(steps))


def _split_args(body: str, offset: int, source: str) -> tuple[list[str], list[tuple[int, int]]]:
    args, spans = [], []
    i, n = 0, len(body)
    if not body.strip():
        return [], []
    while True:
        while i < n and body[i] == " ":
            i += 1
        start = i
        if i < n and body[i] == '"':
            try:
                value, end = json.JSONDecoder().raw_decode(body, i)
            except json.JSONDecodeError as e:
                raise ProgramSyntaxError(f"bad quoted input: {e.msg}", source,
                                         (offset + i, offset + i + 1)) from None
            if not isinstance(value, str):
                raise ProgramSyntaxError("a quoted input must be a string", source, (offset + i, offset + end))
            i = end
            args.append(value)
            spans.append((offset + start, offset + end))
            while i < n and body[i] == " ":
                i += 1
        else:
            depth = 0
            while i < n and (body[i] != "," or depth):
                if body[i] == '"':
                    raise ProgramSyntaxError('a quote inside an input; quote the whole input as a JSON string',
                                             source, (offset + i, offset + i + 1))
                depth += {"(": 1, ")": -1}.get(body[i], 0)
                i += 1
            value = body[start:i].strip()
            if not value:
                raise ProgramSyntaxError("empty input", source, (offset + start, offset + max(i, start + 1)))
            args.append(value)
            spans.append((offset + start, offset + start + len(value)))
        if i >= n:
            return args, spans
        if body[i] != ",":
            raise ProgramSyntaxError("expected ',' or ')' after a quoted input", source,
                                     (offset + i, offset + i + 1))
        i += 1


def _scan_steps(text: str) -> list[tuple[str, str, int, int, int]]:
    """(name, body, step start, body start, step end) for each ``Name(body)``; quotes respected."""
    out = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        start = i
        match = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, i)
        if not match:
            raise ProgramSyntaxError("expected a function name", text, (i, i + 1))
        name = match.group()
        i = match.end()
        while i < n and text[i] == " ":
            i += 1
        if i >= n or text[i] != "(":
            raise ProgramSyntaxError(f"expected '(' after {name}", text, (i, i + 1))
        body_start = i + 1
        i += 1
        in_quote, depth = False, 0
        while i < n:
            c = text[i]
            if in_quote:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_quote = False
            elif c == '"':
                in_quote = True
            elif c == "(":
                depth += 1          # balanced parentheses belong to an input: "work period (start)"
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c == ";":
                raise ProgramSyntaxError("expected ')' before ';' (quote an input that contains ';' "
                                         "as a JSON string)", text, (i, i + 1))
            i += 1
        if i >= n:
            raise ProgramSyntaxError("unclosed '(' (or quote)", text, (body_start - 1, body_start))
        out.append((name, text[body_start:i], start, body_start, i + 1))
        i += 1
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i < n:
            if text[i] != ";":
                raise ProgramSyntaxError("expected ';' between steps", text, (i, i + 1))
            i += 1
            if not text[i:].strip():
                raise ProgramSyntaxError("a ';' with no step after it", text, (i - 1, i))
        if len(out) > MAX_STEPS:
            raise ProgramSyntaxError(f"the program has more than {MAX_STEPS} steps", text, (start, start + 1))
    if not out:
        raise ProgramSyntaxError("empty program", text, (0, 1))
    return out


def parse_text(text: str) -> Program:
    scanned = _scan_steps(text)
    functions, inputs = [], []
    for name, body, start, body_start, _end in scanned:
        canonical = ALIASES.get(name, name)
        if canonical not in FUNCTIONS:
            raise ProgramSyntaxError(unknown_name_message("function", name, FUNCTIONS), text,
                                     (start, start + len(name)), step=len(functions) + 1)
        args, _ = _split_args(body, body_start, text)
        functions.append(canonical)
        inputs.append(tuple(args))
    deps = infer_dependencies(functions)
    program = Program(tuple(Step(f, a, d) for f, a, d in zip(functions, inputs, deps)))
    spans = [(s, e) for _n, _b, s, _bs, e in scanned]
    return _validated(program, text, spans)


def _validated(program: Program, source: str | None = None,
               spans: list[tuple[int, int]] | None = None) -> Program:
    """Known functions, input counts, dependency counts and indexes, tree shape."""
    if source is None:
        source, spans, _ = program.text_and_spans()
    steps = []
    for i, step in enumerate(program.steps):
        span = spans[i]
        canonical = ALIASES.get(step.function, step.function)
        f = FUNCTIONS.get(canonical)
        if f is None:
            raise ProgramSyntaxError(unknown_name_message("function", safe_text(step.function, 60), FUNCTIONS),
                                     source, span, step=i + 1)
        if len(step.inputs) != len(f.inputs):
            want = ", ".join(f.inputs) or "no inputs"
            raise ProgramSyntaxError(f"{canonical} takes {len(f.inputs)} input(s) ({want}), got "
                                     f"{len(step.inputs)}", source, span, step=i + 1)
        if len(step.dependencies) != f.arity or any(not 0 <= d < i for d in step.dependencies):
            if f.arity and i == 0 or any(d < 0 for d in step.dependencies):
                msg = f"{canonical} needs {f.arity} earlier step(s) as input"
            else:
                msg = (f"{canonical} takes {f.arity} dependencies, each an earlier step's index; "
                       f"got {list(step.dependencies)}")
            raise ProgramSyntaxError(msg, source, span, step=i + 1)
        steps.append(Step(canonical, step.inputs, step.dependencies))
    users: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for d in step.dependencies:
            users.setdefault(d, []).append(i)
    for i in range(len(steps) - 1):
        used = users.get(i, [])
        if len(used) != 1:
            why = "is not used by any later step" if not used else \
                f"is used by steps {', '.join(str(u + 1) for u in used)}; a program is a tree"
            raise ProgramSyntaxError(f"the output of step {i + 1} ({steps[i].function}) {why}",
                                     source, spans[i], step=i + 1)
    return Program(tuple(steps))
