"""The API's errors as problem+json: refusals, Redis outages (503) and anything unexpected (500).

Every answer of `/api/v1` that is not a success is RFC 9457 `application/problem+json`, sent
whole: an error never drops the client's kept-alive connection, as a plain-text 500 from the
server's last-resort handler does.
"""

from __future__ import annotations

from typing import Any

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.questions.exceptions import QuestionError
from workers.questions.models import Problem

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
    """Whether `exc` is Redis being down, full or failing over (worth a retry), not a bug."""
    if isinstance(exc, REDIS_TROUBLE):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(("OOM", "EXECABORT", "LOADING", "READONLY"))


def unavailable(**extra: Any) -> Response:
    """503 with Retry-After: Parley's Redis is down or full; nothing the client sent was wrong."""
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


EXCEPTION_HANDLERS = {ApiError: on_api_error, QuestionError: on_question_error, redis.RedisError: on_redis_error}
"""The handlers `create_api` installs, by the exception they answer."""


class ProblemOnError:
    """ASGI middleware: any exception a handler lets out becomes a 500 problem+json, sent in full.

    Starlette's own last resort answers plain text and re-raises, and the server then closes
    the connection; this answers and returns, so a kept-alive connection serves the next request.
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
