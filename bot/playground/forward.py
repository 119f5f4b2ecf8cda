"""`/api/v1` and `/mcp` on the playground's port, forwarded to the bot, as under `serve`.

Under `parley dev`, the dev process serves the page and the Slack stand-in. Its `parley serve`
child serves the bot, on the next port. A newcomer's `curl localhost:3000/api/v1/...` must still
reach the bot, as the README writes it. Starlette has no reverse proxy, and none of the
project's libraries ships one for ASGI. So this one sends each request on through httpx. It
streams the answer back as it comes. A long-poll or an MCP tool call's wait holds a coroutine,
not a thread.
"""

from __future__ import annotations

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.errors import problem

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers", "transfer-encoding"}
    | {"upgrade", "content-length"}
)
"""Headers that belong to one connection (RFC 9110 §7.6.1), not to the request or response forwarded."""
OWN_HEADERS = frozenset({"date", "server"})
"""Response headers the playground's server sends itself."""
FORWARDED_PREFIXES = ("/api/v1", "/mcp")


def forwarded(path: str) -> bool:
    """Whether the playground forwards `path` to the bot.

    It forwards `/api/v1` and `/mcp`, and anything under them.
    """
    return any(path == p or path.startswith(p + "/") for p in FORWARDED_PREFIXES)


class ForwardToBot:
    """ASGI middleware forwarding `/api/v1` and `/mcp` to the bot at `base_url`.

    The answer is streamed back. Any other request goes to the playground (`app`).
    """

    def __init__(self, app: ASGIApp, base_url: str) -> None:
        self.app = app
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not forwarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        if request.client is not None:
            headers.append(("x-forwarded-for", request.client.host))
        url = self.base_url + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        outbound = self.http.build_request(request.method, url, headers=headers, content=await request.body())
        try:
            answer = await self.http.send(outbound, stream=True)
        except httpx.HTTPError as exc:
            detail = f"the bot at {self.base_url} did not answer ({type(exc).__name__}); is it still starting?"
            await problem(502, "The bot is not answering", detail)(scope, receive, send)
            return
        response = StreamingResponse(
            answer.aiter_raw(), status_code=answer.status_code, background=BackgroundTask(answer.aclose)
        )
        response.raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in answer.headers.multi_items()
            if k.lower() not in HOP_BY_HOP | OWN_HEADERS
        ]
        await response(scope, receive, send)
