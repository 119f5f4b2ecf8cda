"""The threads of `parley worker` that deliver webhooks: RQ workers on the webhooks' own queue.

A delivery waits on someone else's server. On the agents' queue, a few receivers that never
answer held every worker, and no run went on until their attempts timed out. Here each thread
is an RQ worker (`ParleySimpleWorker`, jobs run in that thread) on `parley-webhooks` alone, so
the agents' worker never takes a delivery and a delivery never waits behind a run. A job's
timeout is RQ's timer-based one (its signal-based one works in the main thread only); signals
stay the main worker's, and these threads end with the process: a delivery cut off then is
failed by RQ's registries and retried under its `Retry`, like one whose worker died.
"""

from __future__ import annotations

import contextlib
import threading
import time

import redis
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from workers.logs import Log
from workers.runtime.job_guard import ParleyJob
from workers.runtime.rq_workers import ParleySimpleWorker
from workers.runtime.wiring import Runtime

log = Log("parley.worker")


class WebhookWorker(ParleySimpleWorker):
    """An RQ worker that runs in a thread of its own: timer-based job timeouts, no signal handlers."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        """Signals are the main thread's (Python accepts handlers there only)."""


class Deliveries:
    """The delivery threads of one `parley worker`, and the RQ worker each runs now."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.workers: dict[int, WebhookWorker] = {}

    def join(self) -> None:
        for thread in self.threads:
            thread.join()

    def stop(self) -> None:
        """Record the workers' end in Redis as the process exits (the threads end with it), so no
        stale worker is listed; a delivery they were running is retried by RQ, as above."""
        for worker in list(self.workers.values()):
            with contextlib.suppress(redis.RedisError):
                worker.register_death()


def start_webhook_workers(
    runtime: Runtime, count: int, *, name: str | None, burst: bool, logging_level: str
) -> Deliveries:
    """Start `count` delivery threads on `runtime.webhook_queue`; each works until the process ends (or, in
    `burst`, until the queue is empty)."""
    deliveries = Deliveries()
    for n in range(count):
        worker_name = f"{name}-webhooks-{n}" if name else None
        thread = threading.Thread(
            target=_work,
            args=(deliveries, n, runtime, worker_name, burst, logging_level),
            daemon=True,
            name=f"webhooks-{n}",
        )
        thread.start()
        deliveries.threads.append(thread)
    return deliveries


def _work(deliveries: Deliveries, n: int, runtime: Runtime, name: str | None, burst: bool, logging_level: str) -> None:
    """Work the webhooks' queue; after losing Redis (a restart, a failover), wait and work again."""
    delay = 0.5
    while True:
        worker = deliveries.workers[n] = WebhookWorker(
            [runtime.webhook_queue],
            connection=runtime.redis,
            serializer=JSONSerializer,
            name=name,
            job_class=ParleyJob,
        )
        try:
            worker.work(burst=burst, with_scheduler=False, logging_level=logging_level)
            delay = 0.5
        except (redis.ConnectionError, redis.TimeoutError):
            log.warning("webhook worker lost Redis", worker=worker.name, exc=True)
        except Exception:
            log.error("webhook worker stopped; starting it again", worker=worker.name, exc=True)
        if burst:
            return
        time.sleep(delay)
        delay = min(delay * 2, 5.0)
        with contextlib.suppress(redis.RedisError):
            worker.register_death()  # frees the name for the next registration
