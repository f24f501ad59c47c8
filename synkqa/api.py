"""The toolkit in a few calls, for library users and the web service: read a program,
compile it, execute or trace it on a KB, evaluate predictions.

>>> import synkqa.api as sk                                            # doctest: +SKIP
>>> kb = sk.open_kb("campus.ttl")                                      # doctest: +SKIP
>>> sk.execute("Find(Alex Kim);Relate(advisor);QueryName()", kb).canonical()   # doctest: +SKIP
'Ada Lovelace|Edsger Dijkstra'
>>> print(sk.compile("Find(City_0001);RelateInv(born_in);Count()").sparql)     # doctest: +SKIP

Without ``kb`` every call uses the SynKQA-Pro KB (seed 42, scale 1), built on first use.
Errors are the toolkit's one hierarchy (:class:`~kopl2sparql.errors.SynKQAError`): a
:class:`ProgramError` locates the culprit in the program, an :class:`ExecutionError` names
the step the KB could not answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopl2sparql.answer import Answer
from kopl2sparql.compiler import CompiledQuery, compile_program
from kopl2sparql.errors import ProgramSyntaxError
from kopl2sparql.program import Program
from kopl2sparql.runtime import TraceStep
from kopl2sparql.typecheck import CheckedProgram, check
from ontology import Schema


@dataclass(frozen=True)
class KB:
    """A knowledge base to run programs on: a Turtle file, or the SynKQA-Pro KB of (seed, scale)."""

    path: Path | None = None
    seed: int = 42
    scale: int = 1

    @property
    def schema(self) -> Schema:
        from synkqa.benchmark.executors import schema_for
        return schema_for(self.seed, self.scale, self.path)

    def executor(self, backend: str = "native", cross_check: bool = False):
        """The executor for ``backend`` (``native``, ``oxigraph`` or an endpoint URL holding this KB)."""
        from synkqa.benchmark.executors import get_executor
        return get_executor(backend, self.seed, self.scale, kb=self.path, cross_check=cross_check)


def open_kb(path: str | Path | None = None, *, seed: int = 42, scale: int = 1) -> KB:
    """A Turtle KB of any schema (``path``), or the SynKQA-Pro KB; its schema is read once.

    :raises ConfigError: the file is missing or not valid Turtle.
    """
    kb = KB(Path(path) if path is not None else None, seed, scale)
    kb.schema                                     # read (and validate) now, not at first use
    return kb


def read_program(program: str | Sequence | Program) -> Program:
    """A program from the text syntax, from KQA Pro's function list (a list, or JSON text
    starting with ``[``), or a :class:`Program` as it is.

    :raises ProgramSyntaxError: for text that does not parse or a list that does not map.
    """
    if isinstance(program, Program):
        return program
    from kopl2sparql.kqapro import from_kqapro
    if isinstance(program, str):
        if program.lstrip().startswith("["):
            try:
                steps = json.loads(program)
            except json.JSONDecodeError as exc:
                raise ProgramSyntaxError(f"not valid KQA Pro JSON: {exc.msg}", program,
                                         (exc.pos, exc.pos + 1)) from None
            except RecursionError:
                raise ProgramSyntaxError("KQA Pro JSON nested too deeply", program) from None
            return from_kqapro(steps)
        from kopl2sparql.syntax import parse
        return parse(program)
    return from_kqapro(list(program))


def _kb(kb: KB | None) -> KB:
    return kb if kb is not None else KB()


def typecheck(program, kb: KB | None = None) -> CheckedProgram:
    """The program's types on the KB's schema (every intermediate value).

    :raises ProgramError: with the step and the culprit.
    """
    return check(read_program(program), _kb(kb).schema)


def compile(program, kb: KB | None = None) -> CompiledQuery:  # noqa: A001 - the verb users expect
    """The program as one SPARQL query for the KB (``.sparql``), with its run-time guards.

    :raises ProgramError: for an ill-typed program.
    """
    schema = _kb(kb).schema
    parsed = read_program(program)
    check(parsed, schema)
    return compile_program(parsed, schema)


def execute(program, kb: KB | None = None, backend: str = "native", cross_check: bool = False) -> Answer:
    """The program's answer (``.canonical()`` is the string answers are compared by).

    :raises ProgramError, ExecutionError: (and EngineDisagreement with ``cross_check``).
    """
    return _kb(kb).executor(backend, cross_check).execute(read_program(program))


def trace(program, kb: KB | None = None, backend: str = "native") -> list[TraceStep]:
    """Every step's value; on an ExecutionError the steps done so far are on ``error.trace``."""
    return _kb(kb).executor(backend).trace(read_program(program))


def evaluate(records: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> dict:
    """Answer accuracy and program exact match (percent) of ``predictions`` against gold
    ``records``, matched by ``id`` (both: dicts with ``id``, ``answer``, ``program``; a gold
    record's program is its ``kopl`` text when it has one).

    :raises DatasetError: for a prediction without a gold record, or a missing field.
    """
    from kopl2sparql.errors import DatasetError
    from evaluation.metrics import score
    from parsers.base import Prediction

    gold = {}
    for record in records:
        if "id" not in record or "answer" not in record:
            raise DatasetError("every gold record needs 'id' and 'answer'")
        gold[str(record["id"])] = {"answer": record["answer"],
                                   "kopl": record.get("kopl", record.get("program"))}
    rows, preds = [], []
    for p in predictions:
        key = str(p.get("id"))
        if key not in gold:
            raise DatasetError(f"prediction {key!r} has no gold record")
        program = p.get("program")
        rows.append(gold[key])
        preds.append(Prediction(key, program if isinstance(program, str) else None, p.get("answer")))
    return score(rows, preds)


__all__ = ["KB", "open_kb", "read_program", "typecheck", "compile", "execute", "trace", "evaluate"]
