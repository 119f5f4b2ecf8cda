"""A Slack of our own for `parley slack setup` and `parley up`: the Web API stand-in and a Socket Mode server.

`LoopbackSlack.serving(*tokens)` runs both on loopback ports: the stand-in knows only `tokens`
(any other is `invalid_auth`), and its `apps.connections.open` hands out the Socket Mode
server's URL. `command_env` is the environment a `parley` command gets there: none of the
caller's Slack or Parley settings, REDIS_URL unset (the embedded Redis), the stand-in's URL.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from socket_mode_support import SocketModeServer

from bot.playground import LoopbackServer, Workspace, make_webapi_app


@dataclass
class LoopbackSlack:
    """The stand-in's workspace, its Web API URL, and the Socket Mode server it hands out."""

    ws: Workspace
    api_url: str
    socket: SocketModeServer

    @classmethod
    @contextlib.contextmanager
    def serving(cls, *tokens: str) -> Iterator[LoopbackSlack]:
        ws = Workspace()
        ws.accepted_tokens = set(tokens)
        socket = SocketModeServer().start()
        ws.socket_mode_url = socket.url
        try:
            with LoopbackServer(make_webapi_app(ws)) as server:
                yield cls(ws, server.url + "/api/", socket)
        finally:
            socket.stop()

    def command_env(self, data_dir: Path, **extra: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_")) and k != "REDIS_URL"}
        return {
            **keep,
            "SLACK_API_URL": self.api_url,
            "PARLEY_DATA_DIR": str(data_dir),
            "TERM": "xterm",
            "PROMPT_TOOLKIT_NO_CPR": "1",  # nobody answers cursor-position requests in a pty
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
