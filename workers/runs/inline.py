"""Executing a run in the process that started it (`parley run`), and letting go.

A terminal host asks synchronously, so the run executes here rather than on a worker. A
retryable failure is retried here after the usual delay. A run stopped inside a step is handed
back, queued with a job. A worker or another `parley run --resume` then carries it on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from rq.exceptions import NoSuchJobError
from rq.job import Job

from workers.runtime.execute import execute
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import RunRecord, RunStatus
from workers.store.run_writes import history_entry


def retry_delay(runtime: Runtime, failures: int) -> float:
    """The delay `execute` chose for the retry after `failures` failures."""
    delays = runtime.settings.retry_delays
    return delays[min(failures - 1, len(delays) - 1)] if delays and failures > 0 else 0.0


def drop_job(runtime: Runtime, job_id: str) -> None:
    """Withdraw the run's worker job, since this process executes the run.

    If this process dies before executing it, the sweep gives the queued run a new job.
    """
    with contextlib.suppress(NoSuchJobError):
        Job.fetch(job_id, connection=runtime.redis, serializer=runtime.queue.serializer).delete()


def execute_inline(runtime: Runtime, run_id: str, notice: Callable[[str], None]) -> RunRecord:
    """Execute the run here until it leaves `queued`.

    A retryable failure is retried inline.
    """
    while execute(runtime, run_id) == RunStatus.QUEUED.value:
        record = runtime.store.get(run_id)
        if record.status is not RunStatus.QUEUED:
            break
        if record.job:
            drop_job(runtime, record.job)
        delay = retry_delay(runtime, record.failures)
        notice(f"The run failed ({record.error}); retrying in {delay:g}s (attempt {record.failures + 1}).")
        time.sleep(delay)
    return runtime.store.get(run_id)


def hand_back(runtime: Runtime, run_id: str, by: str) -> None:
    """Let go of a run stopped outside a question, queued again for any worker.

    A running run gets a new epoch, fencing off anything this process might still write. Its lease
    is cleared, so nobody waits for it to lapse.
    """
    store = runtime.store
    run = store.get(run_id)
    if run.status is RunStatus.RUNNING:
        job_id = job_ids.hand_back(run_id, run.epoch)
        ok, _, _ = store.transition(
            run_id,
            [RunStatus.RUNNING],
            RunStatus.QUEUED,
            epoch=run.epoch,
            lease="clear",
            bump_epoch=True,
            history=history_entry("handed back", by, epoch=run.epoch),
            job=job_id,
        )
        if not ok:
            return
    elif run.status is RunStatus.QUEUED:
        job_id = run.job or job_ids.first(run_id)  # stopped before its execution, or while waiting to retry
    else:
        return
    enqueue_run(runtime.queue, run_id, job_id)
