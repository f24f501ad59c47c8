"""Any SPARQL 1.1 endpoint (Virtuoso, Oxigraph server, Fuseki, ...) through SPARQLWrapper.

:class:`EndpointStore` has the same read interface as :class:`store.oxigraph.OxigraphStore`
(``query(sparql) -> SelectResult | bool``, values converted by
:func:`store.results.literal_value`), so every executor runs unchanged against a server.

What the real servers do and how it is absorbed here:

- Virtuoso writes ``"typed-literal"`` cells (``"literal"`` + ``datatype`` elsewhere): both
  are read the same way.
- Virtuoso without ``CaseMode = 2`` answers ASK as a one-row SELECT of ``__ASK_RETVAL``:
  turned back into a ``bool``.
- Virtuoso's default graph is the union of all graphs, system graphs included, so counts
  over ``?s ?p ?o`` come out too large: with ``graph=`` every request carries
  ``default-graph-uri`` and the default graph is exactly that graph.
- Decimals come back in canonical form from Virtuoso and Oxigraph but not from every
  server: every ``xsd:decimal``/``double`` is normalised (``12.50`` -> ``12.5``).
- Virtuoso silently caps results at ``ResultSetMaxRows`` and only says so in the
  ``X-SPARQL-MaxRows`` header: a capped result is an error, never a short answer.

Failures never turn into an empty answer: an unreachable endpoint, an HTTP error, a time-out,
an HTML page or malformed JSON each raise :class:`EndpointError` (or :class:`QueryTimeout`)
with one line naming the URL, the HTTP status and the start of the query that was sent.

The store is read-only by construction: a query is sent through the SPARQL protocol's
*query* operation only, and anything that is not a SELECT or ASK query (in particular every
SPARQL Update form, which Virtuoso would accept through ``query=`` when the SPARQL user may
write) is refused before any byte leaves the process.
"""

from __future__ import annotations

import ast
import html
import http.client
import json
import re
import socket
import time
import urllib.error
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from SPARQLWrapper import GET, JSON, POST, TURTLE, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import SPARQLWrapperException

from kopl2sparql.answer import format_number
from kopl2sparql.errors import ConfigError, EndpointError, QueryTimeout, ReadOnlyError, StoreError, safe_text
from store.results import SelectResult, literal_value

# SPARQL Update operations (SPARQL 1.1 Update plus Virtuoso's older SPARUL ``MODIFY``).
UPDATE_KEYWORDS = frozenset({"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY",
                             "MOVE", "ADD", "MODIFY"})
QUERY_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
GRAPH_FORMS = frozenset({"CONSTRUCT", "DESCRIBE"})
_PROLOGUE = frozenset({"PREFIX", "BASE", "DEFINE"})   # DEFINE: Virtuoso pragmas

# Spans that cannot hold a keyword: long strings first, then short strings, IRIs, comments.
_OPAQUE = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""'
                     r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
                     r'|"(?:[^"\\\n]|\\.)*"'
                     r"|'(?:[^'\\\n]|\\.)*'"
                     r'|<[^<>"{}|^`\\\x00-\x20]*>'
                     r"|#[^\n]*", re.S)
# A bare word: not a variable (?x, $x), a language tag (@en) or the start of a prefixed
# name (sk:born_in, ex:a). Deliberately conservative: a word after "." or "-" counts, so
# a local name like ex:pre-load is refused rather than an update slipping through.
_BARE_WORD = re.compile(r"(?<![\w?$:@])([A-Za-z]+)(?![\w:])")

_SHOWN_QUERY_CHARS = 100
_SHOWN_BODY_CHARS = 160
_POST_ABOVE_CHARS = 1500   # longer queries go by POST: some servers cap the URL length
_ASK_RETVAL = "__ASK_RETVAL"
_DECIMAL_DATATYPES = {"http://www.w3.org/2001/XMLSchema#" + t for t in ("decimal", "double", "float")}


def query_form(sparql: str) -> str:
    """The query form (``SELECT``, ``ASK``, ``INSERT``, ...) of ``sparql``, upper case.

    :raises ReadOnlyError: if ``sparql`` contains any SPARQL Update operation.
    :raises StoreError: if it is not a SELECT, ASK, CONSTRUCT or DESCRIBE query.
    """
    words = [w.upper() for w in _BARE_WORD.findall(_OPAQUE.sub(" ", sparql))]
    updates = sorted(set(words) & UPDATE_KEYWORDS)
    if updates:
        raise ReadOnlyError(f"refused to send a SPARQL update ({', '.join(updates)}): "
                            f"endpoints are queried read-only; query: {_excerpt(sparql)}")
    form = next((w for w in words if w not in _PROLOGUE), "")
    if form not in QUERY_FORMS:
        raise StoreError(f"only SELECT, ASK, CONSTRUCT and DESCRIBE queries are supported, not "
                         f"{form or 'an empty query'}: "
                         f"{_excerpt(sparql)}")
    return form


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _excerpt(text: str, limit: int = _SHOWN_QUERY_CHARS) -> str:
    flat = _one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _body_excerpt(body: bytes | str | None) -> str:
    """The readable start of an error body: the <title> of an HTML page, else its text."""
    if body is None:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    if title:
        text = title.group(1)
    elif re.search(r"<(html|body|h1|p)\b", text, re.I):
        text = re.sub(r"<[^>]+>", " ", text)
    return _excerpt(html.unescape(text), _SHOWN_BODY_CHARS)


class EndpointStore:
    """Read-only access to a SPARQL 1.1 endpoint.

    :param url: the endpoint's query URL (Virtuoso ``http://host:8890/sparql``, Oxigraph
        server ``http://host:7878/query``, Fuseki ``http://host:3030/ds/sparql``); a
        ``default-graph-uri`` in its query string is taken as ``graph``, other parameters
        are sent with every query.
    :param graph: IRI of the named graph holding the KB; sent as ``default-graph-uri`` so the
        default graph is exactly that graph (``None``: the server's own default graph).
    :param timeout: seconds to wait for the server to connect or to send more of its answer.
    :param retries: how many times a failed read is repeated (connection refused or reset,
        HTTP 500/502/503/504); time-outs and client errors are not repeated.
    :param user, password: HTTP basic credentials, if the endpoint needs them.
    :param max_bytes: the largest answer read; a longer one is an error, not a full memory.
    :raises ConfigError: for a URL that is not http(s) or a non-positive time limit.

    ``timeout`` is a deadline for the whole request (connection, headers and body), not a
    limit per socket read: a server that trickles its answer cannot hold a query forever.
    """

    MAX_BYTES = 256 * 2**20

    def __init__(self, url: str, graph: str | None = None, timeout: float = 30.0, retries: int = 2,
                 user: str | None = None, password: str | None = None, max_bytes: int | None = None):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"not an http(s) endpoint URL: {url!r} "
                              "(expected e.g. http://127.0.0.1:8890/sparql)")
        # Parameters in the URL (``...sparql?default-graph-uri=G``) are kept and sent with
        # every query, so ``--backend URL`` alone can name the graph; SPARQLWrapper would
        # otherwise glue its own "?query=" onto a URL that already has a "?".
        params = parse_qsl(parts.query, keep_blank_values=True)
        url_graphs = [v for k, v in params if k == "default-graph-uri"]
        if graph is None and url_graphs:
            graph = url_graphs[0]
        self.extra_params = [(k, v) for k, v in params if k != "default-graph-uri"]
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        if not timeout or timeout <= 0:
            raise ConfigError(f"endpoint time limit must be positive, got {timeout}")
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}")
        self.url, self.graph, self.timeout, self.retries = url, graph, float(timeout), int(retries)
        self.user, self.password = user, password
        self.max_bytes = int(max_bytes) if max_bytes is not None else self.MAX_BYTES
        self.requests_sent = 0   # HTTP requests made, retries included (for tests and stats)

    def __repr__(self) -> str:
        graph = f", graph={self.graph!r}" if self.graph else ""
        return f"EndpointStore({self.url!r}{graph})"

    # ---- public reads ---------------------------------------------------------------

    def query(self, sparql: str) -> SelectResult | bool:
        """Run a query: a :class:`SelectResult` for SELECT, ``bool`` for ASK, and for
        CONSTRUCT/DESCRIBE a :class:`SelectResult` with columns ``subject``, ``predicate``,
        ``object`` (as the embedded store gives them; the server is asked for Turtle).

        :raises ReadOnlyError: for any update, before anything is sent.
        :raises StoreError: for a text that is no query.
        :raises QueryTimeout: when the server does not answer within ``timeout`` seconds.
        :raises EndpointError: unreachable endpoint, HTTP error, capped, malformed or non-JSON answer.
        """
        return self._with_retries(sparql, self._query_once)

    def raw_results(self, sparql: str):
        """The answer as pyoxigraph objects, with the RDF terms as the server sent them:
        ``QuerySolutions`` for SELECT, ``QueryBoolean`` for ASK, a list of ``Triple`` for
        CONSTRUCT/DESCRIBE (what a SPARQL service built on this class passes on).

        :raises: as :meth:`query`.
        """
        return self._with_retries(sparql, self._raw_once)

    def _with_retries(self, sparql: str, once):
        form = query_form(sparql)
        attempt = 0
        while True:
            try:
                return once(sparql, form)
            except _Transient as exc:
                if attempt >= self.retries:
                    raise exc.error from None
                attempt += 1
                time.sleep(0.1 * 2 ** (attempt - 1))

    def triple_count(self) -> int:
        """Number of triples in the default graph (``graph`` when one is set)."""
        result = self.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        return int(result.rows[0][0])

    def ping(self) -> None:
        """Check the endpoint answers a trivial ASK.

        :raises EndpointError: (or QueryTimeout) if it does not.
        """
        self.query("ASK {}")

    def require_data(self) -> None:
        """Check the graph queries run on holds any triple at all.

        An empty graph (a misspelt ``default-graph-uri``, a KB loaded into another graph)
        would make every program fail with "unknown entity", which points at the program
        instead of the graph.

        :raises EndpointError: if it holds none (or the endpoint does not answer).
        """
        if self.query("ASK { ?s ?p ?o }") is not True:
            where = (f"graph <{safe_text(self.graph, 120)}>" if self.graph
                     else "the default graph")
            raise EndpointError(f"{where} at {safe_text(self.url, 120)} holds no triples: check the graph "
                                "(default-graph-uri in the URL) and that the KB is loaded "
                                "(`synkqa kb load --kind ... --graph IRI`)")

    # ---- one request ----------------------------------------------------------------

    def _wrapper(self, sparql: str, form: str = "SELECT") -> SPARQLWrapper:
        wrapper = SPARQLWrapper(self.url, returnFormat=JSON)
        wrapper.setQuery(sparql)
        if form in GRAPH_FORMS:
            # Turtle (N-Triples is Turtle too), parsed with pyoxigraph: every server speaks it
            wrapper.setReturnFormat(TURTLE)
        wrapper.setMethod(POST if len(sparql) > _POST_ABOVE_CHARS else GET)
        if self.graph:
            wrapper.addParameter("default-graph-uri", self.graph)
        for key, value in self.extra_params:
            wrapper.addParameter(key, value)
        if self.user is not None:
            wrapper.setCredentials(self.user, self.password)
        # setTimeout() truncates to int (0.5 s would mean "no limit"): set the float directly.
        wrapper.timeout = self.timeout
        return wrapper

    def _fail(self, sparql: str, what: str, status: int | None = None) -> str:
        status_text = f"HTTP {status}" if status is not None else "no HTTP status"
        return f"endpoint {self.url}: {status_text}: {what}; query: {_excerpt(sparql)}"

    def _raw_once(self, sparql: str, form: str):
        import pyoxigraph as ox

        body, content_type, status = self._fetch(sparql, form)
        if content_type in ("text/html", "application/xhtml+xml"):
            raise EndpointError(self._fail(sparql, f"answered with an HTML page: {_body_excerpt(body)}", status))
        try:
            if form in GRAPH_FORMS:
                return list(ox.parse(body, format=ox.RdfFormat.TURTLE))
            return ox.parse_query_results(body, format=ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError) as exc:
            raise EndpointError(self._fail(sparql, f"malformed answer ({exc}): {_body_excerpt(body)}",
                                           status)) from None

    def _query_once(self, sparql: str, form: str) -> SelectResult | bool:
        body, content_type, status = self._fetch(sparql, form)
        if form in GRAPH_FORMS:
            return self._triples(sparql, body, content_type, status)
        if content_type in ("text/html", "application/xhtml+xml") or body.lstrip()[:1] == b"<":
            raise EndpointError(self._fail(
                sparql, f"answered with an HTML/XML page instead of SPARQL JSON results "
                        f"(Content-Type {content_type or 'missing'}): {_body_excerpt(body)}", status))
        try:
            document = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EndpointError(self._fail(
                sparql, f"malformed SPARQL JSON results ({exc}): {_body_excerpt(body)}", status)) from None
        return self._convert(sparql, form, document, status)

    def _fetch(self, sparql: str, form: str) -> tuple[bytes, str, int | None]:
        """One request: (body, content type, HTTP status), by the deadline and size cap."""
        wrapper = self._wrapper(sparql, form)
        self.requests_sent += 1
        deadline = time.monotonic() + self.timeout
        try:
            response = wrapper.query().response
            status = getattr(response, "status", 200)
            headers = response.info()
            body = self._read_body(response, sparql, deadline, status)
        except SPARQLWrapperException as exc:
            # SPARQLWrapper maps 400/401/404/414/500 to its own classes, keeping the body.
            status = {"QueryBadFormed": 400, "Unauthorized": 401, "EndPointNotFound": 404,
                      "URITooLong": 414, "EndPointInternalError": 500}.get(type(exc).__name__)
            self._raise_http(sparql, status, _wrapped_body(exc))
        except urllib.error.HTTPError as exc:
            try:
                body_text = exc.read()
            except OSError:
                body_text = b""
            self._raise_http(sparql, exc.code, body_text)
        except urllib.error.URLError as exc:
            self._raise_network(sparql, exc.reason)
        except (TimeoutError, socket.timeout, ConnectionError, http.client.HTTPException, OSError) as exc:
            self._raise_network(sparql, exc)

        capped = headers.get("X-SPARQL-MaxRows")
        if capped:
            raise EndpointError(self._fail(
                sparql, f"the server capped the result at {capped} rows (Virtuoso ResultSetMaxRows); "
                        "raise the limit in the server's [SPARQL] section", status))
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        return body, content_type, status

    def _triples(self, sparql: str, body: bytes, content_type: str, status: int | None) -> SelectResult:
        """A CONSTRUCT/DESCRIBE answer (Turtle) as subject/predicate/object rows."""
        import pyoxigraph as ox

        from store.results import term_value

        if content_type in ("text/html", "application/xhtml+xml"):
            raise EndpointError(self._fail(
                sparql, f"answered with an HTML page instead of Turtle: {_body_excerpt(body)}", status))
        try:
            triples = list(ox.parse(body, format=ox.RdfFormat.TURTLE))
        except (SyntaxError, ValueError) as exc:
            raise EndpointError(self._fail(
                sparql, f"malformed Turtle answer ({exc}): {_body_excerpt(body)}", status)) from None
        rows = [(term_value(t.subject), term_value(t.predicate), term_value(t.object)) for t in triples]
        return SelectResult(("subject", "predicate", "object"), rows)

    def _read_body(self, response, sparql: str, deadline: float, status: int | None) -> bytes:
        """The whole answer, by the deadline and within :attr:`max_bytes`.

        Read piece by piece (``read1`` returns what one receive brings), so neither a trickle
        nor an endless stream can outlast the time limit or fill the memory.
        """
        read = getattr(response, "read1", None) or response.read
        parts, size = [], 0
        while True:
            if time.monotonic() > deadline:
                raise QueryTimeout(self._fail(sparql, f"no complete answer within the time limit of "
                                                      f"{self.timeout:g} s ({size:,} bytes received)", status))
            chunk = read(65536)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > self.max_bytes:
                response.close()
                raise EndpointError(self._fail(sparql, f"the answer is larger than {self.max_bytes:,} bytes; "
                                                       "ask for fewer rows (LIMIT)", status))
            parts.append(chunk)

    def _raise_http(self, sparql: str, status: int | None, body: bytes | str) -> None:
        text = _body_excerpt(body)
        timeout_words = ("S1T00", "timed out", "timeout", "time-out", "time limit")
        if status is not None and status >= 500 and any(w.lower() in text.lower() for w in timeout_words):
            raise QueryTimeout(self._fail(sparql, f"the server gave up on the query (time limit): {text}", status))
        if "estimated execution time" in text.lower():
            # Virtuoso refuses before running when its cost estimate exceeds
            # MaxQueryCostEstimationTime; the estimate is deterministic, so no retry.
            raise EndpointError(self._fail(
                sparql, f"{text} (Virtuoso's cost estimate; set [SPARQL] MaxQueryCostEstimationTime = 0 "
                        "or higher)", status))
        error = EndpointError(self._fail(sparql, text or "error without a message", status))
        if status in (500, 502, 503, 504):
            raise _Transient(error)
        raise error

    def _raise_network(self, sparql: str, reason: Any) -> None:
        if isinstance(reason, (TimeoutError, socket.timeout)) or "timed out" in str(reason):
            raise QueryTimeout(self._fail(
                sparql, f"no answer within the time limit of {self.timeout:g} s"))
        if isinstance(reason, ConnectionRefusedError):
            what = "connection refused (is the server running and listening on this port?)"
        elif isinstance(reason, socket.gaierror):
            what = f"unknown host ({reason})"
        else:
            what = f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
        raise _Transient(EndpointError(self._fail(sparql, what)))

    def _convert(self, sparql: str, form: str, document: Any, status: int) -> SelectResult | bool:
        if not isinstance(document, dict):
            raise EndpointError(self._fail(sparql, "SPARQL JSON results must be an object", status))
        if "boolean" in document:
            if form != "ASK":
                raise EndpointError(self._fail(sparql, "a boolean answer to a SELECT query", status))
            return bool(document["boolean"])
        try:
            variables = tuple(document["head"]["vars"])
            bindings = document["results"]["bindings"]
        except (KeyError, TypeError):
            raise EndpointError(self._fail(
                sparql, f"SPARQL JSON results without head.vars/results.bindings: "
                        f"{_excerpt(json.dumps(document), _SHOWN_BODY_CHARS)}", status)) from None
        if form == "ASK":
            # Virtuoso's ASK as a one-row SELECT (without CaseMode = 2).
            if variables == (_ASK_RETVAL,) and len(bindings) == 1:
                return bool(int(bindings[0][_ASK_RETVAL]["value"]))
            raise EndpointError(self._fail(sparql, "an ASK query answered without a boolean", status))
        try:
            rows = [tuple(_cell_value(binding.get(v)) for v in variables) for binding in bindings]
        except (KeyError, TypeError, AttributeError, ValueError, ArithmeticError) as exc:
            raise EndpointError(self._fail(sparql, f"malformed binding in SPARQL JSON results ({exc})",
                                           status)) from None
        return SelectResult(variables, rows)


def _wrapped_body(exc: SPARQLWrapperException) -> bytes | str:
    """The server's body, which SPARQLWrapper keeps only as a repr at the end of its message."""
    message = str(exc.args[0]) if exc.args else ""
    found = re.search(r"\n\nResponse:\n(b(['\"]).*\2)\Z", message, re.S)
    if found:
        try:
            return ast.literal_eval(found.group(1))
        except (ValueError, SyntaxError):
            pass
    return ""


class _Transient(Exception):
    """A failure worth one more try; carries the error to raise when tries run out."""

    def __init__(self, error: StoreError):
        super().__init__(str(error))
        self.error = error


def _cell_value(cell: dict | None) -> Any:
    """One SPARQL JSON cell as a plain Python value (the conversion of store/results.py)."""
    if cell is None:
        return None
    kind = cell["type"]
    if kind == "uri":
        return cell["value"]
    if kind == "bnode":
        return f"_:{cell['value']}"
    if kind in ("literal", "typed-literal"):
        datatype = cell.get("datatype")
        value = literal_value(cell["value"], datatype)
        if datatype in _DECIMAL_DATATYPES and isinstance(value, Decimal) and value.is_finite():
            value = Decimal(format_number(value))
        return value
    raise ValueError(f"unknown cell type {kind!r}")
