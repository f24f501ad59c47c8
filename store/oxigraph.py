"""The embedded store: pyoxigraph in memory (default) or on disk."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from kopl2sparql.errors import QuerySyntaxError, StoreError
from store.results import SelectResult, term_value


class OxigraphStore:
    """A pyoxigraph store. Reads (``query``) are kept apart from writes (``load_turtle``).

    :param path: directory of an on-disk store (opened, created if missing); ``None`` for memory.
    :raises StoreError: if the on-disk store cannot be opened.
    """

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else None
        try:
            self.raw = ox.Store(str(self.path)) if self.path is not None else ox.Store()
        except OSError as exc:
            raise StoreError(f"cannot open store at {self.path}: {exc}") from None

    def load_turtle(self, path: Path | str) -> None:
        """Bulk-load a Turtle file into the default graph."""
        self.raw.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)

    def __len__(self) -> int:
        return len(self.raw)

    def query(self, sparql: str) -> SelectResult | bool:
        """Run a read-only SPARQL query: a :class:`SelectResult` for SELECT, ``bool`` for ASK.

        :raises QuerySyntaxError: for a malformed query.
        """
        try:
            result = self.raw.query(sparql)
        except SyntaxError as exc:
            raise QuerySyntaxError(str(exc.msg if hasattr(exc, "msg") else exc),
                                   getattr(exc, "lineno", None), getattr(exc, "offset", None)) from None
        if isinstance(result, ox.QueryBoolean):
            return bool(result)
        if isinstance(result, ox.QuerySolutions):
            variables = tuple(v.value for v in result.variables)
            rows = [tuple(term_value(sol[v]) for v in variables) for sol in result]
            return SelectResult(variables, rows)
        raise StoreError("only SELECT and ASK queries are supported here")

    def dump(self, path: Path | str) -> None:
        """Write the default graph as N-Triples... or Turtle, by the file's extension."""
        fmt = ox.RdfFormat.from_extension(Path(path).suffix.lstrip(".")) or ox.RdfFormat.N_TRIPLES
        self.raw.dump(output=str(path), format=fmt, from_graph=ox.DefaultGraph())
