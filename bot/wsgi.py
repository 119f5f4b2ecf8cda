"""The bot's WSGI app: bolt's adapter at `/slack/events`, `/healthz`, and Prometheus's `/metrics`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import redis
from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from workers import metrics
from workers.logs import Log
from workers.store.runs import RunStore

log = Log("parley.wsgi")
EVENTS_PATH = "/slack/events"


def make_wsgi(app: App, client: redis.Redis, *, public_metrics: bool = True) -> Callable[..., Iterable[bytes]]:
    """Bolt's adapter and the routes beside it.

    `public_metrics`: serve `/metrics` here, else it is a 404.
    """
    bolt = SlackRequestHandler(app, path=EVENTS_PATH)
    flow = app.oauth_flow  # OAuth mode: bolt serves the install page and Slack's redirect back
    oauth_paths = {flow.install_path, flow.redirect_uri_path} if flow is not None else set()
    registry = metrics.scrape_registry(RunStore(client))

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
        if path in oauth_paths:
            return bolt(environ, start_response)
        if path == "/metrics" and public_metrics:
            start_response("200 OK", [("Content-Type", metrics.CONTENT_TYPE)])
            return [metrics.exposition(registry)]
        if path == EVENTS_PATH:
            if not _readable_signature(environ):
                start_response("401 Unauthorized", [("Content-Type", "text/plain")])
                return [b"unauthorized\n"]
            try:
                return bolt(environ, start_response)
            except Exception as exc:
                # Bolt parses the body before any listener (or the signature check) runs; a body
                # it cannot read (not an object, nested too deep, fields of the wrong type) is the
                # sender's error, not ours.
                log.warning("unreadable request refused", error=f"{type(exc).__name__}: {str(exc)[:200]}")
                start_response("400 Bad Request", [("Content-Type", "text/plain")])
                return [b"bad request\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]

    return wsgi


def _readable_signature(environ: dict[str, Any]) -> bool:
    """False for signature headers the verifier would choke on.

    That is a timestamp that is not an integer, or a signature that is not ASCII. Such a request is
    unsigned, not a server error.
    """
    timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP")
    signature = environ.get("HTTP_X_SLACK_SIGNATURE")
    if timestamp is not None and not (timestamp.isascii() and timestamp.strip().isdigit()):
        return False
    return signature is None or signature.isascii()
