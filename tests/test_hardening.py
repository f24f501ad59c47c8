"""Hostile input gets one clear, bounded, inert message."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import pytest

from kopl2sparql.errors import ProgramError, QuerySyntaxError
from kopl2sparql.syntax import parse
from synkqa.cli import app


def test_the_error_of_a_huge_program_is_clipped_around_the_culprit():
    text = "Find(City_0001);" * 200_000 + "Relat(born_in)"          # 3.2 MB
    try:
        parse(text)
    except ProgramError as exc:
        message = str(exc)
    assert len(message) < 1000
    assert "did you mean Relate" in message and "Relat(born_in)" in message
    excerpt, carets = message.splitlines()[1:3]
    start = carets.index("^")
    assert excerpt[start:start + 5] == "Relat" and carets.strip() == "^^^^^"


def test_terminal_control_sequences_are_never_echoed():
    osc = "\x1b]0;pwned\x07"
    steps = [{"function": "Find", "inputs": ["City_0001"], "dependencies": []},
             {"function": "Relate", "inputs": [f"born{osc}", "forward"], "dependencies": [0]}]
    for program in (json.dumps(steps), f"Find(Person_00371);Relate(born_in{osc})"):
        result = CliRunner().invoke(app, ["execute", program])
        assert result.exit_code == 1
        assert "\x1b" not in result.output and "\x07" not in result.output, result.output


def test_long_relation_chains_answer_on_sparql_in_bounded_time(kb_turtle):
    # Relate/RelateInv repeated: SPARQL keeps duplicate rows, so without a DISTINCT now and
    # then the rows grow exponentially (20 steps took 50 s). 200 steps, both engines agreeing.
    program = "Find(Person_00001);" + ";".join(["Relate(born_in);RelateInv(born_in)"] * 100) + ";Count()"
    result = CliRunner().invoke(app, ["execute", "--backend", "oxigraph", "--cross-check", program])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "8"        # after any first-use progress bar


def test_a_program_too_long_for_any_engine_is_one_clear_error():
    program = "Find(Person_00001);" + ";".join(["Relate(born_in);RelateInv(born_in)"] * 5000) + ";Count()"
    for extra in ([], ["--backend", "oxigraph"], ["--cross-check"]):
        result = CliRunner().invoke(app, ["execute", *extra, program])
        assert result.exit_code == 1 and "at most 1,000 are accepted" in result.output, result.output
        assert len(result.output) < 2000


def test_a_query_nested_too_deeply_is_one_clear_error(tmp_path):
    """Oxigraph's parser dies with SIGSEGV past about 2,000 nested braces: refused before it
    runs, on the command line and in the library, with the depth in the message."""
    from store.oxigraph import MAX_NESTING, OxigraphStore

    deep = "SELECT * WHERE " + "{" * 5000 + " ?s ?p ?o " + "}" * 5000
    result = CliRunner().invoke(app, ["sparql", "--kb", "tests/fixtures/kb/campus.ttl", deep])
    assert result.exit_code == 1
    assert "nested 5000 levels deep" in result.output and "Traceback" not in result.output
    store = OxigraphStore(tmp_path / "store")
    with pytest.raises(QuerySyntaxError, match=f"at most {MAX_NESTING}"):
        store.query("ASK { FILTER(" + "(" * 3000 + "1" + ")" * 3000 + ") }")
    # deep but within the limit still runs; braces in strings and IRIs do not count
    assert store.query("ASK " + "{" * 900 + "}" * 900) is True
    assert store.query('ASK { FILTER("' + "{" * 5000 + '" != "") }') is True


@pytest.mark.parametrize("content,message", [
    (b"", "holds no triples"),
    (b"\x00\x01binary\xff", "is not valid Turtle: Parser error at line 1 column 1"),
    (b"@prefix ex: <http://example.org/> .\nex:a ex:b ", "is not valid Turtle"),
])
def test_kb_validate_on_a_broken_file_is_one_clear_error(tmp_path, content, message):
    bad = tmp_path / "kb.ttl"
    bad.write_bytes(content)
    result = CliRunner().invoke(app, ["kb", "validate", "--file", str(bad)])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert "conforms" not in result.output


@pytest.mark.slow
def test_execute_timeout_stops_a_runaway_query_and_the_batch_goes_on(tmp_path, kb_turtle):
    """800 Relate steps take ~17 s and 2.4 GB on the embedded store; --timeout 1 kills the
    worker running it at 1 s, reports that program, and runs the next ones in a new worker."""
    import subprocess
    import sys
    import time

    slow = "Find(City_0359);" + ";".join(["RelateInv(born_in);Relate(born_in)"] * 400) + ";Count()"
    fast = "Find(City_0359);RelateInv(born_in);Count()"
    batch = tmp_path / "batch.txt"
    batch.write_text(f"{fast}\n{slow}\n{fast}\n")
    for extra in (["--backend", "oxigraph"], ["--cross-check"]):
        started = time.monotonic()
        command = [sys.executable, "-c", "from synkqa.cli import main; main()", "execute", "--input", str(batch),
                   "--json", "--timeout", "1", *extra]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert [r["answer"] for r in rows] == ["6", None, "6"]
        assert rows[1]["error"] == "program exceeded the time limit of 1 s (stopped; see --timeout)"
        assert elapsed < 12, elapsed            # not the ~17 s the slow program needs


def test_deadline_worker_reports_a_crashed_worker_and_replaces_it():
    import os
    import signal

    from kopl2sparql.errors import ExecutionError
    from store.deadline import DeadlineWorker

    def crash():
        os.kill(os.getpid(), signal.SIGSEGV)

    with DeadlineWorker({"crash": crash, "square": lambda x: x * x}, timeout=30) as worker:
        assert worker.call("square", 7) == 49
        with pytest.raises(ExecutionError, match="killed by SIGSEGV"):
            worker.call("crash")
        assert worker.call("square", 8) == 64 and worker.started == 2


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_deadline_worker_async_calls_big_replies_and_timeouts(loop):
    import asyncio
    import time

    from kopl2sparql.errors import ExecutionTimeout
    from store.deadline import DeadlineWorker

    def big(n):
        return "x" * n

    async def main():
        with DeadlineWorker({"big": big, "sleep": time.sleep}, timeout=0.5) as worker:
            assert await worker.acall("big", 5_000_000) == "x" * 5_000_000    # many pipe buffers
            with pytest.raises(ExecutionTimeout, match="time limit of 0.5 s"):
                await worker.acall("sleep", 30)
            assert await worker.acall("big", 3) == "xxx" and worker.started == 2

    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        uvloop.run(main())
    else:
        asyncio.run(main())
