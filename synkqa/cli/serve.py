"""``synkqa serve``: the program workbench and a read-only SPARQL service (synkqa.web)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kopl2sparql.errors import ConfigError
from synkqa.cli.common import handle_errors, stderr


@handle_errors
def serve(
    kb: Optional[Path] = typer.Option(None, "--kb", dir_okay=False,
                                      help="A Turtle KB: any schema (SynKQA-Pro's KoPL) or KQA Pro's RDF model "
                                           "(full KoPL). Default: the SynKQA-Pro KB of --seed/--scale."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", metavar="URL",
                                           help="A SPARQL endpoint holding the same KB: /sparql forwards to it "
                                                "and programs may run on it (backend 'endpoint')."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port, printed)."),
    seed: int = typer.Option(42, "--seed", help="Seed of the SynKQA-Pro KB."),
    scale: int = typer.Option(1, "--scale", min=1, help="Scale of the SynKQA-Pro KB."),
    timeout: float = typer.Option(10.0, "--timeout", min=0.01, metavar="SECONDS",
                                  help="Time limit per program; the worker running it is killed."),
    query_timeout: float = typer.Option(10.0, "--query-timeout", min=0.01, metavar="SECONDS",
                                        help="Time limit per SPARQL query."),
    row_limit: int = typer.Option(10_000, "--row-limit", min=1, help="Rows per SPARQL answer at most "
                                  "(more are cut, and the X-SPARQL-Truncated header says so)."),
    workers: int = typer.Option(2, "--workers", min=1, max=64,
                                help="Worker processes running programs and queries in parallel."),
    questions: bool = typer.Option(True, "--questions/--no-questions",
                                   help="Answer English questions with the best system (SynKQA-Pro KB "
                                        "only; its model is trained on first use)."),
) -> None:
    """Serve the program workbench (/) and the SPARQL 1.1 Protocol (/sparql, read-only) for one KB.

    The workbench edits a program with completion, draws its steps, shows every step's
    intermediate result, the compiled SPARQL, and runs it on native, Oxigraph or the
    endpoint with a cross-check. The JSON API behind it is in docs/SERVE.md.
    """
    import uvicorn

    from synkqa.web.app import create_app
    from synkqa.web.workbench import Settings, Workbench

    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"--endpoint must be an http:// or https:// URL, not {endpoint!r}")
    settings = Settings(kb=kb, seed=seed, scale=scale, endpoint=endpoint, program_timeout=timeout,
                        query_timeout=query_timeout, row_limit=row_limit, workers=workers, questions=questions)
    with stderr.status("loading the KB", spinner="dots"):
        workbench = Workbench(settings)
    config = uvicorn.Config(create_app(workbench), host=host, port=port, log_level="warning",
                            timeout_keep_alive=5, timeout_graceful_shutdown=3, limit_concurrency=256)
    server = uvicorn.Server(config)

    original_startup = server.startup

    async def startup(sockets=None):
        await original_startup(sockets=sockets)
        for listener in server.servers:
            for sock in listener.sockets:
                bound_host, bound_port = sock.getsockname()[:2]
                stderr.print(f"serving {workbench.info()['kb']} ({workbench.language.name}) on "
                             f"http://{bound_host}:{bound_port}/  (SPARQL: /sparql; Ctrl-C stops)")
    server.startup = startup
    try:
        server.run()
    finally:
        workbench.close()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
