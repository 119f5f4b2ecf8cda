"""Limits on webhook deliveries, kept in Redis so every worker process shares them.

`InFlight` caps the attempts in flight at once, per API token and per destination (host and
port). So one token's slow receivers hold only a few delivery threads. And no host gets more
than a few connections from Parley at a time.

`Circuits` is a circuit breaker per destination. After `threshold` timed-out attempts in a row,
attempts to it stop for a cooldown. A timeout may be in connecting or answering. The cooldown
doubles up to `max_cooldown`. The next attempt after it is a half-open trial. It closes the
circuit when the host answers, whatever its status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from redis import Redis
from redis.client import Pipeline

from workers.store import keys
from workers.store.replies import as_text, reply

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

    def acquire(self, member: str, token: str, host: str, hold: float, *, pipe: Pipeline | None = None) -> str | None:
        """Take a slot for `member` for at most `hold` seconds.

        Returns None if taken, else the cap that is full. With `pipe` the call is only staged there;
        `full` reads its reply.
        """
        now = time.time()
        args: list[str | float] = [now, now + hold, member, self.per_token, self.per_host, int(hold) + 60]
        if pipe is not None:
            self._acquire(keys=self._keys(token, host), args=args, client=pipe)
            return None
        return self.full(self._acquire(keys=self._keys(token, host), args=args))

    @staticmethod
    def full(raw: int) -> str | None:
        """The cap a staged `acquire`'s reply says is full, or None when the slot was taken."""
        return FULL.get(int(raw))

    def release(self, member: str, token: str, host: str) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            for key in self._keys(token, host):
                pipe.zrem(key, member)
            pipe.execute()

    def _keys(self, token: str, host: str) -> list[str]:
        return [keys.webhook_in_flight("token", token), keys.webhook_in_flight("host", host)]


@dataclass(frozen=True)
class Circuit:
    """A host's breaker as an attempt sees it: `closed`, `open` or `half_open`.

    When `open`, no attempt is made until `open_until`.
    """

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
        return self.state(reply(self.redis.hmget(keys.webhook_circuit(host), ["timeouts", "open_until"])), now)

    def stage(self, pipe: Pipeline, host: str) -> None:
        """Stage `get`'s read on `pipe`; `state` reads its reply."""
        pipe.hmget(keys.webhook_circuit(host), ["timeouts", "open_until"])

    def state(self, fields: list[bytes | str | None], now: float | None = None) -> Circuit:
        """The breaker that the host's fields describe: `closed`, `open` or `half_open`."""
        now = time.time() if now is None else now
        timeouts, open_until = (None if f is None else float(f) for f in fields)
        if open_until is not None and open_until > now:
            return Circuit("open", open_until)
        if timeouts is not None and timeouts >= self.threshold:
            return Circuit("half_open")
        return Circuit("closed")

    def timed_out(self, host: str, now: float | None = None) -> Circuit:
        """Note a timed-out attempt to `host`, opening the circuit at the threshold."""
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


@dataclass(frozen=True)
class Gate:
    """What an attempt needs before it sends, read in one round trip (`open_gate`)."""

    circuit: Circuit
    token_hash: str | None
    full: str | None  # the cap that is full; None when the slot was taken or none was asked


def open_gate(
    circuits: Circuits, in_flight: InFlight, host: str, token_name: str, slot: tuple[str, str, float] | None
) -> Gate:
    """The host's breaker, the hash naming token `token_name`, and `slot` taken, at once.

    `slot` is (member, asker, hold). A slot taken for a host whose circuit is open is released
    again, since no attempt is made then.
    """
    with circuits.redis.pipeline(transaction=False) as pipe:
        circuits.stage(pipe, host)
        pipe.hget(keys.api_tokens(), token_name)
        if slot is not None:
            in_flight.acquire(slot[0], slot[1], host, slot[2], pipe=pipe)
        replies = pipe.execute()
    circuit = circuits.state(replies[0])
    token_hash = as_text(replies[1]) if replies[1] is not None else None
    full = InFlight.full(replies[2]) if slot is not None else None
    if slot is not None and circuit.state == "open" and full is None:
        in_flight.release(slot[0], slot[1], host)
    return Gate(circuit, token_hash, full)
