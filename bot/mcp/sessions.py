"""`/mcp`'s stateful sessions: each with its own event store view, and a few per token.

The SDK names a response stream by its request's id, which each session numbers anew. So one
store shared by every session would mix their streams. Scoped per session, a `Last-Event-ID` can
replay only its own session's events. The SDK already refuses a session to any other token.

The SDK caps open sessions for the whole process (10,000), and ends one after 30 minutes idle.
At its rate limit one token could open them all, and every other token's client was then
refused. So a token holds at most `SESSIONS_PER_TOKEN`; past it, opening another is 429.
"""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from bot.api.app import problem
from bot.mcp.events import RedisEventStore

SESSIONS_PER_TOKEN = 100
"""Sessions one token may hold open; a client keeps one, and an idle one ends on its own."""


def _owner(requestor: AuthorizationContext | None) -> str | None:
    """The token's owner id, which `ApiTokenVerifier` made the subject."""
    return requestor["subject"] if requestor is not None else None


class ResumableSessions(StreamableHTTPSessionManager):
    """The SDK's stateful session manager, per-session event stores, and a quota per token."""

    def __init__(self, app: Any, events: RedisEventStore, security: TransportSecuritySettings, retry_ms: int) -> None:
        super().__init__(app=app, security_settings=security, retry_interval=retry_ms)
        self.events = events

    def open_sessions(self, owner: str) -> int:
        """How many sessions `owner`'s token holds open: the SDK's own record, counted when one opens."""
        return sum(1 for held in self._session_owners.values() if _owner(held) == owner)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        owner = _owner(authorization_context(user)) if isinstance(user, AuthenticatedUser) else None
        opening = not any(name.decode("latin-1").lower() == MCP_SESSION_ID_HEADER for name, _ in scope["headers"])
        if opening and owner is not None and self.open_sessions(owner) >= SESSIONS_PER_TOKEN:
            idle = int(DEFAULT_SESSION_IDLE_TIMEOUT // 60)
            detail = (
                f"this token has {SESSIONS_PER_TOKEN} MCP sessions open, the most it may: end one with DELETE,"
                f" or an idle one ends after {idle} minutes"
            )
            await problem(429, "Too many sessions", detail, {"Retry-After": "60"})(scope, receive, send)
            return
        await super()._handle_stateful_request(scope, receive, send)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        owner = _owner(requestor)
        if owner is not None and self.open_sessions(owner) >= SESSIONS_PER_TOKEN:
            return None  # opened alongside the one that filled the quota: the SDK's 503
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            transport._event_store = self.events.for_session(transport.mcp_session_id)
        return transport
