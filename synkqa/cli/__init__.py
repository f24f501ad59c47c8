"""The ``synkqa`` command line. Each area registers its commands from its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="synkqa",
    help="KoPL programs on a real triple store: build the SynKQA-Pro KB and benchmark, "
         "compile and execute programs, query the store, train, predict and evaluate parsers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)



def _version(value: bool) -> None:
    if value:
        from synkqa import __version__
        typer.echo(f"synkqa {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Artefacts (KB, store, dataset, models) are cached under $SYNKQA_HOME (default ./.synkqa)."""


from synkqa.cli import kb as _kb, interop as _interop, language as _language, dataset as _dataset, study as _study, bench as _bench, fullkopl as _fullkopl, serve as _serve  # noqa: E402

for _module in (_kb, _interop, _language, _dataset, _study, _bench, _fullkopl, _serve):
    _module.register(app)


def main() -> None:
    """Entry point. Usage errors become one line on stderr (exit 2), not a usage panel."""
    import sys

    try:  # recent typer vendors click; older releases use the click package
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - depends on the installed typer
        import click as click_errors

    try:
        code = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError:
        sys.exit(2)  # the help text has been printed already
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "synkqa"
        print(f"error: {exc.format_message()} (see '{where} --help')", file=sys.stderr)
        sys.exit(2)
    except click_errors.ClickException as exc:
        print(f"error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # e.g. `synkqa ... | head`
        sys.exit(0)
    sys.exit(code if isinstance(code, int) else 0)
