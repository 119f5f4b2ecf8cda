"""`Closings`: wakes long-polls waiting on questions, from one pub/sub subscription per process.

The store's CLOSE script publishes the id of every question it closes on
`keys.closed_channel()`. It does so in the same atomic step, whether answered, expired or
cancelled. CLOSE_MEMBER publishes a group's id when the group ends, for a quorum's waiters.
A process serving long-polls subscribes once, and resolves an asyncio future per waiter. A
waiter holds no thread and no Redis connection of its own.

Pub/sub keeps nothing, so a message missed while reconnecting cannot be replayed. So every
reconnect wakes all waiters to read the state again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from workers.logs import Log
from workers.store import keys

log = Log("parley.closings")


class Closings:
    """Futures by question (interrupt) id, resolved when the question closes."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis
        self._waiters: dict[str, set[asyncio.Future[None]]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self, timeout: float = 5.0) -> None:
        """Subscribe, and return once the subscription is live, so no later close is missed."""
        self._task = asyncio.create_task(self._run(), name="parley-closings")
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._redis.aclose()

    @property
    def waiting(self) -> int:
        return sum(len(v) for v in self._waiters.values())

    def watch(self, interrupt_id: str) -> asyncio.Future[None]:
        """A future that resolves when `interrupt_id` closes.

        Register it before reading the state.
        """
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[interrupt_id].add(fut)
        return fut

    def forget(self, interrupt_id: str, fut: asyncio.Future[None]) -> None:
        waiters = self._waiters.get(interrupt_id)
        if waiters is not None:
            waiters.discard(fut)
            if not waiters:
                del self._waiters[interrupt_id]

    def _wake(self, interrupt_id: str | None = None) -> None:
        ids = list(self._waiters) if interrupt_id is None else [interrupt_id]
        for iid in ids:
            for fut in self._waiters.pop(iid, set()):
                if not fut.done():
                    fut.set_result(None)

    async def _run(self) -> None:
        delay = 0.1
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(keys.closed_channel())
                self._ready.set()
                self._wake()  # anything closed while we were away: let every waiter read again
                delay = 0.1
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        data = message["data"]
                        self._wake(data.decode() if isinstance(data, bytes) else str(data))
            except (RedisError, OSError):
                log.warning("question close subscription lost; resubscribing", exc=True)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
