"""Workers the bench starts besides `parley worker`: raw RQ workers, and WorkerPools.

`python -m bench.rawworker --queue Q --class simple|fork|spawn|pool-simple|pool-fork [--num N]`
runs a raw RQ worker on `Q` (JSON serializer, RQ logging at WARNING, with the
scheduler, as `parley worker` runs its own). `--parley` instead wires Parley's
runtime exactly as `parley worker` does (agents, Slack host, the sweep's schedule)
and runs RQ's `WorkerPool` of N workers on Parley's queue: the one choice RQ
offers that `parley worker` has no flag for.
"""

from __future__ import annotations

import argparse
import os

import redis
from rq import Queue, SimpleWorker, Worker
from rq.serializers import JSONSerializer
from rq.worker import SpawnWorker
from rq.worker_pool import WorkerPool

CLASSES: dict[str, type[Worker]] = {"simple": SimpleWorker, "fork": Worker, "spawn": SpawnWorker}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--queue", default="bench-raw")
    p.add_argument("--class", dest="cls", default="simple")
    p.add_argument("--num", type=int, default=1)
    p.add_argument("--parley", action="store_true")
    args = p.parse_args()
    if args.parley:
        from parley import settings as settings_mod
        from parley.bootstrap import build_runtime, connect_redis
        from parley.worker import add_worker_hosts
        from workers import logs
        from workers.runtime.host import InteractorRouter
        from workers.runtime.sweep import schedule_next

        settings = settings_mod.load()
        logs.configure(settings.parley_log_level)
        client = connect_redis(settings)
        runtime = build_runtime(settings, client, InteractorRouter())
        add_worker_hosts(settings, runtime)
        schedule_next(runtime)
        queue_name = runtime.queue.name
    else:
        import bench.jobs  # preloaded like Parley's job modules, so a forked horse does not import it per job

        bench.jobs._redis()
        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        queue_name = args.queue
    if args.cls.startswith("pool"):
        inner = CLASSES[args.cls.removeprefix("pool-") or "simple"]
        pool = WorkerPool(
            [queue_name], connection=client, num_workers=args.num, worker_class=inner, serializer=JSONSerializer
        )
        pool.start(logging_level="WARNING")
        return
    worker = CLASSES[args.cls](
        [Queue(queue_name, connection=client, serializer=JSONSerializer)], connection=client, serializer=JSONSerializer
    )
    worker.work(with_scheduler=True, logging_level="WARNING")


if __name__ == "__main__":
    main()
