"""Engines that run full-KoPL programs: the native interpreter and SPARQL stores.

Every engine answers :meth:`run` with an :class:`~kqapro.answers.Answer`; the SPARQL
engines run :func:`kqapro.compiler.compile_program`'s query with the base IRI
:data:`kqapro.rdf.BASE`, so relative IRIs in hand-written KQA Pro-style queries resolve too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pyoxigraph as ox

from kqapro.answers import Answer
from kqapro.compiler import compile_program, decode
from kqapro.interpreter import Interpreter
from kqapro.kb import KB
from kqapro.program import Program
from kqapro.rdf import BASE, kb_to_turtle
from ontology.errors import QuerySyntaxError, StoreError, safe_text

XSD_PREFIX = {"xsd": "http://www.w3.org/2001/XMLSchema#"}


class Engine(Protocol):
    name: str

    def run(self, program: Program) -> Answer: ...


class NativeEngine:
    name = "native"

    def __init__(self, kb: KB):
        self.interpreter = Interpreter(kb)

    def run(self, program: Program) -> Answer:
        return self.interpreter.run(program)


class SparqlEngine:
    """A program compiled to SPARQL, run by :meth:`rows` (one dict per solution)."""

    name = "sparql"
    dialect = "portable"

    def __init__(self, kb: KB):
        self.kb = kb

    def rows(self, sparql: str) -> list[dict]:
        raise NotImplementedError

    def run(self, program: Program) -> Answer:
        compiled = compile_program(program, self.kb, self.dialect)
        return decode(compiled.kind, self.rows(compiled.sparql))


class OxigraphEngine(SparqlEngine):
    """The embedded Oxigraph store, loaded with the KB's Turtle."""

    name = "oxigraph"
    dialect = "exists"

    def __init__(self, kb: KB, turtle: bytes | Path | None = None):
        super().__init__(kb)
        self.store = ox.Store()
        data = turtle.read_bytes() if isinstance(turtle, Path) else turtle
        self.store.bulk_load(data if data is not None else kb_to_turtle(kb), format=ox.RdfFormat.TURTLE)

    def query(self, sparql: str):
        """A query as written (KQA Pro style: relative IRIs, ``xsd:`` undeclared)."""
        try:
            return self.store.query(sparql, base_iri=BASE, prefixes=XSD_PREFIX)
        except SyntaxError as e:
            raise QuerySyntaxError(safe_text(str(e), 500)) from e
        except OSError as e:
            raise StoreError(f"Oxigraph: {safe_text(str(e), 500)}") from e

    def rows(self, sparql: str) -> list[dict]:
        result = self.query(sparql)
        names = [v.value for v in result.variables]
        return [{n: (t.value if t is not None else None) for n, t in zip(names, solution)}
                for solution in result]


def rows_from_json(results: dict) -> list[dict]:
    """SPARQL 1.1 JSON results -> rows of lexical values."""
    return [{k: b[k]["value"] for k in b} for b in results.get("results", {}).get("bindings", [])]


class EndpointEngine(SparqlEngine):
    """A SPARQL 1.1 endpoint holding the KB's Turtle (Virtuoso, the Oxigraph server, Fuseki)."""

    def __init__(self, kb: KB, store, name: str = "endpoint"):
        super().__init__(kb)
        self.store = store          # a store.remote.EndpointStore
        self.name = name

    def rows(self, sparql: str) -> list[dict]:
        result = self.store.query(sparql)
        return [{k: (None if v is None else str(v)) for k, v in zip(result.variables, row)}
                for row in result.rows]


class CrossCheck:
    """Every program on several engines; a disagreement is an :class:`EngineDisagreement`."""

    def __init__(self, engines: list):
        self.engines = engines
        self.name = "+".join(e.name for e in engines)

    def run(self, program: Program) -> Answer:
        from ontology.errors import EngineDisagreement

        answers = [(e.name, e.run(program)) for e in self.engines]
        first = answers[0][1]
        for name, answer in answers[1:]:
            if answer != first:
                raise EngineDisagreement(f"engines disagree on {safe_text(program.to_text(), 300)}: "
                                         f"{answers[0][0]} says {safe_text(first.text, 200)!r}, "
                                         f"{name} says {safe_text(answer.text, 200)!r}")
        return first


class JenaSparqlEngine(SparqlEngine):
    """Apache Jena (ARQ in memory, or TDB2) in a long-lived JVM (:class:`store.jena.JenaEngine`)."""

    dialect = "exists"

    def __init__(self, kb: KB, turtle: Path, *, tdb2_dir: Path | None = None):
        from store.jena import JenaEngine

        super().__init__(kb)
        self.name = "jena-tdb2" if tdb2_dir else "jena"
        self.jena = JenaEngine(Path(turtle), base_iri=BASE, tdb2_dir=tdb2_dir)

    def rows(self, sparql: str) -> list[dict]:
        return rows_from_json(self.jena.query(sparql))

    def close(self) -> None:
        self.jena.close()
