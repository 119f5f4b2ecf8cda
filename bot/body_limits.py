"""Request bodies read on the event loop, under a size cap and deadline, before any handler.

a2wsgi hands a request to one of bolt's pool threads as soon as its headers arrive. Bolt's
adapter then blocks that thread on `wsgi.input.read` until the body has come. So 32 clients
sending a body a byte at a time would hold every thread. Then no Slack request would be acked.
Here the event loop reads the whole body first, so a slow body costs a coroutine, not a thread.
The application then gets it in one message, so a thread never waits on a socket.

A body over its path's cap is refused with 413. That happens before reading, when
`Content-Length` says so. Or it happens as soon as a chunked body passes the cap. A body not
complete within `BODY_DEADLINE` seconds of the headers is refused with 408. Both close the
connection. The mcp SDK's `RequestBodyLimitMiddleware` caps size but has no deadline. Starlette
has neither, hence this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.api.app import problem
from workers.exceptions import ParleyError

MIB = 1 << 20
SLACK_BODY_MAX = MIB
"""`/slack/events` and every other path of bolt's: Slack's own requests are a few kilobytes."""
API_BODY_MAX = MIB
"""`/api/v1`: above the largest question `QuestionCreate` accepts (tests/api/test_body_limits.py computes it)."""
MCP_BODY_MAX = MIB
"""`/mcp`: above the largest `ask_human` call its tool schema accepts."""
BODY_DEADLINE = 5.0
"""Seconds from the end of the headers to the end of the body; Slack sends its bodies at once."""

PATH_LIMITS: tuple[tuple[str, int], ...] = (("/api/v1", API_BODY_MAX), ("/mcp", MCP_BODY_MAX))


class BodyLimits:
    """ASGI middleware reading each HTTP request's body whole, within cap and deadline.

    The cap is its path's.
    """

    def __init__(
        self,
        app: ASGIApp,
        limits: Sequence[tuple[str, int]] = PATH_LIMITS,
        default: int = SLACK_BODY_MAX,
        deadline: float = BODY_DEADLINE,
    ) -> None:
        self.app = app
        self.limits = tuple(limits)
        self.default = default
        self.deadline = deadline

    def cap(self, path: str) -> int:
        """The largest body accepted at `path`: the first matching prefix's, or the default."""
        for prefix, limit in self.limits:
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap(scope["path"])
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > cap):
            await _refuse(413, "Payload too large", f"Content-Length {declared} is over this path's {cap} bytes")(
                scope, receive, send
            )
            return
        try:
            async with asyncio.timeout(self.deadline):
                body = await _read(receive, cap)
        except TimeoutError:
            detail = f"the request body did not arrive within {self.deadline:g} s"
            await _refuse(408, "Request timeout", detail)(scope, receive, send)
            return
        except _TooLarge:
            detail = f"the request body is over this path's {cap} bytes"
            await _refuse(413, "Payload too large", detail)(scope, receive, send)
            return
        if body is None:  # the client went away before its body was complete
            return
        await self.app(scope, _replay(body, receive), send)


class _TooLarge(ParleyError):
    """A body without `Content-Length` (chunked) went past its cap while being read."""


async def _read(receive: Receive, cap: int) -> bytes | None:
    """The whole body, or None if the client disconnected first.

    Raises `_TooLarge` once it passes `cap`.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` giving the body in one message, then what the server sends.

    What follows is a disconnect.
    """
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _refuse(status: int, title: str, detail: str) -> ASGIApp:
    """A problem+json refusal closing the connection, the rest of the body unread."""
    return problem(status, title, detail, {"Connection": "close"})
