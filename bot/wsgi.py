"""The bot's WSGI application: bolt's adapter at `/slack/events`, and `/healthz`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import redis
from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

EVENTS_PATH = "/slack/events"


def make_wsgi(app: App, client: redis.Redis) -> Callable[..., Iterable[bytes]]:
    bolt = SlackRequestHandler(app, path=EVENTS_PATH)

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            try:
                client.ping()
                start_response("200 OK", [("Content-Type", "text/plain")])
                return [b"ok\n"]
            except (redis.RedisError, OSError):
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                return [b"redis unavailable\n"]
        if path == EVENTS_PATH:
            return bolt(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]

    return wsgi
