"""Sliding-window rate limits of the HTTP API: at most `limit` in any `window` seconds.

A fixed window let twice the limit through across a window's edge. That is one window's end,
then the next one's start. Here each bucket keeps a log of when it spent. A bucket is a token's
owner id, or a client address's failed tokens. The log is a list, newest first, trimmed to
`limit` entries. A request reads the log under WATCH. It is recorded in MULTI/EXEC only when it
fits. So every `parley serve` process shares one exact count. A write between the read and the
record retries after a short random wait. Plain commands are used rather than a Lua script. So
the rate is counted even while Redis refuses scripts. A refused request writes nothing.

GCRA was not enough. With a burst of `limit`, it still passes nearly twice `limit` in one
window's span. The `limits` library's moving window fits the algorithm. But it reads the clock
itself and builds its own keys on its own connection. This keeps `now` injectable, so the tests
drive time. It also keeps every key in `workers.store.keys`.
"""

from __future__ import annotations

import math
import random
import time

from redis import Redis
from redis.exceptions import WatchError

from workers.store import keys
from workers.store.replies import reply

CONTENDED = 100
"""Attempts at recording a request while other requests of its bucket keep writing its log."""
BACKOFF = 0.001
"""Seconds, times the attempt, up to which a contended request waits at random before retrying."""
CONTENDED_WAIT = 0.5
"""The seconds a request is told to wait when its bucket's log stays that busy."""


class RateLog:
    """The API's per-bucket sliding-window logs, via `QuestionStore.hit` and `over`."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def _recent(self, raw: list[bytes], now: float, window: int) -> list[float]:
        """The log's times still inside the window, newest first."""
        return sorted((t for t in map(float, raw) if t > now - window), reverse=True)

    def hit(self, bucket: str, limit: int, window: int, now: float | None = None, *, cost: int = 1) -> float:
        """Record `cost` requests of `bucket` if they fit `limit` over the last `window` seconds.

        Returns 0 when they fit and are counted, else the seconds until they would fit. A refused
        request is not counted. So a client that waits is let in on time.
        """
        now = time.time() if now is None else now
        if cost > limit:
            return float(window)
        key = keys.api_rate(bucket)
        for attempt in range(CONTENDED):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    recent = self._recent(reply(pipe.lrange(key, 0, limit - 1)), now, window)
                    if len(recent) + cost > limit:  # the oldest of these must leave the window first
                        return max(0.001, recent[limit - cost] + window - now)
                    pipe.multi()
                    pipe.lpush(key, *[repr(now)] * cost)
                    pipe.ltrim(key, 0, limit - 1)
                    pipe.pexpire(key, math.ceil(window * 1000) + 1000)
                    pipe.execute()
                    return 0.0
                except WatchError:  # another request of the bucket wrote first: step aside a moment
                    time.sleep(random.uniform(0, BACKOFF * attempt))
        return CONTENDED_WAIT

    def over(self, bucket: str, limit: int, window: int, now: float | None = None) -> float:
        """The seconds until a full `bucket` has room again, else 0, without counting."""
        now = time.time() if now is None else now
        recent = self._recent(reply(self.redis.lrange(keys.api_rate(bucket), 0, limit - 1)), now, window)
        return 0.0 if len(recent) < limit else max(0.001, recent[limit - 1] + window - now)
