"""MCP over streamable HTTP at `/mcp` in `parley serve`, behind the HTTP API's bearer tokens.

The SDK's pieces are used as they are:
- `StreamableHTTPSessionManager` and its ASGI app for the transport
- `BearerAuthBackend`, with a `TokenVerifier` over Parley's API tokens
- `RequireAuthMiddleware`: 401 without a valid token, 403 without scope `ask`
Each request with a valid token counts against the token's rate limit, as on `/api/v1`. Over it,
the answer is 429 with `Retry-After`. Each failed token counts against its client address. A
tool call's caller is the token's own (`Caller.of`, as on `/api/v1`). So its questions are its
owner's. A workspace-bound token asks and reads in its workspace only. A tool call waits in its
POST's response stream. Like the API's long-poll, it holds no thread.

With an event store (`bot.mcp.events`, one `parley serve` process), the transport keeps
sessions. Its streams are then resumable. Each response stream opens with a priming event: an
event id and `retry`. Its events are kept in Redis. A client whose stream drops while a call
waits reconnects with `GET` and `Last-Event-ID`. It still receives the result. The SDK keeps a
session in the memory of the process that opened it. So a session's requests must reach that
process. Without a store (`--workers N`), the manager is stateless: each POST carries its own
call. So any process answers any request, and a dropped stream is not resumed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api import auth_failures
from bot.api.app import problem
from bot.api.errors import ProblemResponses
from bot.mcp.events import RedisEventStore
from bot.mcp.rebinding import LOOPBACK_HOSTS, transport_security
from bot.mcp.rules import RulesConfig
from bot.mcp.server import build_server
from bot.mcp.sessions import ResumableSessions
from workers.questions import Caller, QuestionService
from workers.questions import tokens as tokens_mod
from workers.questions.models import TokenScope

PATH = "/mcp"
RETRY_MS = 2000  # the priming event's `retry`: how soon a client reconnects to a dropped stream


class TokenAccess(AccessToken):
    """The SDK's `AccessToken` carrying a Parley token's `Caller`.

    It is the same one `/api/v1` builds, with the token's owner, workspace and rate limit. So a
    token is the same caller on both surfaces.
    """

    caller: Caller


class ApiTokenVerifier:
    """The SDK's `TokenVerifier` over Parley's API tokens.

    The token's name is its client id, and its owner the subject.
    """

    def __init__(self, service: QuestionService) -> None:
        self.service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        token = token.strip()
        record = await self.service.in_thread(lambda: tokens_mod.verify(self.service.store, token))
        if record is None:
            return None
        caller = Caller.of(record)
        return TokenAccess(
            token=token, client_id=record.name, subject=caller.owner, scopes=list(record.scopes), caller=caller
        )


def _caller(user: Any) -> Caller | None:
    token = user.access_token if isinstance(user, AuthenticatedUser) else None
    return token.caller if isinstance(token, TokenAccess) else None


class RateLimited:
    """ASGI middleware charging each request's rate limit, with 429 over it.

    A request with a verified token counts against its token's limit. A request whose
    `Authorization` names no valid token counts against its client address (`auth_failures`). Past
    that address's limit, it gets 429 whatever token it sends, until the window ends.
    """

    def __init__(self, app: ASGIApp, service: QuestionService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            caller = _caller(scope.get("user"))
            refusal = None
            if auth_failures.presented_credentials(scope) and (
                locked := await auth_failures.check(self.service, scope, failed=caller is None)
            ):
                refusal = problem(429, "Too many requests", auth_failures.detail(self.service), _retry(locked))
            elif caller is not None:
                cfg = self.service.config
                limit = caller.rate_limit or cfg.rate_limit
                wait = await self.service.in_thread(
                    lambda: self.service.store.hit(caller.owner, limit, cfg.rate_window)
                )
                if wait:
                    refusal = problem(
                        429, "Too many requests", f"over {limit} requests in {cfg.rate_window} s", _retry(wait)
                    )
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _retry(wait: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(wait)))}


def token_caller(ctx: ServerRequestContext[Any]) -> Caller:
    """An HTTP tool call's `Caller`: the bearer token `BearerAuthBackend` verified."""
    caller = _caller(ctx.request.scope.get("user")) if ctx.request is not None else None
    if caller is None:  # RequireAuthMiddleware lets no such request through
        raise PermissionError("an MCP call over HTTP without a verified bearer token")
    return replace(caller, via="mcp")


def mcp_route(
    service: QuestionService,
    security: TransportSecuritySettings | None = None,
    events: RedisEventStore | None = None,
    rules: RulesConfig | None = None,
) -> tuple[Route, StreamableHTTPSessionManager]:
    """The `/mcp` route and its session manager, whose `run()` spans the server's lifetime.

    - `security`: the `Host` and `Origin` it answers (`bot.mcp.rebinding`). By default that is
      loopback names and no origin.
    - `events`: keep sessions and make their streams resumable, with the events in Redis. Otherwise
      stateless.
    - `rules`: the rules file `approve_tool_use` follows (`PARLEY_MCP_CONFIG`).
    """
    security = security or transport_security(LOOPBACK_HOSTS, ())
    server = build_server(service, token_caller, rules)
    manager: StreamableHTTPSessionManager
    if events is not None:
        manager = ResumableSessions(server, events, security, RETRY_MS)
    else:
        manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=security)
    return Route(PATH, endpoint=ProblemResponses(behind_tokens(manager, service))), manager


class PostOnly:
    """ASGI middleware for a stateless manager: any method but POST is 405 with `Allow: POST`.

    Without sessions there is no stream to `GET` and no session to `DELETE`. The SDK would otherwise
    hold an empty stream open. Or it would answer a `Last-Event-ID` with no response, a 500.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "POST":
            detail = f"{scope['method']} is not served here: this endpoint keeps no sessions, so it takes POST only"
            await problem(405, "Method Not Allowed", detail, {"Allow": "POST"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


def behind_tokens(manager: StreamableHTTPSessionManager, service: QuestionService) -> ASGIApp:
    """`manager`'s ASGI app behind Parley's bearer API tokens (scope `ask`) and rate limits."""
    app: ASGIApp = StreamableHTTPASGIApp(manager)
    guarded = RequireAuthMiddleware(PostOnly(app) if manager.stateless else app, [TokenScope.ASK.value])
    limited = AuthContextMiddleware(RateLimited(guarded, service))
    return AuthenticationMiddleware(limited, backend=BearerAuthBackend(ApiTokenVerifier(service)))
