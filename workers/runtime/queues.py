"""Parley's RQ queue: JSON-serialised, job arguments are ids only."""

from __future__ import annotations

from datetime import timedelta

from redis import Redis
from rq import Queue
from rq.exceptions import DuplicateJobError
from rq.serializers import JSONSerializer

EXECUTE = "workers.runtime.jobs.execute_run"
SWEEP = "workers.runtime.jobs.sweep_job"
SHOW = "workers.runtime.jobs.show_job"
CANCELLED = "workers.runtime.jobs.cancelled_job"
DELIVER = "workers.questions.webhooks.deliver"
SIGNAL = "workers.questions.signals.deliver"
JOB_FUNCTIONS = frozenset({EXECUTE, SWEEP, SHOW, CANCELLED, DELIVER, SIGNAL})
"""Every function a Parley job may name; `parley worker` refuses any other (`job_guard`)."""
QUEUE_NAME = "parley"
WEBHOOK_QUEUE_NAME = "parley-webhooks"
"""Webhook deliveries' and Temporal signals' own queue: a run never waits behind one (see `webhook_workers`)."""


def queue(redis: Redis, name: str = QUEUE_NAME) -> Queue:
    return Queue(name, connection=redis, serializer=JSONSerializer)


def enqueue_run(q: Queue, run_id: str, job_id: str, *, delay: float = 0) -> bool:
    """Enqueue an execution of `run_id` once under `job_id`; False when it already exists."""
    try:
        if delay > 0:
            q.enqueue_in(timedelta(seconds=delay), EXECUTE, run_id, job_id=job_id, unique=True, result_ttl=600)
        else:
            q.enqueue(EXECUTE, run_id, job_id=job_id, unique=True, result_ttl=600, failure_ttl=86400)
    except DuplicateJobError:
        return False
    return True


def enqueue_show(q: Queue, run_id: str, interrupt_id: str, job_id: str) -> bool:
    """Enqueue showing a closed member of a group on its message (see `group_close.show`), once per `job_id`."""
    try:
        q.enqueue(SHOW, run_id, interrupt_id, job_id=job_id, unique=True, result_ttl=60, failure_ttl=3600)
    except DuplicateJobError:
        return False
    return True


def enqueue_cancelled(q: Queue, run_id: str, job_id: str) -> bool:
    """Enqueue the effects of a cancel of `run_id` (see `cancel_effects`), once per `job_id`."""
    try:
        q.enqueue(CANCELLED, run_id, job_id=job_id, unique=True, result_ttl=600, failure_ttl=86400)
    except DuplicateJobError:
        return False
    return True
