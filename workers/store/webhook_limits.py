"""Limits on webhook deliveries, kept in Redis so every worker process shares them.

`InFlight` caps the attempts in flight at once per API token and per destination (host and
port): one token's slow receivers can hold only a few of the delivery threads, and no host
gets more than a few connections from Parley at a time. `Circuits` is a circuit breaker per
destination: after `threshold` attempts in a row that timed out (connecting or answering),
attempts to it are not made for a cooldown that doubles up to `max_cooldown`; the next
attempt after it is a trial (half-open) that closes the circuit when the host answers,
whatever its status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from redis import Redis

from workers.store import keys
from workers.store.replies import reply

# Take a slot in both sets, or in neither: stale members (an attempt whose worker died) are
# dropped first. Idempotent: a member already holding its slots keeps them.
# KEYS: token set, host set   ARGV: now, held_until, member, token cap, host cap, key ttl
_ACQUIRE = """
local now = tonumber(ARGV[1])
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
for i = 1, 2 do
  if not redis.call('ZSCORE', KEYS[i], ARGV[3]) and redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[3 + i]) then
    return i
  end
end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[i], ARGV[6])
end
return 0
"""
FULL = {1: "token", 2: "host"}


class InFlight:
    """Slots for webhook attempts in flight, per token and per destination host."""

    def __init__(self, redis: Redis, per_token: int, per_host: int) -> None:
        self.redis = redis
        self.per_token = per_token
        self.per_host = per_host
        self._acquire = redis.register_script(_ACQUIRE)

    def acquire(self, member: str, token: str, host: str, hold: float) -> str | None:
        """Take a slot for `member` for at most `hold` seconds; None if taken, else the cap that is full."""
        now = time.time()
        args: list[str | float] = [now, now + hold, member, self.per_token, self.per_host, int(hold) + 60]
        full = int(self._acquire(keys=self._keys(token, host), args=args))
        return FULL.get(full)

    def release(self, member: str, token: str, host: str) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            for key in self._keys(token, host):
                pipe.zrem(key, member)
            pipe.execute()

    def _keys(self, token: str, host: str) -> list[str]:
        return [keys.webhook_in_flight("token", token), keys.webhook_in_flight("host", host)]


@dataclass(frozen=True)
class Circuit:
    """A host's breaker as an attempt sees it: `closed`, `open` (no attempt until `open_until`) or `half_open`."""

    state: str
    open_until: float | None = None


class Circuits:
    """The circuit breaker of each destination host (see the module docstring)."""

    def __init__(self, redis: Redis, threshold: int = 3, cooldown: float = 60.0, max_cooldown: float = 600.0) -> None:
        self.redis = redis
        self.threshold = threshold
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown

    def get(self, host: str, now: float | None = None) -> Circuit:
        now = time.time() if now is None else now
        timeouts, open_until = reply(self.redis.hmget(keys.webhook_circuit(host), ["timeouts", "open_until"]))
        if open_until is not None and float(open_until) > now:
            return Circuit("open", float(open_until))
        if timeouts is not None and int(timeouts) >= self.threshold:
            return Circuit("half_open")
        return Circuit("closed")

    def timed_out(self, host: str, now: float | None = None) -> Circuit:
        """An attempt to `host` timed out; opens the circuit at the threshold."""
        now = time.time() if now is None else now
        key = keys.webhook_circuit(host)
        timeouts = int(reply(self.redis.hincrby(key, "timeouts", 1)))
        self.redis.expire(key, 86400)
        if timeouts < self.threshold:
            return Circuit("closed")
        open_until = now + min(self.cooldown * 2 ** (timeouts - self.threshold), self.max_cooldown)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, "open_until", open_until)
            pipe.zadd(keys.webhook_circuits_open(), {host: open_until})
            pipe.zremrangebyscore(keys.webhook_circuits_open(), "-inf", now)
            pipe.execute()
        return Circuit("open", open_until)

    def answered(self, host: str) -> Circuit:
        """`host` answered (any status): its circuit closes."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(keys.webhook_circuit(host))
            pipe.zrem(keys.webhook_circuits_open(), host)
            pipe.execute()
        return Circuit("closed")

    def open_count(self, now: float | None = None) -> int:
        """How many hosts' circuits are open now (the metrics gauge)."""
        now = time.time() if now is None else now
        return int(reply(self.redis.zcount(keys.webhook_circuits_open(), f"({now}", "+inf")))
