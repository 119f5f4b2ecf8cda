"""The SDK's `EventStore` on real Redis (`bot.mcp.events` over `workers.store.event_logs`): events are kept
as JSON per session and stream, bounded in length and time, replayed after the id a client last got, and
an id this session did not give (another session's, a garbled one, one trimmed away) replays nothing."""

from __future__ import annotations

import anyio
import pytest
import redis
import redis.asyncio as aioredis
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCMessage, JSONRPCNotification, JSONRPCResponse

from bot.mcp.events import RedisEventStore
from workers.store import keys
from workers.store.event_logs import EventLogs

pytestmark = pytest.mark.integration


def response(request_id: int, text: str) -> JSONRPCMessage:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"structuredContent": {"status": text}})


def progress(n: int) -> JSONRPCMessage:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})


def run_store(redis_url: str, scenario, **limits: int):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        client = aioredis.Redis.from_url(redis_url)
        try:
            return await scenario(RedisEventStore(EventLogs(client, **limits)))
        finally:
            await client.aclose()

    return anyio.run(main)


def test_events_after_the_last_id_are_replayed_in_order_as_json(r: redis.Redis, redis_url: str) -> None:
    async def scenario(store: RedisEventStore) -> tuple[list[EventMessage], str | None, list[EventMessage]]:
        mine = store.for_session("s1")
        priming = await mine.store_event("7", None)
        first = await mine.store_event("7", progress(1))
        await mine.store_event("7", response(7, "answered"))
        await mine.store_event("8", response(8, "other stream"))
        got: list[EventMessage] = []

        async def send(event: EventMessage) -> None:
            got.append(event)

        stream = await mine.replay_events_after(priming, send)
        later: list[EventMessage] = []

        async def send_later(event: EventMessage) -> None:
            later.append(event)

        await mine.replay_events_after(first, send_later)
        return got, stream, later

    got, stream, later = run_store(redis_url, scenario)
    assert stream == "7"
    assert [e.message for e in got] == [progress(1), response(7, "answered")]  # stream 8 is not stream 7
    assert all(e.event_id and e.event_id.endswith(".Nw") for e in got)  # "7", base64url
    assert [e.message for e in later] == [response(7, "answered")]
    [stored] = r.xrange(keys.mcp_events("s1", "7"))[-1:]
    assert stored[1][b"data"].startswith(b'{"jsonrpc":"2.0"')  # JSON, never pickled
    assert 0 < r.ttl(keys.mcp_events("s1", "7")) <= 600


def test_ids_this_session_did_not_give_replay_nothing(r: redis.Redis, redis_url: str) -> None:
    async def scenario(store: RedisEventStore) -> list[str | None]:
        theirs = store.for_session("s1")
        mine = store.for_session("s2")
        their_priming = await theirs.store_event("1", None)
        await theirs.store_event("1", response(1, "theirs"))
        # Redis numbers each stream's entries by the millisecond, so two streams written in the same
        # one share ids: then theirs would name an entry this session gave too. A new millisecond.
        await anyio.sleep(0.005)
        await mine.store_event("1", None)
        sent: list[EventMessage] = []

        async def send(event: EventMessage) -> None:
            sent.append(event)

        results = [await mine.replay_events_after(i, send) for i in (their_priming, "nonsense", "1-0.@@", "")]
        assert sent == []
        return results

    assert run_store(redis_url, scenario) == [None, None, None, None]


def test_a_stream_is_bounded_in_length(r: redis.Redis, redis_url: str) -> None:
    async def scenario(store: RedisEventStore) -> tuple[str | None, list[EventMessage]]:
        mine = store.for_session("s1")
        first = await mine.store_event("5", None)
        for n in range(6):
            await mine.store_event("5", progress(n))
        sent: list[EventMessage] = []

        async def send(event: EventMessage) -> None:
            sent.append(event)

        return await mine.replay_events_after(first, send), sent

    stream, sent = run_store(redis_url, scenario, max_events=4)
    assert r.xlen(keys.mcp_events("s1", "5")) == 4
    assert (stream, sent) == (None, [])  # trimmed past the client's last event: what followed may be lost
