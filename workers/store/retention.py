"""Retention in Redis: which finished runs are past their time, and deleting one whole.

A finished run keeps its records until this removes them. Finished means succeeded, failed,
cancelled or expired. Its records are its hash, journal, history, questions, thread key and
index entries. Redis runs with `noeviction`, so without this it would fill up and refuse writes.
Live runs (queued, running, paused) are never deleted. The `PURGE` script re-checks that the run
is finished and old enough. It does so in the same atomic step that deletes it. So a run an
admin retried meanwhile keeps its journal. `RunStore.retention` is the one instance a process
uses. `workers.runtime.retention` deletes the RQ job records a purged run leaves. It asks
`Purged.job_ids` for their ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from redis import Redis

from workers.logs import Log
from workers.store import job_ids, journal_names, keys, scripts
from workers.store.pieces import read_field, read_fields
from workers.store.records import FINAL_STATUSES, RunStatus
from workers.store.replies import as_text

log = Log("parley.retention")
_FINAL = sorted(s.value for s in FINAL_STATUSES)
_CONVERSATION_CHANGED = "changed"


@dataclass(frozen=True)
class Purged:
    """What a purged run was, enough to find its leftover RQ job records."""

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
        """Finished runs last updated by `cutoff`, oldest first, at most `limit` (None: all).

        It reads `idx:status:<final>` by score (the run's `updated_at`), never the keyspace.
        """
        start, num = (None, None) if limit is None else (0, limit)
        pipe = self.redis.pipeline(transaction=False)
        for status in _FINAL:
            pipe.zrangebyscore(keys.status_index(status), "-inf", cutoff, start=start, num=num, withscores=True)
        merged = sorted((score, as_text(member)) for rows in pipe.execute() for member, score in rows)
        ids = [run_id for _, run_id in merged]
        return ids if limit is None else ids[:limit]

    def purge(self, run_id: str, cutoff: float) -> Purged | None:
        """Delete `run_id` and all it owns, if finished and last updated by `cutoff`.

        None when it was not deleted: live, newer than `cutoff`, or already gone. A gone run's stray
        index entries are removed. It is idempotent.
        """
        for _ in range(3):  # the conversation is read first to name the thread key; re-read if it moved
            conversation = read_field(self.redis, keys.run(run_id), "conversation") or ""
            done, purged = self._outcome(run_id, self._purge(*self._call(run_id, cutoff, conversation)))
            if done:
                return purged
        return None

    def purge_many(self, run_ids: list[str], cutoff: float) -> list[Purged]:
        """`purge` for each of `run_ids`, in two round trips for the whole batch.

        A run whose conversation changed since it was read goes through `purge`, which reads it again.
        """
        conversations = read_fields(self.redis, [keys.run(run_id) for run_id in run_ids], "conversation")
        batch = self.redis.pipeline(transaction=False)
        for run_id, conversation in zip(run_ids, conversations, strict=True):
            self._purge(*self._call(run_id, cutoff, conversation or ""), client=batch)
        purged: list[Purged] = []
        again: list[str] = []
        for run_id, res in zip(run_ids, batch.execute(raise_on_error=False) if run_ids else [], strict=True):
            if isinstance(res, Exception):  # one run's failure never stops the others' purge
                log.error("a finished run could not be purged", run_id=run_id, error=str(res))
                continue
            done, one = self._outcome(run_id, res)
            if not done:
                again.append(run_id)
            elif one is not None:
                purged.append(one)
        return purged + [p for p in (self.purge(run_id, cutoff) for run_id in again) if p is not None]

    def _call(self, run_id: str, cutoff: float, conversation: str) -> tuple[list[str], list[str]]:
        return self._keys(run_id, conversation), self._args(run_id, cutoff, conversation)

    @staticmethod
    def _outcome(run_id: str, res: list[Any]) -> tuple[bool, Purged | None]:
        """Whether the script's reply is final, and the run it purged if any."""
        if res[0] == 1:
            questions = tuple(str(q) for q in json.loads(as_text(res[3])))  # one JSON list: a reply of many is capped
            return True, Purged(run_id, int(as_text(res[1]) or 0), as_text(res[2]), questions)
        if res[0] == 2 or as_text(res[1]) != _CONVERSATION_CHANGED:
            return True, None
        return False, None  # the conversation moved since it was read: read it again

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
            keys.session_status(run_id),
            keys.plan(run_id),
            keys.receipts_pending(),
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
