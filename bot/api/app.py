"""The HTTP API under `/api/v1`: bearer tokens, rate limits, problem+json, and the question service.

Every endpoint is async: a long-poll (`?wait=N`) awaits the store's close notification and
holds no thread; the short synchronous work (Redis reads, posting a question) runs on the
question service's own threads, never on the ones that ack Slack.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.api.openapi import openapi_document
from workers.exceptions import ParleyError
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions import tokens as tokens_mod
from workers.questions.exceptions import QuestionError, QuestionInvalid
from workers.questions.models import ConfirmBody, Problem, QuestionCreate, QuestionStatus, TokenScope
from workers.store.closings import Closings

log = Log("parley.api")
PROBLEM = "application/problem+json"


class ApiError(ParleyError):
    def __init__(self, status: int, title: str, detail: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.title, self.detail, self.headers = status, title, detail, headers or {}
        super().__init__(detail)


def problem(status: int, title: str, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> Response:
    body = Problem(title=title, status=status, detail=detail, **extra).model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _json(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status)


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


class Api:
    """The endpoints, bound to one process's question service and close notifications."""

    def __init__(self, service: QuestionService, closings: Closings) -> None:
        self.service = service
        self.closings = closings

    async def caller(self, request: Request, need: TokenScope | None = None) -> Caller:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "Unauthorized", "send Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
        record = await self.service.in_thread(lambda: tokens_mod.verify(self.service.store, token.strip()))
        if record is None:
            raise ApiError(401, "Unauthorized", "unknown or revoked token", {"WWW-Authenticate": "Bearer"})
        cfg = self.service.config
        limit = record.rate_limit or cfg.rate_limit
        wait = await self.service.in_thread(lambda: self.service.store.hit(record.name, limit, cfg.rate_window))
        if wait:
            detail = f"over {limit} requests in {cfg.rate_window} s"
            raise ApiError(429, "Too many requests", detail, {"Retry-After": str(max(1, math.ceil(wait)))})
        if need is not None and need.value not in record.scopes:
            raise ApiError(403, "Forbidden", f"this token lacks the {need.value!r} scope")
        return Caller.of(record)

    async def _body(self, request: Request) -> Any:
        raw = await request.body()
        try:
            return json.loads(raw or b"null")
        except ValueError as exc:
            raise ApiError(400, "Bad request", f"the body is not JSON: {exc}") from None

    async def create(self, request: Request) -> Response:
        caller = await self.caller(request, TokenScope.ASK)
        try:
            body = QuestionCreate.model_validate(await self._body(request))
        except ValidationError as exc:
            raise QuestionInvalid(f"{exc.error_count()} problem(s) in the question", _errors(exc)) from None
        key = request.headers.get("idempotency-key")
        view, created = await self.service.in_thread(lambda: self.service.create(caller, body, key))
        return _json(view, 201 if created else 200)

    async def list(self, request: Request) -> Response:
        caller = await self.caller(request)
        q = request.query_params
        try:
            status = QuestionStatus(q["status"]) if "status" in q else None
            limit = int(q.get("limit", "20"))
        except ValueError:
            raise QuestionInvalid("status must be a question status and limit a number") from None
        cursor = q.get("cursor")
        page = await self.service.in_thread(lambda: self.service.list(caller, status, limit, cursor))
        return _json(page)

    async def get(self, request: Request) -> Response:
        caller = await self.caller(request)
        qid = request.path_params["id"]
        raw = request.query_params.get("wait")
        if raw is None:
            return _json(await self.service.in_thread(lambda: self.service.get(caller, qid)))
        if not raw.isdigit() or int(raw) > self.service.config.max_wait:
            raise QuestionInvalid(f"wait must be a whole number of seconds from 0 to {self.service.config.max_wait}")
        return _json(await self.service.wait(caller, qid, float(raw), self.closings))

    async def cancel(self, request: Request) -> Response:
        caller = await self.caller(request)
        qid = request.path_params["id"]
        return _json(await self.service.in_thread(lambda: self.service.cancel(caller, qid)))

    async def confirm(self, request: Request) -> Response:
        caller = await self.caller(request)
        qid = request.path_params["id"]
        try:
            body = ConfirmBody.model_validate(await self._body(request))
        except ValidationError as exc:
            raise QuestionInvalid('the body must be {"context": {...}}', _errors(exc)) from None
        return _json(await self.service.in_thread(lambda: self.service.confirm(caller, qid, body.context)))

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())


def create_api(service: QuestionService, closings: Closings) -> Starlette:
    """The `/api/v1` app (mounted by `bot.asgi`)."""
    api = Api(service, closings)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return problem(exc.status, exc.title, exc.detail, exc.headers)

    async def on_question_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, QuestionError)
        return problem(exc.status, exc.title, exc.detail, **exc.extra)

    return Starlette(
        routes=[
            Route("/questions", api.create, methods=["POST"]),
            Route("/questions", api.list, methods=["GET"]),
            Route("/questions/{id}", api.get, methods=["GET"]),
            Route("/questions/{id}/cancel", api.cancel, methods=["POST"]),
            Route("/questions/{id}/confirm", api.confirm, methods=["POST"]),
            Route("/openapi.json", api.openapi, methods=["GET"]),
        ],
        exception_handlers={ApiError: on_api_error, QuestionError: on_question_error},
    )
