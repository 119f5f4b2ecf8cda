"""Listing runs and finding what is due, from the store's sorted-set indexes.

`RunIndexes` pages runs by status and counts them. It finds the expiries, reminders,
leases and queued runs the sweeps act on. `RunStore` is built on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from redis import Redis
from redis.commands.core import Script

from workers.logs import Log
from workers.store import keys
from workers.store.replies import as_text, reply, text_hash
from workers.store.run_records import RunRecord, RunStatus

log = Log("parley.store")


def _run_or_unreadable(run_id: str, data: dict[str, str]) -> RunRecord:
    """The run, or a stand-in saying it is unreadable, so a listing goes on."""
    try:
        return RunRecord.from_hash(data)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError and bad JSON are ValueErrors
        log.error("a run's record cannot be read", run_id=run_id, error=repr(exc))
        return RunRecord.unreadable(run_id, data, str(exc).splitlines()[0])


class RunIndexes:
    """Listings and the sweeps' due indexes, mixed into `RunStore`."""

    # What `RunStore` gives it: its Redis client and one script.
    redis: Redis
    _unwatch_queued: Script

    def runs(self, run_ids: Iterable[str]) -> list[RunRecord]:
        """Several runs in one round trip, in order; ids with no run are skipped."""
        run_ids = list(run_ids)
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hgetall(keys.run(run_id))
        return [_run_or_unreadable(i, text_hash(d)) for i, d in zip(run_ids, pipe.execute(), strict=True) if d]

    def list_ids(self, status: RunStatus | None, *, offset: int = 0, limit: int = 20) -> list[str]:
        """Run ids newest first, one page of an index; never a keyspace scan."""
        index = keys.all_runs_index() if status is None else keys.status_index(status)
        return [as_text(x) for x in reply(self.redis.zrevrange(index, offset, offset + limit - 1))]

    def count(self, status: RunStatus) -> int:
        return int(reply(self.redis.zcard(keys.status_index(status))))

    def counts(self) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=False)
        for s in RunStatus:
            pipe.zcard(keys.status_index(s))
        return {s.value: int(n) for s, n in zip(RunStatus, pipe.execute(), strict=True)}

    def waiting_on(self, user: str, *, limit: int = 20) -> list[str]:
        return [as_text(x) for x in reply(self.redis.zrange(keys.waiting_index(user), 0, limit - 1))]

    def due_expiries(self, now: float, limit: int = 100) -> list[str]:
        """Open questions whose deadline has passed."""
        return self._due(keys.expiry_index(), now, limit)

    def due_reminders(self, now: float, limit: int = 100) -> list[str]:
        """Open questions whose assignees are due a reminder."""
        return self._due(keys.remind_index(), now, limit)

    def due_leases(self, now: float, limit: int = 100) -> list[str]:
        """Running runs whose worker's lease has lapsed."""
        return self._due(keys.leases_index(), now, limit)

    def due_queued(self, before: float, limit: int = 100) -> list[str]:
        """Runs queued before `before` that should have a job.

        A start, an answer or a retry queues them. The queued status index lists them,
        each scored by when the run was last queued.
        """
        return self._due(keys.status_index(RunStatus.QUEUED), before, limit)

    def unschedule_expiry(self, interrupt_id: str) -> None:
        """Stop watching a question that is no longer open for its expiry."""
        self.redis.zrem(keys.expiry_index(), interrupt_id)

    def take_reminder(self, interrupt_id: str) -> bool:
        """Claim a due reminder, or False if another sweep took it."""
        return bool(self.redis.zrem(keys.remind_index(), interrupt_id))

    def schedule_reminder(self, interrupt_id: str, at: float) -> None:
        """Remind again at `at`, unless the sweep finds the question closed."""
        self.redis.zadd(keys.remind_index(), {interrupt_id: at})

    def unwatch_queued(self, run_id: str) -> None:
        """Stop watching a run for a missing job, once it is gone or no longer queued."""
        self._unwatch_queued(keys=[keys.run(run_id), keys.status_index(RunStatus.QUEUED)], args=[run_id])

    def _due(self, index_key: str, now: float, limit: int) -> list[str]:
        return [as_text(x) for x in reply(self.redis.zrangebyscore(index_key, "-inf", now, start=0, num=limit))]
