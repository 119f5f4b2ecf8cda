"""Sliding-window rate limits of the HTTP API: at most `limit` in any span of `window` seconds.

A fixed window let twice the limit through across a window's edge (the end of one
window, then the start of the next). Here each bucket (a token's owner id, a client
address's failed tokens) keeps a log of what it spent, a sorted set scored by time;
one Lua script drops what is older than the window, counts the rest, and records a
request only when it fits, so every `parley serve` process shares one exact count.

GCRA was not enough: with a burst of `limit` it still passes nearly twice `limit` in
one window's span. The `limits` library's moving window fits the algorithm, but it
reads the clock itself and builds its own keys on its own connection; this keeps
`now` injectable (the tests drive time) and every key in `workers.store.keys`. The log
holds at most `limit` entries per bucket and expires with its window.
"""

from __future__ import annotations

import time
import uuid

from redis import Redis

from workers.store import keys
from workers.store.replies import reply

# KEYS: the bucket's log   ARGV: now, window (s), limit, cost, a unique id for this request's entries
# Returns "0" when the request fits (and is recorded), else the seconds until it would fit.
HIT = """
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, cost = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count + cost <= limit then
  for i = 1, cost do redis.call('ZADD', KEYS[1], now, ARGV[5] .. ':' .. i) end
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000) + 1000)
  return '0'
end
if cost > limit then return tostring(window) end
local freeing = redis.call('ZRANGE', KEYS[1], count + cost - limit - 1, count + cost - limit - 1, 'WITHSCORES')
return tostring(math.max(0.001, tonumber(freeing[2]) + window - now))
"""


class RateLog:
    """The API's per-bucket sliding-window logs; reached through `QuestionStore.hit` and `over`."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._hit = redis.register_script(HIT)

    def hit(self, bucket: str, limit: int, window: int, now: float | None = None, *, cost: int = 1) -> float:
        """Record `cost` requests of `bucket` if they fit in `limit` over the last `window` seconds.

        Returns 0 when they fit (and are counted), else the seconds until they would fit;
        a refused request is not counted, so a client that waits is let in on time.
        """
        now = time.time() if now is None else now
        wait = self._hit(keys=[keys.api_rate(bucket)], args=[repr(now), window, limit, cost, uuid.uuid4().hex])
        return float(reply(wait))

    def over(self, bucket: str, limit: int, window: int, now: float | None = None) -> float:
        """Without counting: the seconds until `bucket` has room again when its log is full, else 0."""
        now = time.time() if now is None else now
        spent = reply(self.redis.zrangebyscore(keys.api_rate(bucket), f"({now - window!r}", "+inf", withscores=True))
        if len(spent) < limit:
            return 0.0
        return max(0.001, float(spent[len(spent) - limit][1]) + window - now)
