"""Every error the toolkit raises on purpose.

One hierarchy for the whole project (the lower layers own it, the upper layers import it):
the CLI catches :class:`SynKQAError`, prints ``str(error)`` on stderr and exits with
``error.exit_code``. Anything else escaping is a bug.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe_text(text: str, limit: int = 2000) -> str:
    r"""``text`` fit for a terminal: control characters (escape sequences included) shown as
    ``\xNN``, each line clipped to ``limit`` characters. User input ends up in messages; it
    must neither drive the terminal nor flood it.

    >>> safe_text("bad\x1b]0;title\x07 name")
    'bad\\x1b]0;title\\x07 name'
    >>> safe_text("x" * 30, limit=10)
    'xxxxxxxxxx… (20 more characters)'
    """
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    lines = []
    for line in text.split("\n"):
        if len(line) > limit:
            line = f"{line[:limit]}… ({len(line) - limit} more characters)"
        lines.append(line)
    return "\n".join(lines)


class SynKQAError(Exception):
    """Base class. ``str()`` is the complete, user-facing message."""

    exit_code = 1


# ---- programs ------------------------------------------------------------------------

class ProgramError(SynKQAError):
    """A problem located in a program text.

    ``source`` is the program text, ``span`` the half-open character range of the culprit,
    ``step`` the 1-based step number (``None`` when the problem is not inside one step).
    """

    kind = "program error"

    def __init__(self, message: str, source: str | None = None,
                 span: tuple[int, int] | None = None, step: int | None = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.span = span
        self.step = step

    @property
    def position(self) -> int | None:
        """0-based character offset of the culprit, if known."""
        return self.span[0] if self.span else None

    EXCERPT_CONTEXT = 60
    """Characters of the program shown on each side of the culprit."""

    def excerpt(self) -> str:
        """The program around the culprit, the culprit underlined by carets (empty without a
        source). Long programs are clipped to :attr:`EXCERPT_CONTEXT` characters each side
        and control characters shown as ``?``, so the excerpt stays one readable line."""
        if self.source is None or self.span is None:
            return ""
        start, end = self.span
        end = max(end, start + 1)
        source = self.source
        if "\n" not in source and len(source) > 2 * self.EXCERPT_CONTEXT + (end - start):
            left = max(0, start - self.EXCERPT_CONTEXT)
            right = min(len(source), end + self.EXCERPT_CONTEXT)
            end = min(end, start + 2 * self.EXCERPT_CONTEXT)      # a huge culprit: underline its start
            right = min(right, end + self.EXCERPT_CONTEXT)
            prefix, suffix = ("…" if left else ""), ("…" if right < len(source) else "")
            line = prefix + _CONTROL.sub("?", source[left:right]).replace("\t", " ") + suffix
            pad = len(prefix) + start - left
            return f"  {line}\n  {' ' * pad}{'^' * (end - start)}"
        if "\n" in self.source or "\t" in self.source:
            # Multi-line programs: show only the culprit's line, carets clipped to it;
            # tabs become one space so the carets stay aligned.
            line_start = self.source.rfind("\n", 0, start) + 1
            line_end = self.source.find("\n", start)
            line_end = len(self.source) if line_end < 0 else line_end
            line = _CONTROL.sub("?", self.source[line_start:line_end].replace("\t", " "))
            start, end = start - line_start, max(min(end, line_end), start + 1) - line_start
            return f"  {line}\n  {' ' * start}{'^' * (end - start)}"
        return f"  {_CONTROL.sub('?', source)}\n  {' ' * start}{'^' * (end - start)}"

    def __str__(self) -> str:
        where = []
        if self.step is not None:
            where.append(f"step {self.step}")
        if self.span is not None:
            start = self.span[0]
            if self.source and "\n" in self.source[:start]:
                line_start = self.source.rfind("\n", 0, start) + 1
                where.append(f"line {self.source.count(chr(10), 0, start) + 1}, col {start - line_start + 1}")
            else:
                where.append(f"col {start + 1}")
        head = f"{self.kind}: {safe_text(self.message, 500)}" + (f" ({', '.join(where)})" if where else "")
        excerpt = self.excerpt()
        return f"{head}\n{excerpt}" if excerpt else head


class ProgramSyntaxError(ProgramError):
    kind = "syntax error"


class ProgramTypeError(ProgramError):
    kind = "type error"


class ExecutionError(SynKQAError):
    """A well-typed program that cannot be evaluated on this KB (e.g. QueryAttr on 3 entities)."""

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message if step is None else f"execution error at step {step}: {message}")
        self.step = step


class ExecutionTimeout(ExecutionError):
    """A program (or one call on an engine) ran past its time limit and was stopped."""


class EngineDisagreement(SynKQAError):
    """Two engines gave different answers for the same program (cross-check mode)."""


# ---- stores and endpoints ------------------------------------------------------------

class StoreError(SynKQAError):
    """The triple store or endpoint failed or refused a request."""


class QuerySyntaxError(StoreError):
    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"SPARQL syntax error{where}: {message}")
        self.line, self.column = line, column


class ReadOnlyError(StoreError):
    """An update was sent through a read-only interface."""


class QueryTimeout(StoreError):
    pass


class QueryRefused(StoreError):
    """A query the toolkit will not run for you (a federated ``SERVICE`` call)."""


class EndpointError(StoreError):
    """A remote endpoint was unreachable or answered with an error."""


# ---- data, models, configuration -------------------------------------------------------

class DatasetError(SynKQAError):
    pass


class ModelError(SynKQAError):
    pass


class ConfigError(SynKQAError):
    """Bad option values, unwritable paths, missing files."""


def did_you_mean(name: str, candidates: Iterable[str],
                 synonyms: Mapping[str, str] | None = None) -> str | None:
    """Closest known name for ``name``.

    ``synonyms`` maps extra words (labels, altLabels) to the canonical name they stand
    for, so ``birthplace`` suggests ``born_in``. Matching ignores case, spaces and ``_``.
    """
    def norm(text: str) -> str:
        return text.lower().replace("_", " ").replace("-", " ").strip()

    table: dict[str, str] = {}
    for cand in candidates:
        table.setdefault(norm(cand), cand)
    for word, target in (synonyms or {}).items():
        table.setdefault(norm(word), target)
    key = norm(name)
    if key in table:
        return table[key]
    close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.6)
    return table[close[0]] if close else None


def unknown_name_message(what: str, name: str, candidates: Iterable[str],
                         synonyms: Mapping[str, str] | None = None) -> str:
    """``unknown relation 'birthplace'; did you mean born_in?`` (or the list of known names)."""
    candidates = list(candidates)
    guess = did_you_mean(name, candidates, synonyms)
    if guess is not None and guess != name:
        return f"unknown {what} '{name}'; did you mean {guess}?"
    shown = ", ".join(sorted(candidates)[:12])
    return f"unknown {what} '{name}'; known: {shown}"


__all__ = ["SynKQAError", "ProgramError", "ProgramSyntaxError", "ProgramTypeError", "ExecutionError",
           "ExecutionTimeout", "EngineDisagreement", "StoreError", "QuerySyntaxError", "ReadOnlyError",
           "QueryTimeout", "EndpointError", "QueryRefused", "DatasetError", "ModelError", "ConfigError", "did_you_mean",
           "unknown_name_message", "safe_text"]
