"""The API's errors as problem+json: refusals, Redis outages (503), anything unexpected (500).

Every `/api/v1` answer that is not a success is RFC 9457 `application/problem+json`. It is sent
whole. An error never drops the client's kept-alive connection. A plain-text 500 from the
server's last-resort handler would.
"""

from __future__ import annotations

import http
import json
from typing import Any

import redis
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.questions.exceptions import QuestionError
from workers.questions.problem import Problem

log = Log("parley.api")
PROBLEM = "application/problem+json"
RETRY_AFTER_OUTAGE = 5
"""Seconds a client is told to wait while Redis is down or full."""
REDIS_TROUBLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.MasterDownError,
    redis.exceptions.TryAgainError,
)
"""Redis errors that pass: unreachable, loading, full (maxmemory with noeviction), or failing over."""


class ApiError(ParleyError):
    def __init__(self, status: int, title: str, detail: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.title, self.detail, self.headers = status, title, detail, headers or {}
        super().__init__(detail)


def problem(status: int, title: str, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> Response:
    body = Problem(title=title, status=status, detail=detail, **extra).model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def is_redis_trouble(exc: BaseException) -> bool:
    """Whether `exc` is Redis down, full or failing over, not a bug.

    That is worth a retry.
    """
    if isinstance(exc, (*REDIS_TROUBLE, redis.exceptions.OutOfMemoryError, redis.exceptions.ExecAbortError)):
        return True
    said = str(exc).split(" caused error: ", 1)[-1]  # redis-py names a pipeline's failing command first
    return isinstance(exc, redis.ResponseError) and said.startswith(("OOM", "EXECABORT", "LOADING", "READONLY"))


def unavailable(**extra: Any) -> Response:
    """503 with Retry-After: Parley's Redis is down or full, not the client's fault."""
    detail = "Parley's storage is unavailable or full; try again shortly"
    return problem(503, "Service unavailable", detail, {"Retry-After": str(RETRY_AFTER_OUTAGE)}, **extra)


async def on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return problem(exc.status, exc.title, exc.detail, exc.headers)


async def on_question_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, QuestionError)
    headers = exc.headers or ({"Retry-After": str(RETRY_AFTER_OUTAGE)} if exc.status == 503 else None)
    return problem(exc.status, exc.title, exc.detail, headers, **exc.extra)


async def on_redis_error(request: Request, exc: Exception) -> Response:
    if not is_redis_trouble(exc):
        return _internal(request, exc)
    log.warning("Redis unavailable; answered 503", path=request.url.path, error=str(exc))
    return unavailable()


def _internal(request: Request, exc: BaseException) -> Response:
    log.error("unexpected error in the API", exc=True, path=request.url.path, error=repr(exc))
    return problem(500, "Internal server error", "Parley failed to handle this request; it was logged")


async def on_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals as problem+json.

    Those are no such path, or a method the path does not take.
    """
    assert isinstance(exc, HTTPException)
    path = request.url.path
    if exc.status_code == 404:
        detail = f"nothing at {path}; the API's paths are listed at /api/v1/openapi.json"
        return problem(404, f"No such path: {path}", detail)
    if exc.status_code == 405:
        allowed = _allowed(request) or (exc.headers or {}).get("Allow", "")
        detail = f"{path} takes {allowed}" if allowed else f"{path} does not take {request.method}"
        return problem(405, f"{request.method} is not allowed here", detail, {"Allow": allowed} if allowed else None)
    title = http.HTTPStatus(exc.status_code).phrase if exc.status_code in http.HTTPStatus._value2member_map_ else ""
    return problem(exc.status_code, title or "Error", str(exc.detail), dict(exc.headers or {}))


def _allowed(request: Request) -> str:
    """Every method the request's path takes, across the routes sharing it.

    Starlette names only the first route's.
    """
    methods: set[str] = set()
    for route in getattr(request.scope.get("app"), "routes", []):
        if isinstance(route, Route) and route.matches(request.scope)[0] is Match.PARTIAL:
            methods |= route.methods or set()
    return ", ".join(sorted(methods))


EXCEPTION_HANDLERS = {
    ApiError: on_api_error,
    QuestionError: on_question_error,
    redis.RedisError: on_redis_error,
    HTTPException: on_http_exception,
}
"""The handlers `create_api` installs, by the exception they answer."""


class ProblemOnError:
    """ASGI middleware turning any escaped handler exception into a full 500 problem+json.

    Starlette's own last resort answers plain text and re-raises. The server then closes the
    connection. This answers and returns, so a kept-alive connection serves the next request.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started:  # part of an answer went out: nothing whole can be sent now
                raise
            request = Request(scope)
            response = unavailable() if is_redis_trouble(exc) else _internal(request, exc)
            await response(scope, receive, send)


class ProblemResponses:
    """ASGI middleware sending error answers as problem+json if they are not yet.

    The mcp SDK's 401, 406 or 421 are examples. The problem is titled by its status, with what it
    said as `detail`. If that was a JSON object, like a JSON-RPC error, its members are kept beside
    the problem's.

    A JSON-RPC error answering a request is sent as it is. Such an error has an `id`. An example is
    `-32602` for an unknown tool, which MCP's 2026 transport sends with status 400. It is the
    protocol's answer to that call. Clients read it as `application/json`.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body = b""

        async def rewriting(message: Message) -> None:
            nonlocal held, body
            if message["type"] == "http.response.start":
                headers = Headers(raw=message.get("headers", []))
                if message["status"] >= 400 and not headers.get("content-type", "").startswith(PROBLEM):
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    if _answers_a_request(body):
                        await send(held)
                        await send({"type": "http.response.body", "body": body})
                    else:
                        await _as_problem(held, body)(scope, receive, send)
                return
            await send(message)

        await self.app(scope, receive, rewriting)


def _answers_a_request(body: bytes) -> bool:
    """Whether `body` is a JSON-RPC error with the id of the request it answers."""
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("jsonrpc") == "2.0" and "error" in doc and doc.get("id") is not None


def _as_problem(start: Message, body: bytes) -> Response:
    status = int(start["status"])
    headers = Headers(raw=start.get("headers", []))
    kept = {k: v for k, v in headers.items() if k.lower() in ("allow", "www-authenticate", "retry-after")}
    text = body.decode("utf-8", "replace").strip()
    extra: dict[str, Any] = {}
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        extra = {k: v for k, v in doc.items() if k not in ("title", "status", "detail", "type")}
        error = doc.get("error")
        text = str(doc.get("error_description") or (error.get("message") if isinstance(error, dict) else error) or "")
    phrase = http.HTTPStatus(status).phrase if status in http.HTTPStatus._value2member_map_ else "Error"
    return problem(status, phrase, text or phrase, kept, **extra)


class NoSuchPath:
    """ASGI app: 404 problem+json for an unserved path under `/api/v1` or `/mcp`.

    It is a class, since starlette would call a function endpoint with a request.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = Request(scope).url.path
        detail = f"nothing at {path}; the API's paths are listed at /api/v1/openapi.json, MCP answers at /mcp"
        await problem(404, f"No such path: {path}", detail)(scope, receive, send)


no_such_path = NoSuchPath()
