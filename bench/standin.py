"""The Slack Web API stand-in in a process of its own: `python -m bench.standin PORT`.

It serves the playground's `make_webapi_app` (so every Web API call Parley makes is
checked and logged the way the tests see it) plus three bench routes:

- `GET /bench/ping`: liveness;
- `POST /bench/seed?n=N`: post N thread roots, each with one question reply, in
  64 channels, and return their (channel, root ts, question ts), so that seeded
  paused runs point at real messages that `chat.update` can lock;
- `GET /bench/calls?method=M&since=T`: the call log (`Workspace.calls`) after T,
  reduced to method, time and thread, for the question latency measurement.

Running apart from the bench keeps its event loop off the load generator's GIL. With a
second port, a certificate and its key, the same workspace is also served over TLS there
(`python -m bench --slack-tls`): Slack's Web API is HTTPS.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route

from bot.playground.webapi import create_webapi
from bot.playground.workspace import Channel, Workspace

CHANNELS = [f"C0BENCH{i:02d}" for i in range(64)]


def build(ws: Workspace) -> Starlette:
    for cid in CHANNELS:
        ws.add_channel(Channel(cid, cid.lower()))

    async def ping(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def seed(request: Request) -> JSONResponse:
        n = int(request.query_params.get("n", "1"))
        out: list[list[str]] = []
        for i in range(n):
            channel = CHANNELS[i % len(CHANNELS)]
            root = ws.post_message(channel, "started a run")
            question = ws.post_message(channel, "A question", thread_ts=root["ts"])
            out.append([channel, root["ts"], question["ts"]])
        return JSONResponse(out)

    async def calls(request: Request) -> JSONResponse:
        method = request.query_params.get("method") or None
        since = float(request.query_params.get("since", "0"))
        rows: list[dict[str, Any]] = []
        for c in ws.calls(method):
            if c["at"] >= since:
                args = c["args"]
                rows.append(
                    {
                        "method": c["method"],
                        "at": c["at"],
                        "channel": args.get("channel"),
                        "thread_ts": args.get("thread_ts"),
                        "error": c["error"],
                    }
                )
        return JSONResponse(rows)

    return Starlette(
        routes=[
            Route("/bench/ping", ping),
            Route("/bench/seed", seed, methods=["POST"]),
            Route("/bench/calls", calls),
            Mount("/api", app=create_webapi(ws)),
        ]
    )


def main() -> None:
    """`PORT`, or `PORT TLS_PORT CERT KEY`: the same workspace also served over TLS on `TLS_PORT`.

    With `--without-agents` the workspace lacks Slack's agent surfaces, as an app not declared an agent.
    """
    argv = sys.argv[1:]
    ws = Workspace(call_log_limit=None)  # the bench reads its whole log
    if "--without-agents" in argv:
        argv.remove("--without-agents")
        ws.agents.without_agents = True
    port, *tls = argv
    app = build(ws)
    configs = [uvicorn.Config(app, host="127.0.0.1", port=int(port), log_level="warning", access_log=False)]
    if tls:
        tls_port, cert, key = tls
        configs.append(
            uvicorn.Config(
                app,
                host="127.0.0.1",
                port=int(tls_port),
                ssl_certfile=cert,
                ssl_keyfile=key,
                log_level="warning",
                access_log=False,
            )
        )

    async def serve() -> None:
        await asyncio.gather(*(uvicorn.Server(config).serve() for config in configs))

    with asyncio.Runner(loop_factory=configs[0].get_loop_factory()) as runner:  # uvloop, as uvicorn.run
        runner.run(serve())


if __name__ == "__main__":
    main()
