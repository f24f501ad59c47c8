"""``synkqa bench --kind serve``: a bounded load test of ``synkqa serve`` on loopback.

First one client sends template programs (the benchmark's test-split sampling) one at a
time, for the latency of one program over HTTP per backend. Then
``clients`` concurrent clients (asyncio + httpx, one process) send requests for ``seconds``:
half program executions (``POST /api/execute`` with random well-typed programs on the
Oxigraph backend, cross-checked against native) and half SPARQL queries (``GET /sparql``).
Reported: requests, throughput, p50/p99 latency per request type, errors by status, and
the resident memory of the server and its workers sampled every second (flat means no
growth between the first and the last ten seconds).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

QUERIES = [
    "SELECT (COUNT(*) AS ?n) WHERE { ?p a <http://synkqa.org/ontology#Person> }",
    "SELECT ?city WHERE { <http://synkqa.org/entity/Person_00371> <http://synkqa.org/ontology#born_in> ?city }",
    "SELECT ?p (COUNT(?o) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?p",
    "ASK { <http://synkqa.org/entity/City_0359> <http://synkqa.org/ontology#located_in> ?c }",
    "SELECT ?person WHERE { ?person <http://synkqa.org/ontology#born_in> <http://synkqa.org/entity/City_0359> }",
    "SELECT ?c ?g WHERE { ?c <http://synkqa.org/ontology#gdp_billion_usd> ?g } ORDER BY DESC(?g) LIMIT 10",
]


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and its children, in MB (from /proc)."""
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        pids += [int(p) for p in children.read_text().split()]
    except OSError:
        pass
    total = 0
    for each in pids:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return round(total / 1024, 1)


def _start_server(workers: int, log_file: Path) -> tuple[subprocess.Popen, str]:
    handle = open(log_file, "w")
    process = subprocess.Popen([sys.executable, "-c", "from synkqa.cli import main; main()", "serve", "--port",
                                "0", "--no-questions", "--workers", str(workers)],
                               stdout=handle, stderr=subprocess.STDOUT, env=os.environ.copy())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", log_file.read_text())
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"synkqa serve did not start: {log_file.read_text()[-1000:]}")


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(url: str, pid: int | None, programs: list[str], clients: int, seconds: float) -> dict:
    import httpx

    latencies: dict[str, list[float]] = {"program": [], "sparql": []}
    statuses: Counter = Counter()
    failures: list[str] = []
    memory: list[tuple[float, float]] = []
    started = time.monotonic()
    deadline = started + seconds

    async def client(number: int, http: httpx.AsyncClient) -> None:
        i = number
        while time.monotonic() < deadline:
            kind = "program" if i % 2 == 0 else "sparql"
            begin = time.perf_counter()
            try:
                if kind == "program":
                    response = await http.post(url + "/api/execute", json={
                        "program": programs[i % len(programs)], "backend": "oxigraph", "cross_check": True})
                    ok = response.status_code == 200 and response.json().get("error") is None \
                        and response.json()["cross_check"]["agree"]
                else:
                    response = await http.get(url + "/sparql", params={"query": QUERIES[i % len(QUERIES)]})
                    ok = response.status_code == 200
                statuses[response.status_code] += 1
                if not ok and len(failures) < 10:
                    failures.append(f"{kind} {response.status_code}: {response.text[:200]}")
                elif ok:
                    latencies[kind].append(time.perf_counter() - begin)
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1
                if len(failures) < 10:
                    failures.append(f"{kind}: {type(exc).__name__}: {exc}")
            i += clients

    async def sample_memory() -> None:
        while time.monotonic() < deadline and pid is not None:
            memory.append((round(time.monotonic() - started, 1), rss_mb(pid)))
            await asyncio.sleep(1.0)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await asyncio.gather(sample_memory(), *(client(n, http) for n in range(clients)))
    elapsed = time.monotonic() - started
    total = sum(statuses.values())
    errors = total - sum(len(v) for v in latencies.values())

    def summary(values: list[float]) -> dict:
        return {"requests": len(values), "per_second": round(len(values) / elapsed, 1),
                "p50_ms": round(1000 * statistics.median(values), 2) if values else None,
                "p99_ms": round(1000 * _percentile(values, 0.99), 2) if values else None}

    first = [m for t, m in memory if t <= 10]
    last = [m for t, m in memory if t >= elapsed - 10]
    return {"clients": clients, "seconds": round(elapsed, 1), "requests": total,
            "per_second": round(total / elapsed, 1), "errors": errors,
            "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)}, "failures": failures,
            "program": summary(latencies["program"]), "sparql": summary(latencies["sparql"]),
            "memory_mb": {"first_10s_max": max(first) if first else None, "last_10s_max": max(last) if last else None,
                          "max": max((m for _, m in memory), default=None), "samples": memory}}


def _template_programs(n: int, seed: int) -> list[str]:
    """``n`` programs of the benchmark's templates (the test split's sampling, slots filled
    from the KB; nothing is executed or written)."""
    from synkqa.benchmark.dataset import KBEntities, sample_split
    from synkqa.benchmark.world import open_store
    return [draft.kopl for draft in sample_split(KBEntities.from_store(open_store(42, 1)), "test", 42, n)]


def _latency(url: str, programs: list[str], requests: int) -> dict:
    """One client, one request at a time: the latency of a template program over HTTP per
    backend (with and without the cross-check), and of a one-pattern SPARQL query.

    The client is the standard library's keep-alive ``http.client`` (a few µs per request),
    so the figures are the server's, not a client library's."""
    import http.client
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def post(body: dict) -> tuple[int, dict]:
        connection.request("POST", "/api/execute", json.dumps(body), {"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read())

    def get(path: str) -> int:
        connection.request("GET", path)
        reply = connection.getresponse()
        reply.read()
        return reply.status

    out = {}
    try:
        cases = [("native", False, True), ("native", True, True), ("oxigraph", False, True),
                 ("oxigraph", True, True), ("oxigraph", False, False)]
        for backend, cross, trace in cases:
            request = {"backend": backend, "cross_check": cross, "trace": trace}
            for program in programs[:20]:                  # warm-up: caches, the connection
                post({"program": program, **request})
            http_ms, server_ms = [], []
            for i in range(requests):
                program = programs[i % len(programs)]
                begin = time.perf_counter()
                status, body = post({"program": program, **request})
                http_ms.append(1000 * (time.perf_counter() - begin))
                if status != 200 or body["error"] is not None:
                    raise RuntimeError(f"{program}: {status} {body['error']}")
                server_ms.append(1000 * body["total_seconds"])
            out[f"{backend}{' + cross-check' if cross else ''}{'' if trace else ', answer only (no trace)'}"] = {
                "p50_ms": round(statistics.median(http_ms), 3), "p99_ms": round(_percentile(http_ms, 0.99), 3),
                "server_p50_ms": round(statistics.median(server_ms), 3)}
        path = "/sparql?query=" + quote(QUERIES[1])
        http_ms = []
        for i in range(requests + 20):
            begin = time.perf_counter()
            if get(path) != 200:
                raise RuntimeError(f"{QUERIES[1]}: not answered")
            if i >= 20:
                http_ms.append(1000 * (time.perf_counter() - begin))
        out["sparql (one pattern)"] = {"p50_ms": round(statistics.median(http_ms), 3),
                                       "p99_ms": round(_percentile(http_ms, 0.99), 3), "server_p50_ms": None}
    finally:
        connection.close()
    return out


def run_load(url: str | None = None, clients: int = 32, seconds: float = 60.0, workers: int = 2,
             programs: int = 200, seed: int = 0, out: Path | None = None, latency_requests: int = 500,
             log: Callable[[str], None] = lambda m: None) -> dict:
    """Load ``url`` (or a server started here on the SynKQA-Pro KB, scale 1) and report."""
    from kopl2sparql.sampling import random_programs
    from synkqa.benchmark.world import kb_schema

    from kopl2sparql.errors import ExecutionError
    from synkqa.benchmark.executors import get_executor

    # Programs that have an answer (random ones often fail by design, e.g. QueryAttr on an
    # empty set): a failed program is a correct reply, but the load should be answers.
    native = get_executor("native", 42, 1)
    texts = []
    for program in random_programs(kb_schema(42, 1), 4 * programs, seed=seed):
        try:
            native.execute(program)
        except ExecutionError:
            continue
        texts.append(program.canonical())
        if len(texts) == programs:
            break
    process = None
    with tempfile.TemporaryDirectory(prefix="synkqa-load-") as tmp:
        if url is None:
            log(f"starting synkqa serve ({workers} workers)")
            process, url = _start_server(workers, Path(tmp) / "serve.log")
        try:
            log(f"one client, {latency_requests} requests per backend: template programs over HTTP")
            latency = _latency(url.rstrip("/"), _template_programs(500, seed), latency_requests)
            log(f"{clients} clients for {seconds:g} s against {url}")
            report = asyncio.run(_load(url.rstrip("/"), process.pid if process else None, texts, clients, seconds))
            report["latency"] = latency
        finally:
            if process is not None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
    report.update(url=url if process is None else "synkqa serve (started here)", workers=workers,
                  distinct_programs=len(texts), cpu_count=os.cpu_count())
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "serve-load.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


__all__ = ["run_load", "rss_mb", "QUERIES"]
