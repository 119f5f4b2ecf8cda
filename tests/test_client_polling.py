"""Both Python clients long-poll in whole seconds without a busy loop in the last second.

A loopback server holds each `GET` for its `?wait=` seconds and answers `waiting`, as
`parley serve` does while nobody answers. A wait of half a second must cost one poll of one second:
rounding the time left down would send `?wait=0` over and over until the deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot.playground import LoopbackServer
from parley import AsyncParley, Parley
from parley.client import QuestionTimeoutError

pytestmark = pytest.mark.unit

WAITING = {"id": "q1", "status": "waiting", "answers": None}


@pytest.fixture
def polls() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def question(request: Request) -> JSONResponse:
        wait = request.query_params.get("wait", "0")
        seen.append(wait)
        await asyncio.sleep(int(wait))
        return JSONResponse(WAITING)

    app = Starlette(routes=[Route("/api/v1/questions/q1", question)])
    with LoopbackServer(app) as server:
        yield server.url, seen


def test_the_sync_client_rounds_the_time_left_up(polls: tuple[str, list[str]]) -> None:
    url, seen = polls
    with Parley(url, "pk_test") as client, pytest.raises(QuestionTimeoutError):
        client.wait("q1", timeout=0.5)
    assert seen == ["1"]


def test_the_async_client_rounds_the_time_left_up(polls: tuple[str, list[str]]) -> None:
    url, seen = polls

    async def main() -> None:
        async with AsyncParley(url, "pk_test") as client:
            await client.wait("q1", timeout=0.5)

    with pytest.raises(QuestionTimeoutError):
        asyncio.run(main())
    assert seen == ["1"]
