"""The HTTP API under `/api/v1`: bearer tokens, rate limits, problem+json, the question service.

Every endpoint is async. A long-poll (`?wait=N`) awaits the store's close notification and holds
no thread. The short synchronous work runs on the question service's own threads. That is Redis
reads and posting a question. It never runs on the threads that ack Slack.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.api import auth_failures, query
from bot.api.errors import EXCEPTION_HANDLERS, ApiError, ProblemOnError, ProblemResponses, is_redis_trouble, problem
from bot.api.openapi import openapi_document
from workers.logs import Log
from workers.questions import Caller, QuestionService, receipts
from workers.questions import tokens as tokens_mod
from workers.questions.exceptions import QuestionInvalid
from workers.questions.models import ApprovalCreate, ConfirmBody, QuestionCreate, QuestionStatus, TokenScope

__all__ = ["ApiError", "create_api", "problem"]
log = Log("parley.api")
READS = frozenset({"GET", "HEAD"})
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A `\\uD800`-`\\uDFFF` escape: the only way JSON text spells a UTF-16 surrogate."""


def _json(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status)


def _refuse_lone_surrogates(doc: Any) -> None:
    """Refuse a string holding half of a surrogate pair, like `"\\ud800"` alone.

    `json.loads` takes one, but it is not Unicode text: the reply, Redis and Slack
    could not encode it later. Encoding the document once finds any, in C.
    """
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        detail = "the body's JSON holds a lone surrogate (a \\ud800-\\udfff escape without its pair), not Unicode text"
        raise ApiError(400, "Bad request", detail) from None
    except RecursionError:
        raise ApiError(400, "Bad request", "the body's JSON is nested too deeply") from None


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


class Api:
    """The endpoints, bound to one process's question service and close notifications."""

    def __init__(self, service: QuestionService) -> None:
        self.service = service

    async def caller(self, request: Request, need: TokenScope | None = None) -> Caller:
        header = request.headers.get("authorization", "").strip()
        scheme, _, token = header.partition(" ")
        bearer = scheme.lower() == "bearer" and bool(token.strip())
        record = None
        if bearer:
            record = await self.service.in_thread(lambda: tokens_mod.verify(self.service.store, token.strip()))
        if header and (locked := await auth_failures.check(self.service, request.scope, failed=record is None)):
            retry = {"Retry-After": str(max(1, math.ceil(locked)))}
            raise ApiError(429, "Too many requests", auth_failures.detail(self.service), retry)
        if record is None:
            detail = "unknown or revoked token" if bearer else "send Authorization: Bearer <token>"
            raise ApiError(401, "Unauthorized", detail, {"WWW-Authenticate": "Bearer"})
        cfg = self.service.config
        limit = record.rate_limit or cfg.rate_limit
        wait = await self.service.in_thread(lambda: self._hit(request, record.owner, limit, cfg.rate_window))
        if wait:
            detail = f"over {limit} requests in {cfg.rate_window} s"
            raise ApiError(429, "Too many requests", detail, {"Retry-After": str(max(1, math.ceil(wait)))})
        if need is not None and need.value not in record.scopes:
            raise ApiError(403, "Forbidden", f"this token lacks the {need.value!r} scope")
        return Caller.of(record)

    def _hit(self, request: Request, name: str, limit: int, window: int) -> float:
        """Count the request against the token's rate.

        A read goes through when Redis cannot count it.
        """
        try:
            return self.service.store.hit(name, limit, window)
        except Exception as exc:
            if request.method not in READS or not is_redis_trouble(exc):
                raise
            log.warning("rate limit not counted: Redis refused the write; the read goes on", token=name, error=str(exc))
            return 0.0

    async def _body(self, request: Request) -> Any:
        """The request's JSON document, or a 400 saying why it is not one."""
        raw = await request.body()
        if not raw.strip():
            raise ApiError(400, "The body is empty", "send a JSON object, with Content-Type: application/json")
        try:
            doc = json.loads(raw or b"null")
        except ValueError as exc:
            raise ApiError(400, "Bad request", f"the body is not JSON: {exc}") from None
        except RecursionError:
            raise ApiError(400, "Bad request", "the body's JSON is nested too deeply") from None
        if SURROGATE_ESCAPE.search(raw):
            _refuse_lone_surrogates(doc)
        return doc

    async def create(self, request: Request) -> Response:
        caller = await self.caller(request, TokenScope.ASK)
        try:
            body = QuestionCreate.model_validate(await self._body(request))
        except ValidationError as exc:
            raise QuestionInvalid(f"{exc.error_count()} problem(s) in the question", _errors(exc)) from None
        key = request.headers.get("idempotency-key")
        view, created = await self.service.in_thread(lambda: self.service.create(caller, body, key))
        return _json(view, 201 if created else 200)

    async def create_approval(self, request: Request) -> Response:
        """`POST /approvals`: a question whose request carries the approval, bound to its args."""
        caller = await self.caller(request, TokenScope.ASK)
        try:
            approval = ApprovalCreate.model_validate(await self._body(request))
            body = await self.service.in_thread(approval.question)  # checks its schema: up to 0.3 s of CPU
        except ValidationError as exc:
            raise QuestionInvalid(f"{exc.error_count()} problem(s) in the approval", _errors(exc)) from None
        except ValueError as exc:
            raise QuestionInvalid(f"the approval cannot be asked: {exc}") from None
        key = request.headers.get("idempotency-key")
        view, created = await self.service.in_thread(lambda: self.service.create(caller, body, key))
        return _json(view, 201 if created else 200)

    async def list(self, request: Request) -> Response:
        caller = await self.caller(request)
        q = request.query_params
        try:
            status = QuestionStatus(q["status"]) if "status" in q else None
        except ValueError:
            raise QuestionInvalid("status must be a question status") from None
        limit = query.whole_number(q, "limit", default=20)  # the service keeps it within 1..100
        cursor = q.get("cursor")
        page = await self.service.in_thread(lambda: self.service.list(caller, status, limit, cursor))
        return _json(page)

    async def get(self, request: Request) -> Response:
        caller = await self.caller(request)
        qid = request.path_params["id"]
        raw = request.query_params.get("wait")
        reveal = request.query_params.get("reveal")
        if reveal not in (None, "secrets"):
            raise QuestionInvalid('reveal must be "secrets": the secret answers, once, for the token that asked')
        if reveal:  # any other token, an admin's too, is told there is no such question, before any wait
            await self.service.in_thread(lambda: self.service.asked_by(caller, qid))
        if raw is None:
            view = await self.service.in_thread(lambda: self.service.get(caller, qid))
        else:
            wait = query.whole_number(request.query_params, "wait", default=0, most=self.service.config.max_wait)
            view = await self.service.wait(caller, qid, float(wait))
        if reveal:
            view = await self.service.in_thread(lambda: self.service.reveal(caller, qid))
        return _json(view)

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

    async def receipt(self, request: Request) -> Response:
        """`GET /questions/{id}/receipt`: the closed question's signed receipt (docs/receipts.md)."""
        caller = await self.caller(request)
        qid = request.path_params["id"]
        return JSONResponse(await self.service.in_thread(lambda: receipts.question_receipt(self.service, caller, qid)))

    async def receipt_keys(self, request: Request) -> Response:
        """`GET /receipts/keys`: the public keys receipts verify with, by key id."""
        await self.caller(request)
        return JSONResponse(await self.service.in_thread(lambda: receipts.published_keys(self.service)))

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())


def create_api(service: QuestionService) -> Starlette:
    """The `/api/v1` app (mounted by `bot.asgi`)."""
    api = Api(service)
    return Starlette(
        routes=[
            Route("/questions", api.create, methods=["POST"]),
            Route("/approvals", api.create_approval, methods=["POST"]),
            Route("/questions", api.list, methods=["GET"]),
            Route("/questions/{id}", api.get, methods=["GET"]),
            Route("/questions/{id}/cancel", api.cancel, methods=["POST"]),
            Route("/questions/{id}/confirm", api.confirm, methods=["POST"]),
            Route("/questions/{id}/receipt", api.receipt, methods=["GET"]),
            Route("/receipts/keys", api.receipt_keys, methods=["GET"]),
            Route("/openapi.json", api.openapi, methods=["GET"]),
        ],
        middleware=[Middleware(ProblemResponses), Middleware(ProblemOnError)],
        exception_handlers=EXCEPTION_HANDLERS,
    )
