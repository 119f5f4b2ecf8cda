"""Kept event loops and HTTP clients for webhook attempts, one set per delivery thread.

An attempt used to make an event loop and an httpx client, then drop both. That was about
1.2 ms of CPU per delivery, more than half of sending it to a loopback receiver, and a new
connection each time. A delivery thread now keeps its loop, and one client per destination.

A client is kept per pinned address and TLS name together. httpx pools connections by the
address it dials; over TLS the certificate was checked for one name only. So a connection is
reused only for the very name it was verified for. Idle connections close after a few seconds,
and a thread keeps at most `KEPT` clients, closing the least recently used.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

KEPT = 16
"""Destinations a delivery thread keeps a client for."""
IDLE = 5.0
"""Seconds an idle kept connection lives: less than receivers' usual keep-alive timeouts."""
T = TypeVar("T")


class _Thread(threading.local):
    """This thread's loop and clients; made again in a forked child (a loop does not survive fork)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner()
        self.clients: OrderedDict[tuple[str, str], httpx.AsyncClient] = OrderedDict()


_here = _Thread()


def _mine() -> _Thread:
    global _here
    if _here.pid != os.getpid():
        _here = _Thread()
    return _here


def run(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine `make` returns on this thread's kept event loop."""

    async def main() -> T:
        return await make()

    return _mine().runner.run(main())


def client(origin: str, tls_name: str, context: ssl.SSLContext) -> httpx.AsyncClient:
    """This thread's client for `origin` (scheme, address and port) verified as `tls_name`."""
    here = _mine()
    key = (origin, tls_name)
    kept = here.clients.get(key)
    if kept is not None:
        here.clients.move_to_end(key)
        return kept
    made = httpx.AsyncClient(
        follow_redirects=False, verify=context, limits=httpx.Limits(max_connections=4, keepalive_expiry=IDLE)
    )
    here.clients[key] = made
    while len(here.clients) > KEPT:
        _, old = here.clients.popitem(last=False)
        here.runner.run(old.aclose())
    return made
