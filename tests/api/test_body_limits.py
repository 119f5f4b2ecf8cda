"""`BodyLimits` in-process: what reaches the application, and what is refused without reaching it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.body_limits import BodyLimits

pytestmark = pytest.mark.unit


class Recorder:
    """An ASGI app that reads its body as an application would, and records what it got."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def call(app: Any, messages: list[dict[str, Any]], *, content_length: str | None = None, hang: bool = False) -> int:
    """The status `app` answers to a POST whose body arrives as `messages` (then nothing, with `hang`)."""
    headers = [(b"content-length", content_length.encode("latin1"))] if content_length is not None else []
    scope = {"type": "http", "path": "/slack/events", "method": "POST", "headers": headers}
    sent: list[dict[str, Any]] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        if hang:
            await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    if start is not None and start["status"] != 200:
        assert (b"connection", b"close") in start["headers"]  # a refusal ends the connection
    return start["status"] if start else 0


def part(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


def test_a_body_in_parts_reaches_the_app_whole_in_one_message() -> None:
    app = Recorder()
    assert call(BodyLimits(app, default=10), [part(b"abc", True), part(b"def", True), part(b"", False)]) == 200
    assert app.bodies == [b"abcdef"]


def test_over_the_cap_is_413_and_the_app_never_runs() -> None:
    app = Recorder()
    limited = BodyLimits(app, default=5)
    assert call(limited, [], content_length="6") == 413  # declared: nothing read
    assert call(limited, [], content_length="9" * 5000) == 413
    assert call(limited, [part(b"abc", True), part(b"def", True)]) == 413  # chunked, stopped at the cap
    assert app.bodies == []
    assert call(limited, [part(b"abcde", False)], content_length="5") == 200


def test_a_body_past_the_deadline_is_408_and_the_app_never_runs() -> None:
    app = Recorder()
    assert call(BodyLimits(app, deadline=0.2), [part(b"a", True)], hang=True) == 408
    assert app.bodies == []


def test_a_client_gone_before_its_body_is_complete_reaches_nothing() -> None:
    app = Recorder()
    assert call(BodyLimits(app), [part(b"a", True)]) == 0  # then a disconnect: no answer, no app
    assert app.bodies == []


def test_each_path_has_its_own_cap() -> None:
    limited = BodyLimits(Recorder(), limits=[("/api/v1", 100), ("/mcp", 50)], default=10)
    assert [limited.cap(p) for p in ("/api/v1", "/api/v1/questions", "/api/v1x", "/mcp", "/slack/events")] == [
        100,
        100,
        10,
        50,
        10,
    ]
