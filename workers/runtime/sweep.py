"""The periodic sweep: expiries, reminders, escalations, lapsed leases, jobless runs, cut-off webhooks, retention.

It runs as an RQ job scheduled on a fixed grid of time slots (`parley-sweep-<slot>`, unique). So
any number of workers schedule it, and exactly one sweep runs per slot. Every action it takes is
an atomic transition, so a repeated sweep is harmless.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rq import Queue
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus

from workers import metrics
from workers.logs import Log
from workers.questions.signal_watch import close_ended
from workers.questions.webhook_cut_off import fail_cut_off
from workers.runtime.group_close import close_member
from workers.runtime.people import escalate_due
from workers.runtime.queues import SWEEP, enqueue_run
from workers.runtime.retention import purge_finished
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.question_closes import Closed
from workers.store.records import CloseMode, InterruptRecord, InterruptState, RunStatus
from workers.store.run_writes import history_entry

log = Log("parley.sweep")
PURGE_PER_SWEEP = 1000  # finished runs deleted per pass at most, so one pass stays short
_LIVE_JOB = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


@dataclass
class SweepReport:
    expired: list[str] = field(default_factory=list)
    reminded: list[str] = field(default_factory=list)
    escalated: list[str] = field(default_factory=list)
    lapsed: list[str] = field(default_factory=list)
    requeued: list[str] = field(default_factory=list)
    webhooks_failed: list[str] = field(default_factory=list)  # questions whose webhook's last attempt was cut off
    purged: list[str] = field(default_factory=list)
    receipts: int = 0  # signed receipts written for questions closed without one yet


def sweep(runtime: Runtime, now: float | None = None) -> SweepReport:
    now = time.time() if now is None else now
    report = SweepReport()
    report.expired = expire_due(runtime, now)
    _remind(runtime, now, report)
    report.escalated = escalate_due(runtime, now)
    _lapsed(runtime, now, report)
    _requeue(runtime, now, report)
    try:
        report.webhooks_failed = fail_cut_off(runtime, now)
    except Exception:  # the steps after it still run, and the next sweep looks again
        log.error("recording cut-off webhooks failed; the sweep goes on", exc=True, step="fail_cut_off", now=now)
    close_ended(runtime)  # questions whose Temporal workflow ended; it never raises
    try:
        _purge(runtime, now, report)
    finally:  # a purge that fails never holds back the receipts
        report.receipts = runtime.receipts.sweep(now, runtime.settings.retention)
    listed = (report.expired, report.reminded, report.escalated, report.lapsed, report.requeued, report.webhooks_failed)
    if any(listed) or report.purged:
        found = {k: v for k, v in report.__dict__.items() if v and k != "purged"}
        log.info("sweep", **found, **({"purged": len(report.purged)} if report.purged else {}))
    return report


def expire_due(runtime: Runtime, now: float) -> list[str]:
    """Close every open question due by `now` as expired; returns their ids.

    The sweep's first step, apart so a caller can expire without the rest.
    """
    store = runtime.store
    expired: list[str] = []
    for iid in store.due_expiries(now):
        interrupt = store.interrupt(iid)
        if interrupt is None or interrupt.state is not InterruptState.OPEN:
            store.unschedule_expiry(iid)
            continue
        defaults = interrupt.request.defaults() if interrupt.request.on_expiry == "use_defaults" else []
        if interrupt.group:  # one of several asked at once: its group resumes the run when complete
            if isinstance(close_member(runtime, interrupt, CloseMode.EXPIRE, "parley", defaults, now=now), Closed):
                metrics.QUESTIONS_EXPIRED.inc()
                expired.append(iid)
            continue
        if isinstance(store.close(interrupt, CloseMode.EXPIRE, "parley", defaults, now=now), Closed):
            # The resumed run shows the expiry on the question (see execute._lock_closed_question).
            enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, iid))
            metrics.QUESTIONS_EXPIRED.inc()
            expired.append(iid)
    return expired


def _remind(runtime: Runtime, now: float, report: SweepReport) -> None:
    store = runtime.store
    shared: set[str] = set()  # members of an ask_each reminded on their shared message in this pass
    for iid in store.due_reminders(now):
        if iid in shared or not store.take_reminder(iid):
            continue  # reminded with its group, or another sweep took it
        interrupt = store.interrupt(iid)
        if interrupt is None or interrupt.state is not InterruptState.OPEN:
            continue
        run = store.get(interrupt.run_id)
        last_call = interrupt.last_call_at is not None and now >= interrupt.last_call_at
        sharing = _sharing(runtime, interrupt)
        shown = interrupt
        if sharing:  # ask_each: one reminder on the shared message, naming everyone yet to answer
            for other in sharing:
                store.take_reminder(other.id)
                shared.add(other.id)
            shown = interrupt.model_copy(update={"assignees": sorted({p for m in sharing for p in m.assignees})})
        try:
            runtime.hosts.for_run(run).remind(run, shown, last_call=last_call)
        except Exception:  # one workspace's failing Slack call holds back no other run's sweep
            log.error("reminder not sent; the sweep goes on", exc=True, **{**run.log_context(), "interrupt_id": iid})
        else:
            last = {"last_call": True} if last_call else {}
            store.add_history(run.id, "reminded", "parley", interrupt_id=iid, **last)
            report.reminded.append(iid)
        for member in sharing or [interrupt]:  # each open member keeps the last call, in case this one is answered
            if not last_call and member.last_call_at is not None:
                store.schedule_reminder(member.id, member.last_call_at)


def _sharing(runtime: Runtime, interrupt: InterruptRecord) -> list[InterruptRecord]:
    """The open members of an `ask_each` question, who share one message; [] for any other question."""
    if not interrupt.group:
        return []
    group = runtime.store.groups.group(interrupt.group)
    if group is None or not group.message:
        return []  # ask_all and ask_any: each member is a question of its own, reminded on its own
    return [m for m in runtime.store.groups.members(group) if m.state is InterruptState.OPEN]


def _lapsed(runtime: Runtime, now: float, report: SweepReport) -> None:
    store = runtime.store
    for run_id in store.due_leases(now):
        run = store.find(run_id)
        if run is None or run.status is not RunStatus.RUNNING or run.lease_until > now:
            continue
        failures = run.failures + 1
        reason = f"worker lost while running (attempt {failures})"
        give_up = failures > runtime.settings.max_retries
        job_id = job_ids.lapse(run_id, run.epoch)
        if give_up:
            entry = history_entry("failed", "parley", error=reason)
        else:
            entry = history_entry("lease lapsed", "parley", epoch=run.epoch, failures=failures)
        ok, _, _ = store.transition(
            run_id,
            [RunStatus.RUNNING],
            RunStatus.FAILED if give_up else RunStatus.QUEUED,
            epoch=run.epoch,
            lease="clear",
            bump_epoch=True,
            failures=1,
            history=entry,
            error=reason,
            **({} if give_up else {"job": job_id}),
        )
        if not ok:
            continue
        report.lapsed.append(run_id)
        metrics.LEASE_LAPSES.labels(outcome="failed" if give_up else "requeued").inc()
        if give_up:
            metrics.run_ended(run.agent, RunStatus.FAILED.value)
            try:
                runtime.hosts.for_run(run).failed(run, reason)
            except Exception:  # the run is failed already; the sweep goes on to the other runs
                log.error("failure not shown; the sweep goes on", exc=True, **run.log_context(), reason=reason)
        else:
            metrics.REQUEUES.labels(cause="lease_lapsed").inc()
            enqueue_run(runtime.queue, run_id, job_id)


def _requeue(runtime: Runtime, now: float, report: SweepReport) -> None:
    """Give a new job to each queued run whose job is gone.

    A job may never have been enqueued, through a crash between acceptance and enqueue. It may have
    ended. It may be abandoned: a worker took it, then died before claiming the run. RQ would notice
    only after the job's timeout, or at its ten-minute maintenance. Until then the run would sit
    queued.
    """
    store = runtime.store
    taken = _taken_at(runtime.queue)
    for run_id in store.due_queued(now - runtime.settings.requeue_grace):
        run = store.find(run_id)
        if run is None or run.status is not RunStatus.QUEUED:
            store.unwatch_queued(run_id)
            continue
        job_id = run.job or job_ids.first(run_id)
        job: Job | None
        try:
            job = Job.fetch(job_id, connection=runtime.redis, serializer=runtime.queue.serializer)
            status = job.get_status()
        except NoSuchJobError:
            job, status = None, None
        abandoned = _abandoned(job, status, taken.get(job_id), now, runtime.settings.lease_ttl)
        if status in _LIVE_JOB and not abandoned:
            continue
        if status is not None:
            job_id = job_ids.requeue(job_id, now)
            ok, _, _ = store.transition(run_id, [RunStatus.QUEUED], RunStatus.QUEUED, job=job_id)
            if not ok:
                continue  # claimed meanwhile
        if enqueue_run(runtime.queue, run_id, job_id):
            metrics.REQUEUES.labels(cause="no_job").inc()
            report.requeued.append(run_id)
            previous = getattr(status, "value", None)
            log.warning(
                "queued run had no job; enqueued", run_id=run_id, job=job_id, previous=previous, abandoned=abandoned
            )


def _purge(runtime: Runtime, now: float, report: SweepReport) -> None:
    """Delete finished runs older than `PARLEY_RETENTION`, a bounded batch per pass.

    0 keeps them.
    """
    retention = runtime.settings.retention
    if retention > 0:
        report.purged = purge_finished(runtime, retention, now=now, limit=PURGE_PER_SWEEP)


def _abandoned(job: Job | None, status: JobStatus | None, taken_at: float | None, now: float, lease_ttl: float) -> bool:
    """A job taken over a lease ago whose run is still queued.

    Its worker died before the claim. A live worker starts a job within milliseconds of taking it.
    Claiming the run (queued → running) is the first thing the job does. Taken means started (RQ's
    `started_at`). Or not yet started and first seen in RQ's intermediate queue at `taken_at` (see
    `_taken_at`).
    """
    if job is not None and status == JobStatus.STARTED and job.started_at is not None:
        taken_at = job.started_at.timestamp()
    return taken_at is not None and now - taken_at > lease_ttl


def _taken_at(queue: Queue) -> dict[str, float]:
    """When a sweep first saw each job taken from `queue` but not started.

    RQ moves a job into the queue's intermediate queue as a worker takes it (LMOVE). It moves it out
    as the job starts, a round trip or two later in the same process. Nothing names the worker in
    between. So a job that stays there was dropped: its worker died, or lost Redis and went back to
    waiting. Each sweep sets RQ's own first-seen mark on every such job. So a job's clock starts
    within a sweep interval of its taking.
    """
    intermediate = queue.intermediate_queue
    seen: dict[str, float] = {}
    for job_id in intermediate.get_job_ids():
        first = None if intermediate.set_first_seen(job_id) else intermediate.get_first_seen(job_id)
        seen[job_id] = time.time() if first is None else first.timestamp()
    return seen


def schedule_next(runtime: Runtime, now: float | None = None) -> None:
    """Schedule the sweep for the grid's next slot, once however many workers ask."""
    interval = runtime.settings.sweep_interval
    slot = int((time.time() if now is None else now) // interval) + 1
    at = datetime.fromtimestamp(slot * interval, tz=UTC)
    with contextlib.suppress(DuplicateJobError):
        runtime.queue.enqueue_at(at, SWEEP, job_id=job_ids.sweep(slot), unique=True, result_ttl=60)
