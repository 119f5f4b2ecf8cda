"""`python bench/head_cpu.py [--requests N] [--rounds R] [--only CLASS]`: CPU per request of serve's protocol.

`parley serve` runs uvicorn with `bot.http_heads.HeadLimits`, uvicorn's httptools protocol with
a deadline and a cap on each request's head. This measures what that adds, in-process: each
protocol is fed the same Slack-shaped POST over one kept connection, a trivial ASGI app answers,
and the process's CPU time is divided by the requests. The two alternate over rounds.

Two shared cores move CPU time by more than the difference. To count instructions instead, run
one class at two request counts under callgrind and take the difference, which cancels start-up:
`valgrind --tool=callgrind python bench/head_cpu.py --only HeadLimits --requests 1000` (and 3000).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import uvloop
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from bot.http_heads import HeadLimits

REQUEST = (
    b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"X-Slack-Signature: v0=0123456789abcdef\r\nX-Slack-Request-Timestamp: 1700000000\r\n"
    b"Content-Length: 10\r\n\r\npayload=xx"
)
PROTOCOLS: dict[str, type[HttpToolsProtocol]] = {"HttpToolsProtocol": HttpToolsProtocol, "HeadLimits": HeadLimits}


async def app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


class Connection(asyncio.Transport):
    """A connection that drops what is written: only the protocol's own work is measured."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = False
        self.protocol: asyncio.BaseProtocol | None = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self.protocol is not None
        return self.protocol


async def measure(protocol: type[HttpToolsProtocol], requests: int) -> float:
    """Microseconds of CPU per request through `protocol` and the trivial app."""
    config = Config(app, log_level="error", access_log=False, lifespan="off")
    config.load()
    served = protocol(config=config, server_state=ServerState(), app_state={})
    connection = Connection()
    connection.protocol = served
    served.connection_made(connection)
    started = time.process_time()
    for _ in range(requests):
        served.data_received(REQUEST)
        for _ in range(3):  # the app's task: receive, start, body
            await asyncio.sleep(0)
    took = time.process_time() - started
    served.connection_lost(None)
    return took / requests * 1e6


async def main(args: argparse.Namespace) -> None:
    names = [args.only] if args.only else list(PROTOCOLS)
    got: dict[str, list[float]] = {name: [] for name in names}
    for name in names:
        await measure(PROTOCOLS[name], 1000)  # warm-up
    for _ in range(args.rounds):
        for name in names:
            got[name].append(await measure(PROTOCOLS[name], args.requests))
    for name, figures in got.items():
        shown = ", ".join(f"{f:.1f}" for f in figures)
        print(f"{name}: {shown} µs of CPU per request (median {statistics.median(figures):.1f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=list(PROTOCOLS))
    uvloop.run(main(parser.parse_args()))
