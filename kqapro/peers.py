"""Full-KoPL programs on the two published KoPL engines, answers in our canonical form.

:class:`KoplPeer` runs KQA Pro JSON programs on the official ``kopl`` 0.0.5 (in process,
by calling its functions along the program's ``dependencies``) and converts every answer to
an :class:`~kqapro.answers.Answer` under OUR rules. Where ``kopl``'s raw behaviour differs
from a rule on a program, :attr:`PeerResult.notes` names it (one tag per step where it made
a difference), so a cross-check counts the known differences instead of hiding them:

==================  ==================  ===========================================================
our rule            note tag            why / what ``kopl`` does instead
==================  ==================  ===========================================================
answers-are-sets    duplicate-items     answers are sets of distinct texts (SPARQL ``DISTINCT``);
                                        ``kopl`` lists What/QueryAttr*/QueryRelation results once
                                        per entity or fact, so its final list had duplicates
count-distinct      count-duplicates    Count counts distinct entities (``COUNT(DISTINCT)``);
                                        ``kopl`` takes ``len`` of a list that Relate/Filter* fill
                                        once per matching fact
entities-only       concepts-dropped    FindAll and Find give entities; ``kopl``'s FindAll also
                                        returns every concept and Find(name) finds concepts of
                                        that name (``FindAll;FilterConcept(athlete)`` would count
                                        the concept "basketball player"): dropped before use
ties-kept           select-tie          SelectBetween answers every candidate tied with the
                                        winning value, as SelectAmong does; ``kopl`` returns one
unit-vote           unit-vote           Select* compare only the unit most distinct (entity,
                                        fact) candidates use, ties to the smallest unit text;
                                        ``kopl`` counts its raw list (an entity listed twice
                                        votes twice) and breaks ties by first seen, which for
                                        SelectAmong is ``set`` order (hash-randomised)
empty-select        empty-select        Select* with no quantity candidate answer the empty set;
                                        ``kopl`` raises IndexError
backward-derived    missing-backward    Relate(r, backward) follows the forward facts; ``kopl``
                                        reads the backward copies, so a KB JSON without them
                                        (kopl's own example KB) finds nothing
==================  ==================  ===========================================================

Everything else is ``kopl``'s semantics exactly: FilterConcept includes sub-concepts;
Filter*/QFilter* use ``kopl``'s ``comp`` (year/date ``=`` is containment, quantities compare
only in equal units, ``"188 centimetre"`` has a unit, ``"188"`` has unit ``1``);
QueryAttrUnderCondition/QueryAttrQualifier read their value through the KB's key type;
Verify* answer yes / no / not sure (no on empty input); QueryRelation follows forward facts
from the first input to the second. Values are converted to our :class:`~kqapro.values.Value`
and printed by :meth:`Value.text`, never by ``kopl``'s ``str()`` (which prints ``2.000001``
as ``2`` and ``-2.5`` as ``-2``). An exception inside ``kopl`` is an error result
(``"<ExceptionType>: <message>"``); a malformed program raises
:class:`~ontology.errors.ProgramError` (it is our input, not the peer's behaviour).

:class:`KoplEnginePeer` runs VisKoP's C++ ``kopl-engine`` 0.1.1 in a child process that loads
the KB once and runs each program in a forked copy of itself, so a program that kills the
engine costs a copy, not a reload. Observed on this machine (the tests pin the
important ones), ``kopl-engine`` answers every program with ONE string:

==============  =================================================================================
answer kind     what ``kopl-engine`` prints
==============  =================================================================================
names           the first name only (entities sorted by id); ``no`` for an empty set. Select*: one
                name; its choice of unit matched our unit vote in every case tried
count           a decimal integer, counting one per fact after Relate/Filter*, concepts included
                after FindAll
values          the first value: a string as is; a year ``2003`` / ``-44``; a date
                ``1984-12-30``; a quantity ``206 centimetre`` / ``199110`` (no unit for ``1``),
                an integral JSON number without a fraction, a JSON float in Python-like text
                (``1.5``, ``100.0``, ``100000000000000000000.0``), one within about 1e-5 of an
                integer rounded to it (``2.000001`` -> ``2.0``, ``1e-7`` -> ``0.0``); with about
                12 or more significant digits the returned buffer is garbage (UnicodeDecodeError);
                ``no`` for an empty list of values (QueryAttr*, QueryRelationQualifier)
relations       the first relation name; ``no`` when there is none
verdict         ``yes`` / ``no`` / ``not sure`` -- but ``yes`` when the input list is empty
==============  =================================================================================

Other outputs: ``Unsupported Operator!`` (an unknown function, ``QueryName`` included: sent
as ``What``), ``Dependency Error!`` (a dependency out of range), ``Not Found in KB``
(QueryAttrUnderCondition with an unknown qualifier key); QueryAttrUnderCondition answers
the empty string in every case tried. It exits its process on a bad Relate direction (125),
a bad Select op (234), an unparsable number or date (SIGABRT from ``stod``/``stoi``,
also while loading a KB with a date before year 0) and Verify* after Count/What (SIGSEGV).

:func:`compare_engine` classifies our answer against the engine's string:

==============================  =======================================================================
verdict / reason                when (checked in this order; ``agree`` is tested right after the errors)
==============================  =======================================================================
incomparable, crashed           the engine killed its process on this program (``crashed (exit N)``,
                                N < 0 is a signal)
incomparable, timeout           the engine did not answer in time (its child was killed)
incomparable, garbled-output    the engine returned a dangling buffer (long number texts)
incomparable, invalid-program   the program is malformed (never sent)
incomparable, engine-error      the engine printed one of its error messages, or its Python binding
                                raised
agree                           the engine's string is our whole answer (numbers parsed, ``206`` =
                                ``206.0``); a count equal; a verdict equal
incomparable,                   the program Finds a name that several ids (entities or concepts) share:
one-entity-per-name             the engine's Find keeps one of them, so it may have answered another
                                question (its FindAll, Relate and filters keep every entity: only
                                Find is keyed by name, and every What/Select input it feeds depends
                                on that choice)
incomparable,                   a What/Count whose input can hold concepts (FindAll on a KB with
concepts-included               concepts, Find of a concept name, And/Or/Relate over those): the
                                engine's FindAll and Find return concepts, ours entities only
incomparable,                   the program uses QueryAttrUnderCondition, which the engine answers with
under-condition-unsupported     the empty string (values) or, through Verify*, ``yes``
incomparable,                   a Verify* whose input values are empty (by ``kopl``): the engine says
verify-empty-yes                ``yes``, ours ``no``
incomparable,                   a Count the engine answers with ``kopl``'s raw ``len`` (one per fact)
count-duplicates                where ours counts distinct entities
incomparable,                   a larger Count after Relate/Filter*: the engine keeps an entity once
count-multiset                  per fact through Or and FilterConcept too (kopl makes a set there)
incomparable,                   ours has several items and the engine's single string is one of them
first-item-only
incomparable, empty-as-no       ours is empty and the engine says ``no`` (also its Verify "no")
incomparable,                   the engine printed an integer within 1e-5 of our non-integral number
near-integer-rounded            (``2.000001`` printed ``2.0``)
disagree                        none of the above
==============================  =======================================================================
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kqapro.answers import Answer
from kqapro.functions import ALIASES, FINAL, FUNCTIONS
from kqapro.values import NO_UNIT, Value
from ontology.errors import ProgramError, SynKQAError

__all__ = ["PeerEngineError", "PeerResult", "PeerRawResult", "KoplPeer", "KoplEnginePeer",
           "compare_engine", "normalize_program", "to_value", "same_value_text", "near_integer",
           "ENGINE_MESSAGES"]

ERROR_CLIP = 200
"""Characters of an exception message kept in an error result."""


class PeerEngineError(SynKQAError):
    """A peer engine is not installed, or could not load the KB."""


@dataclass(frozen=True)
class PeerResult:
    """``kopl``'s answer under our rules (None on error) and the differences it bridged."""

    answer: Answer | None
    error: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PeerRawResult:
    """``kopl-engine``'s one string for a program, or why there is none."""

    text: str | None
    error: str | None = None
    seconds: float | None = field(default=None, compare=False)
    """Time the engine took for the program inside the child (parse + forward); a
    measurement, not part of the result."""


# ---- programs -------------------------------------------------------------------------------

def normalize_program(program: Any, *, answer: bool = True) -> list[dict]:
    """KQA Pro JSON steps, checked and with ``QueryName`` spelled ``What``.

    Accepts a list of step dicts, ``{"program": [...]}`` or anything with ``to_json()``
    (a :class:`kqapro.program.Program`). VisKoP pads ``dependencies`` with ``-1``: negative
    entries are dropped (they would index from the end in Python).

    :raises ProgramError: unknown function, wrong number of inputs or dependencies, a
        dependency that is not an earlier step, or (with ``answer``) a last step that gives
        no answer.
    """
    if hasattr(program, "to_json"):
        program = program.to_json()
    if isinstance(program, dict) and "program" in program:
        program = program["program"]
    if not isinstance(program, (list, tuple)) or not program:
        raise ProgramError("a program is a non-empty list of steps")
    steps = [_normal_step(step, i) for i, step in enumerate(program)]
    last = FUNCTIONS[steps[-1]["function"]]
    if answer and last.gives not in FINAL:
        raise ProgramError(f"the last step {last.name} gives {last.gives}, not an answer", step=len(steps))
    return steps


def _normal_step(step: object, i: int) -> dict:
    where = f"step {i + 1}"
    if not isinstance(step, dict):
        raise ProgramError(f"{where}: expected an object with 'function', 'inputs', 'dependencies'", step=i + 1)
    name = step.get("function")
    name = ALIASES.get(name, name) if isinstance(name, str) else name
    function = FUNCTIONS.get(name) if isinstance(name, str) else None
    if function is None:
        raise ProgramError(f"{where}: unknown function {str(name)[:80]!r}", step=i + 1)
    inputs = step.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
        raise ProgramError(f"{where}: 'inputs' must be a list of strings", step=i + 1)
    if len(inputs) != len(function.inputs):
        raise ProgramError(f"{where}: {name} takes {len(function.inputs)} inputs, got {len(inputs)}", step=i + 1)
    deps = step.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in deps):
        raise ProgramError(f"{where}: 'dependencies' must be a list of step indexes", step=i + 1)
    deps = [d for d in deps if d >= 0]
    if len(deps) != function.arity or not all(d < i for d in deps):
        raise ProgramError(f"{where}: {name} needs {function.arity} dependencies on earlier steps, got {deps}",
                           step=i + 1)
    return {"function": name, "inputs": list(inputs), "dependencies": deps}


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:ERROR_CLIP]}"


# ---- kopl (pure Python, in process) ---------------------------------------------------------

@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    """kopl's KB() prints statistics on stdout and tqdm bars on stderr."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def _kopl_engine_class() -> type:
    try:
        with _silenced():
            from kopl.kopl import KoPLEngine
    except ImportError as exc:
        raise PeerEngineError(f"the kopl package is not installed ({exc}); pip install '.[peers]'") from None
    return KoPLEngine


def to_value(value: Any) -> Value:
    """A ``kopl`` ValueClass as our Value (never through its ``str()``)."""
    if value.type == "string":
        return Value.string(value.value)
    if value.type == "quantity":
        return Value.quantity(float(value.value), value.unit or NO_UNIT)
    if value.type == "year":
        return Value.year(int(value.value))
    if value.type == "date":
        d = value.value
        return Value.date((d.year, d.month, d.day))
    raise TypeError(f"unknown kopl value type {value.type!r}")


class KoplPeer:
    """The official ``kopl`` engine on a private deep copy of a KQA Pro KB dict."""

    def __init__(self, kb: dict):
        engine_class = _kopl_engine_class()
        with _silenced():
            self.engine = engine_class(copy.deepcopy(kb))
        self._concepts = frozenset(kb.get("concepts", {}))
        self._incoming: dict[str, dict[str, list[tuple[str, int]]]] = {}

    # -- public ------------------------------------------------------------------------------
    def run(self, program: Any) -> PeerResult:
        """Our answer to ``program`` by ``kopl``, or its error; the notes either way."""
        steps = normalize_program(program)
        notes: list[str] = []
        try:
            memory = self._execute(steps, notes)
            answer = self._answer(steps[-1]["function"], memory[-1], notes)
        except Exception as exc:  # noqa: BLE001 - the peer's failure is a result here
            return PeerResult(None, _error_text(exc), tuple(notes))
        return PeerResult(answer, None, tuple(notes))

    def trace(self, program: Any) -> list[Any]:
        """Every step's output as passed on (kopl's raw form, our rules applied): entity
        steps ``(ids, facts)`` with duplicates kept, value steps lists of ValueClass, Count
        the distinct count, Select* the winners' names. Any last step is allowed. Raises what
        kopl raises."""
        return self._execute(normalize_program(program, answer=False), [])

    # -- execution ---------------------------------------------------------------------------
    def _execute(self, steps: list[dict], notes: list[str]) -> list[Any]:
        memory: list[Any] = []
        for step in steps:
            args = [memory[d] for d in step["dependencies"]]
            memory.append(self._step(step["function"], args, step["inputs"], notes))
        return memory

    def _step(self, name: str, args: list[Any], inputs: list[str], notes: list[str]) -> Any:
        e = self.engine
        if name == "FindAll":
            return self._entities_only(e.FindAll(), notes)
        if name == "Find":
            return self._entities_only(e.Find(*inputs), notes)
        if name == "Relate":
            return self._relate(args[0], inputs[0], inputs[1], notes)
        if name == "Count":
            return self._count(args[0], notes)
        if name == "SelectBetween":
            return self._select_between(args[0], args[1], inputs[0], inputs[1], notes)
        if name == "SelectAmong":
            return self._select_among(args[0], inputs[0], inputs[1], notes)
        if name == "What":
            return e.QueryName(*args)
        # every other function: kopl's own, on our inputs
        return getattr(e, name)(*args, *inputs)

    def _entities_only(self, output: tuple, notes: list[str]) -> tuple[list[str], None]:
        ids = output[0]
        kept = [i for i in ids if i not in self._concepts]
        if len(kept) != len(ids):
            notes.append("concepts-dropped")
        return kept, None

    def _relate(self, entities: tuple, relation: str, direction: str, notes: list[str]) -> tuple:
        raw = self.engine.Relate(entities, relation, direction)
        if direction != "backward":
            return raw
        derived = self._backward_from_forward(entities[0], relation)
        if sorted(raw[0]) != sorted(derived[0]):
            notes.append("missing-backward")
        return derived

    def _backward_from_forward(self, tails: Iterable[str], relation: str) -> tuple[list[str], list[dict]]:
        """Heads of the forward ``relation`` facts ending in ``tails``, one per fact (as
        kopl's Relate lists one object per fact); the facts are the forward ones."""
        incoming = self._incoming_index(relation)
        kb = self.engine.kb
        ids, facts = [], []
        for tail in set(tails):
            for head, idx in incoming.get(tail, ()):
                ids.append(head)
                facts.append(kb.entities[head]["relations"][idx])
        return ids, facts

    def _incoming_index(self, relation: str) -> dict[str, list[tuple[str, int]]]:
        if relation not in self._incoming:
            kb = self.engine.kb
            index: dict[str, list[tuple[str, int]]] = {}
            for head, idxs in kb.relation_inv_index.get((relation, "forward"), {}).items():
                for idx in idxs:
                    index.setdefault(kb.entities[head]["relations"][idx]["object"], []).append((head, idx))
            self._incoming[relation] = index
        return self._incoming[relation]

    def _count(self, entities: tuple, notes: list[str]) -> int:
        distinct = len(set(entities[0]))
        if distinct != self.engine.Count(entities):
            notes.append("count-duplicates")
        return distinct

    # -- SelectBetween / SelectAmong under our unit vote -------------------------------------
    def _quantities(self, ids: Iterable[str], key: str) -> list[tuple[str, Any]]:
        """(entity, quantity ValueClass) for each ``key`` fact of each id, in order (``.get``
        so kopl's defaultdict indexes are not grown by the lookup)."""
        kb = self.engine.kb
        index = kb.attribute_inv_index.get(key, {})
        out = []
        for ent in ids:
            for idx in index.get(ent, ()):
                value = kb.entities[ent]["attributes"][idx]["value"]
                if value.type == "quantity":
                    out.append((ent, value))
        return out

    def _select_between(self, left: tuple, right: tuple, key: str, op: str, notes: list[str]) -> list[str]:
        union = list(dict.fromkeys([*left[0], *right[0]]))      # each entity once
        kopl_candidates = self._quantities(left[0], key) + self._quantities(right[0], key)
        names = self._select(union, key, smallest=(op == "less"), kopl_candidates=kopl_candidates, notes=notes)
        if len(names) > 1:
            notes.append("select-tie")
        return names

    def _select_among(self, entities: tuple, key: str, op: str, notes: list[str]) -> list[str]:
        # kopl iterates set(ids): the same set built the same way iterates in the same order
        kopl_candidates = self._quantities(set(entities[0]), key)
        return self._select(list(dict.fromkeys(entities[0])), key, smallest=(op == "smallest"),
                            kopl_candidates=kopl_candidates, notes=notes)

    def _select(self, ids: list[str], key: str, smallest: bool, kopl_candidates: list[tuple[str, Any]],
                notes: list[str]) -> list[str]:
        """Names of the candidates with the best value in the voted unit (ties kept). The op
        test mirrors kopl: only ``less``/``smallest`` minimise, anything else maximises."""
        candidates = self._quantities(ids, key)     # distinct (entity, fact) pairs
        if not candidates:
            notes.append("empty-select")
            return []
        unit = _voted_unit(Counter(v.unit for _, v in candidates))
        if _kopl_unit(kopl_candidates) != unit:
            notes.append("unit-vote")
        numbers = [(ent, float(v.value)) for ent, v in candidates if v.unit == unit]
        best = (min if smallest else max)(x for _, x in numbers)
        entities = self.engine.kb.entities
        return sorted({entities[ent]["name"] for ent, x in numbers if x == best})

    # -- the answer ----------------------------------------------------------------------------
    def _answer(self, name: str, output: Any, notes: list[str]) -> Answer:
        kind = FUNCTIONS[name].gives
        if kind == "count":
            return Answer.count(output)
        if kind == "verdict":
            return Answer.verdict(output)
        if name in ("SelectBetween", "SelectAmong"):
            return Answer.of("names", output)
        texts = [to_value(v).text() for v in output] if kind == "values" else [str(x) for x in output]
        if len(texts) != len(set(texts)):
            notes.append("duplicate-items")
        return Answer.of(kind, texts)


def _voted_unit(counts: Counter) -> str:
    """The unit most candidates use; ties to the smallest unit text (deterministic)."""
    return min(counts, key=lambda unit: (-counts[unit], unit))


def _kopl_unit(candidates: list[tuple[str, Any]]) -> str | None:
    """kopl's choice: Counter.most_common over its raw list, ties to the first seen."""
    counts = Counter(v.unit for _, v in candidates)
    return counts.most_common(1)[0][0] if counts else None


# ---- kopl-engine (C++, in a child process) ---------------------------------------------------

ENGINE_MESSAGES = ("Unsupported Operator!", "Dependency Error!", "Not Found in KB")
"""What kopl-engine prints instead of an answer when it does not crash."""

_CHILD_COMMAND = "kopl-engine-child"


class KoplEnginePeer:
    """``kopl-engine`` on a KB JSON file, in a child process (see :func:`_child_main`: a
    program that kills the engine kills a forked copy; the child goes on, or is restarted
    when it dies itself or runs past ``timeout``).

    Use as a context manager; :meth:`run_many` sends programs in batches (JSON lines on the
    child's stdin, one JSON line per answer on its stdout). ``crashes`` counts the programs
    that killed the engine and the restarts.
    """

    def __init__(self, kb_path: Path | str, threads: int = 1, *, batch_size: int = 64,
                 timeout: float = 60.0, init_timeout: float = 900.0):
        self.kb_path = Path(kb_path)
        self.threads = int(threads)
        # small batches: the parent writes a whole batch before reading, and the child's
        # answers (~100 bytes each) must fit the stdout pipe meanwhile
        self.batch_size = batch_size
        self.timeout = timeout
        self.init_timeout = init_timeout
        self.crashes = 0
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue | None = None
        self._stderr: Any = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "KoplEnginePeer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the child and wait until it has loaded the KB.

        :raises PeerEngineError: no such file, or the engine died loading it.
        """
        if self._proc is not None:
            return
        if not self.kb_path.is_file():
            # kopl-engine would kill its process on a missing file; say it here instead
            raise PeerEngineError(f"no such KB JSON file: {self.kb_path}")
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
                   TQDM_DISABLE="1")
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kqapro.peers", _CHILD_COMMAND, str(self.kb_path), str(self.threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
            text=True, encoding="utf-8", bufsize=1)
        self._lines = queue.Queue()
        threading.Thread(target=_pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        ready = self._read(self.init_timeout)
        if not isinstance(ready, dict) or not ready.get("ready"):
            status = self._stop()
            raise PeerEngineError(f"kopl-engine could not load {self.kb_path} (exit {status}): {self._stderr_tail()}")

    def close(self) -> None:
        """Stop the child (end of input, then kill if it lingers)."""
        if self._proc is not None:
            self._stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stop(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            return proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()                     # our own child, by its handle
            return proc.wait()

    def _restart(self) -> None:
        self._stop()
        if self._stderr is not None:
            self._stderr.close()
        self.start()

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.strip() and "it/s" not in ln]
        return " | ".join(lines[-4:])[-600:]

    # -- running -----------------------------------------------------------------------------
    def run_many(self, programs: Sequence[Any]) -> list[PeerRawResult]:
        """One result per program, in order; a program that kills the engine gets
        ``error="crashed (exit N)"`` and the rest run on (a fresh copy of) the child."""
        if self._proc is None:
            raise PeerEngineError("KoplEnginePeer is not started: use it as a context manager")
        results: list[PeerRawResult | None] = [None] * len(programs)
        pending: list[tuple[int, str]] = []
        for i, program in enumerate(programs):
            try:
                pending.append((i, json.dumps(normalize_program(program), ensure_ascii=False)))
            except ProgramError as exc:
                results[i] = PeerRawResult(None, f"ProgramError: {str(exc)[:ERROR_CLIP]}")
        while pending:
            batch, pending = pending[:self.batch_size], pending[self.batch_size:]
            pending = self._run_batch(batch, results) + pending
        return [r if r is not None else PeerRawResult(None, "not run") for r in results]

    def run(self, program: Any) -> PeerRawResult:
        return self.run_many([program])[0]

    def _run_batch(self, batch: list[tuple[int, str]], results: list[PeerRawResult | None]) -> list[tuple[int, str]]:
        """Send a batch and read its answers; returns the programs still to run after a
        crash or timeout (the child was restarted)."""
        assert self._proc is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            # a crash mid-batch closes the pipe: the answers read below tell how far it got
            self._proc.stdin.write("".join(line + "\n" for _, line in batch))
            self._proc.stdin.flush()
        for k, (i, _) in enumerate(batch):
            item = self._read(self.timeout)
            if item is _TIMEOUT:
                self._kill()
                results[i] = PeerRawResult(None, f"timeout after {self.timeout:g} s")
            elif item is None:                # end of output: the program killed the engine
                results[i] = PeerRawResult(None, f"crashed (exit {self._stop()})")
            else:
                results[i] = _raw_result(item)
                if str(item.get("error", "")).startswith("crashed"):
                    self.crashes += 1       # the child ran it in a copy that died; it goes on
                continue
            self.crashes += 1
            self._restart()
            return batch[k + 1:]
        return []

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()               # our own child, by its handle
            self._proc.wait()
            self._proc = None

    def _read(self, timeout: float) -> Any:
        assert self._lines is not None
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return _TIMEOUT


_TIMEOUT = object()


def _pump(stream: Any, lines: queue.Queue) -> None:
    """Reader thread: the child's JSON lines into a queue, None at end of output."""
    for line in stream:
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                lines.put(json.loads(line))
    lines.put(None)


def _raw_result(item: dict) -> PeerRawResult:
    if "error" in item:
        return PeerRawResult(None, str(item["error"]))
    text = str(item.get("text", ""))
    if text.strip() in ENGINE_MESSAGES:
        return PeerRawResult(None, f"engine: {text.strip()}")
    return PeerRawResult(text.rstrip("\n"), seconds=item.get("seconds"))


def _child_main(kb_path: str, threads: int) -> int:
    """Child side: load the KB, then one JSON answer line per JSON program line.

    The engine kills its process on some programs (SIGSEGV on Verify* after a qualifier
    query, exit 125/234 on bad inputs), and loading the KB again took a third of a second at
    850 entities (5% of random programs crash: most of a 10,000-program cross-check) and
    minutes at 170,000. So this process loads the KB once and runs the programs in a forked
    copy of itself (copy-on-write: a few milliseconds); when the copy dies on a program, the
    answer is ``crashed (exit N)`` and the next program runs in a fresh copy. When the engine
    runs threads of its own after loading (forking then copies only the calling thread), it
    runs the programs in this process instead and a crash ends it (the parent restarts it)."""
    # The C++ library prints on file descriptor 1: keep a private copy of stdout for the
    # protocol and point fd 1 (and Python's sys.stdout) at stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.stdin.reconfigure(encoding="utf-8")
    try:
        from kopl_engine import engine as ke
    except ImportError as exc:
        print(f"kopl-engine is not installed ({exc}); pip install '.[peers]'", file=sys.stderr)
        return 3
    started = time.perf_counter()
    executor = ke.init(kb_path, threads)
    out.write(json.dumps({"ready": True, "init_seconds": time.perf_counter() - started}) + "\n")
    if not _single_threaded():
        return _serve(ke, executor, sys.stdin, out)
    worker = None
    try:
        while True:
            line = sys.stdin.readline()
            if not line:
                return 0
            if worker is None:
                worker = _Worker(ke, executor, out.fileno())
            result = worker.ask(line)
            if result is None:              # the copy died on this program
                result = {"error": f"crashed (exit {worker.reap()})"}
                worker = None
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
    finally:
        if worker is not None:
            worker.reap()


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:                         # no /proc: not Linux, do not fork
        return False


def _serve(ke: Any, executor: Any, programs: Any, answers: Any) -> int:
    """Run each JSON program line of ``programs``; one JSON answer line each on ``answers``."""
    while True:
        line = programs.readline()
        if not line:
            return 0
        try:
            program = json.loads(line)
            started = time.perf_counter()
            text = ke.forward(executor, ke.parse_program(program), False)
            result = {"text": text, "seconds": time.perf_counter() - started}
        except UnicodeDecodeError as exc:
            # the engine returned a dangling buffer (seen for long number texts)
            result = {"error": f"garbled output ({type(exc).__name__})"}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as this program's error
            result = {"error": _error_text(exc)}
        answers.write(json.dumps(result, ensure_ascii=False) + "\n")
        answers.flush()


class _Worker:
    """A forked copy of the child with the KB loaded, serving programs over two pipes."""

    def __init__(self, ke: Any, executor: Any, protocol_fd: int):
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                            # the copy
            code = 1
            try:
                os.close(requests_w)
                os.close(answers_r)
                os.close(protocol_fd)       # only the child answers the parent
                _die_with_parent()
                code = _serve(ke, executor, open(requests_r, encoding="utf-8"),
                              open(answers_w, "w", encoding="utf-8"))
            finally:
                os._exit(code)
        os.close(requests_r)
        os.close(answers_w)
        self.pid = pid
        self.requests = open(requests_w, "w", encoding="utf-8")
        self.answers = open(answers_r, encoding="utf-8")

    def ask(self, line: str) -> dict | None:
        """The answer to one program line, or None when the copy died on it."""
        try:
            self.requests.write(line if line.endswith("\n") else line + "\n")
            self.requests.flush()
        except (BrokenPipeError, OSError):
            return None
        reply = self.answers.readline()
        return json.loads(reply) if reply else None

    def reap(self) -> int:
        """Close the pipes and wait for the copy: its exit code, or minus the signal that
        killed it (as :attr:`subprocess.Popen.returncode` reads it)."""
        for stream in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                stream.close()
        _, status = os.waitpid(self.pid, 0)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (a parent killed on a time-out
    must not leave a copy running a program)."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG


# ---- comparing our answer with kopl-engine's string -----------------------------------------

def compare_engine(ours: Answer, raw: PeerRawResult, program: Any, kb: dict, *,
                   kopl: KoplPeer | None = None) -> tuple[str, str | None]:
    """``("agree", None)``, ``("disagree", None)`` or ``("incomparable", reason)``; see the
    module docstring for the reasons and their order. ``kopl`` (built from ``kb`` and cached
    when not given) is asked only to explain a difference (empty Verify input, raw Count)."""
    if raw.error is not None:
        return "incomparable", _error_reason(raw.error)
    text = raw.text or ""
    if _agrees(ours, text):
        return "agree", None
    steps = normalize_program(program)
    reason = (_structural_reason(ours, text, steps, kb, kopl)
              or _presentation_reason(ours, text))
    return ("incomparable", reason) if reason else ("disagree", None)


def _error_reason(error: str) -> str:
    for prefix, reason in (("crashed", "crashed"), ("timeout", "timeout"), ("garbled", "garbled-output"),
                           ("ProgramError", "invalid-program")):
        if error.startswith(prefix):
            return reason
    return "engine-error"


def _agrees(ours: Answer, text: str) -> bool:
    if ours.kind == "count":
        return _integer(text) == int(ours.items[0])
    if len(ours.items) != 1:
        return False
    if ours.kind == "values":
        return same_value_text(text, ours.items[0])
    return text == ours.items[0]


def _structural_reason(ours: Answer, text: str, steps: list[dict], kb: dict,
                       kopl: KoplPeer | None) -> str | None:
    """Reasons the engine answered a different question than ours."""
    facts = _kb_facts(kb)
    final = steps[-1]
    if any(s["function"] == "Find" and facts.name_ids[s["inputs"][0]] > 1 for s in steps):
        return "one-entity-per-name"
    if final["function"] in ("What", "Count") and _may_hold_concepts(steps, final["dependencies"][0], facts):
        return "concepts-included"
    if any(s["function"] == "QueryAttrUnderCondition" for s in steps):
        return "under-condition-unsupported"
    if final["function"].startswith("Verify") and text == "yes" and ours.items == ("no",):
        if _kopl_output(kopl, kb, steps, final["dependencies"][0]) == []:
            return "verify-empty-yes"
    if final["function"] == "Count":
        counted = _kopl_output(kopl, kb, steps, final["dependencies"][0])
        if isinstance(counted, tuple) and _integer(text) == len(counted[0]):
            return "count-duplicates"
        # kopl-engine keeps an entity once per fact that reached it even through Or and
        # FilterConcept, where kopl makes a set: a larger count after a fact-giving step
        number = _integer(text)
        if number is not None and number > int(ours.items[0]) and _reached_through_facts(
                steps, final["dependencies"][0]):
            return "count-multiset"
    return None


def _reached_through_facts(steps: list[dict], index: int) -> bool:
    """Whether the subtree ending at ``index`` has a step that gives entities with facts."""
    todo = [index]
    while todo:
        step = steps[todo.pop()]
        if step["function"] == "Relate" or step["function"].startswith(("Filter", "QFilter")) \
                and step["function"] != "FilterConcept":
            return True
        todo.extend(step["dependencies"])
    return False


def _presentation_reason(ours: Answer, text: str) -> str | None:
    """Reasons the engine's one string cannot say our whole answer."""
    if ours.kind in ("names", "relations", "values") and len(ours.items) > 1:
        if any(_says(ours.kind, text, item) for item in ours.items):
            return "first-item-only"
    if not ours.items and text == "no":
        return "empty-as-no"
    if ours.kind == "values" and len(ours.items) == 1 and near_integer(text, ours.items[0]):
        return "near-integer-rounded"
    return None


def _says(kind: str, text: str, item: str) -> bool:
    if kind == "values":
        return same_value_text(text, item) or near_integer(text, item)
    return text == item


def _integer(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _split_quantity(text: str) -> tuple[float, str] | None:
    """``"206 centimetre"`` -> (206.0, "centimetre"); ``"1.5"`` -> (1.5, ""); else None."""
    number, _, unit = text.strip().partition(" ")
    try:
        value = float(number)
    except ValueError:
        return None
    return value, unit.strip()


def same_value_text(engine: str, ours: str) -> bool:
    """Whether the engine's value text says our value text: equal, or equal numbers (read
    as doubles: ``199110`` = ``199110.0``, ``1e+20`` = ``100000000000000000000.0``) in the
    same unit."""
    if engine == ours:
        return True
    a, b = _split_quantity(engine), _split_quantity(ours)
    return a is not None and b is not None and a == b


def near_integer(engine: str, ours: str) -> bool:
    """The engine printed an integer within 1e-5 of our (non-equal) number, same unit."""
    a, b = _split_quantity(engine), _split_quantity(ours)
    if a is None or b is None or a[1] != b[1] or a[0] == b[0]:
        return False
    return float(a[0]).is_integer() and abs(a[0] - b[0]) <= 1.1e-5


# ---- what compare_engine knows about a KB ------------------------------------------------------

@dataclass
class _KBFacts:
    name_ids: Counter               # name -> number of ids (entities and concepts) with it
    concept_names: frozenset[str]
    has_concepts: bool
    concept_edges: bool             # some relation fact points at a concept
    kopl: KoplPeer | None = None


_FACTS: dict[int, tuple[dict, _KBFacts]] = {}
_FACTS_KEPT = 2
"""KBs remembered by identity (a cross-check compares many programs on one KB)."""


def _kb_facts(kb: dict) -> _KBFacts:
    cached = _FACTS.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    concepts = kb.get("concepts", {})
    entities = kb.get("entities", {})
    names = Counter(c.get("name") for c in concepts.values())
    names.update(e.get("name") for e in entities.values())
    edges = any(r.get("object") in concepts for e in entities.values() for r in e.get("relations", ()))
    facts = _KBFacts(names, frozenset(c.get("name") for c in concepts.values()), bool(concepts), edges)
    while len(_FACTS) >= _FACTS_KEPT:
        _FACTS.pop(next(iter(_FACTS)))
    _FACTS[id(kb)] = (kb, facts)
    return facts


def _kopl_output(kopl: KoplPeer | None, kb: dict, steps: list[dict], index: int) -> Any:
    """kopl's output of step ``index`` (None when kopl fails on it)."""
    if kopl is None:
        facts = _kb_facts(kb)
        if facts.kopl is None:
            facts.kopl = KoplPeer(kb)
        kopl = facts.kopl
    try:
        return kopl.trace(_subprogram(steps, index))[-1]
    except Exception:  # noqa: BLE001 - no explanation then
        return None


def _subprogram(steps: list[dict], index: int) -> list[dict]:
    """The steps ``index`` depends on, renumbered, ending with step ``index``."""
    needed: set[int] = set()
    todo = [index]
    while todo:
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo.extend(steps[i]["dependencies"])
    order = sorted(needed)
    new = {old: k for k, old in enumerate(order)}
    return [dict(steps[i], dependencies=[new[d] for d in steps[i]["dependencies"]]) for i in order]


def _may_hold_concepts(steps: list[dict], index: int, facts: _KBFacts) -> bool:
    """Whether kopl-engine's output of step ``index`` can contain concepts (its FindAll and
    Find return them; FilterConcept and the attribute filters do not)."""
    step = steps[index]
    name, deps = step["function"], step["dependencies"]
    if name == "FindAll":
        return facts.has_concepts
    if name == "Find":
        return step["inputs"][0] in facts.concept_names
    if name == "And":
        return all(_may_hold_concepts(steps, d, facts) for d in deps)
    if name == "Or":
        return any(_may_hold_concepts(steps, d, facts) for d in deps)
    if name == "Relate":
        return facts.concept_edges      # it reaches concepts only along facts that end in one
    return False


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == _CHILD_COMMAND:
        sys.exit(_child_main(sys.argv[2], int(sys.argv[3])))
    print(f"usage: python -m kqapro.peers {_CHILD_COMMAND} KB.json THREADS  (programs as JSON lines on stdin)",
          file=sys.stderr)
    sys.exit(2)
