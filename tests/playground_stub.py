"""A stand-in for the bot behind the playground: checks signatures, records requests, answers queued acks."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SECRET = "playground-stub-secret"


@dataclass
class StubBot:
    """Records what arrives at /slack/events and answers with queued (status, body) pairs.

    With nothing queued, ``responder(body)`` answers when set, else an empty 200 (a bare ack).
    """

    received: list[dict[str, Any]] = field(default_factory=list)
    replies: list[tuple[int, Any]] = field(default_factory=list)
    responder: Callable[[dict[str, Any]], tuple[int, Any]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def events(self, request: Request) -> Response:
        raw = await request.body()
        assert SignatureVerifier(SECRET).is_valid_request(raw, dict(request.headers))
        kind = request.headers["content-type"]
        if kind.startswith("application/json"):
            body = json.loads(raw)
        else:
            form = dict(parse_qsl(raw.decode(), keep_blank_values=True))
            body = json.loads(form["payload"]) if "payload" in form else form
        with self.lock:
            self.received.append(body)
            queued = self.replies.pop(0) if self.replies else None
        status, reply = queued or (self.responder(body) if self.responder else (200, ""))
        if isinstance(reply, dict):
            return JSONResponse(reply, status_code=status)
        return Response(reply, status_code=status)

    def app(self) -> Starlette:
        """The bot's Request URL, /slack/events, as an ASGI app."""
        return Starlette(routes=[Route("/slack/events", self.events, methods=["POST"])])

    def last(self) -> dict[str, Any]:
        with self.lock:
            return self.received[-1]
