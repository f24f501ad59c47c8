"""``synkqa kb load`` (the KB into a SPARQL server) and ``synkqa kb export`` (KQA Pro JSON).

Both are added to the ``kb`` sub-app owned by :mod:`synkqa.cli.kb`; the work happens in
:mod:`store.loaders` and :mod:`synkqa.benchmark.kqapro_kb`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from synkqa.cli.common import fail, handle_errors, print_json, stdout


class EndpointKind(str, Enum):
    virtuoso = "virtuoso"
    oxigraph = "oxigraph"
    graph_store = "graph-store"
    fuseki = "fuseki"


class ExportFormat(str, Enum):
    kqapro = "kqapro"


def _turtle(file: Path | None, seed: int, scale: int) -> Path:
    if file is not None:
        return file
    from synkqa.benchmark.world import ensure_turtle
    return ensure_turtle(seed, scale)


@handle_errors
def load(
    kind: EndpointKind = typer.Option(..., "--kind", help="How to load: virtuoso (bulk loader over isql), "
                                      "oxigraph (data directory or Graph Store), graph-store/fuseki (HTTP PUT)."),
    endpoint: str = typer.Option(None, "--endpoint", help="SPARQL query URL; the loaded triples are counted "
                                 "back through it (e.g. http://127.0.0.1:8890/sparql)."),
    graph: str = typer.Option(None, "--graph", help="Named graph IRI to load into "
                              "(virtuoso default: http://synkqa.org/kb; others: the default graph)."),
    file: Path = typer.Option(None, "--file", exists=True, dir_okay=False,
                              help="Turtle to load (default: the KB of --seed/--scale, built on first use)."),
    seed: int = typer.Option(42, "--seed", help="KB seed."),
    scale: int = typer.Option(1, "--scale", min=1, help="KB scale."),
    isql: str = typer.Option(None, "--isql", help="Virtuoso SQL port HOST:PORT (default: endpoint host, 1111)."),
    user: str = typer.Option(None, "--user", help="Virtuoso DBA user (default dba) or HTTP user."),
    password: str = typer.Option(None, "--password", envvar="SYNKQA_ENDPOINT_PASSWORD",
                                 help="Password (Virtuoso: default $VIRTUOSO_DBA_PASSWORD or dba)."),
    server_dir: str = typer.Option(None, "--server-dir", help="Virtuoso: the Turtle's directory as the "
                                   "server sees it (must be in DirsAllowed)."),
    store_url: str = typer.Option(None, "--store-url", help="Graph Store URL (default: derived from --endpoint)."),
    location: Path = typer.Option(None, "--location", help="Oxigraph: load into this data directory "
                                  "(then start `oxigraph serve-read-only --location DIR`)."),
    isql_binary: str = typer.Option(None, "--isql-binary", help="isql executable (default: isql-vt)."),
    wait: float = typer.Option(0.0, "--wait", min=0, help="Seconds to wait for the endpoint to come up."),
    as_json: bool = typer.Option(False, "--json", help="Print the load report as JSON."),
) -> None:
    """Load the KB into a SPARQL server (Virtuoso, Oxigraph server, Fuseki) and check the triple count."""
    from store.loaders import load_endpoint

    if endpoint is None and location is None and store_url is None and isql is None:
        raise fail("give --endpoint URL (or --isql / --store-url / --location)", 2)
    turtle = _turtle(file, seed, scale)
    report = load_endpoint(turtle, kind.value, endpoint=endpoint, graph=graph, isql=isql, user=user,
                           password=password, server_dir=server_dir, store_url=store_url,
                           location=str(location) if location else None, isql_binary=isql_binary,
                           wait=wait)
    if as_json:
        print_json(report.as_dict() | {"file": str(turtle), "endpoint": endpoint})
        return
    where = f"graph <{report.graph}>" if report.graph else "the default graph"
    stdout.print(f"loaded {report.triples} triples from {turtle} into {where} of {report.kind} "
                 f"{report.target} in {report.seconds:.2f} s")


@handle_errors
def export(
    fmt: ExportFormat = typer.Option(ExportFormat.kqapro, "--format", help="Output format."),
    out: Path = typer.Option(..., "--out", dir_okay=False, help="File to write."),
    file: Path = typer.Option(None, "--file", exists=True, dir_okay=False,
                              help="KB Turtle (default: the KB of --seed/--scale, built on first use)."),
    seed: int = typer.Option(42, "--seed", help="KB seed."),
    scale: int = typer.Option(1, "--scale", min=1, help="KB scale."),
    forward_only: bool = typer.Option(False, "--forward-only", help="Write each relation once, on its "
                                      "subject (kopl-engine derives the backward edges; kopl needs them)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Write the KB in KQA Pro's JSON (concepts, entities, attributes, relations both ways).

    A KQA Pro-model Turtle (from `kb import --kqapro` or `kb build --kind kqapro`) is written
    back exactly as imported (up to order); the SynKQA-Pro KB is converted (docs/KB.md)."""
    from synkqa.benchmark.kqapro_kb import export_kqapro_model, is_kqapro_file, write_kqapro

    turtle = _turtle(file, seed, scale)
    if is_kqapro_file(turtle):
        counts = export_kqapro_model(turtle, out, backward=not forward_only)
        if as_json:
            print_json(counts | {"format": fmt.value})
            return
        stdout.print(f"wrote {counts['entities']} entities, {counts['concepts']} concepts, "
                     f"{counts['attribute_facts']} attribute facts, {counts['relation_facts']} relation facts "
                     f"as {fmt.value} JSON to {out}")
        return
    summary = write_kqapro(turtle, out, backward=not forward_only)
    if as_json:
        print_json(summary | {"format": fmt.value})
        return
    stdout.print(f"wrote {summary['entities']} entities, {summary['attributes']} attributes, "
                 f"{summary['relations_forward']} relations (+{summary['relations_backward']} backward) "
                 f"as {fmt.value} JSON to {out}")


@handle_errors
def import_(
    kqapro: Path = typer.Option(..., "--kqapro", exists=True, dir_okay=False,
                                help="KQA Pro's KB JSON (kb.json: concepts, entities with attributes, "
                                     "relations and qualifiers)."),
    out: Path = typer.Option(..., "--out", dir_okay=False, help="Turtle file to write."),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Read a KQA Pro KB (JSON) and write it as Turtle in KQA Pro's own RDF model.

    The Turtle keeps KQA Pro's pred:name / pred:instance_of / value nodes / fact nodes, so
    KQA Pro-style SPARQL runs on it, and full KoPL programs run on it with
    `synkqa execute --kb OUT`. `kb export --format kqapro --file OUT` writes the JSON back."""
    from synkqa.benchmark.kqapro_kb import import_kqapro

    counts = import_kqapro(kqapro, out)
    if as_json:
        print_json(counts)
        return
    stdout.print(f"wrote {out}: {counts['entities']} entities, {counts['concepts']} concepts, "
                 f"{counts['relations']} relations, {counts['attribute_keys']} attribute keys, "
                 f"{counts['attribute_facts']} attribute facts, {counts['relation_facts']} relation facts, "
                 f"{counts['qualifier_values']} qualifier values")


def register(app: typer.Typer) -> None:
    """Add ``load`` and ``export`` to the ``kb`` sub-app (defined in synkqa.cli.kb)."""
    from synkqa.cli import kb as kb_module

    kb_app = getattr(kb_module, "kb_app", None)
    if kb_app is None:
        # kb.py defines the sub-app; until it does, the CLI must still start (tests of
        # `synkqa kb load/export` fail loudly in that case).
        return
    kb_app.command("load")(load)
    kb_app.command("export")(export)
    kb_app.command("import")(import_)
