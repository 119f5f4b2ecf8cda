"""`parley worker`: the composition root of a worker process."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Any

import redis
from rq import SimpleWorker, Worker
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.serializers import JSONSerializer

from parley.bootstrap import build_runtime, connect_redis, question_config
from parley.metrics_setup import serve_metrics
from parley.settings import Settings
from parley.stop_flag import StopFlag
from workers.interaction import QuestionInfo, RunInfo
from workers.logs import Log
from workers.runtime.host import InteractorRouter
from workers.runtime.rq_jobs import LeanJob
from workers.runtime.rq_workers import ParleyForkWorker, ParleySimpleWorker
from workers.runtime.sweep import schedule_next
from workers.runtime.webhook_workers import start_webhook_workers
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, RunRecord

log = Log("parley.worker")
WORKER_CLASSES: dict[str, type[ParleySimpleWorker] | type[ParleyForkWorker]] = {
    "simple": ParleySimpleWorker,
    "fork": ParleyForkWorker,
}
"""RQ's `SimpleWorker` and `Worker`, with RQ's heartbeat in fewer round trips (`rq_workers`).
`simple` is the default: runs are epoch-fenced and replay from their journal, so a job
needs no process of its own to be safe, and forking costs about 4.6x the start latency and
two thirds of the throughput (bench/README.md). `fork` isolates agents that leak or crash
the interpreter. RQ's SpawnWorker is not offered: each job starts a fresh interpreter
(~140 ms) that has none of this process's wiring."""


def add_worker_hosts(settings: Settings, runtime: Runtime) -> None:
    """The hosts a worker reports to: Slack, with a bot token or in OAuth mode.

    In OAuth mode, each run posts with its workspace installation's token.
    """
    if settings.slack_bot_token or settings.oauth_mode:
        from bot.slack.host import SlackHost
        from parley.installs import web_clients

        clients = web_clients(settings, runtime.store.redis)
        notify = settings.parley_notify_assignees
        runtime.hosts.register("slack", SlackHost(clients, runtime.store, notify_assignees=notify))
        add_api_host(runtime, clients)


def add_api_host(runtime: Runtime, web: Any) -> None:
    """The host of questions asked through the HTTP API.

    It is Slack, announcing each close's webhook or signal. An answer accepted in this process
    announces its question's at once (`workers.questions.accepted`). Call it after `question_config`:
    with a Temporal address set, this process signals workflows itself.
    """
    from bot.slack.api_host import ApiQuestionHost
    from workers.questions import accepted, signal_direct, signals
    from workers.questions import config as config_mod
    from workers.questions.webhooks import announce

    accepted.install(runtime)  # an answer accepted here queues its webhook, or sends its signal, at once
    if config_mod.current().temporal.address:
        signal_direct.enable()  # this process signals the outcomes it announces itself, the job as fallback

    def on_closed(run: RunInfo, question: QuestionInfo) -> None:
        # The runtime hands hosts its own records; the webhook reads the run's status and error too.
        assert isinstance(run, RunRecord) and isinstance(question, InterruptRecord)
        announce(runtime, run, question)

    def on_closing(run: RunInfo, question: QuestionInfo) -> None:
        assert isinstance(run, RunRecord) and isinstance(question, InterruptRecord)
        signals.announce(runtime, run, question)  # before the Slack call that locks the message

    def on_ended(run: RunInfo, result: str, error: str) -> None:
        assert isinstance(run, RunRecord)
        signals.ended(runtime, run, result, error)

    runtime.hosts.register("api", ApiQuestionHost(web, runtime.store, on_closed, on_ended, on_closing))


def enqueue_overdue(runtime: Runtime, now: float | None = None) -> list[str]:
    """Enqueue scheduled jobs RQ's scheduler left well past due.

    Those are the sweep and delayed retries. RQ runs one scheduler per queue, in the worker holding
    its lock. When that worker's machine dies, the lock outlives it by a minute. The other workers
    try to take it over only every ten minutes. Meanwhile no sweep would run, and no lapsed lease
    would be noticed. Taking a job out of the registry is the claim, as ZREM succeeds for one
    caller. So one worker enqueues each overdue job.
    """
    margin = max(5.0, 3 * runtime.settings.sweep_interval)
    now = time.time() if now is None else now
    rescued: list[str] = []
    for registry in (runtime.queue.scheduled_job_registry, runtime.webhook_queue.scheduled_job_registry):
        for job_id in registry.get_jobs_to_schedule(int(now - margin)):
            try:
                registry.requeue(job_id)
            except InvalidJobOperation:  # another worker (or the scheduler) took it
                continue
            except NoSuchJobError:
                registry.remove(job_id)
                continue
            rescued.append(job_id)
    if rescued:
        log.warning("scheduled jobs were overdue; enqueued them", jobs=rescued)
    return rescued


def retry_abandoned_deliveries(runtime: Runtime) -> None:
    """Retry deliveries whose worker died mid-attempt, under their `Retry`.

    Deliveries are webhooks and Temporal signals. RQ finds such a job only when its started-registry
    entry lapses. That takes its timeout plus a minute. A worker's maintenance also only looks every
    ten minutes. This looks every sweep interval. So a delivery cut off by a killed worker is
    retried about a minute and a half later.
    """
    runtime.webhook_queue.started_job_registry.cleanup()


def _keep_sweep_scheduled(runtime: Runtime, stop: threading.Event) -> None:
    """Re-seed the sweep's schedule, surviving a lost sweep job, Redis restart or dead scheduler."""
    while not stop.wait(runtime.settings.sweep_interval):
        try:
            schedule_next(runtime)
            enqueue_overdue(runtime)
            retry_abandoned_deliveries(runtime)
        except Exception:  # Redis away for a moment: try again next interval
            log.warning("could not schedule the sweep", exc=True)


def run_worker(
    settings: Settings,
    *,
    burst: bool = False,
    worker_class: str = "simple",
    name: str | None = None,
    metrics: tuple[str, int] | None = None,
) -> int:
    client = connect_redis(settings)
    runtime = build_runtime(settings, client, InteractorRouter())
    question_config(settings)
    if settings.parley_temporal_address:
        from workers.questions import signals

        signals.prepare()  # before any delivery waits for it
    add_worker_hosts(settings, runtime)
    if metrics:
        serve_metrics(runtime.store, *metrics)
    schedule_next(runtime)
    stop = threading.Event()
    threading.Thread(target=_keep_sweep_scheduled, args=(runtime, stop), daemon=True, name="sweep-seed").start()
    cls = WORKER_CLASSES[worker_class]
    rq_level = "DEBUG" if settings.parley_log_level.upper() == "DEBUG" else "WARNING"
    stopping = StopFlag()  # set by signal handlers: no lock (parley/stop_flag.py)
    deliveries = start_webhook_workers(
        runtime, settings.parley_webhook_workers, name=name, burst=burst, logging_level=rq_level
    )
    try:
        while True:
            worker = cls([runtime.queue], connection=client, serializer=JSONSerializer, name=name, job_class=LeanJob)
            worker.also_scheduled = (runtime.webhook_queue,)
            _note_stop_requests(worker, stopping)
            log.info(
                "worker starting",
                worker=worker.name,
                worker_class=worker_class,
                agents=runtime.registry.names(),
                webhook_threads=settings.parley_webhook_workers,
            )
            try:
                worker.work(burst=burst, with_scheduler=True, logging_level=rq_level)
            except (redis.ConnectionError, redis.TimeoutError):
                log.warning("worker lost Redis", worker=worker.name, exc=True)
            if burst or stopping.is_set():
                if burst:
                    deliveries.join()
                return 0
            # RQ's loop gives up on a Redis error it does not expect (a restart, a failover):
            # wait for Redis and work again, rather than leave the machine without a worker.
            if not _wait_for_redis(client, stopping):
                return 0
            with contextlib.suppress(redis.RedisError):
                worker.register_death()  # frees the name for the next registration
            log.warning("Redis is back; working again", worker=worker.name)
    finally:
        stop.set()
        deliveries.stop()


def _note_stop_requests(worker: Worker | SimpleWorker, stopping: StopFlag) -> None:
    """Remember a SIGTERM/SIGINT RQ handled, telling a requested stop from RQ giving up."""
    request_stop = worker.request_stop

    def noted(signum: int, frame: Any) -> None:
        stopping.set()
        request_stop(signum, frame)

    worker.request_stop = noted  # type: ignore[method-assign]


def _wait_for_redis(client: redis.Redis, stopping: StopFlag, cap: float = 5.0) -> bool:
    """Ping until Redis answers (True) or a stop is requested meanwhile (False)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopping.set)
    delay = 0.1
    while not stopping.is_set():
        try:
            if client.ping():
                return True
        except redis.RedisError:
            pass
        stopping.wait(delay)
        delay = min(delay * 2, cap)
    return False
