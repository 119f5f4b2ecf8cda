"""Parley's RQ queue: JSON-serialised, job arguments are ids only."""

from __future__ import annotations

import threading
import time
import weakref
from datetime import timedelta
from typing import Any

from redis import ConnectionPool, Redis
from rq import Queue
from rq.exceptions import DuplicateJobError
from rq.job import Job
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


REGISTERED_FOR = 60.0
"""Seconds a process takes its queue as listed in RQ's `rq:queues` after it last listed it there."""
_listed: weakref.WeakKeyDictionary[ConnectionPool, dict[str, float]] = weakref.WeakKeyDictionary()
_listed_lock = threading.Lock()


def _listed_lately(pool: ConnectionPool, key: str) -> bool:
    with _listed_lock:
        at = _listed.get(pool, {}).get(key)
    return at is not None and time.monotonic() - at < REGISTERED_FOR


def _note_listed(pool: ConnectionPool, key: str) -> None:
    with _listed_lock:
        _listed.setdefault(pool, {})[key] = time.monotonic()


class ParleyQueue(Queue):
    """RQ's queue, listed in `rq:queues` once a minute per process rather than at every enqueue.

    RQ adds the queue to that set in a transaction of its own before each enqueue: three
    commands and a round trip, on the accept path too. Only RQ's command line reads the set
    (`rq info`), and the queue is already in it. A unique enqueue (every Parley run's) lists
    it at most once per `REGISTERED_FOR` seconds; the job itself is enqueued exactly as before.
    """

    def enqueue_job(self, job: Job, pipeline: Any = None, at_front: bool = False, unique: bool = False) -> Job:
        pool = self.connection.connection_pool
        if pipeline is not None or not unique or not _listed_lately(pool, self.key):
            job = super().enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)
            if pipeline is None:
                _note_listed(pool, self.key)
            return job
        listing = self.connection.pipeline()
        try:
            # A unique enqueue is RQ's own atomic script; the pipeline only gets the listing.
            return super().enqueue_job(job, pipeline=listing, at_front=at_front, unique=True)
        finally:
            staged = [tuple(args) for args, _ in listing.command_stack]
            if staged == [("SADD", self.redis_queues_keys, self.key)]:
                listing.reset()
            else:  # anything else RQ staged goes to Redis as RQ meant it to
                listing.execute()


def queue(redis: Redis, name: str = QUEUE_NAME, *, timeout: float | None = None) -> Queue:
    """The queue `name`; `timeout` bounds each job it enqueues (0: no bound; None: RQ's 180 s)."""
    default = None if timeout is None else (int(timeout) if timeout > 0 else -1)
    return ParleyQueue(name, connection=redis, serializer=JSONSerializer, default_timeout=default)


def enqueue_run(q: Queue, run_id: str, job_id: str, *, delay: float = 0) -> bool:
    """Enqueue an execution of `run_id` once under `job_id`.

    False when it already exists.
    """
    try:
        if delay > 0:
            q.enqueue_in(timedelta(seconds=delay), EXECUTE, run_id, job_id=job_id, unique=True, result_ttl=600)
        else:
            q.enqueue(EXECUTE, run_id, job_id=job_id, unique=True, result_ttl=600, failure_ttl=86400)
    except DuplicateJobError:
        return False
    return True


def enqueue_show(q: Queue, run_id: str, interrupt_id: str, job_id: str) -> bool:
    """Enqueue showing a group's closed member on its message, once per `job_id`.

    See `group_close.show`.
    """
    try:
        q.enqueue(SHOW, run_id, interrupt_id, job_id=job_id, unique=True, result_ttl=60, failure_ttl=3600)
    except DuplicateJobError:
        return False
    return True


def enqueue_cancelled(q: Queue, run_id: str, job_id: str) -> bool:
    """Enqueue the effects of `run_id`'s cancel once per `job_id` (see `cancel_effects`)."""
    try:
        q.enqueue(CANCELLED, run_id, job_id=job_id, unique=True, result_ttl=600, failure_ttl=86400)
    except DuplicateJobError:
        return False
    return True
