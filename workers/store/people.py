"""Who may answer an open question, as it changes: groups, escalation, reassignment, notices.

An interrupt's `assignees` field always holds who may answer it now. Acceptance (the `CLOSE`
script) checks the answerer against it and nothing else. This module changes that field, one
atomic script per change. Each writes its waiting-index entries in the same step. Escalation and
reassignment also write their history entry then:

- `resolve`: before posting (state `posting` only), the host records who may answer. That is the
  members of user groups among the assignees, and the people escalation will add.
- `escalate`: the sweep adds the escalation people once `escalate_at` has passed. Not if someone
  claimed the question (`workers.store.claims`), since a claim counts as taking it up.
- `reassign`: an assignee hands their place to another person. Or an admin hands the whole
  question over, and a claim moves with it.
- `first_notice`: whether a person is told of a question for the first time, to dedupe DMs.

Everything works per interrupt. So it applies to each question of a run, however many are open.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from redis import Redis

from workers.store import keys
from workers.store.replies import as_text, reply

_LIB = """
local function has(list, value)
  for _, v in ipairs(list) do if v == value then return true end end
  return false
end
"""

# KEYS: interrupt   ARGV: assignees json, groups json, escalate_to json ('' keeps it)
RESOLVE = """
if redis.call('HGET', KEYS[1], 'state') ~= 'posting' then return 0 end
redis.call('HSET', KEYS[1], 'assignees', ARGV[1], 'groups', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'escalate_to', ARGV[3]) end
return 1
"""

# Add the escalation people to an open question whose `escalate_at` has passed.
# A question still being posted stays due (it is parked in a moment); one that is closed,
# gone or already escalated leaves the due set. Returns {1, added json} or {0, why}.
# KEYS: interrupt, escalate index, history   ARGV: iid, now, waiting_prefix, who json ('': `escalate_to`)
ESCALATE = (
    _LIB
    + """
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then redis.call('ZREM', KEYS[2], ARGV[1]); return {0, 'unknown'} end
local q = {}
for i = 1, #h, 2 do q[h[i]] = h[i + 1] end
if q.state == 'posting' then return {0, 'posting'} end
if q.state ~= 'open' or (q.escalated_at or '') ~= '' or (q.escalate_at or '') == '' or (q.claimed_by or '') ~= '' then
  redis.call('ZREM', KEYS[2], ARGV[1]); return {0, q.state}
end
if tonumber(ARGV[2]) < tonumber(q.escalate_at) then return {0, 'not_due'} end
local assignees = cjson.decode(q.assignees)
local to = cjson.decode((ARGV[4] and ARGV[4] ~= '') and ARGV[4] or (q.escalate_to or '[]'))
local added = {}
for _, u in ipairs(to) do
  if not has(assignees, u) then
    assignees[#assignees + 1] = u; added[#added + 1] = u
    redis.call('ZADD', ARGV[3] .. u, q.asked_at, ARGV[1])
  end
end
local encoded = #added > 0 and cjson.encode(added) or '[]'
redis.call('HSET', KEYS[1], 'assignees', cjson.encode(assignees), 'escalated_at', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
local entry = cjson.encode({at = tonumber(ARGV[2]), event = 'escalated', by = 'parley', detail = {
  interrupt_id = ARGV[1], key = q.key, attempt = tonumber(q.attempt), to = to}})
redis.call('RPUSH', KEYS[3], entry)
return {1, encoded}
"""
)

# Hand an open question to `to`: by an assignee, their own place (`whole` '0'); by an admin,
# every assignee's (`whole` '1'). Returns {1, removed json} or {0, why}; a refusal writes nothing.
# KEYS: interrupt, history   ARGV: iid, by, to, whole, now, waiting_prefix
REASSIGN = (
    _LIB
    + """
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return {0, 'unknown'} end
local q = {}
for i = 1, #h, 2 do q[h[i]] = h[i + 1] end
if q.state ~= 'open' then return {0, q.state} end
if ARGV[2] == ARGV[3] then return {0, 'self'} end
local assignees = cjson.decode(q.assignees)
if has(assignees, ARGV[3]) then return {0, 'already'} end
local removed, kept = {}, {}
for _, u in ipairs(assignees) do
  if ARGV[4] == '1' or u == ARGV[2] then removed[#removed + 1] = u else kept[#kept + 1] = u end
end
if #removed == 0 then return {0, 'not_allowed'} end
kept[#kept + 1] = ARGV[3]
for _, u in ipairs(removed) do redis.call('ZREM', ARGV[6] .. u, ARGV[1]) end
redis.call('ZADD', ARGV[6] .. ARGV[3], q.asked_at, ARGV[1])
local handoffs = cjson.decode(q.handoffs or '[]')
handoffs[#handoffs + 1] = {by = ARGV[2], from = removed, to = ARGV[3], at = tonumber(ARGV[5])}
redis.call('HSET', KEYS[1], 'assignees', cjson.encode(kept), 'handoffs', cjson.encode(handoffs))
if (q.claimed_by or '') ~= '' and has(removed, q.claimed_by) then
  -- the claim moves to `to`, and so does the place a release gives back: those removed, to `to`
  local before = {}
  for _, u in ipairs(cjson.decode(q.claimed_from or '[]')) do
    if not has(removed, u) and u ~= ARGV[3] then before[#before + 1] = u end
  end
  before[#before + 1] = ARGV[3]
  redis.call('HSET', KEYS[1], 'claimed_by', ARGV[3], 'claimed_from', cjson.encode(before))
end
local entry = cjson.encode({at = tonumber(ARGV[5]), event = 'reassigned', by = ARGV[2], detail = {
  interrupt_id = ARGV[1], key = q.key, attempt = tonumber(q.attempt), from = removed, to = ARGV[3]}})
redis.call('RPUSH', KEYS[2], entry)
return {1, cjson.encode(removed)}
"""
)

# KEYS: interrupt   ARGV: user
FIRST_NOTICE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'notified:' .. ARGV[1], '1')
"""


@dataclass(frozen=True)
class Change:
    """An escalation's or reassignment's outcome: who was added or removed, or why not."""

    done: bool
    reason: str = ""
    people: tuple[str, ...] = ()


class PeopleStore:
    """The scripts that change who may answer an open question."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._resolve = redis.register_script(RESOLVE)
        self._escalate = redis.register_script(ESCALATE)
        self._reassign = redis.register_script(REASSIGN)
        self._notice = redis.register_script(FIRST_NOTICE)

    def resolve(
        self, interrupt_id: str, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None
    ) -> bool:
        """Record who may answer, groups resolved, only before the question opens."""
        args = [json.dumps(assignees), json.dumps(groups), json.dumps(escalate_to) if escalate_to is not None else ""]
        return bool(self._resolve(keys=[keys.interrupt(interrupt_id)], args=args))

    def due_escalations(self, now: float, limit: int = 100) -> list[str]:
        """Questions whose escalation time has passed.

        Some may have closed since, which `escalate` tells.
        """
        found = reply(self.redis.zrangebyscore(keys.escalate_index(), "-inf", now, start=0, num=limit))
        return [x.decode() if isinstance(x, bytes) else str(x) for x in found]

    def escalate(
        self, interrupt_id: str, run_id: str, now: float | None = None, who: list[str] | None = None
    ) -> Change:
        """Add the escalation people to `interrupt_id` once, if open and due.

        `who` replaces its `escalate_to`: the same people, each away one by their delegate.
        """
        now = time.time() if now is None else now
        res = self._escalate(
            keys=[keys.interrupt(interrupt_id), keys.escalate_index(), keys.history(run_id)],
            args=[interrupt_id, repr(now), keys.waiting_index(""), json.dumps(who) if who else ""],
        )
        return change_of(res)

    def reassign(self, interrupt_id: str, run_id: str, by: str, to: str, *, whole: bool) -> Change:
        """Hand `by`'s place (or, `whole`, everyone's) on open question `interrupt_id` to `to`."""
        res = self._reassign(
            keys=[keys.interrupt(interrupt_id), keys.history(run_id)],
            args=[interrupt_id, by, to, "1" if whole else "0", repr(time.time()), keys.waiting_index("")],
        )
        return change_of(res)

    def first_notice(self, interrupt_id: str, user: str) -> bool:
        """True the first time `user` is to be told of `interrupt_id`.

        That makes one DM per person per question.
        """
        return bool(self._notice(keys=[keys.interrupt(interrupt_id)], args=[user]))


def change_of(res: list[object]) -> Change:
    """A script's `{1, people json}` or `{0, why}` as a `Change`."""
    if int(str(res[0])) == 1:
        return Change(True, people=tuple(json.loads(as_text(res[1]))))
    return Change(False, reason=as_text(res[1]))
