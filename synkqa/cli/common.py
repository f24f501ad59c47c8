"""What every CLI command shares: error translation, exit codes, JSON output.

Library code raises :class:`SynKQAError`; only this layer turns it into a message on
stderr and an exit code (0 ok, 1 bad input or failed check, 2 usage).
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import typer
from rich.console import Console

from kopl2sparql.errors import SynKQAError, safe_text

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_FAIL) -> "typer.Exit":
    """Print ``message`` on stderr and return the Exit to raise: ``raise fail("...")``."""
    print(f"error: {safe_text(message)}", file=sys.stderr)
    return typer.Exit(code)


def handle_errors(func):
    """Decorator for command functions: SynKQAError/OSError -> one clear stderr message + exit code."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except SynKQAError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except OSError as exc:
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            raise fail(f"{exc.strerror or exc}{where}") from None
    return wrapper


def print_json(data: Any) -> None:
    """One JSON document (or line) on stdout, plain text, no colour codes."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, sort_keys=False) + "\n")
