"""MCP over streamable HTTP at `/mcp` in `parley serve`, behind the HTTP API's bearer tokens.

The SDK's pieces are used as they are: `StreamableHTTPSessionManager` and its ASGI app for
the transport, `BearerAuthBackend` with a `TokenVerifier` over Parley's API tokens, and
`RequireAuthMiddleware` answering 401 without a valid token and 403 without scope `ask`.
Each request with a valid token counts against the token's rate limit, as on `/api/v1`
(429 with `Retry-After` over it).
The manager is stateless (each POST carries its own call), so any of `parley serve
--workers N` processes can answer any request, and a tool call's wait is that POST's
response stream: it holds no thread, like the API's long-poll.
"""

from __future__ import annotations

import math
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.app import problem
from bot.mcp.server import build_server
from workers.questions import Caller, QuestionService
from workers.questions import tokens as tokens_mod
from workers.questions.models import TokenScope
from workers.store.closings import Closings

PATH = "/mcp"


class ApiTokenVerifier:
    """The SDK's `TokenVerifier` over Parley's API tokens: the token's name is its client id."""

    def __init__(self, service: QuestionService) -> None:
        self.service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        token = token.strip()
        record = await self.service.in_thread(lambda: tokens_mod.verify(self.service.store, token))
        if record is None:
            return None
        claims = {"rate_limit": record.rate_limit} if record.rate_limit else None
        return AccessToken(token=token, client_id=record.name, scopes=list(record.scopes), claims=claims)


class RateLimited:
    """ASGI middleware: a request with a verified token counts against its rate limit; 429 over it."""

    def __init__(self, app: ASGIApp, service: QuestionService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] == "http" and isinstance(user, AuthenticatedUser):
            cfg, name = self.service.config, user.access_token.client_id
            limit = int((user.access_token.claims or {}).get("rate_limit") or cfg.rate_limit)
            wait = await self.service.in_thread(lambda: self.service.store.hit(name, limit, cfg.rate_window))
            if wait:
                detail = f"over {limit} requests in {cfg.rate_window} s"
                refusal = problem(429, "Too many requests", detail, {"Retry-After": str(max(1, math.ceil(wait)))})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def token_caller(ctx: ServerRequestContext[Any]) -> Caller:
    """The `Caller` of an HTTP tool call: the bearer token `BearerAuthBackend` verified for its request."""
    user = ctx.request.scope.get("user") if ctx.request is not None else None
    if not isinstance(user, AuthenticatedUser):  # RequireAuthMiddleware lets no such request through
        raise PermissionError("an MCP call over HTTP without a verified bearer token")
    return Caller(name=user.access_token.client_id, scopes=frozenset(user.access_token.scopes))


def mcp_route(service: QuestionService, closings: Closings) -> tuple[Route, StreamableHTTPSessionManager]:
    """The `/mcp` route and its session manager, whose `run()` must be entered for the server's lifetime."""
    manager = StreamableHTTPSessionManager(app=build_server(service, closings, token_caller), stateless=True)
    guarded = RequireAuthMiddleware(StreamableHTTPASGIApp(manager), [TokenScope.ASK.value])
    limited = AuthContextMiddleware(RateLimited(guarded, service))
    app = AuthenticationMiddleware(limited, backend=BearerAuthBackend(ApiTokenVerifier(service)))
    return Route(PATH, endpoint=app), manager
