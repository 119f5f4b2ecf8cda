"""The bot's ASGI application: `/api/v1` async, everything else through the WSGI dispatcher.

Bolt's sync `App` keeps its WSGI adapter (`bot.wsgi.make_wsgi`). That serves `/slack/events`,
`/healthz` and any other route it dispatches. a2wsgi runs it on a thread pool of its own, and
those threads ack Slack and nothing else. The API's endpoints are coroutines. A long-poll holds
no thread, so hundreds may be open without slowing an ack. Other ASGI routes are mounted beside
them (`mounts`), like MCP's streamable HTTP at `/mcp`. With them comes what must run for the
server's lifetime (`lifespans`), like its session manager.

Every request's body is read whole on the event loop first, under a per-path cap and a deadline
(`bot.body_limits`). So a client sending its body slowly holds no thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

from a2wsgi import WSGIMiddleware
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from bot.api.app import create_api
from bot.api.errors import no_such_path
from bot.body_limits import BodyLimits
from workers.questions import QuestionService
from workers.questions.waiting import listening

SLACK_THREADS = 32
"""Threads that run bolt's listeners (and so ack Slack): as many as gunicorn gthread had before."""


def make_asgi(
    wsgi: Callable[..., Iterable[bytes]],
    service: QuestionService,
    *,
    mounts: Iterable[BaseRoute] = (),
    lifespans: Iterable[Callable[[], AbstractAsyncContextManager[Any]]] = (),
    on_stop: Callable[[], None] | None = None,
) -> Starlette:
    """`/api/v1` goes to the API, then `mounts` (ASGI apps), else `wsgi` on its threads.

    The service's close notifications are subscribed as the server starts (its lifespan). They are
    closed when it stops. Each of `lifespans` is entered after them, and left before them.
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            async with listening(service), contextlib.AsyncExitStack() as stack:
                for entered in lifespans:
                    await stack.enter_async_context(entered())
                yield
        finally:
            if on_stop is not None:
                on_stop()

    api = create_api(service)
    # a2wsgi types its ASGI callable with its own Scope/Receive/Send, which starlette's Mount does not accept.
    slack = cast(ASGIApp, WSGIMiddleware(wsgi, workers=SLACK_THREADS))
    # `/api/v1` itself and any path under `/mcp` but `/mcp` answer 404 problem+json, never bolt's text/plain.
    nothing = [Route("/api/v1", endpoint=no_such_path), Mount("/mcp", app=no_such_path)]
    routes = [Mount("/api/v1", app=api), *mounts, *nothing, Mount("/", app=slack)]
    app = Starlette(routes=routes, middleware=[Middleware(BodyLimits)], lifespan=lifespan)
    app.state.questions = service  # for other ASGI surfaces on the same process (an MCP server's, say)
    return app
