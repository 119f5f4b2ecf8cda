"""Retention of finished runs: delete those past their time, with their RQ job records.

The sweep calls `purge_finished` on every pass, when `PARLEY_RETENTION` is not 0. It deletes a
bounded number of runs at a time. Admins call it through `parley runs purge --older-than`. The
store deletes a run's own keys in one atomic step (`RunStore.retention`). That step re-checks
the run is still finished and old enough. The RQ job records the run may have left are deleted
here afterwards, through RQ's API. So a run that is kept keeps its jobs too.
"""

from __future__ import annotations

import contextlib
import time

from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from workers.logs import Log
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore

log = Log("parley.retention")
BATCH = 100  # runs read and deleted per round, so no single step holds Redis for long


def purge_finished(
    runtime: Runtime,
    older_than: float,
    now: float | None = None,
    dry_run: bool = False,
    limit: int | None = None,
) -> list[str]:
    """Delete runs finished over `older_than` seconds before `now`, returning their ids.

    At most `limit` runs go (None: all), oldest first. With `dry_run`, it only lists the runs it
    would delete. Queued, running and paused runs are never deleted.
    """
    now = time.time() if now is None else now
    cutoff = now - older_than
    retention = runtime.store.retention
    if dry_run:
        return retention.expired_finished(cutoff, limit)
    purged: list[str] = []
    while limit is None or len(purged) < limit:
        want = BATCH if limit is None else min(BATCH, limit - len(purged))
        candidates = retention.expired_finished(cutoff, want)
        done = retention.purge_many(candidates, cutoff)
        delete_jobs(runtime, [job_id for p in done for job_id in (*p.job_ids(), *_webhook_jobs(p.run_id))])
        QuestionStore(runtime.redis).forget([p.run_id for p in done])  # an API question's own record
        purged += [p.run_id for p in done]
        if len(candidates) < want or not done:
            break  # none left, or only runs that are not to be deleted after all
    if purged:
        log.info("purged finished runs", count=len(purged), older_than=older_than)
    return purged


def _webhook_jobs(run_id: str) -> list[str]:
    return [job_ids.webhook(run_id, event) for event in ("answered", "expired", "cancelled")]


def delete_jobs(runtime: Runtime, job_ids: list[str]) -> int:
    """Delete the existing RQ job records among `job_ids`, returning how many.

    A job a worker is running right now is left alone. Deleting it under the worker would break RQ's
    own bookkeeping. It ends at once, finding its run gone, and expires after its `result_ttl`.
    """
    deleted = 0
    serializer = runtime.queue.serializer
    for job in Job.fetch_many(job_ids, connection=runtime.redis, serializer=serializer):
        if job is None or job.get_status(refresh=False) == JobStatus.STARTED:
            continue
        with contextlib.suppress(NoSuchJobError):
            job.delete()
            deleted += 1
    return deleted
