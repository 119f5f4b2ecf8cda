"""Receipts through a Redis failover: hand out only what replicas hold, notice a chain gone back.

Redis replicates asynchronously. A close and its receipt's pending mark are one atomic
write, acked only once enough replicas hold it (`PARLEY_REDIS_MIN_REPLICAS`). The receipt
is signed later, so a failover can lose it and keep its mark. The sweep then writes it again.
So a receipt leaves Parley only once the replicas confirm it (`confirmed`). Nobody then holds
a copy that a failover could lose. A process that wrote or gave out a receipt later lost
notices it (`ChainHeads`) when it next writes to that chain, and reports it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis import Redis
from redis.client import Pipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from workers.exceptions import ParleyError
from workers.store import keys
from workers.store.replication import Replication

# KEYS: receipts; ARGV: the digest each must have. A receipt found as expected has its digest
# rewritten to itself: a replicated write, so the WAIT after it covers the receipt.
TOUCH = """
local n = 0
for i, key in ipairs(KEYS) do
  if redis.call('HGET', key, 'digest') == ARGV[i] then
    redis.call('HSET', key, 'digest', ARGV[i])
    n = n + 1
  end
end
return n
"""

# What a receipt's writer decides on, read in one round trip on its watched connection, so that
# it never reads from one server and writes to another across a failover.
# KEYS: receipt, chain head, run, question, receipts pending, the receipt last seen at the head
# ARGV: the question's id, the question id of the receipt last seen at the head
READ = """
return {
  redis.call('EXISTS', KEYS[1]),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[3]),
  redis.call('HGETALL', KEYS[4]),
  redis.call('ZSCORE', KEYS[5], ARGV[1]) or '',
  redis.call('HGET', KEYS[6], 'digest') or '',
  redis.call('ZSCORE', KEYS[5], ARGV[2]) or '',
}
"""

READ_SHA = hashlib.sha1(READ.encode()).hexdigest()
REWINDS_KEPT = 100  # notes of chains gone back, newest kept


def read_watched(pipe: Pipeline, read_keys: list[str], args: list[str]) -> list[Any]:
    """`READ` run on a pipeline's watched connection, by its SHA once the server has it."""
    try:
        return cast(list[Any], pipe.evalsha(READ_SHA, len(read_keys), *read_keys, *args))
    except NoScriptError:  # a server that never ran it: a new master after a failover, say
        return cast(list[Any], pipe.eval(READ, len(read_keys), *read_keys, *args))


class ReceiptUnconfirmed(ParleyError):
    """Fewer replicas than asked for hold the receipt yet, so it is not handed out."""


def confirmed(redis: Redis, replication: Replication, touch: Script, held: Sequence[tuple[str, str]]) -> bool:
    """Whether each (question id, digest) receipt is stored as such, and on enough replicas.

    Always true without `min_replicas`: then nothing waits, as for closes.
    """
    if not held or not replication.min_replicas:
        return True
    touched, replicas = replication.run_and_wait(
        redis, touch, [keys.receipt(iid) for iid, _ in held], [digest for _, digest in held]
    )
    return int(touched) == len(held) and replicas >= replication.min_replicas


@dataclass(frozen=True)
class Place:
    """One receipt's place in its workspace's chain, as this process last wrote or gave it out."""

    workspace: str
    sequence: int
    interrupt_id: str
    digest: str


class ChainHeads:
    """The furthest receipt of each workspace's chain this process wrote or handed out."""

    def __init__(self) -> None:
        self._places: dict[str, Place] = {}
        self._lock = threading.Lock()

    def saw(self, place: Place) -> None:
        with self._lock:
            known = self._places.get(place.workspace)
            if known is None or place.sequence >= known.sequence:
                self._places[place.workspace] = place

    def last(self, workspace: str) -> Place | None:
        with self._lock:
            return self._places.get(workspace)

    def forget(self, workspace: str) -> None:
        """After a loss was reported: the chain now read is the one to follow."""
        with self._lock:
            self._places.pop(workspace, None)


def lost_place(seen: Place | None, digest_now: str, head_sequence: int, pending_again: bool) -> Place | None:
    """`seen` when Redis no longer holds that receipt as it was: its place holds another, or it is
    gone while the chain is behind it or its question waits for a receipt again. A receipt gone
    with retention (its chain past it, no mark) is not a loss."""
    if seen is None or digest_now == seen.digest:
        return None
    if digest_now or head_sequence < seen.sequence or pending_again:
        return seen
    return None


def rewind_note(lost: Place, head_sequence: int, now: float | None = None) -> str:
    """The note kept when a chain is found behind a receipt this process wrote or gave out."""
    return json.dumps(
        {
            "workspace": lost.workspace,
            "lost_sequence": lost.sequence,
            "lost_question": lost.interrupt_id,
            "lost_digest": lost.digest,
            "head_sequence": head_sequence,
            "at": time.time() if now is None else now,
        },
        separators=(",", ":"),
    )


def rewind_line(note: dict[str, Any]) -> str:
    """One plain line about a chain that went back, for `parley audit export`'s stderr."""
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(note.get("at", 0))))
    return (
        f"workspace {note.get('workspace') or '-'}: at {at} its chain was found at #{note.get('head_sequence')}, "
        f"behind receipt #{note.get('lost_sequence')} (question {note.get('lost_question')}, "
        f"sha256:{note.get('lost_digest')}), which Redis lost; the lost receipts were written again "
        "from their questions' marks, and a copy of one given out before may not match this log"
    )
