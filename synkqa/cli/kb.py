"""``synkqa kb build|stats|validate`` and ``synkqa sparql``: the KB, its store, raw SPARQL.

``kb_app`` is the ``kb`` sub-app; other modules add commands to it (``kb load`` and
``kb export`` come from :mod:`synkqa.cli.interop`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sys
import time
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from kopl2sparql.errors import ConfigError, QueryTimeout, safe_text
from store.oxigraph import DEFAULT_LIMIT, DEFAULT_TIMEOUT
from synkqa.cli.common import EXIT_USAGE, fail, handle_errors, print_json, stderr, stdout

kb_app = typer.Typer(
    name="kb",
    help="The synthetic KB: build it (Turtle + store), recompute Table I from SPARQL, validate it with SHACL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SEED = typer.Option(42, "--seed", help="KB seed.")
SCALE = typer.Option(1, "--scale", min=1, help="KB scale: every entity count is multiplied by it.")

STATS_ROWS = ("Person", "City", "Country", "Organization", "entities",
              "relation_types", "relation_edges", "attribute_types", "attribute_values")
"""Rows of Table I, in the paper's order."""


# ---- helpers --------------------------------------------------------------------------------

def _writable_file(path: Path, what: str) -> Path:
    """Fail early, with one line, if ``path`` cannot become a file (atomic writes put a
    temporary file beside it, so the directory must exist or be creatable and be writable)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"cannot write {what} {path}: it is a directory")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        # A link, FIFO or device is written through (paths.atomic_path), not replaced.
        if not os.access(path, os.W_OK):
            raise ConfigError(f"cannot write {what} {path}: permission denied")
        return path
    parent = path.parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"cannot write {what} {path}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write {what} {path}: permission denied")
    return path


def _store_dir(path: Path | None) -> Path | None:
    if path is not None and path.exists() and not path.is_dir():
        raise ConfigError(f"cannot use {path} as a store: it is a file, not a directory")
    return path


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


# ---- kb build -------------------------------------------------------------------------------

class KBKind(str, Enum):
    synkqa = "synkqa"
    kqapro = "kqapro"


@kb_app.command("build")
@handle_errors
def build(
    kind: KBKind = typer.Option(KBKind.synkqa, "--kind", help="synkqa: the paper's KB (4 classes); "
                                "kqapro: a KQA Pro-shaped KB (concept hierarchy, qualifiers, units, dates; "
                                "about 17,000 entities per scale unit) in KQA Pro's RDF model."),
    seed: int = SEED,
    scale: int = SCALE,
    out: Path = typer.Option(None, "--out", help="Write the Turtle here (default: the cache, "
                             "$SYNKQA_HOME/kb-seed{seed}-scale{scale}.ttl)."),
    store: Path = typer.Option(None, "--store", help="Also load it into an on-disk Oxigraph store in "
                               "this directory (reopened without reloading when already loaded)."),
    force: bool = typer.Option(False, "--force", help="Regenerate the cached Turtle even if it exists."),
    as_json: bool = typer.Option(False, "--json", help="Print the build report as JSON."),
) -> None:
    """Generate the KB deterministically and write it as Turtle (atomically), optionally into a store."""
    from store.oxigraph import OxigraphStore, file_sha256
    from synkqa.benchmark import kbgen, paths, world

    if kind is KBKind.kqapro:
        return _build_kqapro(seed, scale, out, store, force, as_json)
    target = _writable_file(out if out is not None else paths.kb_turtle(seed, scale), "the Turtle")
    _store_dir(store)
    start = time.perf_counter()
    generated = out is not None or force or not target.exists()
    if generated:
        world.write_kb(seed, scale, target, progress=not as_json)
    build_seconds = time.perf_counter() - start
    counts = {cls: n * scale for cls, n in kbgen.BASE_COUNTS.items()}
    report: dict[str, Any] = {
        "seed": seed, "scale": scale, "turtle": str(target), "generated": generated,
        "sha256": file_sha256(target), "bytes": target.stat().st_size,
        "triples": 2 * sum(counts.values()) + kbgen.PAPER_TABLE_I["relation_edges"] * scale
        + kbgen.PAPER_TABLE_I["attribute_values"] * scale,
        "seconds": round(build_seconds, 3), "store": None,
    }
    if store is not None:
        start = time.perf_counter()
        # Under the build lock, as first-use builds: concurrent builds of one store load it once.
        loaded = world.load_store_dir(store, target, progress=not as_json)
        record = OxigraphStore(store, read_only=True).record
        report["store"] = {"path": str(store), "loaded": loaded, "triples": record.triples,
                           "seconds": round(time.perf_counter() - start, 3)}
    if as_json:
        print_json(report)
        return
    verb = "wrote" if generated else "already built"
    stdout.print(f"{verb} {target} ({report['triples']} triples, {_mb(report['bytes'])}, "
                 f"{report['seconds']:.2f} s)\nsha256 {report['sha256']}")
    if report["store"]:
        s = report["store"]
        how = "loaded" if s["loaded"] else "already loaded (not reloaded)"
        stdout.print(f"store {s['path']}: {how}, {s['triples']} KB triples ({s['seconds']:.2f} s)")


def _build_kqapro(seed: int, scale: int, out: Path | None, store: Path | None, force: bool,
                  as_json: bool) -> None:
    from store.oxigraph import file_sha256
    from synkqa.benchmark import paths
    from synkqa.benchmark.kqapro_kb import build_kqapro

    if store is not None:
        raise fail("--store is for the synkqa KB; load a kqapro KB with `synkqa execute --kb FILE`", 2)
    target = _writable_file(out if out is not None else paths.home() / f"kqapro-seed{seed}-scale{scale}.ttl",
                            "the Turtle")
    start = time.perf_counter()
    generated = out is not None or force or not target.exists()
    report: dict[str, Any] = {"kind": "kqapro", "seed": seed, "scale": scale, "turtle": str(target),
                              "generated": generated}
    if generated:
        with stderr.status(f"generating a KQA Pro-shaped KB (scale {scale}, seed {seed})",
                           spinner="dots") if not as_json else contextlib.nullcontext():
            report |= build_kqapro(seed, scale, target)
        report["path"] = str(target)
    report |= {"sha256": file_sha256(target), "bytes": target.stat().st_size,
               "seconds": round(time.perf_counter() - start, 3)}
    if as_json:
        print_json(report)
        return
    verb = "wrote" if generated else "already built"
    counts = "" if not generated else (f": {report['entities']} entities, {report['concepts']} concepts, "
                                       f"{report['relations']} relations, {report['attribute_keys']} attribute "
                                       f"keys, {report['qualifier_keys']} qualifier keys")
    stdout.print(f"{verb} {target}{counts} ({_mb(report['bytes'])}, {report['seconds']:.2f} s)\n"
                 f"sha256 {report['sha256']}")


# ---- kb stats -------------------------------------------------------------------------------

@kb_app.command("stats")
@handle_errors
def stats(
    as_json: bool = typer.Option(False, "--json", help="Print the numbers as JSON."),
    endpoint: str = typer.Option(None, "--endpoint", help="Count on this SPARQL endpoint instead of "
                                 "the embedded store (e.g. http://127.0.0.1:8890/sparql)."),
    graph: str = typer.Option(None, "--graph", help="With --endpoint: the named graph holding the KB."),
    seed: int = SEED,
    scale: int = SCALE,
    store: Path = typer.Option(None, "--store", help="On-disk store to use (default: the cache's, "
                               "built on first use)."),
    timeout: float = typer.Option(120.0, "--timeout", min=0.001, help="Seconds per COUNT query."),
    kb: Path = typer.Option(None, "--kb", dir_okay=False,
                            help="A Turtle KB of any schema instead of the SynKQA-Pro KB (loaded into an "
                                 "on-disk store in the cache on first use; see docs/KB.md)."),
) -> None:
    """Recompute Table I from the store with SPARQL COUNT queries, beside the paper's numbers.

    Exits 1 when a measured count differs from the expected one (paper x scale). With --kb,
    the counts of that KB (entities per class, edges per relation, values per attribute).
    """
    from synkqa.benchmark import world
    from synkqa.benchmark.kbgen import PAPER_TABLE_I

    if kb is not None:
        return _kb_file_stats(kb, as_json, timeout)
    if endpoint is not None:
        from store.remote import EndpointStore
        target = EndpointStore(endpoint, graph=graph, timeout=timeout)
        source = repr(target)
    else:
        from store.oxigraph import OxigraphStore
        path = world.ensure_store(seed, scale, path=_store_dir(store), progress=not as_json)
        target = _TimedStore(OxigraphStore(path, read_only=True), timeout)
        source = f"embedded store {path}"
    found = world.table_i(target)
    expected = world.expected_table_i(scale)
    measured = found["measured"]
    mismatches = [k for k in STATS_ROWS if measured[k] != expected[k]]
    if as_json:
        print_json({"seed": seed, "scale": scale, "source": source, **measured,
                    "relations": found["relations"], "attributes": found["attributes"],
                    "expected": {k: expected[k] for k in STATS_ROWS},
                    "paper": {k: PAPER_TABLE_I[k] for k in STATS_ROWS},
                    "matches": not mismatches})
    else:
        table = Table(title=f"Table I from SPARQL ({source})", title_justify="left")
        table.add_column("quantity")
        table.add_column("measured", justify="right")
        table.add_column(f"expected (paper x {scale})" if scale != 1 else "expected", justify="right")
        table.add_column("paper", justify="right")
        table.add_column("", justify="center")
        for key in STATS_ROWS:
            table.add_row(key, str(measured[key]), str(expected[key]), str(PAPER_TABLE_I[key]),
                          "ok" if measured[key] == expected[key] else "DIFFERS")
        stdout.print(table)
        details = ", ".join(f"{k} {v}" for k, v in {**found["relations"], **found["attributes"]}.items())
        stdout.print(f"per property: {details}")
    if mismatches:
        shown = ", ".join(f"{k} {measured[k]} != {expected[k]}" for k in mismatches)
        raise fail(f"the store does not match Table I x {scale}: {shown}")


def _kb_file_stats(kb: Path, as_json: bool, timeout: float) -> None:
    from store.oxigraph import OxigraphStore
    from synkqa.benchmark import world
    from synkqa.benchmark.executors import kb_file_schema

    schema = kb_file_schema(kb)            # validates the file before any store is built
    path = world.ensure_kb_file_store(kb, progress=not as_json)
    found = world.kb_counts(_TimedStore(OxigraphStore(path, read_only=True), timeout), schema)
    numbers = {**found, "schema": schema.stats()}
    if as_json:
        print_json({"kb": str(kb), **numbers})
        return
    table = Table(title=f"{kb} (embedded store {path})", title_justify="left")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("count", justify="right")
    table.add_row("entities", "", str(found["entities"]))
    for kind in ("classes", "relations", "attributes"):
        for name, n in found[kind].items():
            table.add_row("class" if kind == "classes" else kind[:-1], name, str(n))
    stdout.print(table)


class _TimedStore:
    """An OxigraphStore whose every query carries a time limit (for ``kb stats``)."""

    def __init__(self, store, timeout: float):
        self.store, self.timeout = store, timeout

    def query(self, sparql: str):
        return self.store.query(sparql, timeout=self.timeout)


# ---- kb validate ----------------------------------------------------------------------------

@kb_app.command("validate")
@handle_errors
def validate(
    file: Path = typer.Option(None, "--file", help="Turtle file to validate (default: the KB of "
                              "--seed/--scale, built on first use)."),
    seed: int = SEED,
    scale: int = SCALE,
    expect_counts: Optional[bool] = typer.Option(
        None, "--expect-counts/--no-expect-counts",
        help="Also check Table I: the entities per class, edges per relation and values per attribute "
             "the SynKQA-Pro KB of --seed/--scale must hold (from the generator). Default: checked for "
             "the default KB and for a --file that uses the SynKQA-Pro ontology "
             "(http://synkqa.org/ontology#), not for a KB of another vocabulary (docs/KB.md)."),
    limit: int = typer.Option(10, "--show", min=0, help="How many violations to print (of each kind)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check the KB against the SHACL shapes (ontology/shapes.ttl) with pyshacl, and its counts
    against Table I x --scale; exit 1 on any violation.

    SHACL checks each entity on its own; the counts catch what it cannot see (an entity
    removed with all its triples). Counts are SPARQL COUNTs on pyoxigraph (under a second at
    scale 1); SHACL uses rdflib in memory: fine at scale 1 (about 5 s), impractical far
    beyond scale 10.
    """
    from ontology.shacl import validate as shacl_validate
    from synkqa.benchmark import world

    if file is not None and not file.is_file():
        raise ConfigError(f"Turtle file not found: {file}")
    path = file if file is not None else world.ensure_turtle(seed, scale, progress=not as_json)
    _check_turtle(path)
    counts, skipped = _check_counts(path, seed, scale, expect_counts, default_kb=file is None)
    try:
        report = shacl_validate(path)
    except SyntaxError as exc:  # rdflib's Turtle parser
        raise ConfigError(f"{path} is not valid Turtle: {exc}") from None
    conforms = report.conforms and (counts is None or counts.conforms)
    if as_json:
        print_json({"file": str(path), "conforms": conforms,
                    "violations": [v.__dict__ for v in report.violations],
                    "counts": None if counts is None else {
                        "seed": counts.seed, "scale": counts.scale, "conforms": counts.conforms,
                        "violations": [v.__dict__ for v in counts.violations],
                        "measured": counts.measured, "expected": counts.expected},
                    **({"counts_skipped": skipped} if skipped else {})})
    else:
        stdout.print(_validate_text(path, report, counts, skipped, limit), markup=False)
    if not conforms:
        raise typer.Exit(1)


def _check_counts(path: Path, seed: int, scale: int, expect: bool | None, default_kb: bool):
    """``(CountReport or None, why the counts were not checked or None)``."""
    from synkqa.benchmark import kbcheck

    if expect is False:
        return None, "--no-expect-counts"
    measured = kbcheck.measure_counts(path)
    if expect is None and not default_kb and not kbcheck.uses_synkqa_vocabulary(measured):
        return None, "the file does not use the SynKQA-Pro ontology (give --expect-counts to check them anyway)"
    return kbcheck.check_counts(path, seed, scale, measured=measured), None


def _validate_text(path: Path, report, counts, skipped: str | None, limit: int) -> str:
    """The text report: the SHACL violations, then the count violations (``counts`` is a
    :class:`synkqa.benchmark.kbcheck.CountReport`, or ``None`` when not checked)."""
    what = None if counts is None else f"the SynKQA-Pro KB of seed {counts.seed}, scale {counts.scale}"
    if report.conforms and (counts is None or counts.conforms):
        if counts is None:
            return f"{path}: conforms: every SHACL invariant holds (counts not checked: {skipped})"
        e = counts.expected
        return (f"{path}: conforms: every SHACL invariant holds, and the counts are those of {what} "
                f"({e['entities']:,} entities, {sum(e['relations'].values()):,} edges, "
                f"{sum(e['attributes'].values()):,} values)")
    lines = []
    if not report.conforms:
        lines.append(f"{path}: {report.summary(limit)}")
    if counts is not None and not counts.conforms:
        shacl = " (every SHACL invariant holds)" if report.conforms else ""
        lines.append(f"{path}: {len(counts.violations)} count violation(s) against {what}{shacl}:")
        lines += [f"  {v.message}" for v in counts.violations[:limit]]
        if len(counts.violations) > limit:
            lines.append(f"  ... and {len(counts.violations) - limit} more")
        lines.append("  (the KB of another scale: give --scale; a KB not meant to be the SynKQA-Pro KB: "
                     "--no-expect-counts)")
    elif counts is None:
        lines.append(f"{path}: counts not checked: {skipped}")
    return "\n".join(lines)


def _check_turtle(path: Path) -> None:
    """Parse the file with pyoxigraph first: a binary or truncated file is one clear error with
    its position (rdflib raised UnicodeDecodeError/IndexError on them), and an empty one is
    not a KB that "conforms"."""
    import pyoxigraph as ox

    triples = 0
    try:
        with open(path, "rb") as handle:
            for _ in ox.parse(handle, format=ox.RdfFormat.TURTLE):
                triples += 1
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except SyntaxError as exc:
        raise ConfigError(f"{path} is not valid Turtle: {safe_text(str(exc), 300)}") from None
    if triples == 0:
        raise ConfigError(f"{path} holds no triples: an empty file is not a KB")


# ---- synkqa sparql ----------------------------------------------------------------------------

class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


def _compact(value: Any) -> Any:
    from ontology import PREFIXES
    if isinstance(value, str) and value.startswith("http"):
        for prefix, ns in PREFIXES.items():
            if value.startswith(ns) and len(value) > len(ns):
                return f"{prefix}:{value[len(ns):]}"
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        as_float = float(value)
        # a JSON number when it round-trips exactly, else the exact decimal text
        return as_float if Decimal(repr(as_float)) == value else str(value)
    return value


def render(result, fmt: OutputFormat) -> str:
    """Text of a query result in ``fmt`` (the ``synkqa sparql`` output)."""
    if isinstance(result, bool):
        if fmt is OutputFormat.json:
            return json.dumps({"boolean": result}) + "\n"
        if fmt is OutputFormat.csv:
            return f"boolean\r\n{str(result).lower()}\r\n"
        return ("yes" if result else "no") + "\n"
    if fmt is OutputFormat.json:
        rows = [{k: _json_value(v) for k, v in zip(result.variables, row)} for row in result.rows]
        return json.dumps({"variables": list(result.variables), "rows": rows,
                           "truncated": result.truncated}, ensure_ascii=False) + "\n"
    if fmt is OutputFormat.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(result.variables)
        writer.writerows(["" if v is None else v for v in row] for row in result.rows)
        return buffer.getvalue()
    table = Table(*result.variables, show_lines=False)
    for row in result.rows:
        table.add_row(*("" if v is None else str(_compact(v)) for v in row))
    from rich.console import Console
    console = Console(file=io.StringIO(), width=200, highlight=False, color_system=None)
    console.print(table)
    return console.file.getvalue()


def with_prefixes(sparql: str) -> str:
    """Prepend PREFIX declarations for the built-in prefixes a query uses without declaring
    (the embedded store knows them; a remote endpoint does not)."""
    import re

    from ontology import PREFIXES
    declared = {m.lower() for m in re.findall(r"PREFIX\s*([^\s:]*):", sparql, re.IGNORECASE)}
    missing = [p for p in PREFIXES if p not in declared and re.search(rf"(?<![\w?$<#/]){p}:", sparql)]
    return "".join(f"PREFIX {p}: <{PREFIXES[p]}>\n" for p in missing) + sparql


def _read_query(query: str | None, file: Path | None) -> str:
    if (query is None) == (file is None):
        raise fail("give a QUERY argument or --file FILE (exactly one); see synkqa sparql --help", EXIT_USAGE)
    if file is None:
        return query
    if str(file) == "-":
        return sys.stdin.read()
    if not file.exists():
        raise ConfigError(f"query file not found: {file}")
    if not file.is_file():
        raise ConfigError(f"query file is not a regular file: {file}")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"query file is not UTF-8 text: {file}") from None


@handle_errors
def sparql(
    query: str = typer.Argument(None, help="The SPARQL query (SELECT, ASK, CONSTRUCT, DESCRIBE). "
                                "Prefixes sk:, ske:, rdf:, rdfs:, xsd: are predeclared."),
    file: Path = typer.Option(None, "--file", "-f", help="Read the query from this file ('-': stdin)."),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="Output format."),
    endpoint: str = typer.Option(None, "--endpoint", help="Query this SPARQL endpoint instead of the "
                                 "embedded store."),
    graph: str = typer.Option(None, "--graph", help="With --endpoint: the named graph holding the KB."),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", min=0.001,
                                  help="Seconds the query may run; the embedded query runs in a child "
                                       "process that is killed at the limit."),
    limit: int = typer.Option(DEFAULT_LIMIT, "--limit", min=0, help="At most this many rows (0: no limit)."),
    seed: int = SEED,
    scale: int = SCALE,
    store: Path = typer.Option(None, "--store", help="On-disk store to query (default: the cache's, "
                               "built on first use)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the result to this file instead of stdout."),
    allow_service: bool = typer.Option(False, "--allow-service",
                                       help="Let the query call other endpoints with SERVICE (refused by "
                                            "default: a query should not make this machine send requests)."),
    kb: Path = typer.Option(None, "--kb", dir_okay=False,
                            help="A Turtle KB of any schema instead of the SynKQA-Pro KB (loaded into an "
                                 "on-disk store in the cache on first use; see docs/KB.md)."),
) -> None:
    """Run a read-only SPARQL query on the KB. Updates are refused (exit 1).

    The default graph is the KB; GRAPH <http://synkqa.org/ontology> holds the schema (labels, altLabels, domains, ranges).
    """
    text = _read_query(query, file)
    if out is not None:
        _writable_file(out, "the result")
    row_limit = limit or None
    start = time.perf_counter()
    try:
        if endpoint is not None:
            from store.oxigraph import screen_query
            from store.remote import EndpointStore
            screen_query(text, allow_service=allow_service)
            if graph is not None:
                _require_graph(endpoint, graph, timeout)
            result = EndpointStore(endpoint, graph=graph, timeout=timeout).query(with_prefixes(text))
            if row_limit is not None and not isinstance(result, bool) and len(result.rows) > row_limit:
                result = type(result)(result.variables, result.rows[:row_limit], True)
        else:
            from store.oxigraph import query_in_subprocess, screen_query
            from synkqa.benchmark import world
            screen_query(text, allow_service=allow_service)  # before building anything
            if kb is not None:
                from synkqa.benchmark.executors import kb_file_schema
                prefixes = kb_file_schema(kb).prefixes        # the file's own, predeclared
                path = world.ensure_kb_file_store(kb, progress=True)
                result = query_in_subprocess(path, text, timeout=timeout, limit=row_limit, prefixes=prefixes,
                                             allow_service=allow_service)
            else:
                path = world.ensure_store(seed, scale, path=_store_dir(store), progress=True)
                result = query_in_subprocess(path, text, timeout=timeout, limit=row_limit,
                                             allow_service=allow_service)
    except QueryTimeout as exc:
        raise QueryTimeout(f"{exc} (raise it with --timeout)") from None
    seconds = time.perf_counter() - start
    rendered = render(result, fmt)
    if out is not None:
        from synkqa.benchmark.paths import atomic_path
        with atomic_path(out) as tmp:
            tmp.write_text(rendered, encoding="utf-8")
    else:
        sys.stdout.write(rendered)
        sys.stdout.flush()
    if not isinstance(result, bool):
        more = f"; stopped at --limit {limit}, more rows exist" if result.truncated else ""
        stderr.print(f"{len(result.rows)} row(s) in {seconds:.2f} s{more}")


def _require_graph(endpoint: str, graph: str, timeout: float) -> None:
    """A ``--graph`` that holds nothing would make every query answer nothing: say so."""
    import re

    from store.remote import EndpointStore

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|^`\\]*", graph):
        raise ConfigError(f"--graph {safe_text(graph, 120)!r} is not an IRI")
    if EndpointStore(endpoint, timeout=timeout).query(f"ASK {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}") is not True:
        raise ConfigError(f"graph <{safe_text(graph, 120)}> holds no triples at {safe_text(endpoint, 120)} "
                          "(check --graph; `synkqa kb load` loads the KB into a graph)")


def register(app: typer.Typer) -> None:
    """Add the ``kb`` sub-app and the ``sparql`` command to the main app."""
    app.add_typer(kb_app, name="kb")
    app.command("sparql")(sparql)
