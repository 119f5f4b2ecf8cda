"""How fast runs may be started from Slack, checked and taken atomically before creating one.

The limits are token buckets per person and per channel, and a cap on a person's open runs. Why
here and not with a rate-limit library? The three checks must pass or fail together, and a
refusal takes nothing from either bucket. And the open-runs count reads the runs' own statuses.
One Lua script does both in a single round trip on the `/parley` ack path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from redis import Redis

from workers.store import keys
from workers.store.records import LIVE_STATUSES


@dataclass(frozen=True)
class Rate:
    """`count` starts per `per` seconds: `count` tokens refilled evenly over `per`."""

    count: int
    per: float

    def __str__(self) -> str:
        units = {60.0: "min", 3600.0: "hour", 86400.0: "day", 1.0: "s"}
        return f"{self.count}/{units.get(self.per, f'{self.per:g}s')}"


@dataclass(frozen=True)
class StartLimits:
    """The limits on starting runs from Slack, each turned off by None.

    They come from `PARLEY_STARTS_PER_USER`, `PARLEY_STARTS_PER_CHANNEL` and
    `PARLEY_OPEN_RUNS_PER_USER`.
    """

    per_user: Rate | None = Rate(10, 60.0)
    per_channel: Rate | None = Rate(30, 60.0)
    open_runs: int | None = 50


class StartLimit(StrEnum):
    """Which limit refused a start (the metric's label and the refusal's wording)."""

    USER = "user"
    CHANNEL = "channel"
    OPEN_RUNS = "open_runs"


@dataclass(frozen=True)
class Admission:
    """A start let through, or which limit refused it and for how long.

    Let through, `refused` is None and the run id now counts as open. Refused, it says in how many
    seconds a token comes back. For open runs that is 0, meaning when one ends.
    """

    refused: StartLimit | None = None
    retry_after: float = 0.0


RESERVE_GRACE = 60.0
"""Seconds an admitted run id counts as open before its run record exists (created just after)."""

# Check the open runs and both buckets, then take one token from each and count the run as open;
# a refusal writes nothing but the pruning of ended runs from the open set.
# KEYS: user bucket, channel bucket, open set   ARGV: now, user count, user period, channel count,
# channel period ('0' count: no limit), open cap ('0': none), run id, run key prefix, live statuses
# (space separated), reserve grace
ADMIT = """
local now = tonumber(ARGV[1])
local live = {}
for s in string.gmatch(ARGV[9], '%S+') do live[s] = true end
local cap = tonumber(ARGV[6])
if cap > 0 then
  local open = 0
  local members = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
  for i = 1, #members, 2 do
    local id, at = members[i], tonumber(members[i + 1])
    local st = redis.call('HGET', ARGV[8] .. id, 'status')
    if (st and live[st]) or (not st and at > now - tonumber(ARGV[10])) then
      open = open + 1
    else
      redis.call('ZREM', KEYS[3], id)
    end
  end
  if open >= cap then return {'open_runs', '0'} end
end
local function level(key, count, period)
  if count <= 0 then return nil end
  local b = redis.call('HMGET', key, 'tokens', 'at')
  local tokens, at = tonumber(b[1]) or count, tonumber(b[2]) or now
  return math.min(count, tokens + math.max(0, now - at) * count / period)
end
local uc, up, cc, cp = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local u, c = level(KEYS[1], uc, up), level(KEYS[2], cc, cp)
if u and u < 1 then return {'user', tostring((1 - u) * up / uc)} end
if c and c < 1 then return {'channel', tostring((1 - c) * cp / cc)} end
if u then
  redis.call('HSET', KEYS[1], 'tokens', tostring(u - 1), 'at', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], math.ceil(up * 1000))
end
if c then
  redis.call('HSET', KEYS[2], 'tokens', tostring(c - 1), 'at', ARGV[1])
  redis.call('PEXPIRE', KEYS[2], math.ceil(cp * 1000))
end
if cap > 0 then redis.call('ZADD', KEYS[3], now, ARGV[7]) end
return {'', '0'}
"""


class StartStore:
    """Admission of run starts, reached as `RunStore.starts`."""

    def __init__(self, redis: Redis) -> None:
        self._admit = redis.register_script(ADMIT)

    def admit(
        self, limits: StartLimits, *, team: str, channel: str, user: str, run_id: str, now: float | None = None
    ) -> Admission:
        """Let `user` start `run_id` in `channel` of `team` if every limit allows.

        It then takes one token from each bucket and counts the run as open. Otherwise it takes nothing.
        """
        now = time.time() if now is None else now
        user_rate, channel_rate = limits.per_user or Rate(0, 1.0), limits.per_channel or Rate(0, 1.0)
        refused, wait = self._admit(
            keys=[keys.starts_user(team, user), keys.starts_channel(team, channel), keys.open_runs(team, user)],
            args=[
                repr(now),
                user_rate.count,
                user_rate.per,
                channel_rate.count,
                channel_rate.per,
                limits.open_runs or 0,
                run_id,
                keys.run(""),
                " ".join(s.value for s in LIVE_STATUSES),
                RESERVE_GRACE,
            ],
        )
        reason = refused.decode() if isinstance(refused, bytes) else refused
        if not reason:
            return Admission()
        return Admission(StartLimit(reason), float(wait))
