"""Lua scripts for questions asked at once: open, park, close a member.

These serve `ask_all`, `ask_any` and `ask_each`. A group is several questions that one run waits
on together. Each member is an ordinary interrupt with its own message, assignees and expiry.
The run record's `interrupt` names the group. Each member closes on its own in one atomic step:
an answer, an expiry, a cancel. One step brings the group to its `need`: every member, the
first, or a quorum. That step also closes the still-open members as `not_needed` and queues the
run. So exactly one closing step resumes the run, however the answers race.

Like `scripts`, every script checks before it writes. A refusal writes nothing. A repeated call
does not change the outcome.
"""

from __future__ import annotations

from workers.store.records import GroupState
from workers.store.scripts import _LIB, _MODES, _REASONS

# The group states as Lua constants (`G_OPEN`, ...).
_GROUP_STATES = "".join(f"local G_{s.name} = '{s.value}'\n" for s in GroupState)

# Open a group: its hash, every member's interrupt (state 'posting'), their journal
# entries and the run's pointer to the group, fenced by the worker's epoch.
# KEYS: run, journal, group   ARGV: epoch, group id, interrupt prefix, group fields json,
# journal fields json (field -> json text), interrupts json (iid -> fields)
OPEN_GROUP = """
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'status') ~= 'running' then
  return -1
end
if redis.call('EXISTS', KEYS[3]) == 0 then
  for k, v in pairs(cjson.decode(ARGV[4])) do redis.call('HSET', KEYS[3], k, v) end
  for iid, fields in pairs(cjson.decode(ARGV[6])) do
    if redis.call('EXISTS', ARGV[3] .. iid) == 0 then
      for k, v in pairs(fields) do redis.call('HSET', ARGV[3] .. iid, k, v) end
    end
  end
end
for k, v in pairs(cjson.decode(ARGV[5])) do redis.call('HSET', KEYS[2], k, v) end
redis.call('HSET', KEYS[1], 'interrupt', ARGV[2])
return 1
"""

# Park a running run on its group: members still being posted open, and every open
# member is indexed for expiry, reminder, escalation and its assignees' "waiting on you".
# KEYS: run, group, leases, expiry, remind, escalate   ARGV: run_id, idx_prefix, epoch, now, group id,
# waiting_prefix, interrupt prefix
PARK_GROUP = (
    _LIB
    + """
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[3] or redis.call('HGET', KEYS[1], 'status') ~= 'running' then
  return -1
end
if redis.call('HGET', KEYS[1], 'interrupt') ~= ARGV[5] then return -2 end
set_status(KEYS[1], ARGV[1], ARGV[2], 'paused', ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[1]); redis.call('HSET', KEYS[1], 'lease_until', 0)
for _, iid in ipairs(cjson.decode(redis.call('HGET', KEYS[2], 'members'))) do
  local k = ARGV[7] .. iid
  local q = redis.call('HMGET', k, 'state', 'expires_at', 'remind_at', 'asked_at', 'assignees', 'escalate_at')
  if q[1] == 'posting' then redis.call('HSET', k, 'state', 'open'); q[1] = 'open' end
  if q[1] == 'open' then
    if q[2] and q[2] ~= '' then redis.call('ZADD', KEYS[4], q[2], iid) end
    if q[3] and q[3] ~= '' then redis.call('ZADD', KEYS[5], q[3], iid) end
    if q[6] and q[6] ~= '' then redis.call('ZADD', KEYS[6], q[6], iid) end
    for _, u in ipairs(cjson.decode(q[5])) do redis.call('ZADD', ARGV[6] .. u, q[4], iid) end
  end
end
return 1
"""
)

# Close one member: an answer, an expiry, or (for the whole group) a cancel. Returns
# {1, done, ...} where done is 1 when this step completed the group and queued the run
# (followed by the ids it closed as not needed), or {0, reason, detail...}. An answer the
# member already accepted (a redelivery, or the same answers from the same person again)
# returns {2} and writes nothing new.
# KEYS: run, interrupt, group, expiry, remind, accepted (not written), history, receipts pending (each
# answered, expired or cancelled member is marked for its signed receipt, `workers.receipts`)
# ARGV: run_id, idx_prefix, waiting_prefix, iid, now, mode ('answer'|'expire'|'cancel'),
#       actor, answers json, token, history json, resume job id, interrupt prefix,
#       counts ('1': an expiry that counts as an answer, its defaults; '0': one that ends the group),
#       the answerer's workspace where not the question's (''), pub/sub channel
# A group that ends (done or cancelled) has its id published on the channel in the same step, so
# a long-poll on a quorum question wakes (`workers.store.closings`).
CLOSE_MEMBER = (
    _LIB
    + _REASONS
    + _MODES
    + _GROUP_STATES
    + """
local function unindex(iid, assignees)
  redis.call('ZREM', KEYS[4], iid); redis.call('ZREM', KEYS[5], iid)
  for _, u in ipairs(cjson.decode(assignees)) do redis.call('ZREM', ARGV[3] .. u, iid) end
end
local h = redis.call('HGETALL', KEYS[2])
if #h == 0 then return {0, R_UNKNOWN} end
local q = {}
for i = 1, #h, 2 do q[h[i]] = h[i + 1] end
if q.state == 'answered' then
  -- The same delivery (its token), or the same person sending the same answers again (told to
  -- resubmit when a replica did not confirm in time), is the acceptance already made: counted,
  -- recorded and queued once, by it. The rewrite of a field to its own value is replicated, so
  -- a WAIT after it covers that acceptance (as in `scripts.CLOSE`).
  if ARGV[6] == M_ANSWER and (q.accept_token == ARGV[9] or (q.answered_by == ARGV[7] and q.answers == ARGV[8])) then
    redis.call('HSET', KEYS[2], 'accept_token', q.accept_token)
    return {2}
  end
  return {0, R_ANSWERED, q.answered_by or '', q.answered_at or ''}
end
if q.state == 'cancelled' then return {0, R_CANCELLED, q.closed_by or ''} end
if q.state == 'expired' then return {0, R_EXPIRED, q.expires_at or ''} end
if q.state == 'not_needed' then return {0, R_NOT_NEEDED} end
local st = redis.call('HGET', KEYS[1], 'status')
local gstate = redis.call('HGET', KEYS[3], 'state')
if q.state ~= 'open' or st ~= 'paused' or redis.call('HGET', KEYS[1], 'interrupt') ~= q.group or gstate ~= G_OPEN then
  return {0, R_NOT_OPEN, st or ''}
end
local now = tonumber(ARGV[5])
local expired = q.expires_at and q.expires_at ~= '' and now >= tonumber(q.expires_at)
local members = cjson.decode(redis.call('HGET', KEYS[3], 'members'))
if ARGV[6] == M_CANCEL then
  for _, iid in ipairs(members) do
    local k = ARGV[12] .. iid
    local m = redis.call('HMGET', k, 'state', 'assignees')
    if m[1] == 'open' or m[1] == 'posting' then
      redis.call('HSET', k, 'state', 'cancelled', 'closed_by', ARGV[7])
      unindex(iid, m[2])
      if KEYS[8] then redis.call('ZADD', KEYS[8], ARGV[5], iid) end
    end
  end
  redis.call('HSET', KEYS[3], 'state', G_CANCELLED)
  set_status(KEYS[1], ARGV[1], ARGV[2], 'cancelled', ARGV[5])
  redis.call('HINCRBY', KEYS[1], 'epoch', 1)
  redis.call('RPUSH', KEYS[7], ARGV[10])
  redis.call('PUBLISH', ARGV[15], q.group)
  return {1, 1}
end
if ARGV[6] == M_ANSWER then
  if expired then return {0, R_EXPIRED, q.expires_at} end
  if not list_has(q.assignees, ARGV[7]) then return {0, R_NOT_ALLOWED, q.assignees} end
  redis.call('HSET', KEYS[2], 'state', 'answered', 'answers', ARGV[8], 'answered_by', ARGV[7],
    'answered_at', ARGV[5], 'accept_token', ARGV[9])
  if ARGV[14] and ARGV[14] ~= '' then redis.call('HSET', KEYS[2], 'answered_team', ARGV[14]) end
  redis.call('HSET', KEYS[1], 'failures', 0)
else
  if not expired then return {0, R_NOT_DUE, q.expires_at or ''} end
  redis.call('HSET', KEYS[2], 'state', 'expired', 'answers', ARGV[8], 'closed_by', ARGV[7], 'counts', ARGV[13])
end
unindex(ARGV[4], q.assignees)
redis.call('RPUSH', KEYS[7], ARGV[10])
if KEYS[8] then redis.call('ZADD', KEYS[8], ARGV[5], ARGV[4]) end
local counted = 0
for _, iid in ipairs(members) do
  local m = redis.call('HMGET', ARGV[12] .. iid, 'state', 'counts')
  if m[1] == 'answered' or (m[1] == 'expired' and m[2] == '1') then counted = counted + 1 end
end
local ends = ARGV[6] == M_EXPIRE and ARGV[13] == '0'
if not ends and counted < tonumber(redis.call('HGET', KEYS[3], 'need')) then return {1, 0} end
local dropped = {}
for _, iid in ipairs(members) do
  local k = ARGV[12] .. iid
  local m = redis.call('HMGET', k, 'state', 'assignees', 'key', 'attempt')
  if m[1] == 'open' or m[1] == 'posting' then
    redis.call('HSET', k, 'state', 'not_needed', 'closed_by', 'parley')
    unindex(iid, m[2])
    redis.call('RPUSH', KEYS[7], cjson.encode({at = now, event = 'no longer needed', by = 'parley',
      detail = {interrupt_id = iid, key = m[3], attempt = tonumber(m[4])}}))
    dropped[#dropped + 1] = iid
  end
end
redis.call('HSET', KEYS[3], 'state', G_DONE, 'done_at', ARGV[5])
set_status(KEYS[1], ARGV[1], ARGV[2], 'queued', ARGV[5])
redis.call('HSET', KEYS[1], 'job', ARGV[11])
redis.call('PUBLISH', ARGV[15], q.group)
return {1, 1, unpack(dropped)}
"""
)
