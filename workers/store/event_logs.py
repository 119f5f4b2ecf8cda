"""Bounded logs of a stream's events on Redis, to resume dropped response streams (MCP's `/mcp`).

Each (session, stream) has one log, one Redis stream (`keys.mcp_events`) of opaque text entries.
The entries are JSON, written and read by `bot.mcp.events`. A log holds at most `max_events`
entries and expires `ttl` seconds after its last. A reader names the entry it last received and
gets the ones after it.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from workers.store import keys

TTL = 600  # seconds a log is kept after its last event: well past a 50 s wait and a client's retries
MAX_EVENTS = 1000  # per log: an MCP call's stream holds a priming event, progress, and one response


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class EventLogs:
    """One server's event logs, in Redis reached by the asyncio client `redis`."""

    def __init__(self, redis: aioredis.Redis, *, ttl: int = TTL, max_events: int = MAX_EVENTS) -> None:
        self.redis = redis
        self.ttl = ttl
        self.max_events = max_events

    async def append(self, session: str, stream: str, data: str) -> str:
        """Add `data` to the log, returning its increasing entry id (`<ms>-<seq>`)."""
        key = keys.mcp_events(session, stream)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(key, {"data": data}, maxlen=self.max_events, approximate=False)
            pipe.expire(key, self.ttl)
            entry, _ = await pipe.execute()
        return _text(entry)

    async def after(self, session: str, stream: str, entry: str) -> list[tuple[str, str]] | None:
        """The entries after `entry`, oldest first.

        None when the log no longer holds `entry`, since what followed it may be lost. It may have
        expired, been trimmed past, or never been written.
        """
        try:
            found = await self.redis.xrange(keys.mcp_events(session, stream), min=entry, max="+")
        except aioredis.ResponseError:  # not an entry id
            return None
        if not found or _text(found[0][0]) != entry:
            return None
        return [(_text(eid), _text(fields.get(b"data", b""))) for eid, fields in found[1:]]
