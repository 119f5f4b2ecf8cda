"""Failed bearer authentication, counted per client address on `/api/v1` and `/mcp`.

Each request whose `Authorization` header names no valid token counts once against its client
address. The count is in Redis beside the tokens' own rate limits (`QuestionStore.hit`). So
every `parley serve` process shares it. Once `PARLEY_API_AUTH_FAILURES` failed in any window's
span, that address is locked out. Every bearer request from it is refused with 429 and
`Retry-After`, a valid token's too. That lasts until the oldest failure leaves the window.
Otherwise a lucky right guess would still stand out from the wrong ones. A request without an
`Authorization` header guesses nothing and is not counted. The address is the connection's peer,
as the ASGI server reports it. Behind a reverse proxy, the server's proxy-headers setting makes
it the client's. An IPv6 client counts by its /64.
"""

from __future__ import annotations

import ipaddress

from starlette.types import Scope

from workers.questions import QuestionService

BUCKET = "auth-failed:"


def client_address(scope: Scope) -> str:
    """Who a request's failures count against: its IPv4 peer, or an IPv6 peer's /64.

    One client commonly holds a whole /64. It could otherwise try each token from a fresh address.
    """
    client = scope.get("client")
    host = str(client[0]) if client else "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def presented_credentials(scope: Scope) -> bool:
    """Whether the request carries an `Authorization` header, and so tries a token."""
    return any(name == b"authorization" and value.strip() for name, value in scope.get("headers") or [])


async def check(service: QuestionService, scope: Scope, *, failed: bool) -> float:
    """Count a failed authentication, or check a successful one's address is not locked out.

    Returns the seconds to wait when the address is over the limit, else 0.
    """
    cfg, bucket = service.config, BUCKET + client_address(scope)
    if failed:
        return await service.in_thread(lambda: service.store.hit(bucket, cfg.auth_failures, cfg.rate_window))
    return await service.in_thread(lambda: service.store.over(bucket, cfg.auth_failures, cfg.rate_window))


def detail(service: QuestionService) -> str:
    cfg = service.config
    return f"over {cfg.auth_failures} failed authentications from this address in {cfg.rate_window} s"
