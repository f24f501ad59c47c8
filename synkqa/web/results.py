"""SPARQL 1.1 query results in the four standard formats, at most ``limit`` rows.

pyoxigraph serializes a whole result only; the service stops at a row limit and says so,
so the rows are written here from pyoxigraph's terms (``NamedNode``, ``BlankNode``,
``Literal``), following the W3C formats: JSON (``application/sparql-results+json``),
XML (``application/sparql-results+xml``), CSV and TSV (``text/csv``,
``text/tab-separated-values``). CONSTRUCT/DESCRIBE results are RDF, written by pyoxigraph.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

import pyoxigraph as ox

JSON, XML, CSV, TSV = ("application/sparql-results+json", "application/sparql-results+xml",
                       "text/csv", "text/tab-separated-values")
TURTLE, NTRIPLES = "text/turtle", "application/n-triples"
RESULT_TYPES = (JSON, XML, CSV, TSV)
GRAPH_TYPES = (TURTLE, NTRIPLES)
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


@dataclass(frozen=True)
class Serialized:
    media_type: str
    body: bytes
    rows: int
    truncated: bool


def negotiate(accept: str | None, graph: bool, requested: str | None = None) -> str:
    """The media type to answer with: ``requested`` (a ``format`` parameter: json, xml, csv,
    tsv, turtle, ntriples) if given, else the best match of the ``Accept`` header, else JSON
    (Turtle for graphs)."""
    offered = GRAPH_TYPES if graph else RESULT_TYPES
    short = {"json": JSON, "xml": XML, "csv": CSV, "tsv": TSV, "turtle": TURTLE, "ttl": TURTLE,
             "ntriples": NTRIPLES, "nt": NTRIPLES}
    if requested:
        wanted = short.get(requested.lower(), requested.lower())
        if wanted in offered:
            return wanted
    if accept:
        choices = []
        for position, part in enumerate(accept.split(",")):
            media, _, params = part.strip().partition(";")
            quality = 1.0
            for param in params.split(";"):
                key, _, value = param.strip().partition("=")
                if key == "q":
                    try:
                        quality = float(value)
                    except ValueError:
                        quality = 0.0
            media = media.strip().lower()
            aliases = {"application/json": JSON, "application/xml": XML, "text/xml": XML,
                       "text/plain": NTRIPLES if graph else TSV, "application/x-turtle": TURTLE}
            media = aliases.get(media, media)
            if quality > 0:
                choices.append((-quality, position, media))
        for _, _, media in sorted(choices):
            if media in offered:
                return media
            if media in ("*/*", "application/*", "text/*"):
                return offered[0]
    return offered[0]


def _json_term(term) -> dict:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != _XSD_STRING:
            out["datatype"] = term.datatype.value
        return out
    return {"type": "triple", "value": str(term)}          # RDF-star: not produced by our KBs


def _xml_term(term) -> str:
    if isinstance(term, ox.NamedNode):
        return f"<uri>{escape(term.value)}</uri>"
    if isinstance(term, ox.BlankNode):
        return f"<bnode>{escape(term.value)}</bnode>"
    if isinstance(term, ox.Literal):
        if term.language:
            return f"<literal xml:lang={quoteattr(term.language)}>{escape(term.value)}</literal>"
        if term.datatype.value not in (_XSD_STRING, _RDF_LANG_STRING):
            return f"<literal datatype={quoteattr(term.datatype.value)}>{escape(term.value)}</literal>"
        return f"<literal>{escape(term.value)}</literal>"
    return f"<literal>{escape(str(term))}</literal>"


def _csv_value(term) -> str:
    if term is None:
        return ""
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else str(term)


def _take(items: Iterable, limit: int | None) -> tuple[list, bool]:
    """The first ``limit`` items (all for ``None``) and whether there were more; reads one
    item past the limit at most, so a huge result is never materialised."""
    kept: list = []
    for item in items:
        if limit is not None and len(kept) >= limit:
            return kept, True
        kept.append(item)
    return kept, False


def serialize_solutions(variables: Sequence[str], solutions: Iterable, media_type: str,
                        limit: int | None) -> Serialized:
    """At most ``limit`` solutions (each a sequence of terms or ``None``) in ``media_type``."""
    taken, truncated = _take(solutions, limit)
    rows = [[solution[i] for i in range(len(variables))] for solution in taken]
    if media_type == JSON:
        bindings = [{v: _json_term(t) for v, t in zip(variables, row) if t is not None} for row in rows]
        document = {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}
        body = json.dumps(document, ensure_ascii=False).encode()
    elif media_type == XML:
        out = ['<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">',
               "<head>" + "".join(f"<variable name={quoteattr(v)}/>" for v in variables) + "</head>",
               "<results>"]
        for row in rows:
            cells = "".join(f"<binding name={quoteattr(v)}>{_xml_term(t)}</binding>"
                            for v, t in zip(variables, row) if t is not None)
            out.append(f"<result>{cells}</result>")
        out.append("</results>\n</sparql>\n")
        body = "\n".join(out).encode()
    elif media_type == CSV:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(variables)
        for row in rows:
            writer.writerow([_csv_value(t) for t in row])
        body = buffer.getvalue().encode()
    elif media_type == TSV:
        lines = ["\t".join(f"?{v}" for v in variables)]
        lines += ["\t".join("" if t is None else str(t) for t in row) for row in rows]
        body = ("\n".join(lines) + "\n").encode()
    else:
        raise ValueError(f"not a results format: {media_type}")
    return Serialized(media_type, body, len(rows), truncated)


def serialize_boolean(value: bool, media_type: str) -> Serialized:
    if media_type == XML:
        body = ('<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">'
                f"<head/><boolean>{'true' if value else 'false'}</boolean></sparql>\n").encode()
        return Serialized(XML, body, 1, False)
    if media_type in (CSV, TSV):
        # The W3C formats have no boolean form; a one-cell table is what clients read.
        head = "_askResult" if media_type == CSV else "?_askResult"
        return Serialized(media_type, f"{head}\n{'true' if value else 'false'}\n".encode(), 1, False)
    return Serialized(JSON, json.dumps({"head": {}, "boolean": value}).encode(), 1, False)


def serialize_triples(triples: Iterable, media_type: str, limit: int | None) -> Serialized:
    kept, truncated = _take(triples, limit)
    rdf_format = ox.RdfFormat.N_TRIPLES if media_type == NTRIPLES else ox.RdfFormat.TURTLE
    body = ox.serialize(kept, format=rdf_format) or b""
    return Serialized(media_type, body, len(kept), truncated)


__all__ = ["Serialized", "negotiate", "serialize_solutions", "serialize_boolean", "serialize_triples",
           "JSON", "XML", "CSV", "TSV", "TURTLE", "NTRIPLES"]
