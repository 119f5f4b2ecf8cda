"""The threads of `parley worker` that deliver webhooks, on the webhooks' own queue.

A delivery waits on someone else's server. On the agents' queue, a few silent receivers held
every worker. No run went on until their attempts timed out. Here each thread is an RQ worker
(`ParleySimpleWorker`) running jobs in that thread. It works on `parley-webhooks` alone. So the
agents' worker never takes a delivery, and a delivery never waits behind a run. A job's timeout
is RQ's timer-based one, since signal-based timeouts work only in the main thread. Signals stay
the main worker's. These threads end with the process. A delivery cut off then is failed by RQ's
registries. It is retried under its `Retry`, like one whose worker died.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from rq.exceptions import StopRequested
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty
from rq.worker import WorkerStatus

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.runtime.rq_jobs import LeanJob
from workers.runtime.rq_workers import ParleySimpleWorker
from workers.runtime.wiring import Runtime

log = Log("parley.worker")


class WebhookWorker(ParleySimpleWorker):
    """An RQ worker in a thread of its own: timer-based timeouts, no signal handlers."""

    death_penalty_class = TimerDeathPenalty
    deliveries: Deliveries | None = None

    def _install_signal_handlers(self) -> None:
        """Signals are the main thread's (Python accepts handlers there only)."""

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        """Beat, unless the process stopped its deliveries while this waited for a job.

        RQ beats before each wait for a job, and again after losing Redis. So a stopped thread
        ends there, and never retries a lost Redis for good. A delivery under way is not cut off.
        """
        deliveries = self.deliveries
        if deliveries is not None and deliveries.closed.is_set() and self.get_state() == WorkerStatus.IDLE:
            raise StopRequested()
        super().heartbeat(timeout, pipeline)

    def teardown(self) -> None:
        """RQ's teardown, then the worker's pubsub thread stopped, even without Redis.

        RQ records the worker's death first. With Redis gone that write fails, and RQ leaves the
        thread running. It would retry Redis for as long as the process lives.
        """
        try:
            super().teardown()
        finally:
            thread, self.pubsub_thread = self.pubsub_thread, None
            if thread is not None and thread.is_alive():
                thread.stop()  # it ends within its retry's sleep; its pubsub closes as it does
                thread.join(timeout=1)

    def register_birth(self) -> None:
        """Register, unless the process is stopping: then end this thread's work instead."""
        if self.deliveries is None:
            super().register_birth()
            return
        with self.deliveries.lock:
            if self.deliveries.closed.is_set():
                raise DeliveriesStopped(self.name)
            super().register_birth()


class DeliveriesStopped(ParleyError):
    """The process stopped its deliveries before this worker registered."""


class Deliveries:
    """The delivery threads of one `parley worker`, and each one's current RQ worker."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.workers: dict[int, WebhookWorker] = {}
        self.closed = threading.Event()  # set as the process exits: no thread registers a worker again
        self.lock = threading.Lock()  # a thread registers its next worker, or `stop` ends them, not both

    def join(self) -> None:
        for thread in self.threads:
            thread.join()

    def stop(self) -> None:
        """Record the workers' end in Redis as the process exits, so none is listed stale.

        A delivery they were running is retried by RQ, as above. A thread waiting for a job ends
        at its next beat, or with the process. A thread between two workers (after losing Redis)
        starts no new one once this ran.
        """
        with self.lock:
            self.closed.set()
            for worker in list(self.workers.values()):
                with contextlib.suppress(redis.RedisError):
                    worker.register_death()

    def next_worker(self, n: int, make: Callable[[], WebhookWorker]) -> WebhookWorker | None:
        """Thread `n`'s next worker; None once the process is stopping."""
        with self.lock:
            if self.closed.is_set():
                return None
            worker = self.workers[n] = make()
            worker.deliveries = self
            return worker


def start_webhook_workers(
    runtime: Runtime, count: int, *, name: str | None, burst: bool, logging_level: str
) -> Deliveries:
    """Start `count` delivery threads on `runtime.webhook_queue`, working until the process ends.

    In `burst`, each works until the queue is empty.
    """
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
    """Work the webhooks' queue, and after losing Redis wait and work again.

    Losing Redis means a restart or a failover.
    """
    delay = 0.5

    def make() -> WebhookWorker:
        return WebhookWorker(
            [runtime.webhook_queue], connection=runtime.redis, serializer=JSONSerializer, name=name, job_class=LeanJob
        )

    while (worker := deliveries.next_worker(n, make)) is not None:
        try:
            worker.work(burst=burst, with_scheduler=False, logging_level=logging_level)
            delay = 0.5
        except DeliveriesStopped:
            return
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
