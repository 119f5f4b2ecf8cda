"""`parley worker`: the composition root of a worker process."""

from __future__ import annotations

import threading

from rq import SimpleWorker, Worker
from rq.serializers import JSONSerializer
from rq.worker import SpawnWorker

from parley.bootstrap import build_runtime, connect_redis
from parley.settings import Settings
from workers.logs import Log
from workers.runtime.host import HostRouter
from workers.runtime.sweep import schedule_next
from workers.runtime.wiring import Runtime

log = Log("parley.worker")
WORKER_CLASSES: dict[str, type[Worker]] = {"simple": SimpleWorker, "fork": Worker, "spawn": SpawnWorker}


def add_worker_hosts(settings: Settings, runtime: Runtime) -> None:
    """The hosts a worker reports to: Slack when a bot token is configured."""
    if settings.slack_bot_token:
        from bot.slack.client import make_web_client
        from bot.slack.host import SlackHost

        web = make_web_client(settings.slack_bot_token, settings.slack_api_url)
        runtime.hosts.register("slack", SlackHost(web, runtime.store))


def _keep_sweep_scheduled(runtime: Runtime, stop: threading.Event) -> None:
    """Re-seed the sweep's schedule, so it survives a lost sweep job or a Redis restart."""
    while not stop.wait(runtime.settings.sweep_interval):
        try:
            schedule_next(runtime)
        except Exception:  # Redis away for a moment: try again next interval
            log.warning("could not schedule the sweep", exc=True)


def run_worker(settings: Settings, *, burst: bool = False, worker_class: str = "simple", name: str | None = None) -> int:
    client = connect_redis(settings)
    runtime = build_runtime(settings, client, HostRouter())
    add_worker_hosts(settings, runtime)
    schedule_next(runtime)
    stop = threading.Event()
    threading.Thread(target=_keep_sweep_scheduled, args=(runtime, stop), daemon=True, name="sweep-seed").start()
    cls = WORKER_CLASSES[worker_class]
    worker = cls([runtime.queue], connection=client, serializer=JSONSerializer, name=name)
    log.info("worker starting", worker=worker.name, worker_class=worker_class, agents=runtime.registry.names())
    try:
        rq_level = "DEBUG" if settings.parley_log_level.upper() == "DEBUG" else "WARNING"
        worker.work(burst=burst, with_scheduler=True, logging_level=rq_level)
    finally:
        stop.set()
    return 0
