"""``synkqa compile`` and ``synkqa execute``: KoPL programs from the command line.

A program is given in the paper's syntax (``Find(Person_00371);Relate(born_in);QueryName()``)
or as KQA Pro's JSON function list (any argument starting with ``[``). Every program is
parsed and type-checked before anything runs, so a bad program is reported with its
culprit underlined and never reaches a store.

``execute`` prints, with ``--json``, one JSON object per program (DESIGN.md):
``{"program": <canonical text, or the input as given if it does not parse>,
"answer": <canonical answer or null>, "error": <message or null>}`` plus ``"trace"`` (a list
of ``{"step", "function", "kind", "value"}``) with ``--trace``, and ``"id"`` when the input
line was a JSON object with one. A failing program in a batch gets an ``"error"`` and the
batch goes on; the exit code is 1 if any program failed.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.table import Table

from kopl2sparql.errors import (ConfigError, EngineDisagreement, ExecutionError, ProgramError, StoreError,
                                SynKQAError)
from kopl2sparql.program import Program
from synkqa.cli.common import EXIT_FAIL, EXIT_USAGE, handle_errors, print_json, stderr, stdout

# Errors that belong to one program of a batch: that line fails, the batch goes on. Store and
# configuration errors are not about the program and stop the batch.
PER_PROGRAM_ERRORS = (ProgramError, ExecutionError, EngineDisagreement)

_TRACE_VALUES_SHOWN = 12


class OutputFormat(str, Enum):
    sparql = "sparql"
    kqapro = "kqapro"
    kopl = "kopl"


def register(app: typer.Typer) -> None:
    """Add ``compile`` and ``execute`` to the main app."""
    app.command("compile")(compile_command)
    app.command("execute")(execute_command)


# ---- reading programs ---------------------------------------------------------------------

def read_program(text: str) -> Program:
    """A program from the paper's syntax or from KQA Pro's JSON list (text starting with ``[``).

    :raises ProgramSyntaxError: for text that does not parse or JSON that does not map.
    """
    from synkqa.api import read_program as read
    return read(text)


def _schema(kb: Optional[Path], seed: int = 42, scale: int = 1):
    from synkqa.benchmark.executors import schema_for
    return schema_for(seed, scale, kb, progress=True)


def _checked(text: str, schema) -> Program:
    from kopl2sparql.typecheck import check
    program = read_program(text)
    check(program, schema)
    return program


# ---- compile ------------------------------------------------------------------------------

@handle_errors
def compile_command(
    program: str = typer.Argument(..., metavar="PROGRAM",
                                  help="KoPL program, e.g. 'Find(Person_00371);Relate(born_in);QueryName()', "
                                       "or a KQA Pro JSON function list."),
    output_format: OutputFormat = typer.Option(OutputFormat.sparql, "--format", "-f",
                                               help="sparql: one aligned SPARQL query; kqapro: KQA Pro's "
                                                    "function list (JSON); kopl: the canonical program text."),
    strict: bool = typer.Option(False, "--strict",
                                help="With --format kqapro: refuse steps KQA Pro has no function for "
                                     "instead of writing SynKQA-Pro extension steps."),
    kb: Optional[Path] = typer.Option(None, "--kb", dir_okay=False,
                                      help="A Turtle KB of any schema to use instead of the SynKQA-Pro KB "
                                           "(loaded into the embedded store; see docs/KB.md)."),
) -> None:
    """Type-check a program and print it as SPARQL, as KQA Pro JSON or in canonical form.

    Exit 1 (message on stderr, culprit underlined) if the program does not parse or check.
    On a KQA Pro-model KB (kb import, kb build --kind kqapro) the program is full KoPL:
    --format sparql prints the portable query, kqapro the JSON steps, kopl the text form.
    """
    if kb is not None:
        from synkqa.benchmark.kqapro_kb import is_kqapro_file
        if is_kqapro_file(kb):
            return _compile_kqapro(program, output_format, kb)
    schema = _schema(kb)
    parsed = _checked(program, schema)
    if output_format is OutputFormat.kopl:
        typer.echo(parsed.canonical())
    elif output_format is OutputFormat.kqapro:
        from kopl2sparql.kqapro import to_kqapro
        print_json(to_kqapro(parsed, strict=strict))
    else:
        from kopl2sparql.compiler import compile_program
        typer.echo(compile_program(parsed, schema).sparql.rstrip("\n"))


def _compile_kqapro(program: str, output_format: OutputFormat, kb_file: Path) -> None:
    from kqapro.compiler import compile_program
    from kqapro.program import parse_program
    from kqapro.rdf import kb_from_turtle

    parsed = parse_program(program)
    with stderr.status(f"reading {kb_file}", spinner="dots"):
        kb = kb_from_turtle(kb_file)
    compiled = compile_program(parsed, kb)   # type-checks first, for every format
    if output_format is OutputFormat.kopl:
        typer.echo(parsed.to_text())
    elif output_format is OutputFormat.kqapro:
        print_json(parsed.to_json())
    else:
        typer.echo(compiled.sparql)


# ---- execute ------------------------------------------------------------------------------

class _NotRun(ExecutionError):
    """A program of a batch not run because the engine failed earlier."""

    def __init__(self, message: str):
        SynKQAError.__init__(self, message)
        self.step = None


class _BadLine(ProgramError):
    """A line of --input that cannot be a program (reported as that line's error)."""

    kind = "input error"


def _inputs(program: Optional[str], input_file: Optional[Path]) -> Iterator[tuple[Any, Any]]:
    """(program text or a _BadLine, id or None) for each program to run.

    Every line gets its entry, so a batch's output accounts for its input: a line that is
    not UTF-8, or JSON nested beyond what can be read, becomes that line's error.
    """
    if program is not None:
        yield program, None
        return
    handle = sys.stdin.buffer if str(input_file) == "-" else open(input_file, "rb")
    with handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield _BadLine(f"line {number}: not UTF-8 text (byte {exc.start + 1})"), None
                continue
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text.startswith("{"):
                # A JSON record (dataset or predict output): run its program, echo its id.
                try:
                    record = json.loads(text)
                except json.JSONDecodeError:
                    yield text, None
                    continue
                except RecursionError:
                    yield _BadLine(f"line {number}: JSON nested too deeply"), None
                    continue
                found = record.get("kopl", record.get("program")) if isinstance(record, dict) else None
                if isinstance(found, list):
                    try:
                        found = json.dumps(found)
                    except RecursionError:
                        yield _BadLine(f"line {number}: JSON nested too deeply"), None
                        continue
                yield (found if isinstance(found, str) else text), (
                    record.get("id") if isinstance(record, dict) else None)
            else:
                yield text, None


def _trace_dict(step: Any) -> dict:
    return step.to_dict() if hasattr(step, "to_dict") else dict(step)


def _make_executor(backend: str, cross_check: bool, seed: int, scale: int, kb: Optional[Path]):
    from synkqa.benchmark.executors import get_executor
    if backend.startswith(("http://", "https://")):
        # An empty graph would make every program "unknown entity": name the graph instead.
        from store.remote import EndpointStore
        EndpointStore(backend).require_data()
    return get_executor(backend, seed=seed, scale=scale, kb=kb, cross_check=cross_check, progress=True)


def _check_backend(value: str) -> str:
    if value in ("native", "oxigraph") or value.startswith(("http://", "https://")):
        return value
    raise typer.BadParameter(f"'{value}' is not a backend: use native, oxigraph or an http(s):// "
                             "SPARQL endpoint URL")


@handle_errors
def execute_command(
    program: Optional[str] = typer.Argument(None, metavar="PROGRAM",
                                            help="One KoPL program (paper syntax or KQA Pro JSON)."),
    input_file: Optional[Path] = typer.Option(None, "--input", "-i", dir_okay=False,
                                              help="File with one program per line ('-' for stdin); "
                                                   "blank lines and '#' comments are skipped; JSON lines "
                                                   "contribute their \"kopl\" or \"program\" field and \"id\"."),
    backend: str = typer.Option("native", "--backend", "-b", callback=_check_backend,
                                help="native (the interpreter), oxigraph (SPARQL on the embedded store) "
                                     "or the URL of a SPARQL 1.1 endpoint holding the KB."),
    trace: bool = typer.Option(False, "--trace", help="Also show every step's intermediate value."),
    json_output: bool = typer.Option(False, "--json", help="One JSON object per program on stdout."),
    cross_check: bool = typer.Option(False, "--cross-check",
                                     help="Run every program on the native engine and on SPARQL; "
                                          "a disagreement is an error showing both answers."),
    seed: int = typer.Option(42, "--seed", help="Seed of the KB."),
    scale: int = typer.Option(1, "--scale", min=1, help="Scale of the KB (1 = the paper's 8,120 entities)."),
    kb: Optional[Path] = typer.Option(None, "--kb", dir_okay=False,
                                      help="A Turtle KB of any schema to use instead of the SynKQA-Pro KB "
                                           "(loaded into the embedded store; see docs/KB.md)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.001, metavar="SECONDS",
                                            help="Time limit per program (default: none). Programs run "
                                                 "in a worker process that is killed at the limit, so a "
                                                 "runaway query stops; that program fails and the "
                                                 "others still run."),
) -> None:
    """Type-check and run KoPL programs on the SynKQA-Pro KB (built on first use) or on
    any Turtle KB given with --kb.

    Exit 0 when every program ran, 1 when any failed (each failure is reported and the
    others still run), 2 for usage errors.
    """
    if (program is None) == (input_file is None):
        typer.echo("error: give one PROGRAM or --input FILE (not both)", err=True)
        raise typer.Exit(EXIT_USAGE)
    if input_file is not None and str(input_file) != "-" and not input_file.is_file():
        typer.echo(f"error: no such file: {input_file}", err=True)
        raise typer.Exit(EXIT_USAGE)
    if kb is not None:
        from synkqa.benchmark.kqapro_kb import is_kqapro_file
        if is_kqapro_file(kb):
            return _execute_kqapro(program, input_file, backend, trace, json_output, cross_check, kb,
                                   timeout)
    from kopl2sparql.typecheck import check

    run = None
    schema = None
    broken: str | None = None       # the engine failed: the lines after it are not run
    total = failed = 0
    single = program is not None
    for text, record_id in _inputs(program, input_file):
        total += 1
        row = _new_row(text, record_id)
        steps: list[dict] | None = None
        try:
            if isinstance(text, _BadLine):
                raise text
            if broken is not None:
                raise _NotRun(f"not run: the engine failed on an earlier program ({broken})")
            parsed = read_program(text)
            row["program"] = parsed.canonical()
            if schema is None:    # read lazily: a batch of unparsable programs needs no KB
                schema = _schema(kb, seed, scale)
            check(parsed, schema)
            if run is None:
                executor = _make_executor(backend, cross_check, seed, scale, kb)
                run = _runner(partial(_run_program, executor), timeout)
            steps, row["answer"] = run(parsed, trace)
        except StoreError as exc:
            if single:
                raise
            # An endpoint that went away: this line and every later one still get their line.
            failed += 1
            broken = str(exc).splitlines()[0]
            row["error"] = str(exc)
        except PER_PROGRAM_ERRORS as exc:
            failed += 1
            row["error"] = str(exc)
            if trace and getattr(exc, "trace", None):
                steps = [_trace_dict(s) for s in exc.trace]  # the steps done before it failed
        if trace:
            row["trace"] = steps
        _report(row, json_output, single)
    _exit_if_failed(failed, total, single)


def _run_program(executor, parsed, trace: bool) -> tuple[list[dict] | None, str]:
    """(the steps when ``trace``, the canonical answer) of one program."""
    # The trace first, so that a failing step still leaves the steps before it (on exc.trace).
    steps = [_trace_dict(s) for s in executor.trace(parsed)] if trace else None
    return steps, executor.execute(parsed).canonical()


def _runner(run, timeout: float | None):
    """``run`` itself, or ``run`` in a worker process killed after ``timeout`` seconds."""
    if timeout is None:
        return run
    from store.deadline import DeadlineWorker, can_fork
    if not can_fork():
        raise ConfigError("--timeout needs a POSIX system (it runs programs in a forked process)")
    worker = DeadlineWorker({"run": run}, timeout)
    return partial(worker.call, "run")


def _new_row(text: Any, record_id: Any) -> dict[str, Any]:
    """One program's output line, before it runs (an id first when the input had one)."""
    row: dict[str, Any] = {} if record_id is None else {"id": record_id}
    row.update(program=None if isinstance(text, _BadLine) else text, answer=None, error=None)
    return row


def _exit_if_failed(failed: int, total: int, single: bool) -> None:
    if failed:
        if not single:
            noun = "program" if total == 1 else "programs"
            typer.echo(f"error: {failed} of {total} {noun} failed", err=True)
        raise typer.Exit(EXIT_FAIL)


def _execute_kqapro(program, input_file, backend: str, trace: bool, json_output: bool, cross_check: bool,
                    kb_file: Path, timeout: float | None = None) -> None:
    """Full KoPL (KQA Pro's 27 functions) on a KQA Pro-model KB: JSON programs or the text syntax."""
    from kqapro.program import parse_program

    run = None
    total = failed = 0
    single = program is not None
    for text, record_id in _inputs(program, input_file):
        total += 1
        row = _new_row(text, record_id)
        steps = None
        try:
            if isinstance(text, _BadLine):
                raise text
            parsed = parse_program(text)
            row["program"] = parsed.to_json() if json_output else parsed.to_text()
            if run is None:
                engine, native = _kqapro_engine(kb_file, backend, cross_check)
                run = _runner(partial(_run_kqapro, engine, native, json_output), timeout)
            steps, row["answer"] = run(parsed, trace)
        except StoreError as exc:
            if single:
                raise
            failed += 1
            row["error"] = str(exc)
        except PER_PROGRAM_ERRORS as exc:
            failed += 1
            row["error"] = str(exc)
            steps = getattr(exc, "trace_rows", None)
        if trace:
            row["trace"] = steps
        _report(row, json_output, single)
    _exit_if_failed(failed, total, single)


def _run_kqapro(engine, native, json_output: bool, parsed, trace: bool):
    steps = None
    if trace:
        _, done = native.interpreter.trace(parsed)
        steps = [{"step": s.index + 1, "function": s.function, "kind": s.kind,
                  "value": "|".join(s.preview) + (f"|… ({s.size})" if s.size > len(s.preview) else "")}
                 for s in done]
    try:
        answer = engine.run(parsed)
    except PER_PROGRAM_ERRORS as exc:
        exc.trace_rows = steps          # shown with the error, as the steps before it
        raise
    return steps, (answer.to_json() if json_output else answer.text)


def _kqapro_engine(kb_file: Path, backend: str, cross_check: bool):
    from kqapro.engines import CrossCheck, EndpointEngine, NativeEngine, OxigraphEngine
    from kqapro.rdf import kb_from_turtle

    with stderr.status(f"reading {kb_file}", spinner="dots"):
        kb = kb_from_turtle(kb_file)
        native = NativeEngine(kb)
        if backend == "native" and not cross_check:
            return native, native
        if backend.startswith(("http://", "https://")):
            from store.remote import EndpointStore
            endpoint = EndpointStore(backend)
            endpoint.require_data()
            sparql = EndpointEngine(kb, endpoint, name=backend)
        else:
            sparql = OxigraphEngine(kb, Path(kb_file))
    if cross_check:
        return CrossCheck([native, sparql]), native
    return sparql, native


def _report(row: dict, json_output: bool, single: bool) -> None:
    if json_output:
        print_json(row)
        if row["error"] is not None and single:
            typer.echo(f"error: {row['error']}", err=True)
        return
    if row["error"] is not None:
        typer.echo(f"error: {row['error']}", err=True)
        if row.get("trace"):
            stdout.print(_trace_table(row["trace"]))
        return
    answer = row["answer"] if row["answer"] != "" else "(empty set)"
    if single:
        typer.echo(answer)
    else:
        typer.echo(f"{row['program']}\t{answer}")
    if row.get("trace"):
        stdout.print(_trace_table(row["trace"]))


def _trace_table(steps: list[dict]) -> Table:
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("#", "step", "kind", "value"):
        table.add_column(column, justify="right" if column == "#" else "left",
                         overflow="fold")
    for s in steps:
        values = s.get("value", "")
        shown = values if values != "" else "(empty set)"
        parts = values.split("|") if s.get("kind") == "entities" and values else []
        if parts:
            # Spaces after the separators let the terminal wrap between names, not inside them.
            shown = ", ".join(parts[:_TRACE_VALUES_SHOWN])
            if len(parts) > _TRACE_VALUES_SHOWN:
                shown += f", … ({len(parts)} entities)"
        table.add_row(str(s.get("step", "")), str(s.get("function", "")), str(s.get("kind", "")),
                      shown)
    return table
