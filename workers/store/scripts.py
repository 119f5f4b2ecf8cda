"""Lua scripts: each run transition is one atomic step on the Redis server.

Why Lua rather than WATCH/MULTI? A transition reads several fields, checks them and writes many
keys. A script does that in one round trip with no retry loop. That keeps the Slack ack path
short. Every script is idempotent. redis-py may re-send a command after a dropped connection. A
repeated call must not change the outcome.

Key names arrive in KEYS. Per-status and per-user indexes come as prefixes in ARGV, built by
`workers.store.keys`.
"""

from __future__ import annotations

from workers.store import keys
from workers.store.records import FINAL_STATUSES, CloseMode, RefusalReason

# The refusal reasons as Lua constants, so a script's replies are `RefusalReason` values.
_REASONS = "".join(f"local R_{r.name} = '{r.value}'\n" for r in RefusalReason)
# The close modes as Lua constants (`M_ANSWER`, ...), for the closing scripts' `mode` argument.
_MODES = "".join(f"local M_{m.name} = '{m.value}'\n" for m in CloseMode)
# The statuses a run ends in, as a Lua set: a run that reaches one loses its sealed secrets.
_FINAL = "local FINAL = {" + ", ".join(f"['{s.value}'] = true" for s in sorted(FINAL_STATUSES)) + "}\n"

# Shared helpers, prepended to every script.
_LIB = """
local function set_status(run_key, run_id, idx_prefix, new, now)
  local old = redis.call('HGET', run_key, 'status')
  if old and old ~= new then redis.call('ZREM', idx_prefix .. old, run_id) end
  redis.call('HSET', run_key, 'status', new, 'updated_at', now)
  redis.call('ZADD', idx_prefix .. new, now, run_id)
end
-- The same move for a caller that has read the old status, with the run's other field/value
-- pairs (a flat list) written in the same HSET: each Redis call counts, on the hot paths.
local function move_status(run_key, run_id, idx_prefix, old, new, now, fields)
  if old and old ~= new then redis.call('ZREM', idx_prefix .. old, run_id) end
  redis.call('HSET', run_key, 'status', new, 'updated_at', now, unpack(fields))
  redis.call('ZADD', idx_prefix .. new, now, run_id)
end
local function list_has(json_list, value)
  for _, v in ipairs(cjson.decode(json_list)) do if v == value then return true end end
  return false
end
"""

# Move a run between statuses when it is in one of the allowed ones (and, for a
# worker's write, when its epoch still matches), with its history entry in the same
# step: a reader never sees a run ended without the entry that says how. A run that
# ends, however it ends, loses its sealed secret answers in the same step.
# KEYS: run, leases, accepted (no longer written: `keys.accepted_index`), history, secrets, journal
# ARGV: run_id, idx_prefix, allowed
# (space separated), epoch or '', new status, now, lease ('keep'|'clear'|<until>), bump_epoch
# ('0'|'1'), failures delta, history entry json or '', journal entries (a JSON object of field
# to JSON text, or ''), then from ARGV[PAIRS] field/value pairs for the run. The journal
# entries let the write that ends a run also record the "done" of the effect just before it.
_TRANSITION_READ = """
local cur = redis.call('HMGET', KEYS[1], 'status', 'epoch')
local st, epoch = cur[1], cur[2]
"""
_TRANSITION_BODY = """
if not st then return {0, 'missing', ''} end
if ARGV[4] ~= '' and epoch ~= ARGV[4] then return {0, 'stale', st} end
local ok = false
for s in string.gmatch(ARGV[3], '%S+') do if s == st then ok = true end end
if not ok then return {0, 'status', st} end
local fields = {}
for i = PAIRS, #ARGV, 2 do fields[#fields + 1] = ARGV[i]; fields[#fields + 1] = ARGV[i + 1] end
if ARGV[7] == 'clear' then
  redis.call('ZREM', KEYS[2], ARGV[1]); fields[#fields + 1] = 'lease_until'; fields[#fields + 1] = 0
elseif ARGV[7] ~= 'keep' then
  redis.call('ZADD', KEYS[2], ARGV[7], ARGV[1]); fields[#fields + 1] = 'lease_until'; fields[#fields + 1] = ARGV[7]
end
if ARGV[8] == '1' then  -- the epoch as HINCRBY would leave it, written with the status
  epoch = string.format('%d', (tonumber(epoch) or 0) + 1); fields[#fields + 1] = 'epoch'; fields[#fields + 1] = epoch
end
move_status(KEYS[1], ARGV[1], ARGV[2], st, ARGV[5], ARGV[6], fields)
if ARGV[9] ~= '0' then redis.call('HINCRBY', KEYS[1], 'failures', tonumber(ARGV[9])) end
if ARGV[11] ~= '' then
  local entries = {}
  for f, v in pairs(cjson.decode(ARGV[11])) do entries[#entries + 1] = f; entries[#entries + 1] = v end
  if #entries > 0 then redis.call('HSET', KEYS[6], unpack(entries)) end
end
if ARGV[10] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[10]) end
"""
TRANSITION = _LIB + _FINAL + "local PAIRS = 12\n" + _TRANSITION_READ + _TRANSITION_BODY
TRANSITION += "if FINAL[ARGV[5]] then redis.call('DEL', KEYS[5]) end\n"
TRANSITION += "return {1, epoch, st}\n"

# A worker's claim: TRANSITION to running with a new epoch, then the run, its journal and
# the question it was parked on as they stand after it, so an execution starts in one round trip.
# The run is read whole once, before the move, and returned with the move's writes applied;
# a run never claimed (epoch 0) has an empty journal, which is not read.
# KEYS: run, leases, accepted, history, journal (TRANSITION's first four; it never ends a
# run, so it has no secrets to delete)   ARGV: as TRANSITION up to ARGV[11] (always ''),
# then the interrupt key prefix; no field/value pairs.
CLAIM = (
    _LIB
    + "local PAIRS = #ARGV + 1\n"
    + """
local run = {}
local read = redis.call('HGETALL', KEYS[1])
for i = 1, #read, 2 do run[read[i]] = read[i + 1] end
local st, epoch = run.status, run.epoch
local never_claimed = epoch == '0'  -- no execution has journaled in it yet
"""
    + _TRANSITION_BODY
    + """
for i = 1, #fields, 2 do run[fields[i]] = tostring(fields[i + 1]) end
run.status, run.updated_at = ARGV[5], ARGV[6]
if ARGV[9] ~= '0' then run.failures = string.format('%d', (tonumber(run.failures) or 0) + tonumber(ARGV[9])) end
local flat = {}
for f, v in pairs(run) do flat[#flat + 1] = f; flat[#flat + 1] = v end
local q = {}
if run.interrupt and run.interrupt ~= '' then q = redis.call('HGETALL', ARGV[12] .. run.interrupt) end
local journal = {}
if not never_claimed then journal = redis.call('HGETALL', KEYS[5]) end
return {1, epoch, st, flat, journal, q}
"""
)

# A worker's journal write, fenced by its epoch: a stale worker cannot record. A
# recorded step is progress, so the run's count of failures without progress restarts.
# A history entry, when given, is appended only when the value is written. Entries the
# execution left to go with its next write (a repeatable effect's "done") follow as pairs.
# KEYS: run, journal, history   ARGV: epoch, field, value, only_if_absent ('1'|'0'), history json or '',
# the step prefix (`journal_names.STEP`), then field/value pairs
JOURNAL = """
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'status')
if cur[1] ~= ARGV[1] or cur[2] ~= 'running' then
  return -1
end
local pairs_ = {}
for i = 7, #ARGV do pairs_[#pairs_ + 1] = ARGV[i] end
if string.sub(ARGV[2], 1, #ARGV[6]) == ARGV[6] then redis.call('HSET', KEYS[1], 'failures', 0) end
local written = 1
if ARGV[4] == '1' then
  if #pairs_ > 0 then redis.call('HSET', KEYS[2], unpack(pairs_)) end
  written = redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3])
else
  pairs_[#pairs_ + 1] = ARGV[2]; pairs_[#pairs_ + 1] = ARGV[3]
  redis.call('HSET', KEYS[2], unpack(pairs_))
end
if written == 1 and ARGV[5] and ARGV[5] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[5]) end
return written
"""

# Record the intent to ask: the interrupt exists (state 'posting') before anything is
# posted, so a worker that dies mid-post re-uses the same interrupt on replay.
# KEYS: run, journal, interrupt   ARGV: epoch, journal field, attempts json, iid, then
# interrupt field/value pairs.
OPEN_INTERRUPT = """
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'status')
if cur[1] ~= ARGV[1] or cur[2] ~= 'running' then
  return -1
end
if #ARGV >= 5 and redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('HSET', KEYS[3], unpack(ARGV, 5))
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[1], 'interrupt', ARGV[4])
return 1
"""

# Record the thread a host started for a run: its conversation (whole or in pieces, the
# stale fields of the old one deleted) and the thread's key naming the run, in one step.
# KEYS: run, thread   ARGV: run_id, how many stale fields, the stale fields, then field/value pairs
THREAD = """
local n = tonumber(ARGV[2])
if n > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 3, 2 + n)) end
redis.call('HSET', KEYS[1], unpack(ARGV, 3 + n))
redis.call('SET', KEYS[2], ARGV[1])
return 1
"""

# Park a running run on its open question and free the worker.
# KEYS: run, interrupt, leases, expiry, remind, escalate   ARGV: run_id, idx_prefix, epoch, now,
# iid, waiting_prefix, message json, the digest of its blocks (`interrupt_records.message_fields`)
PARK = (
    _LIB
    + """
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'status', 'interrupt')
if cur[1] ~= ARGV[3] or cur[2] ~= 'running' then
  return -1
end
if cur[3] ~= ARGV[5] then return -2 end
move_status(KEYS[1], ARGV[1], ARGV[2], cur[2], 'paused', ARGV[4], {'lease_until', 0})
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[2], 'state', 'open', 'message', ARGV[7], 'blocks_digest', ARGV[8])
local q = redis.call('HMGET', KEYS[2], 'expires_at', 'remind_at', 'escalate_at', 'asked_at', 'assignees')
local exp, rem, esc, asked = q[1], q[2], q[3], q[4]
if exp and exp ~= '' then redis.call('ZADD', KEYS[4], exp, ARGV[5]) end
if rem and rem ~= '' then redis.call('ZADD', KEYS[5], rem, ARGV[5]) end
if esc and esc ~= '' then redis.call('ZADD', KEYS[6], esc, ARGV[5]) end
for _, u in ipairs(cjson.decode(q[5])) do
  redis.call('ZADD', ARGV[6] .. u, asked, ARGV[5])
end
return 1
"""
)


DECLINE_TOKEN = "decline"
"""The token a cancel passes when the person asked closes the question unanswered (`workers.runtime.decline`)."""


# Close an open question and queue its run: an accepted answer, an expiry, or a
# cancel. Returns {1} or {0, reason, detail...}; a refusal writes nothing.
# An answer's secret values arrive sealed and are kept only when it is accepted; a
# cancel ends the run and deletes them.
def close_argv(
    interrupt_id: str, run_id: str, now: float, mode: str, actor: str, answers: str, token: str, entry: str, resume: str
) -> list[str]:
    """The ARGV both closing scripts begin with, in order.

    The scripts are `CLOSE` and `group_scripts.CLOSE_MEMBER`. The order is: run_id, idx_prefix,
    waiting_prefix, iid, now, mode, actor, answers json, token, history json, resume job id.
    """
    return [
        run_id,
        keys.status_index(""),
        keys.waiting_index(""),
        interrupt_id,
        repr(now),
        mode,
        actor,
        answers,
        token,
        entry,
        resume,
    ]


# KEYS: run, interrupt, expiry, remind, accepted (not written), leases, history, secrets, receipts pending
# ARGV: run_id, idx_prefix, waiting_prefix, iid, now, mode ('answer'|'expire'|'cancel'),
#       actor, answers json (secrets masked), token, history json, job id of the resume,
#       sealed secret values or '', pub/sub channel, the answerer's workspace where not the question's ('')
# The closed question's id is published on the channel, in the same step, to wake its waiters,
# and marked for its signed receipt (`workers.receipts`), which a worker writes from that mark.
CLOSE = (
    _LIB
    + _REASONS
    + _MODES
    + f"local DECLINED = '{DECLINE_TOKEN}'\n"
    + """
local h = redis.call('HGETALL', KEYS[2])
if #h == 0 then return {0, R_UNKNOWN} end
local q = {}
for i = 1, #h, 2 do q[h[i]] = h[i + 1] end
if q.state == 'answered' then
  -- The same delivery (its token), or the same person sending the same answers again (told to
  -- resubmit when a replica did not confirm in time), is the acceptance already made. The
  -- rewrite of a field to its own value is replicated, so a WAIT after it covers that acceptance.
  -- Answers holding a secret (sealed values given) compare masked, equal whatever the secret:
  -- only the same token proves them the same, and any other is refused as already answered.
  local same = q.answered_by == ARGV[7] and q.answers == ARGV[8] and (ARGV[12] or '') == ''
  if ARGV[6] == M_ANSWER and (q.accept_token == ARGV[9] or same) then
    redis.call('HSET', KEYS[2], 'accept_token', q.accept_token)
    return {2}
  end
  return {0, R_ANSWERED, q.answered_by or '', q.answered_at or ''}
end
if q.state == 'cancelled' then return {0, R_CANCELLED, q.closed_by or ''} end
if q.state == 'expired' then return {0, R_EXPIRED, q.expires_at or ''} end
local cur = redis.call('HMGET', KEYS[1], 'status', 'interrupt')
local st = cur[1]
if q.state ~= 'open' or st ~= 'paused' or cur[2] ~= ARGV[4] then
  return {0, R_NOT_OPEN, st or ''}
end
local run_fields = {}
local now = tonumber(ARGV[5])
local expired = q.expires_at and q.expires_at ~= '' and now >= tonumber(q.expires_at)
if ARGV[6] == M_ANSWER then
  if expired then return {0, R_EXPIRED, q.expires_at} end
  -- no assignees ('[]', an API question to a channel): anyone who can reach the question answers
  if q.assignees ~= '[]' and not list_has(q.assignees, ARGV[7]) then return {0, R_NOT_ALLOWED, q.assignees} end
  redis.call('HSET', KEYS[2], 'state', 'answered', 'answers', ARGV[8], 'answered_by', ARGV[7],
    'answered_at', ARGV[5], 'accept_token', ARGV[9])
  if ARGV[14] and ARGV[14] ~= '' then redis.call('HSET', KEYS[2], 'answered_team', ARGV[14]) end
  if ARGV[12] and ARGV[12] ~= '' then redis.call('HSET', KEYS[8], ARGV[4], ARGV[12]) end
  run_fields = {'failures', 0}  -- an answer is progress: failures count afresh
elseif ARGV[6] == M_EXPIRE then
  if not expired then return {0, R_NOT_DUE, q.expires_at or ''} end
  redis.call('HSET', KEYS[2], 'state', 'expired', 'answers', ARGV[8], 'closed_by', ARGV[7])
else
  redis.call('HSET', KEYS[2], 'state', 'cancelled', 'closed_by', ARGV[7])
  if ARGV[9] == DECLINED then redis.call('HSET', KEYS[2], 'declined', '1') end  -- said by its receipt
end
-- PARK indexes a question by its expiry and reminder only when it has them; neither changes later.
if (q.expires_at or '') ~= '' then redis.call('ZREM', KEYS[3], ARGV[4]) end
if (q.remind_at or '') ~= '' then redis.call('ZREM', KEYS[4], ARGV[4]) end
for _, u in ipairs(cjson.decode(q.assignees)) do redis.call('ZREM', ARGV[3] .. u, ARGV[4]) end
if ARGV[6] == M_CANCEL then
  move_status(KEYS[1], ARGV[1], ARGV[2], st, 'cancelled', ARGV[5], run_fields)
  redis.call('HINCRBY', KEYS[1], 'epoch', 1)
  redis.call('DEL', KEYS[8])
else
  run_fields[#run_fields + 1] = 'job'; run_fields[#run_fields + 1] = ARGV[11]
  move_status(KEYS[1], ARGV[1], ARGV[2], st, 'queued', ARGV[5], run_fields)
end
redis.call('RPUSH', KEYS[7], ARGV[10])
redis.call('PUBLISH', ARGV[13], ARGV[4])
if KEYS[9] then redis.call('ZADD', KEYS[9], ARGV[5], ARGV[4]) end
return {1}
"""
)

# Delete a finished run and everything it owns, if it is still finished and was last
# updated at or before the cutoff: its questions (every attempt the journal lists, the
# current one, and any its history names, such as an expired attempt an admin's retry
# dropped from the journal), their index entries, the thread key, the run's index
# entries, journal, history and record. Everything is read and checked before the first
# write, so a refusal or a malformed value writes nothing. A run that is already gone
# leaves only stray index entries, which are removed ({2}); running it again is harmless.
# What Slack's agent surfaces keep of the run (session status, plan) and its questions'
# marks awaiting a receipt go in the same step.
# Returns {1, epoch, job, interrupt ids...}, {2}, or {0, reason, status}.
# KEYS: run, journal, history, runs index, leases, expiry, remind, accepted, secrets,
#       session status, plan, receipts pending, [thread]
# ARGV: run_id, cutoff, final statuses, every status (both space separated), idx_prefix,
#       waiting_prefix, interrupt_prefix, the conversation json the caller read, group_prefix,
#       the ask prefix of journal fields (`journal_names.ASK`)
PURGE = """
local function unindex()
  for s in string.gmatch(ARGV[4], '%S+') do redis.call('ZREM', ARGV[5] .. s, ARGV[1]) end
  redis.call('ZREM', KEYS[4], ARGV[1]); redis.call('ZREM', KEYS[5], ARGV[1]); redis.call('ZREM', KEYS[8], ARGV[1])
end
local run = redis.call('HMGET', KEYS[1], 'status', 'updated_at', 'conversation', 'interrupt', 'epoch', 'job')
local st = run[1]
if not st then
  unindex()
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[9], KEYS[10], KEYS[11])
  return {2}
end
local final = false
for s in string.gmatch(ARGV[3], '%S+') do if s == st then final = true end end
if not final then return {0, 'status', st} end
if tonumber(run[2]) > tonumber(ARGV[2]) then return {0, 'recent', st} end
local conv = run[3]
if not conv then  -- written in pieces (`workers.store.pieces`)
  local parts = {}
  while true do
    local part = redis.call('HGET', KEYS[1], 'conversation#' .. #parts)
    if not part then break end
    parts[#parts + 1] = part
  end
  conv = table.concat(parts)
end
if conv ~= ARGV[8] then return {0, 'changed', st} end
local seen, iids = {}, {}
local function add(iid)
  if iid and iid ~= '' and not seen[iid] then seen[iid] = true; iids[#iids + 1] = iid end
end
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if string.sub(f, 1, #ARGV[10]) == ARGV[10] then
    for _, iid in ipairs(cjson.decode(redis.call('HGET', KEYS[2], f))) do add(iid) end
  end
end
add(run[4])
for _, e in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  for iid in string.gmatch(e, '"interrupt_id":"([^"]+)"') do add(iid) end
end
local groups, named = {}, {}
for i = 1, #iids do named[i] = iids[i] end  -- a copy by hand: unpack fails past about 8,000 values
for _, gid in ipairs(named) do  -- questions asked at once: an ask_each attempt names its group
  local g = redis.call('HMGET', ARGV[9] .. gid, 'run_id', 'members')
  if g[1] == ARGV[1] then
    groups[gid] = true
    for _, iid in ipairs(cjson.decode(g[2] or '[]')) do add(iid) end
  end
end
local owned = {}
for _, iid in ipairs(iids) do
  local q = redis.call('HMGET', ARGV[7] .. iid, 'run_id', 'assignees')
  if q[1] == ARGV[1] then owned[#owned + 1] = {iid, cjson.decode(q[2] or '[]')} end
end
for gid, _ in pairs(groups) do redis.call('DEL', ARGV[9] .. gid) end
for _, o in ipairs(owned) do
  for _, u in ipairs(o[2]) do redis.call('ZREM', ARGV[6] .. u, o[1]) end
  redis.call('ZREM', KEYS[6], o[1]); redis.call('ZREM', KEYS[7], o[1])
  local gid = redis.call('HGET', ARGV[7] .. o[1], 'group')
  if gid then redis.call('DEL', ARGV[9] .. gid) end
  redis.call('DEL', ARGV[7] .. o[1])
end
for _, iid in ipairs(iids) do redis.call('ZREM', KEYS[12], iid) end
if KEYS[13] and redis.call('GET', KEYS[13]) == ARGV[1] then redis.call('DEL', KEYS[13]) end
unindex()
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[9], KEYS[10], KEYS[11])
return {1, run[5] or '0', run[6] or '', #iids > 0 and cjson.encode(iids) or '[]'}
"""

# Stop the sweep watching a run for a missing job: out of the queued index, unless it is
# queued again by now (the sweep read it before).   KEYS: run, queued index   ARGV: run_id
UNWATCH_QUEUED = """
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 1
"""
