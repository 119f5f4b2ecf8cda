"""Retention in Redis: which finished runs are past their keeping time, and deleting one whole.

A finished run (succeeded, failed, cancelled, expired) keeps its record, journal,
history, questions, thread key and index entries until this removes them; Redis runs
with `noeviction`, so without it Redis would fill up and refuse writes. Live runs
(queued, running, paused) are never deleted: the `PURGE` script re-checks that the run
is still finished and old enough in the same atomic step that deletes it, so a run an
admin retried in the meantime keeps its journal. `RunStore.retention` is the one
instance a process uses; the RQ job records a purged run leaves are deleted by
`workers.runtime.retention`, which asks `Purged.job_ids` for their ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from redis import Redis

from workers.store import job_ids, journal_names, keys, scripts
from workers.store.pieces import read_field
from workers.store.records import FINAL_STATUSES, RunStatus

_FINAL = sorted(s.value for s in FINAL_STATUSES)
_CONVERSATION_CHANGED = "changed"


@dataclass(frozen=True)
class Purged:
    """What a purged run was: enough to find the RQ job records it may have left."""

    run_id: str
    epoch: int
    job: str
    interrupts: tuple[str, ...]

    def job_ids(self) -> list[str]:
        """Every job id the run could have had (most no longer exist)."""
        return job_ids.of_run(self.run_id, list(self.interrupts), self.epoch, self.job)


class Retention:
    """Reads the final-status indexes by age and deletes one finished run atomically."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._purge = redis.register_script(scripts.PURGE)

    def expired_finished(self, cutoff: float, limit: int | None = 100) -> list[str]:
        """Finished runs last updated at or before `cutoff`, oldest first; at most `limit` (None: all).

        Reads `idx:status:<final>` by score (the run's `updated_at`), never the keyspace.
        """
        start, num = (None, None) if limit is None else (0, limit)
        pipe = self.redis.pipeline(transaction=False)
        for status in _FINAL:
            pipe.zrangebyscore(keys.status_index(status), "-inf", cutoff, start=start, num=num, withscores=True)
        merged = sorted((score, _s(member)) for rows in pipe.execute() for member, score in rows)
        ids = [run_id for _, run_id in merged]
        return ids if limit is None else ids[:limit]

    def purge(self, run_id: str, cutoff: float) -> Purged | None:
        """Delete `run_id` and all it owns if it is finished and was last updated by `cutoff`.

        None when it was not deleted: it is live, newer than `cutoff`, or already gone
        (whose stray index entries, if any, are removed). Idempotent.
        """
        for _ in range(3):  # the conversation is read first to name the thread key; re-read if it moved
            conversation = read_field(self.redis, keys.run(run_id), "conversation") or ""
            res = self._purge(keys=self._keys(run_id, conversation), args=self._args(run_id, cutoff, conversation))
            if res[0] == 1:
                purged = Purged(run_id, int(_s(res[1]) or 0), _s(res[2]), tuple(_s(x) for x in res[3:]))
                # What Slack's agent surfaces keep of the run (each expires anyway), and its questions'
                # receipt marks where nothing signs receipts: a crash here leaves only those behind.
                self.redis.delete(keys.session_status(run_id), keys.plan(run_id))
                if purged.interrupts:
                    self.redis.zrem(keys.receipts_pending(), *purged.interrupts)
                return purged
            if res[0] == 2 or _s(res[1]) != _CONVERSATION_CHANGED:
                return None
        return None

    @staticmethod
    def _keys(run_id: str, conversation: str) -> list[str]:
        names = [
            keys.run(run_id),
            keys.journal(run_id),
            keys.history(run_id),
            keys.all_runs_index(),
            keys.leases_index(),
            keys.expiry_index(),
            keys.remind_index(),
            keys.accepted_index(),
            keys.secrets(run_id),
        ]
        conv: dict[str, Any] = json.loads(conversation) if conversation else {}
        if conv.get("channel") and conv.get("thread_ts"):
            names.append(keys.thread(conv["channel"], conv["thread_ts"]))
        return names

    @staticmethod
    def _args(run_id: str, cutoff: float, conversation: str) -> list[str]:
        return [
            run_id,
            repr(float(cutoff)),
            " ".join(_FINAL),
            " ".join(s.value for s in RunStatus),
            keys.status_index(""),
            keys.waiting_index(""),
            keys.interrupt(""),
            conversation,
            keys.group(""),
            journal_names.ASK,
        ]


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
