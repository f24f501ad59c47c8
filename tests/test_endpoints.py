"""Real SPARQL servers: Oxigraph server and Virtuoso, started privately on loopback.

native = embedded Oxigraph = Oxigraph server = Virtuoso, on gold programs of the nine
template shapes and on random programs; loading through the library loaders, the CLI and
docker/load-kb.sh; the read-only guarantee against a live server; the compose file.

With CI=true a missing server binary fails these tests; on a developer machine they are
skipped with a loud reason (tests/endpoint_servers.py). Install the servers with
``bash scripts/install_endpoints.sh``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kopl2sparql.compiler import compile_program
from kopl2sparql.errors import EndpointError, ExecutionError, ProgramError, ReadOnlyError, StoreError
from kopl2sparql.kbindex import KBIndex
from store.executor import NativeExecutor, SparqlExecutor
from store.loaders import count_triples, load_virtuoso, run_isql
from store.remote import EndpointStore
from tests.endpoint_servers import free_port, kb_samples, random_programs, template_programs

pytestmark = [pytest.mark.endpoint, pytest.mark.slow]     # real servers: in the full suite, not the fast tier

REPO = Path(__file__).resolve().parent.parent
PER_TEMPLATE = int(os.environ.get("SYNKQA_ENDPOINT_PER_TEMPLATE", "60"))   # 540 gold programs
RANDOM_PROGRAMS = int(os.environ.get("SYNKQA_ENDPOINT_RANDOM", "500"))


def _cli(*args):
    from synkqa.cli import app
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def engines(kb_turtle, kb_schema, kb_store, oxigraph_server, virtuoso_server):
    """The four engines, in the order their answers are compared."""
    return {
        "native": NativeExecutor(KBIndex.from_turtle(kb_turtle, kb_schema), kb_schema),
        "embedded-oxigraph": SparqlExecutor(kb_store, kb_schema, name="embedded-oxigraph"),
        "oxigraph-server": SparqlExecutor(oxigraph_server.store(), kb_schema, name="oxigraph-server"),
        "virtuoso": SparqlExecutor(virtuoso_server.store(), kb_schema, name="virtuoso"),
    }


def _outcome(executor, program):
    """(answer kind, canonical), ("error", which) or ("store-error", message)."""
    try:
        answer = executor.execute(program)
        return answer.kind, answer.canonical()
    except ExecutionError:
        return "error", "execution"
    except ProgramError:
        return "error", "program"
    except StoreError as exc:
        # A server that refuses or fails a query the others answer is a disagreement to
        # report with the rest, not a reason to stop at the first one.
        return "store-error", str(exc)[:240]


def _cross_check(engines, programs):
    """Run every program on every engine; (agreements, disagreements, per-kind counts)."""
    agreements, disagreements, kinds = 0, [], Counter()
    for program in programs:
        outcomes = {name: _outcome(ex, program) for name, ex in engines.items()}
        reference = outcomes["native"]
        if all(o == reference for o in outcomes.values()):
            agreements += 1
            kinds[reference[0] if reference[0] != "entities" or reference[1] else "empty"] += 1
        else:
            disagreements.append((program.canonical(), outcomes))
    return agreements, disagreements, kinds


def _show(disagreements, limit: int = 8) -> str:
    """Distinct disagreeing programs, one line each, with every engine's outcome."""
    seen, lines = set(), []
    for program, outcomes in disagreements:
        if program in seen:
            continue
        seen.add(program)
        shown = "; ".join(f"{name}={kind}:{value[:70]!r}" for name, (kind, value) in outcomes.items())
        lines.append(f"  {program}\n      {shown}")
    more = len(seen) - limit
    return (f"{len(disagreements)} disagreements ({len(seen)} distinct programs):\n" + "\n".join(lines[:limit])
            + (f"\n  ... and {more} more" if more > 0 else ""))


# ---- the servers hold the KB ------------------------------------------------------------------------

def test_servers_hold_exactly_the_kb(kb_turtle, oxigraph_server, virtuoso_server):
    expected = count_triples(kb_turtle)
    assert oxigraph_server.store().triple_count() == expected
    assert virtuoso_server.store().triple_count() == expected
    # Virtuoso's quirk: without a graph the default graph is the union of all graphs,
    # system graphs included, so the count is larger than the KB.
    assert EndpointStore(virtuoso_server.url).triple_count() > expected
    assert virtuoso_server.store().query("ASK { ?s a <http://synkqa.org/ontology#Person> }") is True
    print(f"\nstart/load seconds: oxigraph {oxigraph_server.start_seconds:.2f}/{oxigraph_server.load_seconds:.2f}, "
          f"virtuoso {virtuoso_server.start_seconds:.2f}/{virtuoso_server.load_seconds:.2f}")


# ---- four engines agree ---------------------------------------------------------------------------

def test_gold_programs_of_all_nine_templates_agree_on_four_engines(kb_store, kb_schema, engines,
                                                                   oxigraph_server, virtuoso_server):
    programs = template_programs(kb_samples(kb_store), PER_TEMPLATE)
    agreements, disagreements, kinds = _cross_check(engines, [p for _, p in programs])
    shapes = Counter(t.name for t, _ in programs)
    print(f"\ngold template programs: {agreements} agree on 4 engines, {len(disagreements)} disagree; "
          f"{len(shapes)} shapes x {PER_TEMPLATE}; answers {dict(kinds)}")
    assert not disagreements, _show(disagreements)
    assert len(shapes) == 9 and agreements == 9 * PER_TEMPLATE
    # Both outcomes of the set and verify shapes occur (the draws are not all trivial).
    assert kinds["empty"] > 0 and kinds["bool"] > 0 and kinds["entities"] > 0

    # Per-query latency on the same compiled queries: embedded, Oxigraph server, Virtuoso.
    stores = {"embedded-oxigraph": kb_store, "oxigraph-server": oxigraph_server.store(),
              "virtuoso": virtuoso_server.store()}
    timings: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for template, program in programs:
        sparql = compile_program(program, kb_schema).sparql
        for name, store in stores.items():
            start = time.perf_counter()
            store.query(sparql)
            timings[template.name][name].append((time.perf_counter() - start) * 1000)
    lines = [f"{'template':<26}" + "".join(f"{n:>20}" for n in stores)]
    for name in (t.name for t in sorted({t for t, _ in programs}, key=lambda t: t.id)):
        lines.append(f"{name:<26}" + "".join(f"{statistics.median(timings[name][s]):>17.3f} ms"
                                               for s in stores))
    overall = {s: statistics.median([x for t in timings.values() for x in t[s]]) for s in stores}
    lines.append(f"{'all':<26}" + "".join(f"{overall[s]:>17.3f} ms" for s in stores))
    print("median per-query latency (ms), " + f"{PER_TEMPLATE} queries per shape:\n" + "\n".join(lines))


@pytest.fixture(scope="module")
def random_sample(kb_turtle, kb_schema):
    return random_programs(kb_turtle, kb_schema, RANDOM_PROGRAMS)


@pytest.mark.parametrize("server", ["oxigraph-server", "virtuoso"])
def test_random_programs_agree_on_every_engine(engines, random_sample, server):
    """native = embedded Oxigraph = the server, on the language tests' random programs.

    One test per server, so a server-specific failure names its server.
    """
    chosen = {name: engines[name] for name in ("native", "embedded-oxigraph", server)}
    agreements, disagreements, kinds = _cross_check(chosen, random_sample)
    operators = Counter(step.op for p in random_sample for step in p)
    print(f"\nrandom programs on {server}: {agreements} agree with native and embedded Oxigraph, "
          f"{len(disagreements)} disagree; outcomes {dict(kinds)}; operators {len(operators)}")
    assert not disagreements, _show(disagreements)
    assert agreements == len(random_sample) == RANDOM_PROGRAMS
    assert kinds["error"] > 0 and kinds["number"] > 0 and kinds["bool"] > 0 and kinds["entities"] > 0


def test_every_compile_fixture_agrees_on_four_engines(engines):
    """The shapes the compiler documents (kopl2sparql/compiler.py: portable forms, several
    chosen because Virtuoso 7.2 fails on the obvious ones) give each fixture's answer everywhere."""
    from kopl2sparql.syntax import parse
    from tests.test_compiler import CASES, read_fixture

    cases = [read_fixture(path) for path in CASES]
    agreements, disagreements, _ = _cross_check(engines, [parse(case["program"]) for case in cases])
    assert not disagreements, _show(disagreements)
    expected = {case["program"]: case.get("answer") for case in cases}
    for case in cases:
        if "answer" in case:
            assert engines["virtuoso"].execute(parse(case["program"])).canonical() == expected[case["program"]]
    assert agreements == len(cases) >= 40


# ---- read-only, for real -----------------------------------------------------------------------------

def test_no_query_the_tool_sends_modifies_virtuoso(virtuoso_server):
    store = virtuoso_server.store()
    before = store.triple_count()
    graph = virtuoso_server.graph
    for update in (f"INSERT DATA {{ GRAPH <{graph}> {{ <http://a> <http://b> <http://c> }} }}",
                   f"CLEAR GRAPH <{graph}>", f"DROP SILENT GRAPH <{graph}>"):
        with pytest.raises(ReadOnlyError):
            store.query(update)
        result = _cli("sparql", update, "--endpoint", virtuoso_server.url, "--graph", graph)
        assert result.exit_code == 1 and "Traceback" not in result.output
    assert store.triple_count() == before


# ---- the CLI on real endpoints ------------------------------------------------------------------------

def test_execute_cli_with_an_endpoint_backend(virtuoso_server, oxigraph_server, engines):
    program = "Find(Person_00371);Relate(born_in);Relate(located_in);QueryName()"
    from kopl2sparql.syntax import parse
    expected = engines["native"].execute(parse(program)).canonical()
    virtuoso_url = f"{virtuoso_server.url}?default-graph-uri={virtuoso_server.graph}"
    for url in (virtuoso_url, oxigraph_server.url):
        result = _cli("execute", program, "--backend", url, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["answer"] == expected
    result = _cli("execute", program, "--backend", virtuoso_url, "--cross-check")
    assert result.exit_code == 0 and result.stdout.strip() == expected
    result = _cli("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--endpoint", virtuoso_server.url,
                  "--graph", virtuoso_server.graph, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert str(virtuoso_server.store().triple_count()) in result.stdout
    # CONSTRUCT and DESCRIBE through an endpoint come back as triples
    for url in (virtuoso_server.url, oxigraph_server.url):
        extra = ["--graph", virtuoso_server.graph] if url == virtuoso_server.url else []
        result = _cli("sparql", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 3", "--endpoint", url,
                      *extra, "--format", "csv")
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[0] == "subject,predicate,object"
        assert len(result.stdout.splitlines()) == 4
    # a graph that holds nothing is an error that names it, not an empty answer
    result = _cli("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--endpoint", virtuoso_server.url,
                  "--graph", "http://synkqa.org/no-such-graph")
    assert result.exit_code == 1
    assert "graph <http://synkqa.org/no-such-graph> holds no triples" in result.output
    result = _cli("sparql", "ASK {}", "--endpoint", virtuoso_server.url, "--graph", "not an iri")
    assert result.exit_code == 1 and "is not an IRI" in result.output
    # execute on that graph points at the graph, not at the program's entities; in a batch
    # every line still gets its own line of output
    empty = f"{virtuoso_server.url}?default-graph-uri=http://synkqa.org/no-such-graph"
    result = _cli("execute", program, "--backend", empty)
    assert result.exit_code == 1 and "unknown entity" not in result.output
    assert "graph <http://synkqa.org/no-such-graph> at" in result.output and "holds no triples" in result.output
    batch = virtuoso_server.workdir / "two-programs.txt"
    batch.write_text(f"{program}\n{program}\n")
    result = _cli("execute", "--input", str(batch), "--backend", empty, "--json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and len(rows) == 2
    assert "holds no triples" in rows[0]["error"] and rows[1]["error"].startswith("not run:")


def test_kb_load_cli_into_virtuoso_and_parse_errors(kb_turtle, virtuoso_server):
    data = virtuoso_server.workdir / "data"
    graph = "http://synkqa.org/kb-cli-test"
    try:
        result = _cli("kb", "load", "--kind", "virtuoso", "--endpoint", virtuoso_server.url,
                      "--isql", virtuoso_server.extra["isql"], "--graph", graph,
                      "--file", data / kb_turtle.name, "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["triples"] == count_triples(kb_turtle) and report["graph"] == graph
    finally:
        run_isql(f"SPARQL CLEAR GRAPH <{graph}>;", isql=virtuoso_server.extra["isql"])
    broken = data / "broken.ttl"
    broken.write_text("@prefix sk: <http://synkqa.org/ontology#> .\nsk:a sk:b sk:c .\nsk:a sk:b .\n")
    with pytest.raises(EndpointError, match="bulk load of .*broken.ttl failed"):
        load_virtuoso(broken, graph="http://synkqa.org/broken", isql=virtuoso_server.extra["isql"])
    result = _cli("kb", "load", "--kind", "virtuoso", "--isql", virtuoso_server.extra["isql"],
                  "--file", kb_turtle, "--server-dir", "/nonexistent-dir")
    assert result.exit_code == 1 and "error: Virtuoso" in result.stderr


def _serve_rw(location: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([shutil.which("oxigraph"), "serve", "--location", str(location), "--bind",
                                f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}/query"
    from store.loaders import wait_for_endpoint
    wait_for_endpoint(url, 20)
    return process, url


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def test_kb_load_cli_into_oxigraph(kb_turtle, tmp_path, oxigraph_server):
    location = tmp_path / "ox"
    result = _cli("kb", "load", "--kind", "oxigraph", "--location", location, "--file", kb_turtle)
    assert result.exit_code == 0, result.output
    assert f"loaded {count_triples(kb_turtle)} triples" in result.stdout
    process, url = _serve_rw(location)
    try:
        # Graph Store PUT replaces the default graph: the count stays the file's.
        result = _cli("kb", "load", "--kind", "oxigraph", "--endpoint", url, "--file", kb_turtle, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["triples"] == count_triples(kb_turtle)
    finally:
        _stop(process)
    # A read-only server refuses the Graph Store write: one line, exit 1.
    result = _cli("kb", "load", "--kind", "oxigraph", "--endpoint", oxigraph_server.url, "--file", kb_turtle)
    assert result.exit_code == 1 and "HTTP 403" in result.stderr and "read-only" in result.stderr


def test_docker_loader_script_runs_against_real_servers(kb_turtle, tmp_path, virtuoso_server):
    """docker/load-kb.sh itself, with Virtuoso and a read-write Oxigraph server as "Fuseki"."""
    home = virtuoso_server.workdir / "data" / "docker-home"      # inside Virtuoso's DirsAllowed
    home.mkdir(exist_ok=True)
    shutil.copy(kb_turtle, home / kb_turtle.name)                 # the KB the script would build
    wrapper = tmp_path / "synkqa"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from synkqa.cli import main; main()" "$@"\n')
    wrapper.chmod(0o755)
    location = tmp_path / "fuseki-standin"
    location.mkdir()
    process, url = _serve_rw(location)
    graph = "http://synkqa.org/kb-docker-test"
    env = dict(os.environ, SYNKQA=str(wrapper), SYNKQA_HOME=str(home), SYNKQA_GRAPH=graph, SYNKQA_WAIT="10",
               VIRTUOSO_URL=virtuoso_server.url, VIRTUOSO_ISQL=virtuoso_server.extra["isql"],
               FUSEKI_URL=url, FUSEKI_STORE_URL=url.replace("/query", "/store"))
    try:
        proc = subprocess.run(["bash", str(REPO / "docker" / "load-kb.sh")], env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        loaded = [line for line in proc.stdout.splitlines() if line.startswith("loaded ")]
        assert len(loaded) == 2 and all(f"loaded {count_triples(kb_turtle)} triples" in x for x in loaded)
        assert EndpointStore(virtuoso_server.url, graph=graph).triple_count() == count_triples(kb_turtle)
        assert EndpointStore(url).triple_count() == count_triples(kb_turtle)
    finally:
        _stop(process)
        run_isql(f"SPARQL CLEAR GRAPH <{graph}>;", isql=virtuoso_server.extra["isql"])


# ---- docker/: structure and syntax here; docker/test.sh runs the stack for real ----------------------

def test_compose_file_structure():
    compose = yaml.safe_load((REPO / "docker" / "compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"virtuoso", "kb-loader", "synkqa", "fuseki", "fuseki-loader"}
    declared_volumes = set(compose["volumes"])
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)     # loopback only
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source in declared_volumes, (name, volume)
        # Fuseki needs a registry image: its services stay out of the default profile.
        assert (service.get("profiles") == ["fuseki"]) == name.startswith("fuseki"), name
    virtuoso, loader, serve = services["virtuoso"], services["kb-loader"], services["synkqa"]
    assert virtuoso["ports"][0].endswith(":8890") and services["fuseki"]["ports"][0].endswith(":3030")
    assert (REPO / "docker" / virtuoso["build"]["context"] / "Dockerfile").is_file()
    for toolkit in (loader, serve, services["fuseki-loader"]):
        assert toolkit["build"]["dockerfile"] == "docker/Dockerfile" and "BASE" in toolkit["build"]["args"]
    # The loader writes the Turtle where Virtuoso's bulk loader may read it, at the same path:
    # SYNKQA_HOME of the toolkit image, a directory in DirsAllowed of the Virtuoso container.
    assert "SYNKQA_HOME=/data" in (REPO / "docker" / "Dockerfile").read_text()
    assert "kb-data:/data" in loader["volumes"] and "kb-data:/data:ro" in virtuoso["volumes"]
    entrypoint = (REPO / "docker" / "virtuoso" / "entrypoint.sh").read_text()
    for setting in ('DirsAllowed ".,/data"', "CaseMode 2", "ResultSetMaxRows 1000000",
                    "MaxQueryCostEstimationTime 0"):
        assert setting in entrypoint, setting
    assert loader["entrypoint"][-1] == "/src/docker/load-kb.sh"
    assert loader["environment"]["SKIP_FUSEKI"] == "1" and loader["depends_on"] == ["virtuoso"]
    assert serve["depends_on"]["kb-loader"]["condition"] == "service_completed_successfully"
    assert any(arg.startswith("--endpoint=http://virtuoso:8890/sparql") for arg in serve["command"])


def test_compose_scripts_parse():
    for script in ("docker/load-kb.sh", "docker/test.sh", "docker/crosscheck.sh",
                   "docker/virtuoso/entrypoint.sh", "scripts/install_endpoints.sh", "scripts/test.sh"):
        assert subprocess.run(["bash", "-n", str(REPO / script)]).returncode == 0, script
    dockerfile = (REPO / "docker" / "Dockerfile").read_text()
    assert "virtuoso-opensource-7-bin" in dockerfile and "pip install" in dockerfile
    assert "virtuoso-opensource" in (REPO / "docker" / "virtuoso" / "Dockerfile").read_text()


def test_docker_program_sampler(tmp_path):
    """docker/programs.py, which feeds the container cross-check: N distinct well-typed
    programs that the native engine answers, the same ones on every run."""
    from kopl2sparql.syntax import parse

    def sample():
        proc = subprocess.run([sys.executable, str(REPO / "docker" / "programs.py"), "--n", "40"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    lines = sample()
    assert len(lines) == len(set(lines)) == 40 and lines == sample()
    for line in lines:
        parse(line)
