"""Claim and release: one person takes a question put to many, and may give it back.

Anyone a `Request.claim` question was put to may answer it. A claim makes the claimer its only
assignee. So acceptance (the `CLOSE` script) refuses everyone else, with no change there. The
assignees before it are kept and put back on release. Each change is one script, with its
waiting-index entries and history entry. So twenty concurrent clicks make one claimer, and
nineteen refusals that write nothing.
"""

from __future__ import annotations

import time

from redis import Redis

from workers.store import keys
from workers.store.people import Change, change_of

_LIB = """
local function has(list, value)
  for _, v in ipairs(list) do if v == value then return true end end
  return false
end
local function load(key)
  local h = redis.call('HGETALL', key)
  if #h == 0 then return nil end
  local q = {}
  for i = 1, #h, 2 do q[h[i]] = h[i + 1] end
  return q
end
local function note(key, now, event, by, iid, q, extra)
  local detail = {interrupt_id = iid, key = q.key, attempt = tonumber(q.attempt)}
  for k, v in pairs(extra) do detail[k] = v end
  redis.call('RPUSH', key, cjson.encode({at = tonumber(now), event = event, by = by, detail = detail}))
end
"""

# KEYS: interrupt, history   ARGV: iid, user, now, waiting_prefix
# Returns {1, '[]'} or {0, why}: 'claimed' (by someone), 'not_allowed', or the question's state.
CLAIM = (
    _LIB
    + """
local q = load(KEYS[1])
if q == nil then return {0, 'unknown'} end
if q.state ~= 'open' then return {0, q.state} end
if (q.claimed_by or '') ~= '' then return {0, 'claimed'} end
local assignees = cjson.decode(q.assignees or '[]')
if #assignees > 0 and not has(assignees, ARGV[2]) then return {0, 'not_allowed'} end
for _, u in ipairs(assignees) do
  if u ~= ARGV[2] then redis.call('ZREM', ARGV[4] .. u, ARGV[1]) end
end
redis.call('ZADD', ARGV[4] .. ARGV[2], q.asked_at, ARGV[1])
redis.call('HSET', KEYS[1], 'claimed_by', ARGV[2], 'claimed_at', ARGV[3], 'claimed_from', q.assignees or '[]',
  'assignees', cjson.encode({ARGV[2]}))
note(KEYS[2], ARGV[3], 'claimed', ARGV[2], ARGV[1], q, {})
return {1, '[]'}
"""
)

# A released question not yet escalated is due its escalation again (a claim had taken it off).
# KEYS: interrupt, history, escalate index   ARGV: iid, user, now, waiting_prefix, admin ('1': another's claim)
RELEASE = (
    _LIB
    + """
local q = load(KEYS[1])
if q == nil then return {0, 'unknown'} end
if q.state ~= 'open' then return {0, q.state} end
local by = q.claimed_by or ''
if by == '' then return {0, 'unclaimed'} end
if by ~= ARGV[2] and ARGV[5] ~= '1' then return {0, 'not_allowed'} end
local before = cjson.decode(q.claimed_from or '[]')
for _, u in ipairs(cjson.decode(q.assignees or '[]')) do
  if not has(before, u) then redis.call('ZREM', ARGV[4] .. u, ARGV[1]) end
end
for _, u in ipairs(before) do redis.call('ZADD', ARGV[4] .. u, q.asked_at, ARGV[1]) end
redis.call('HSET', KEYS[1], 'assignees', q.claimed_from or '[]', 'claimed_by', '', 'claimed_at', '')
if (q.escalate_at or '') ~= '' and (q.escalated_at or '') == '' then
  redis.call('ZADD', KEYS[3], q.escalate_at, ARGV[1])
end
note(KEYS[2], ARGV[3], 'released', ARGV[2], ARGV[1], q, {claimed_by = by})
return {1, cjson.encode({by})}
"""
)


class ClaimStore:
    """The scripts that claim an open question for one person, and release it."""

    def __init__(self, redis: Redis) -> None:
        self._claim = redis.register_script(CLAIM)
        self._release = redis.register_script(RELEASE)

    def claim(self, interrupt_id: str, run_id: str, user: str, now: float | None = None) -> Change:
        """Make `user` the only one who may answer `interrupt_id`, once, first click wins."""
        res = self._claim(
            keys=[keys.interrupt(interrupt_id), keys.history(run_id)],
            args=[interrupt_id, user, repr(time.time() if now is None else now), keys.waiting_index("")],
        )
        return change_of(res)

    def release(self, interrupt_id: str, run_id: str, user: str, *, admin: bool = False) -> Change:
        """Give the question back to everyone asked, by its claimer or an admin."""
        res = self._release(
            keys=[keys.interrupt(interrupt_id), keys.history(run_id), keys.escalate_index()],
            args=[interrupt_id, user, repr(time.time()), keys.waiting_index(""), "1" if admin else "0"],
        )
        return change_of(res)
