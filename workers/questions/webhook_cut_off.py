"""Deliveries whose last attempt was cut off: the sweep records them failed.

`deliver` records its own last failure. A worker killed mid-attempt records nothing: SIGKILL, out
of memory, a lost machine. RQ finds its job abandoned once the job's started-registry entry lapses.
With retries left, RQ runs the next attempt. After the last, RQ moves the job to its failed
registry. The webhook would stay `pending` for good, so the sweep records it (`fail_cut_off`).
Few deliveries fail in an hour: a token has few under way at once (`webhook_per_token`).
"""

from __future__ import annotations

from rq.defaults import DEFAULT_FAILURE_TTL
from rq.exceptions import DeserializationError
from rq.job import Job

from workers.logs import Log
from workers.questions.webhooks import DELIVER, history_detail
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.replies import reply

__all__ = ["CUT_OFF", "CUT_OFF_LOOKBACK", "CUT_OFF_PAGE", "fail_cut_off"]

log = Log("parley.webhooks")
CUT_OFF_LOOKBACK = 3600.0
"""Seconds back the sweep looks for deliveries RQ failed that `deliver` did not record (`fail_cut_off`)."""
CUT_OFF_PAGE = 20
"""Failed jobs the sweep reads at a time, latest first."""
CUT_OFF = "the worker delivering it stopped"


def fail_cut_off(runtime: Runtime, now: float) -> list[str]:
    """Record as failed each pending webhook whose job RQ failed.

    Returns the ids of their questions. It reads RQ's failed registry, latest failure first. It
    stops at the first job that failed over `CUT_OFF_LOOKBACK` seconds ago. Its time of failure is
    the score less the job's failure TTL. A lost machine stops RQ's maintenance too. So a job may
    fail long after its start.
    """
    registry = runtime.webhook_queue.failed_job_registry
    recorded: list[str] = []
    start = 0
    while True:
        end = start + CUT_OFF_PAGE - 1  # RQ's API lists no scores: its own connection reads both at once
        page = reply(registry.connection.zrange(registry.key, start, end, desc=True, withscores=True))
        expiries = {registry.parse_job_id(entry): float(score) for entry, score in page}
        for job in Job.fetch_many(list(expiries), connection=runtime.redis, serializer=registry.serializer):
            if job is None:
                continue
            if _failed_at(job, expiries[job.id]) < now - CUT_OFF_LOOKBACK:
                return recorded  # every job on the queue keeps failures as long, so the rest failed before it
            question_id = _question_of(job)
            if question_id is not None and _record_cut_off(runtime, question_id, job):
                recorded.append(question_id)
        if len(page) < CUT_OFF_PAGE:
            return recorded
        start += CUT_OFF_PAGE


def _failed_at(job: Job, expiry: float) -> float:
    """When RQ failed `job`, from its failed registry's score: the failure's expiry.

    RQ sets that score to the failure's time plus the job's `failure_ttl`. It does not set the
    abandoned job's `ended_at`.
    """
    return expiry - (job.failure_ttl if job.failure_ttl is not None else DEFAULT_FAILURE_TTL)


def _question_of(job: Job) -> str | None:
    """The question whose webhook `job` delivers, or None for a Temporal signal's job."""
    try:
        return str(job.args[0]) if job.func_name == DELIVER and job.args else None
    except DeserializationError:  # not a job Parley wrote
        return None


def _record_cut_off(runtime: Runtime, question_id: str, job: Job) -> bool:
    """Record the question's webhook failed, if `job` delivers it and it is still pending.

    Its attempts are RQ's count when that is more: every attempt but the last used one of the job's
    retries, those cut off too.
    """
    store = QuestionStore(runtime.redis)
    state = store.webhook(question_id)
    if state is None or state.status != "pending" or job_ids.webhook(question_id, state.event) != job.id:
        return False  # delivered, or recorded already
    made = len(job.retry_intervals or ()) - (job.retries_left or 0) + 1
    update = {"attempts": max(state.attempts + 1, made), "status": "failed", "last_error": CUT_OFF}
    state = state.model_copy(update=update)
    runtime.store.add_history(question_id, "webhook failed", "parley", **history_detail(state), error=CUT_OFF)
    store.set_webhook(question_id, state)
    log.warning("webhook failed: its last attempt was cut off", run_id=question_id, webhook_id=state.id)
    return True
