"""The HTTP face of the workbench: Starlette routes, the SPARQL 1.1 Protocol, the pages.

Routes (documented in docs/SERVE.md):

- ``GET /`` the program workbench, ``GET /query`` the SPARQL query page, ``/static/…`` their
  assets (served from the package: nothing is fetched from elsewhere at run time).
- ``GET|POST /sparql``: the SPARQL 1.1 Protocol, read-only (updates and ``SERVICE`` refused).
- ``/api/…``: JSON behind every page action (info, complete, check, execute, ask).

Every error is JSON, ``{"error": {"kind", "message", …}}``, with a 4xx status for the
client's mistakes and 5xx for the server's limits; nothing a client sends can stop the
server or change the KB.
"""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kopl2sparql.errors import (ConfigError, ExecutionTimeout, QueryRefused, QuerySyntaxError, QueryTimeout,
                                ReadOnlyError, StoreError, SynKQAError, safe_text)
from synkqa.web.workbench import Busy, Workbench

MAX_BODY = 1_000_000
"""Bytes a request body may have (a 1,000-step program is about 30 kB)."""
BODY_SECONDS = 10.0
"""Seconds a client may take to send its body (a slow client does not hold a request open)."""


class HTTPProblem(Exception):
    def __init__(self, status: int, kind: str, message: str, **extra: Any):
        super().__init__(message)
        self.status, self.kind, self.message, self.extra = status, kind, message, extra


def _problem_response(problem: HTTPProblem) -> JSONResponse:
    return JSONResponse({"error": {"kind": problem.kind, "message": safe_text(problem.message, 2000),
                                   **problem.extra}}, status_code=problem.status)


_STATUS = ((ReadOnlyError, 403, "update refused"), (QueryRefused, 403, "query refused"),
           (QuerySyntaxError, 400, "syntax error"), ((QueryTimeout, ExecutionTimeout), 503, "time limit"),
           (Busy, 503, "busy"), (ConfigError, 400, "bad request"), (StoreError, 502, "store error"))
"""HTTP status and error kind by exception class, the first match winning (subclasses first)."""


def _status_of(exc: SynKQAError) -> tuple[int, str]:
    return next(((status, kind) for cls, status, kind in _STATUS if isinstance(exc, cls)),
                (500, type(exc).__name__))


async def _body(request: Request) -> bytes:
    """The request body, at most :data:`MAX_BODY` bytes, within :data:`BODY_SECONDS`."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > MAX_BODY:
                raise HTTPProblem(413, "too large", f"the body has {int(declared):,} bytes; at most "
                                                    f"{MAX_BODY:,} are accepted")
        except ValueError:
            raise HTTPProblem(400, "bad request", "Content-Length is not a number") from None

    async def read() -> bytes:
        parts, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise HTTPProblem(413, "too large", f"the body is larger than {MAX_BODY:,} bytes")
            parts.append(chunk)
        return b"".join(parts)

    try:
        return await asyncio.wait_for(read(), BODY_SECONDS)
    except asyncio.TimeoutError:
        raise HTTPProblem(408, "too slow", f"the body did not arrive within {BODY_SECONDS:g} s") from None


async def _json_body(request: Request) -> dict:
    raw = await _body(request)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise HTTPProblem(400, "bad request", "the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise HTTPProblem(400, "bad request", f"the body is not JSON: {exc.msg} at line {exc.lineno}, "
                                              f"column {exc.colno}") from None
    except RecursionError:
        raise HTTPProblem(400, "bad request", "the body is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise HTTPProblem(400, "bad request", f"the body must be a JSON object, not {type(data).__name__}")
    return data


def _string_field(data: dict, key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if isinstance(value, list) and key == "program":     # KQA Pro JSON given as a list
        value = json.dumps(value)
    if not isinstance(value, str):
        raise HTTPProblem(400, "bad request", f"field '{key}' must be a string"
                          + (" (or, for a program, KQA Pro's list of functions)" if key == "program" else ""))
    return value


def create_app(workbench: Workbench) -> Starlette:
    """The ASGI application serving ``workbench``."""
    static = resources.files("synkqa.web") / "static"

    def page(name: str):
        async def endpoint(request: Request) -> Response:
            return FileResponse(str(static / name), media_type="text/html")
        return endpoint

    async def info(request: Request) -> Response:
        return JSONResponse(workbench.info())

    async def complete(request: Request) -> Response:
        kind = request.query_params.get("kind", "entity")
        prefix = request.query_params.get("prefix", "")[:200]
        try:
            limit = max(1, min(100, int(request.query_params.get("limit", "30"))))
        except ValueError:
            raise HTTPProblem(400, "bad request", "limit must be an integer") from None
        return JSONResponse({"kind": kind, "prefix": prefix, "items": workbench.complete(kind, prefix, limit)})

    async def check(request: Request) -> Response:
        data = await _json_body(request)
        program = _string_field(data, "program")
        return JSONResponse(await run_in_threadpool(workbench.check, program))

    async def execute(request: Request) -> Response:
        data = await _json_body(request)
        program = _string_field(data, "program")
        backend = _string_field(data, "backend", "native")
        flags = {}
        for key in ("cross_check", "trace"):
            flags[key] = data.get(key, True)
            if not isinstance(flags[key], bool):
                raise HTTPProblem(400, "bad request", f"field '{key}' must be true or false")
        result = await workbench.execute(program, backend, flags["cross_check"], flags["trace"])
        status = 200
        if result["error"] is not None and result["error"]["kind"] in ("time limit", "busy"):
            status = 503
        return JSONResponse(result, status_code=status)

    async def ask(request: Request) -> Response:
        data = await _json_body(request)
        question = _string_field(data, "question")
        if not question.strip():
            raise HTTPProblem(400, "bad request", "field 'question' is empty")
        if len(question) > 1000:
            raise HTTPProblem(413, "too large", "a question has at most 1,000 characters")
        return JSONResponse(await run_in_threadpool(workbench.ask, question))

    async def sparql(request: Request) -> Response:
        query, requested = await _protocol_query(request)
        result = await workbench.sparql(query, requested, request.headers.get("accept"))
        headers = {"X-SPARQL-Rows": str(result.rows)}
        if result.truncated:
            headers["X-SPARQL-Truncated"] = f"row limit {workbench.settings.row_limit}"
        media = result.media_type + ("; charset=utf-8" if result.media_type.startswith("text/") else "")
        return Response(result.body, media_type=media, headers=headers)

    routes = [
        Route("/", page("index.html")),
        Route("/query", page("query.html")),
        Route("/api/info", info),
        Route("/api/complete", complete),
        Route("/api/check", check, methods=["POST"]),
        Route("/api/execute", execute, methods=["POST"]),
        Route("/api/ask", ask, methods=["POST"]),
        Route("/sparql", sparql, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]

    async def on_problem(request: Request, exc: HTTPProblem) -> Response:
        return _problem_response(exc)

    async def on_error(request: Request, exc: SynKQAError) -> Response:
        status, kind = _status_of(exc)
        return _problem_response(HTTPProblem(status, kind, str(exc)))

    async def on_http(request: Request, exc) -> Response:
        return _problem_response(HTTPProblem(exc.status_code, "http", exc.detail or "error"))

    from starlette.exceptions import HTTPException
    app = Starlette(routes=routes, exception_handlers={HTTPProblem: on_problem, SynKQAError: on_error,
                                                       HTTPException: on_http})
    app.state.workbench = workbench
    return app


async def _protocol_query(request: Request) -> tuple[str, str | None]:
    """The query of a SPARQL 1.1 Protocol request (and a ``format`` parameter, if any)."""
    params = dict(request.query_params)
    if request.method == "POST":
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        body = await _body(request)
        if content_type == "application/sparql-update":
            raise HTTPProblem(403, "update refused", "this service is read-only: SPARQL Update is refused")
        if content_type == "application/sparql-query":
            try:
                return body.decode("utf-8"), params.get("format")
            except UnicodeDecodeError:
                raise HTTPProblem(400, "bad request", "the query is not UTF-8 text") from None
        if content_type in ("application/x-www-form-urlencoded", ""):
            try:
                params.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
            except UnicodeDecodeError:
                raise HTTPProblem(400, "bad request", "the form is not UTF-8 text") from None
        else:
            raise HTTPProblem(415, "unsupported media type",
                              f"POST a query as application/sparql-query or as a form "
                              f"(application/x-www-form-urlencoded), not {safe_text(content_type, 80)}")
    if "update" in params:
        raise HTTPProblem(403, "update refused", "this service is read-only: SPARQL Update is refused")
    query = params.get("query")
    if query is None or not query.strip():
        raise HTTPProblem(400, "bad request", "no query: send it as the 'query' parameter (GET or a form "
                                              "POST) or as an application/sparql-query body")
    if len(query) > MAX_BODY:
        raise HTTPProblem(413, "too large", f"the query is longer than {MAX_BODY:,} characters")
    return query, params.get("format")


__all__ = ["create_app", "MAX_BODY"]
