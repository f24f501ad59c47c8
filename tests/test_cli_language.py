"""``synkqa compile`` and ``synkqa execute``, in-process, on the real scale-1 KB."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kopl2sparql.kqapro import to_kqapro
from kopl2sparql.syntax import parse
from synkqa.cli import app

BIRTH_COUNTRY = "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"
ARGMAX = "Find(Country_038);RelateInv(located_in);Argmax(population);QueryName()"


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


@pytest.fixture(scope="module")
def native(kb_turtle):
    from synkqa.benchmark.executors import get_executor
    return get_executor("native", seed=42, scale=1)


def _answer(native, text: str) -> str:
    return native.execute(parse(text)).canonical()


# ---- compile ----------------------------------------------------------------------------------

def test_compile_kqapro(kb_turtle):
    # compile type-checks against the KB's schema, so it builds the KB on first use (with a
    # progress bar on stderr); once the KB exists, stderr stays empty.
    result = run("compile", ARGMAX, "--format", "kqapro")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == to_kqapro(ARGMAX)
    assert result.stderr == ""


def test_compile_kopl_normalises_text_and_reads_kqapro_json():
    result = run("compile", " Find( City_0001 ) ;\n Count() ; ", "--format", "kopl")
    assert (result.exit_code, result.stdout) == (0, "Find(City_0001);Count()\n")
    kqa = json.dumps(to_kqapro(ARGMAX))
    result = run("compile", kqa, "--format", "kopl")
    assert (result.exit_code, result.stdout) == (0, ARGMAX + "\n")


def test_compile_sparql_runs_on_the_store(kb_store, native):
    result = run("compile", ARGMAX)
    assert result.exit_code == 0, result.stderr
    query = result.stdout
    assert query.startswith("PREFIX ") and "ORDER BY DESC(" in query and "LIMIT 1" in query
    rows = kb_store.query(query)
    (column,) = rows.variables
    assert [iri.rsplit("/", 1)[-1] for iri in rows.column(column)] == [_answer(native, ARGMAX)]


def test_compile_type_error_goes_to_stderr_with_the_culprit_underlined():
    result = run("compile", "Find(Person_00371);Relate(birthplace);QueryName()")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: type error: unknown relation 'birthplace'; did you mean born_in? (step 2, col 27)\n"
        "  Find(Person_00371);Relate(birthplace);QueryName()\n"
        "                            ^^^^^^^^^^\n")


def test_compile_syntax_error_and_bad_json():
    result = run("compile", "Find(Person_00371);Relat(born_in)", "--format", "kopl")
    assert result.exit_code == 1 and "did you mean Relate?" in result.stderr
    result = run("compile", '[{"function": "Find", "inputs": ["City_1"]', "--format", "kopl")
    assert result.exit_code == 1 and "not valid KQA Pro JSON" in result.stderr


def test_compile_strict_kqapro():
    text = "Find(Person_1);VerifyRel(works_at,Org_1)"
    loose = run("compile", text, "--format", "kqapro")
    assert loose.exit_code == 0 and json.loads(loose.stdout)[-1]["function"] == "VerifyRel"
    strict = run("compile", text, "--format", "kqapro", "--strict")
    assert strict.exit_code == 1
    assert "no KQA Pro counterpart: VerifyRel(works_at,Org_1)" in strict.stderr


def test_compile_usage_error():
    assert run("compile", BIRTH_COUNTRY, "--format", "yaml").exit_code == 2
    assert run("compile").exit_code == 2


# ---- execute: one program ---------------------------------------------------------------------

def test_execute_prints_the_answer(native):
    result = run("execute", BIRTH_COUNTRY)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == _answer(native, BIRTH_COUNTRY) + "\n"
    assert result.stdout.startswith("Country_")


def test_execute_empty_answer_is_shown_as_such():
    result = run("execute", "Find(Person_00001);Find(Person_00001);Diff();QueryName()")
    assert result.exit_code == 0
    assert result.stdout == "(empty set)\n"


def test_execute_json_contract(native):
    result = run("execute", BIRTH_COUNTRY, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"program": BIRTH_COUNTRY,
                                         "answer": _answer(native, BIRTH_COUNTRY), "error": None}


def test_execute_trace_json(native):
    result = run("execute", BIRTH_COUNTRY, "--json", "--trace")
    row = json.loads(result.stdout)
    assert [t["step"] for t in row["trace"]] == [1, 2, 3, 4]
    assert [t["function"] for t in row["trace"]] == BIRTH_COUNTRY.split(";")
    assert row["trace"][0]["value"] == "Person_00371"
    assert row["trace"][-1]["value"] == row["answer"]
    assert {t["kind"] for t in row["trace"]} == {"entities"}


def test_execute_trace_table(native):
    result = run("execute", ARGMAX, "--trace")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == _answer(native, ARGMAX)
    assert "RelateInv(located_in)" in result.stdout and "Argmax(population)" in result.stdout


def test_execution_error_keeps_the_partial_trace():
    result = run("execute", "Find(Country_038);RelateInv(located_in);QueryAttr(population)",
                 "--json", "--trace")
    assert result.exit_code == 1
    row = json.loads(result.stdout)
    assert row["answer"] is None
    assert row["error"].startswith("execution error at step 3: QueryAttr(population) needs exactly one entity")
    assert [t["step"] for t in row["trace"]] == [1, 2]
    assert "execution error at step 3" in result.stderr


@pytest.mark.parametrize("backend", ["oxigraph", "native"])
def test_backends_and_cross_check_agree(native, backend):
    for text in (BIRTH_COUNTRY, ARGMAX, "Find(City_0736);RelateInv(born_in);Count()",
                 "Find(Person_00371);VerifyRel(works_at,Org_0012)"):
        result = run("execute", text, "--backend", backend, "--cross-check", "--json")
        assert result.exit_code == 0, result.stdout + result.stderr
        assert json.loads(result.stdout)["answer"] == _answer(native, text)


def test_execute_type_error_is_reported_before_running():
    result = run("execute", "Find(Person_00371);Relate(located_in);QueryName()", "--json")
    assert result.exit_code == 1
    row = json.loads(result.stdout)
    assert row["answer"] is None
    assert "Relate(located_in) needs City entities" in row["error"]
    assert "^^^^^^^^^^" in row["error"]
    assert result.stderr.startswith("error: type error: Relate(located_in)")


def test_execute_error_without_json_goes_to_stderr():
    result = run("execute", "Find(City_1);Count(")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ("error: syntax error: missing ')' to close Count(; found the end of "
                             "the program (step 2, col 20)\n"
                             "  Find(City_1);Count(\n"
                             "                     ^\n")


# ---- execute: batches -------------------------------------------------------------------------

def test_batch_goes_on_after_bad_lines(tmp_path, native):
    lines = [
        BIRTH_COUNTRY,
        "Find(Person_00371);Relat(born_in)",                  # syntax error
        "",                                                   # skipped
        "# a comment",                                        # skipped
        "Find(City_0736);Relate(born_in);Count()",            # type error
        "Find(Person_99999999);QueryName()",                  # unknown entity: execution error
        json.dumps({"id": "q7", "kopl": ARGMAX}),             # dataset-style record
        json.dumps({"id": 8, "program": to_kqapro("Find(City_0736);RelateInv(born_in);Count()")}),
    ]
    path = tmp_path / "programs.txt"
    path.write_text("\n".join(lines) + "\n")
    result = run("execute", "--input", str(path), "--json")
    assert result.exit_code == 1
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 6
    assert [r["error"] is None for r in rows] == [True, False, False, False, True, True]
    assert "did you mean Relate?" in rows[1]["error"]
    assert "Relate(born_in) needs Person entities" in rows[2]["error"]
    assert "Person_99999999" in rows[3]["error"]
    assert rows[4] == {"id": "q7", "program": ARGMAX, "answer": _answer(native, ARGMAX), "error": None}
    assert rows[5]["id"] == 8 and rows[5]["program"] == "Find(City_0736);RelateInv(born_in);Count()"
    assert rows[1]["program"] == "Find(Person_00371);Relat(born_in)"  # as given when it does not parse
    assert result.stderr == "error: 3 of 6 programs failed\n"


def test_batch_all_good_exits_zero_and_reads_stdin(native):
    text = f"{BIRTH_COUNTRY}\n{ARGMAX}\n"
    result = run("execute", "--input", "-", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"{BIRTH_COUNTRY}\t{_answer(native, BIRTH_COUNTRY)}",
                                          f"{ARGMAX}\t{_answer(native, ARGMAX)}"]


def test_batch_of_bad_programs_builds_no_executor(tmp_path, monkeypatch):
    # A batch in which nothing type-checks must not build an executor (the schema is read
    # to type-check, but no index or store is built and nothing runs).
    import synkqa.benchmark.executors
    monkeypatch.setattr(synkqa.benchmark.executors, "get_executor",
                        lambda *a, **k: pytest.fail("executor built for a batch of bad programs"))
    path = tmp_path / "bad.txt"
    path.write_text("Count()\nFind(X);Relate(born_in);Relate(born_in)\n")
    result = run("execute", "--input", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert [line for line in result.stderr.splitlines() if line.startswith("error: ")] == [
        "error: type error: Count needs an entity set, but the stack is empty (step 1, col 1)",
        "error: type error: Relate(born_in) needs Person entities (born_in: Person -> City), but step 2 "
        "gives City entities: the result is always empty (step 3, col 32)",
        "error: 2 of 2 programs failed"]


def test_unknown_entity_is_an_execution_error_not_a_type_error():
    # An entity the KB does not know (any name or label) type-checks as "any class" and
    # fails when it runs, on every backend.
    for backend in ("native", "oxigraph"):
        result = run("execute", "Find(X);QueryName()", "--backend", backend, "--json")
        assert result.exit_code == 1
        row = json.loads(result.stdout)
        assert row["answer"] is None
        assert row["error"] == "execution error at step 1: unknown entity 'X'", backend
    compiled = run("compile", "Find(X);QueryName()", "--format", "kopl")
    assert (compiled.exit_code, compiled.stdout) == (0, "Find(X);QueryName()\n")


@pytest.mark.parametrize("args", [
    ["execute"],
    ["execute", BIRTH_COUNTRY, "--input", "x.txt"],
    ["execute", BIRTH_COUNTRY, "--backend", "postgres"],
    ["execute", "--input", "/nonexistent/programs.txt"],
    ["execute", BIRTH_COUNTRY, "--scale", "0"],
])
def test_execute_usage_errors(args):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""


def test_help_lists_the_commands():
    result = run("--help")
    assert "compile" in result.stdout and "execute" in result.stdout
    assert "--cross-check" in run("execute", "--help").stdout


# ---- batches account for every input line ------------------------------------------------------

def test_batch_reports_bad_bytes_and_deep_json_per_line_and_goes_on(tmp_path, kb_turtle):
    deep = "[" * 5000 + "]" * 5000
    lines = [b"Find(Person_00371);Relate(born_in);QueryName()", b"\xff\xfe not text",
             ('{"id": "x", "program": ' + deep + "}").encode(), b"Find(City_0001);RelateInv(born_in);Count()"]
    batch = tmp_path / "batch.txt"
    batch.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(app, ["execute", "--input", str(batch), "--json"])
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and len(rows) == 4
    assert rows[0]["answer"] and rows[3]["answer"] == "7"
    assert "line 2: not UTF-8 text" in rows[1]["error"] and "line 3: JSON nested too deeply" in rows[2]["error"]
    assert "Traceback" not in result.output


def test_deeply_nested_json_program_is_one_clear_error():
    result = CliRunner().invoke(app, ["execute", "[" * 5000 + "]" * 5000])
    assert result.exit_code == 1 and "nested too deeply" in result.output and "Traceback" not in result.output


def test_a_dead_endpoint_still_gives_every_line_its_row(tmp_path, kb_turtle):
    import socket
    with socket.socket() as sock:                 # a port nothing listens on (real loopback)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    batch = tmp_path / "batch.txt"
    batch.write_text("\n".join(["Find(City_0001);RelateInv(born_in);Count()"] * 5) + "\n")
    result = CliRunner().invoke(app, ["execute", "--input", str(batch), "--json",
                                      "--backend", f"http://127.0.0.1:{port}/sparql"])
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and len(rows) == 5
    assert all(row["error"] for row in rows) and all("not run" in row["error"] for row in rows[1:])
