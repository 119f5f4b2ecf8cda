"""The playground: a Slack stand-in a person can click through, in one ASGI app.

    /api/<method>   the Web API stand-in the bot and workers call (``SLACK_API_URL``)
    /               the page (static/index.html, app.js, blocks.js, mrkdwn.js, app.css)
    /ui/...         what the page calls: its live state, and one route per kind of action
    /hooks/<token>  ``response_url``s handed out with slash commands and message actions
    /api/v1, /mcp   with ``forward_to``: the bot's HTTP API and MCP, forwarded (``forward.py``)

Every action on the page reaches the bot as the signed request Slack would send
(``bot.playground.slack_sender``). What comes back is applied to the workspace the way Slack
applies it. That may be a slash command's ephemeral reply, a modal's ``response_action``, or
type-ahead options.

The page acts as the workspace's people, so only its own machine may drive it. The host must be
a loopback name. A page elsewhere that rebinds its own name to 127.0.0.1 is refused. Every write
under /ui/ must be JSON from the page's own origin (``ui.py``).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from bot.playground.forward import ForwardToBot
from bot.playground.scripted_model import scripted_model_routes
from bot.playground.session import STATIC, Playground
from bot.playground.slack_sender import SlackSender
from bot.playground.ui import ui_routes
from bot.playground.webapi import create_webapi
from bot.playground.workspace import Workspace

PERMALINK_BASE = "https://parley-playground.slack.com"
"""Permalinks look like Slack's (https, the team's domain); the page opens them in place."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""The only `Host` names the playground answers (any port): the page is for this machine only."""


def create_playground_app(
    ws: Workspace,
    *,
    bot_url: str,
    signing_secret: str,
    commands: tuple[str, ...] = ("/parley",),
    forward_to: str | None = None,
) -> Starlette:
    """The full playground for the bot at ``bot_url``, its ``/slack/events`` Request URL.

    ``forward_to``: the bot's base URL, where ``/api/v1`` and ``/mcp`` are forwarded
    (``parley dev``).
    """
    if ws.permalink_base is None:
        ws.permalink_base = PERMALINK_BASE
    playground = Playground(ws, SlackSender(bot_url, signing_secret), commands=commands)
    routes = [
        Mount("/api", app=create_webapi(ws)),
        *ui_routes(),
        *scripted_model_routes(),
        Mount("/static", app=StaticFiles(directory=STATIC)),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=LOCAL_HOSTS)]
    if forward_to is not None:
        middleware.append(Middleware(ForwardToBot, base_url=forward_to))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.playground = playground
    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on ``host:port`` (``SO_REUSEADDR``, so a restart is not refused)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class ServerThread:
    """uvicorn serving ``app`` on an already-bound socket, in a daemon thread."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2)
        self.sock = sock
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            self.stop()
            raise RuntimeError("the playground server did not start")

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout)
        self.sock.close()
