"""Our programs on the official KoPL engines: ``kopl`` (KQA Pro's executor) and ``kopl-engine`` (VisKoP's C++).

Both engines read the KB exported by :mod:`synkqa.benchmark.kqapro_kb` and run KQA Pro function
lists (:func:`kopl2sparql.kqapro.to_kqapro`). Where KoPL has no single function for one of
ours, a program becomes a small *plan*: one or more KoPL programs plus a rule that turns
their outputs into our canonical answer. Every rule that differs from reading the answer
off directly says why, and records an *explanation* tag when it had to bridge a difference,
so a comparison counts not only agreements but also which known differences occurred:

========================  ====================================================  ==================
our final step            KoPL plan                                             explanation tag
========================  ====================================================  ==================
QueryName()               ``What`` -> list of names, duplicates kept;           ``duplicate-names``
                          ours is the set, sorted by id
Count()                   ``Count`` is ``len`` of the id list, duplicates        ``duplicate-count``
                          kept; a second plan ``What`` lists the names and
                          the distinct count is taken from it (the engine's
                          ``Count`` must equal that list's length)
Argmax(a);QueryName()     ``SelectAmong [a, largest]`` keeps every tied          ``argmax-tie``
                          entity; ours keeps the smallest id. On an empty       ``argmax-empty``
                          set ``kopl`` raises; ours is the empty set
QueryAttr(a)              ``QueryAttr`` -> list of values printed through        ``duplicate-values``
                          ``float`` (``225.6``, ``71890``), one per entity in
                          the list, duplicates kept. Ours needs exactly one      ``queryattr-not-one-
                          entity: a second plan ``What`` lists the entities;     entity`` (ours: error)
                          unless exactly one distinct, ours must raise
Compare(op)               no counterpart (KoPL compares two entities with       –
                          ``SelectBetween``, never two numbers): both
                          numbers are computed by KoPL, compared here in
                          ``Decimal``; for ``Find(x);QueryAttr(a)`` operands
                          and ``>``/``<`` a third plan asks ``SelectBetween``
                          and must agree whenever the values differ
VerifyRel(r, e)           no counterpart (KoPL verifies values only): ``X;       –
                          Relate [r, forward]; Find e; And; Count`` > 0
VerifyNum(op, v)          ``VerifyNum [v, op]`` (``= != < >``); ``not sure``     –
                          (mixed answers over several values) has no
                          counterpart in ours and is reported as is. After
                          Count (KoPL's VerifyNum reads only attribute
                          values): the distinct count from KoPL, compared
                          with ``v`` here
========================  ====================================================  ==================

Any final step: a ``Find`` of a name kopl's KB does not know yields an empty set and the
program runs on; ours refuses it (``unknown-entity``, ours: error). Wherever ours raises an
ExecutionError the expected peer answer is :data:`ERROR`.

``kopl-engine`` answers with ONE string: only the first name of a set (the smallest id),
``"no"`` for an empty set (so an empty set and a Verify "no" look alike) — tag
``first-name-only`` / ``empty-as-no``. It kills its process on bad input (exit 125/234/235),
so it only ever runs in a child process (:func:`run_kopl_engine`), whose death is reported
with the number of programs it finished.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ConfigError, SynKQAError
from kopl2sparql.kqapro import NoKQAProCounterpart, to_kqapro
from kopl2sparql.operators import OPERATORS
from kopl2sparql.program import Program, Step, ValueType

__all__ = ["PeerPlan", "PeerAnswer", "plan_for", "KoplRunner", "run_kopl_engine", "PeerEngineError",
           "EngineBatch"]


class PeerEngineError(SynKQAError):
    """A peer engine is missing, crashed, or answered in an unexpected shape."""


@dataclass(frozen=True)
class PeerAnswer:
    """A peer's answer in our canonical form, and the known difference bridged, if any."""

    canonical: str
    explanation: str | None = None


ERROR = "error"
"""Canonical stand-in for "our engine raises ExecutionError" (QueryAttr not on one entity,
unknown entity): KoPL answers those programs anyway, with a list or an empty set."""


@dataclass(frozen=True)
class PeerPlan:
    """KoPL programs (KQA Pro function lists) and how their outputs make our answer.

    ``roles`` names each call: ``main`` (the program itself, or for ``compare`` the
    ``left``/``right`` numbers), ``names`` (the entity set under a QueryAttr or Count,
    listed with ``What``: how many distinct entities it really holds), ``left-names`` /
    ``right-names`` (the same for Compare operands) and ``between`` (SelectBetween).
    ``finish`` is one of ``names``, ``argmax``, ``count``, ``value``, ``verify``,
    ``verifycount``, ``compare``, ``verifyrel``; ``op`` is the comparator for ``compare`` and
    ``verifycount``, ``bound`` the number ``verifycount`` compares the count with.
    """

    program: str
    calls: tuple[tuple[dict, ...], ...]
    roles: tuple[str, ...]
    finish: str
    op: str | None = None
    bound: str | None = None

    def entity_names(self) -> set[str]:
        """Every name a ``Find`` of the plan looks up."""
        return {s["inputs"][0] for call in self.calls for s in call if s["function"] == "Find"}

    def kopl_answer(self, outputs: Sequence[object]) -> PeerAnswer:
        """Our canonical answer from ``kopl``'s outputs (one per call; an Exception for a failed call)."""
        out = dict(zip(self.roles, outputs))
        main = out.get("main")
        if self.finish == "argmax" and isinstance(main, IndexError):
            # SelectAmong of an empty set: kopl indexes an empty candidate list.
            return PeerAnswer("", "argmax-empty")
        _raise_failed(outputs)
        if self.finish == "argmax":
            names = _names(main)
            if len(set(names)) > 1:
                return PeerAnswer(min(names), "argmax-tie")
            return PeerAnswer(names[0] if names else "")
        if self.finish == "names":
            names = _names(main)
            explanation = "duplicate-names" if len(names) != len(set(names)) else None
            return PeerAnswer("|".join(sorted(set(names))), explanation)
        if self.finish == "count":
            count, names = int(main), _names(out["names"])
            if count != len(names):
                raise PeerEngineError(f"kopl Count {count} but What lists {len(names)} names: {self.program}")
            explanation = "duplicate-count" if len(names) != len(set(names)) else None
            return PeerAnswer(str(len(set(names))), explanation)
        if self.finish == "verifyrel":
            return PeerAnswer("yes" if int(main) > 0 else "no")
        if self.finish == "verifycount":
            count, names = int(main), _names(out["names"])
            explanation = "duplicate-count" if len(names) != len(set(names)) else None
            holds = _COMPARE[self.op](Decimal(len(set(names))), Decimal(self.bound))
            return PeerAnswer("yes" if holds else "no", explanation)
        # The rest reads numbers: a QueryAttr operand must stand on exactly one entity.
        tags = []
        for side in ("", "left-", "right-"):
            if side + "names" in out:
                distinct = set(_names(out[side + "names"]))
                if len(distinct) != 1:
                    return PeerAnswer(ERROR, "queryattr-not-one-entity")
        if self.finish == "verify":
            return PeerAnswer(str(main))
        if self.finish == "value":
            value, tag = _one_number(main, self.program)
            return PeerAnswer(value, tag)
        if self.finish == "compare":
            (left, tag_l), (right, tag_r) = (_one_number(out[k], self.program) for k in ("left", "right"))
            tags = [t for t in (tag_l, tag_r) if t]
            answer = "yes" if _COMPARE[self.op](Decimal(left), Decimal(right)) else "no"
            if "between" in out and Decimal(left) != Decimal(right):
                chosen = str(out["between"])
                left_name = self.calls[self.roles.index("left")][0]["inputs"][0]
                if (chosen == left_name) != (answer == "yes"):
                    return PeerAnswer(f"inconsistent: SelectBetween chose {chosen}")
            return PeerAnswer(answer, tags[0] if tags else None)
        raise AssertionError(self.finish)

    def kopl_engine_answer(self, outputs: Sequence[str]) -> PeerAnswer:
        """Our canonical answer from ``kopl-engine``'s one-string outputs, as far as they carry it.

        For a set, kopl-engine prints only its first name (smallest id) and ``no`` when it
        is empty: the returned canonical form is then what ours *must* reduce to, i.e. the
        comparison is ``first_name(ours) == theirs`` (see :func:`reduce_for_kopl_engine`).
        """
        out = dict(zip(self.roles, outputs))
        main = out.get("main")
        if self.finish in ("names", "argmax"):
            if main == "no":
                return PeerAnswer("", "empty-as-no")
            return PeerAnswer(main, "first-name-only")
        if self.finish == "count":
            return PeerAnswer(str(int(main)))
        if self.finish == "value":
            return PeerAnswer(format_number(Decimal(main)))
        if self.finish == "verify":
            return PeerAnswer(main)
        if self.finish == "verifyrel":
            return PeerAnswer("yes" if int(main) > 0 else "no")
        if self.finish == "compare":
            left, right = Decimal(out["left"]), Decimal(out["right"])
            answer = "yes" if _COMPARE[self.op](left, right) else "no"
            if "between" in out and left != right:
                left_name = self.calls[self.roles.index("left")][0]["inputs"][0]
                if (out["between"] == left_name) != (answer == "yes"):
                    return PeerAnswer(f"inconsistent: SelectBetween chose {out['between']}")
            return PeerAnswer(answer)
        raise AssertionError(self.finish)


def reduce_for_kopl_engine(plan: PeerPlan, ours: str) -> str:
    """Our canonical answer cut down to what ``kopl-engine`` can print (first name only)."""
    if plan.finish in ("names", "argmax"):
        return ours.split("|")[0] if ours else ""
    return ours


def _one_number(output: object, program: str) -> tuple[str, str | None]:
    """The number of a QueryAttr list (one entity, possibly listed several times) or a Count."""
    values = output if isinstance(output, list) else [output]
    try:
        numbers = {format_number(Decimal(str(v).split()[0])) for v in values}
    except (InvalidOperation, IndexError):
        raise PeerEngineError(f"not a number from kopl: {values!r}: {program}") from None
    if len(numbers) != 1:
        raise PeerEngineError(f"expected one value, kopl gave {values!r}: {program}")
    return numbers.pop(), ("duplicate-values" if len(values) > 1 else None)


_COMPARE: dict[str, Callable[[Decimal, Decimal], bool]] = {
    ">": lambda a, b: a > b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b, "=": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def _raise_failed(outputs: Sequence[object]) -> None:
    for output in outputs:
        if isinstance(output, BaseException):
            raise PeerEngineError(f"kopl failed: {type(output).__name__}: {output}")


def _names(output: object) -> list[str]:
    if isinstance(output, list):
        return [str(x) for x in output]
    return [str(output)]


def plan_for(program: Program | str) -> PeerPlan:
    """The KoPL plan of a program (see the module docstring for each final step).

    :raises kopl2sparql.kqapro.NoKQAProCounterpart: for programs with no KoPL counterpart
        (Diff, Argmax not followed by QueryName, >=/<= in FilterNum/VerifyNum, ...).
    """
    if isinstance(program, str):
        from kopl2sparql.syntax import parse
        program = parse(program)
    text = program.canonical()
    steps = program.steps
    if OPERATORS[steps[-1].op].pushes is ValueType.ENTITIES:
        # A program ending in a set: read it as QueryName would.
        steps = (*steps, Step("QueryName"))
    last = steps[-1]

    def kqa(*parts: Step) -> tuple[dict, ...]:
        return tuple(to_kqapro(Program(tuple(parts)), strict=True))

    def names_of(branch: tuple[Step, ...]) -> tuple[dict, ...] | None:
        """What lists the entities a final QueryAttr reads (None for a Count operand)."""
        return kqa(*branch[:-1], Step("QueryName")) if branch[-1].op == "QueryAttr" else None

    if last.op == "Compare":
        body = steps[:-1]
        split = _split_two(body)
        left, right = body[:split], body[split:]
        calls, roles = [kqa(*left), kqa(*right)], ["left", "right"]
        for side, branch in (("left-names", left), ("right-names", right)):
            listed = names_of(branch)
            if listed is not None:
                calls.append(listed)
                roles.append(side)
        op = last.args[0]
        if (op in (">", "<") and len(left) == len(right) == 2 and left[0].op == right[0].op == "Find"
                and left[1].op == right[1].op == "QueryAttr" and left[1].args == right[1].args):
            # The KoPL way to compare two entities by an attribute; it must agree.
            calls.append(({"function": "Find", "inputs": [left[0].args[0]], "dependencies": []},
                          {"function": "Find", "inputs": [right[0].args[0]], "dependencies": []},
                          {"function": "SelectBetween",
                           "inputs": [left[1].args[0], "greater" if op == ">" else "less"],
                           "dependencies": [0, 1]}))
            roles.append("between")
        return PeerPlan(text, tuple(calls), tuple(roles), "compare", op)
    if last.op == "VerifyRel":
        relation, entity = last.args
        rewritten = steps[:-1] + (Step("Relate", (relation,)), Step("Find", (entity,)), Step("And"),
                                  Step("Count"))
        return PeerPlan(text, (kqa(*rewritten),), ("main",), "verifyrel")
    if last.op == "Count":
        return PeerPlan(text, (kqa(*steps), kqa(*steps[:-1], Step("QueryName"))), ("main", "names"), "count")
    if last.op == "QueryName" and len(steps) >= 2 and steps[-2].op in ("Argmax", "Argmin"):
        return PeerPlan(text, (kqa(*steps),), ("main",), "argmax")
    if last.op == "QueryName":
        return PeerPlan(text, (kqa(*steps),), ("main",), "names")
    if last.op == "VerifyNum" and steps[-2].op == "Count":
        # KoPL's VerifyNum reads attribute values, not a count (it raises TypeError on an
        # int): the count comes from KoPL, the comparison with the bound is made here.
        counted = steps[:-1]
        return PeerPlan(text, (kqa(*counted), kqa(*counted[:-1], Step("QueryName"))), ("main", "names"),
                        "verifycount", op=last.args[0], bound=last.args[1])
    if last.op in ("QueryAttr", "VerifyNum"):
        operand = steps if last.op == "QueryAttr" else steps[:-1]
        listed = names_of(operand)
        calls, roles = (kqa(*steps),), ("main",)
        if listed is not None:
            calls, roles = calls + (listed,), roles + ("names",)
        return PeerPlan(text, calls, roles, "value" if last.op == "QueryAttr" else "verify")
    raise NoKQAProCounterpart(f"no KoPL plan for a program ending in {last.op}")


def _split_two(steps: tuple[Step, ...]) -> int:
    """Index where the second of two value-producing branches starts."""
    def one_value(part: tuple[Step, ...]) -> bool:
        depth = 0
        for step in part:
            pops = len(OPERATORS[step.op].pops)
            if pops > depth:
                return False
            depth += 1 - pops
        return depth == 1

    for i in range(1, len(steps)):
        if one_value(steps[:i]) and one_value(steps[i:]):
            return i
    raise ConfigError(f"Compare needs two value branches: {';'.join(s.text() for s in steps)}")


def functions_and_inputs(call: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    """``kopl``'s calling convention: parallel lists of function names and inputs."""
    return [s["function"] for s in call], [list(s["inputs"]) for s in call]


# ---- kopl (pure Python, in process) --------------------------------------------------------

class KoplRunner:
    """The official ``kopl`` engine over a KB dict (it mutates the dict: pass a fresh one)."""

    def __init__(self, kb_dict: dict):
        os.environ.setdefault("TQDM_DISABLE", "1")
        try:
            from kopl.kopl import KoPLEngine
        except ImportError as exc:
            raise ConfigError(f"the kopl package is not installed ({exc}); pip install '.[peers]'") from None
        # KB() prints progress on stdout; keep the caller's stdout clean.
        with contextlib.redirect_stdout(io.StringIO()):
            self.engine = KoPLEngine(kb_dict)

    def call(self, steps: Sequence[dict]) -> object:
        """One KoPL program; the engine's output, or the Exception it raised."""
        functions, inputs = functions_and_inputs(steps)
        try:
            return self.engine.forward(functions, inputs, ignore_error=False, show_details=False)
        except Exception as exc:   # noqa: BLE001 - the peer's own failure is data here
            return exc

    def answer(self, plan: PeerPlan) -> PeerAnswer:
        """Run every call of ``plan`` and combine the outputs.

        A name kopl does not know makes its ``Find`` an empty set and the program runs on;
        ours refuses the program ("unknown entity"): answered as :data:`ERROR`, tagged.
        """
        # name_to_id is a defaultdict: an unknown name may be present with no ids.
        if any(not self.engine.kb.name_to_id.get(name) for name in plan.entity_names()):
            return PeerAnswer(ERROR, "unknown-entity")
        return plan.kopl_answer([self.call(c) for c in plan.calls])


# ---- kopl-engine (C++, in a child process) --------------------------------------------------

@dataclass(frozen=True)
class EngineBatch:
    """Outputs of a kopl-engine batch, one per program, with timings in seconds."""

    outputs: list[str]
    seconds: list[float]
    init_seconds: float


def run_kopl_engine(kb_json: Path | str, programs: Sequence[Sequence[dict]], *, workers: int = 1,
                    timeout: float = 300.0) -> EngineBatch:
    """Run KQA Pro programs on ``kopl-engine`` in a child process.

    The C++ engine exits its whole process on bad input, so it never runs in ours.

    :raises PeerEngineError: the engine is missing, died (exit status and how many programs
        it had answered), or timed out.
    """
    kb_json = Path(kb_json)
    if not kb_json.is_file():
        # kopl-engine would kill its process on a missing file; say it here instead.
        raise ConfigError(f"no such KB JSON file: {kb_json}")
    payload = json.dumps({"kb": str(kb_json), "workers": workers, "programs": [list(p) for p in programs]})
    try:
        proc = subprocess.run([sys.executable, "-m", "synkqa.benchmark.peers", "kopl-engine"], input=payload,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise PeerEngineError(f"kopl-engine did not finish {len(programs)} programs in {timeout:g} s") from None
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    header = next((x for x in lines if "init_seconds" in x), None)
    results = [x for x in lines if "output" in x]
    if proc.returncode != 0 or header is None or len(results) != len(programs):
        tail = " ".join(proc.stderr.split()[-30:])
        at = f" at program {len(results) + 1} of {len(programs)}" if header else " while loading the KB"
        raise PeerEngineError(f"kopl-engine exited with status {proc.returncode}{at}: {tail}")
    return EngineBatch([r["output"] for r in results], [r["seconds"] for r in results], header["init_seconds"])


def _kopl_engine_child() -> int:
    """Child side of :func:`run_kopl_engine`: JSON request on stdin, JSON lines on the saved stdout."""
    request = json.load(sys.stdin)
    # The C++ library prints on file descriptor 1: keep a private copy of stdout for the
    # results and point fd 1 at stderr, so its chatter cannot corrupt the protocol.
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        from kopl_engine import engine as ke
    except ImportError as exc:
        print(f"kopl-engine is not installed ({exc}); pip install '.[peers]'", file=sys.stderr)
        return 3
    start = time.perf_counter()
    executor = ke.init(request["kb"], int(request["workers"]))
    results.write(json.dumps({"init_seconds": time.perf_counter() - start}) + "\n")
    for steps in request["programs"]:
        program = ke.parse_program(steps)
        t0 = time.perf_counter()
        output = ke.forward(executor, program, False)
        elapsed = time.perf_counter() - t0
        results.write(json.dumps({"output": output.strip(), "seconds": elapsed}) + "\n")
    results.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["kopl-engine"]:
        sys.exit(_kopl_engine_child())
    print("usage: python -m synkqa.benchmark.peers kopl-engine  (JSON request on stdin)", file=sys.stderr)
    sys.exit(2)
