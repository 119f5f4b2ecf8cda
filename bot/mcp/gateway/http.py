"""The gateway over streamable HTTP at `/mcp/gateway`, behind `/mcp`'s bearer tokens.

It is mounted in `parley serve` when `PARLEY_MCP_CONFIG` names a rules file with `upstreams`.
The upstream sessions open in the server's lifespan, and close when it stops. The manager is
stateless, as `/mcp`'s is. So a standing approval's MCP session is the bearer token's. It is
also the client's `Mcp-Session-Id`, when it sends one.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from bot.api.errors import ProblemResponses
from bot.mcp.gateway.server import build_gateway
from bot.mcp.gateway.upstreams import Upstreams
from bot.mcp.http import behind_tokens, token_caller
from bot.mcp.rebinding import LOOPBACK_HOSTS, transport_security
from bot.mcp.rules import RulesConfig
from workers.questions import QuestionService
from workers.questions.waiting import PROGRESS_EVERY

PATH = "/mcp/gateway"


def token_session(ctx: ServerRequestContext[Any]) -> str:
    """An HTTP call's MCP session: its token's owner, plus any client session id."""
    owner = token_caller(ctx).owner
    headers = ctx.request.headers if ctx.request is not None else {}
    return f"http:{owner}:{headers.get('mcp-session-id', '')}"


def gateway_route(
    service: QuestionService,
    config: RulesConfig,
    security: TransportSecuritySettings | None = None,
    *,
    progress_every: float = PROGRESS_EVERY,
) -> tuple[Route, Callable[[], AbstractAsyncContextManager[None]]]:
    """The `/mcp/gateway` route, and the lifespan opening upstreams and running its manager."""
    upstreams = Upstreams(config)
    server = build_gateway(service, upstreams, token_caller, token_session, progress_every=progress_every)
    security = security or transport_security(LOOPBACK_HOSTS, ())
    manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with upstreams, manager.run():
            yield

    return Route(PATH, endpoint=ProblemResponses(behind_tokens(manager, service))), lifespan
