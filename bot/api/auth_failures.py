"""Failed bearer authentication, counted per client address on `/api/v1` and `/mcp`.

Each request whose `Authorization` header names no valid token counts once against its
client address, in Redis beside the tokens' own rate limits (`QuestionStore.hit`), so every
`parley serve` process shares the count. Past `PARLEY_API_AUTH_FAILURES` in a window, every
bearer request from that address is refused with 429 and `Retry-After` until the window
ends, a valid token's too: otherwise a guess that happens to be right would still be told
apart from the wrong ones. A request with no `Authorization` header guesses nothing and is
not counted. The address is the connection's peer as the ASGI server reports it (behind a
reverse proxy, the server's proxy-headers setting makes it the client's).
"""

from __future__ import annotations

from starlette.types import Scope

from workers.questions import QuestionService

BUCKET = "auth-failed:"


def client_address(scope: Scope) -> str:
    """The peer address of an HTTP request's connection ("unknown" when the server gives none)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def presented_credentials(scope: Scope) -> bool:
    """Whether the request carries an `Authorization` header, and so tries a token."""
    return any(name == b"authorization" and value.strip() for name, value in scope.get("headers") or [])


async def check(service: QuestionService, scope: Scope, *, failed: bool) -> float:
    """Count a failed authentication against the request's address, or check a successful one's address is
    not locked out; the seconds to wait when the address is over the limit, else 0."""
    cfg, bucket = service.config, BUCKET + client_address(scope)
    if failed:
        return await service.in_thread(lambda: service.store.hit(bucket, cfg.auth_failures, cfg.rate_window))
    return await service.in_thread(lambda: service.store.over(bucket, cfg.auth_failures, cfg.rate_window))


def detail(service: QuestionService) -> str:
    cfg = service.config
    return f"over {cfg.auth_failures} failed authentications from this address in {cfg.rate_window} s"
