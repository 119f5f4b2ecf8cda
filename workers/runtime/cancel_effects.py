"""What follows an admin's cancel, done by a worker rather than the asking process.

`admin.cancel` records the cancel atomically: the question closed, the run cancelled. It
enqueues `show_cancelled`. A worker holds every host the run may have. So it locks the
question's message as cancelled. The API host tells the webhook or Temporal workflow. So
`parley runs cancel` needs only Redis, like Slack's Cancel and the API's.
"""

from __future__ import annotations

from workers.logs import Log
from workers.runtime.group_close import progress_of
from workers.runtime.host import EndsSession
from workers.runtime.queues import enqueue_cancelled
from workers.runtime.wiring import Runtime
from workers.store import ids, job_ids
from workers.store import journal_names as names
from workers.store.groups import GroupMode
from workers.store.records import InterruptState, RunRecord, RunStatus

log = Log("parley.admin")


def enqueue(runtime: Runtime, run: RunRecord) -> None:
    """Queue the effects of `run`'s cancel for a worker, once per run."""
    if enqueue_cancelled(runtime.queue, run.id, job_ids.cancelled(run.id)):
        log.info("cancel effects queued", **run.log_context())


def show_cancelled(runtime: Runtime, run_id: str) -> None:
    """Show `run_id`'s cancel on each of its question messages, via the run's host."""
    store = runtime.store
    run = store.find(run_id)
    if run is None or run.status is not RunStatus.CANCELLED:
        log.info("no cancel to show", run_id=run_id, status=run.status.value if run else "gone")
        return
    host = runtime.hosts.for_run(run)
    if isinstance(host, EndsSession):
        host.run_cancelled(run)
    group = store.groups.group(run.interrupt) if ids.is_group(run.interrupt) else None
    if group is not None:
        members = store.groups.members(group)
        if group.mode is GroupMode.EACH:
            if group.message:
                host.group_progress(run, group, progress_of(group, members))
        else:
            for m in members:
                if m.message:
                    host.question_closed(run, m)
        log.info("cancel shown", **run.log_context(), group=group.id)
        return
    interrupt = store.interrupt(run.interrupt) if run.interrupt else None
    if interrupt is None or interrupt.state is InterruptState.OPEN:
        return
    # A run cancelled after its answer was accepted never resumes, so nothing else would
    # replace the answered question's controls; one the run locked itself is left alone.
    answered = interrupt.state is not InterruptState.CANCELLED
    if answered and (
        not interrupt.message or store.journal_get(run.id, names.effect(names.lock(interrupt.id))) == "done"
    ):
        return
    host.question_closed(run, interrupt)
    log.info("cancel shown", **{**run.log_context(), "interrupt_id": interrupt.id})
