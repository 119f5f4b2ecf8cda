"""`parley worker`'s delivery threads: once the process stops them, none registers again, and they end.

A delivery thread whose RQ worker gave up starts a new one. If that happened after the process
had recorded its workers' end, the new worker stayed listed though its process was gone. Real
RQ workers in threads, against a Redis server of the test's own.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis_servers import data_server, have_redis_server
from rq import Worker
from rq.serializers import JSONSerializer
from runtime_helpers import make_runtime

from workers.runtime.rq_jobs import LeanJob
from workers.runtime.webhook_workers import DeliveriesStopped, WebhookWorker, start_webhook_workers

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]


def _listed(r: object, prefix: str) -> list[str]:
    return sorted(w.name for w in Worker.all(connection=r) if w.name.startswith(prefix))  # type: ignore[arg-type]


def _wait(what: str, check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_no_delivery_worker_registers_after_the_stop(tmp_path: Path) -> None:
    server = data_server("deliveries", tmp_path).start()  # its own: RQ lists every worker of a server
    try:
        r = server.client()
        runtime = make_runtime(r, tmp_path)
        deliveries = start_webhook_workers(runtime, 2, name="stopping", burst=False, logging_level="WARNING")
        _wait("both delivery threads registered", lambda: len(_listed(r, "stopping-webhooks-")) == 2)
        _wait("both listening on their channels", lambda: all(w.pubsub_thread for w in deliveries.workers.values()))
        listening = [w.pubsub_thread for w in deliveries.workers.values()]

        deliveries.stop()  # as the process exits
        assert _listed(r, "stopping-webhooks-") == []
        assert deliveries.next_worker(0, lambda: pytest.fail("a worker made after the stop")) is None

        late = WebhookWorker([runtime.webhook_queue], connection=r, serializer=JSONSerializer, job_class=LeanJob)
        late.deliveries = deliveries
        with pytest.raises(DeliveriesStopped):  # one made just before the stop, registering just after it
            late.work(burst=True, with_scheduler=False)
        assert _listed(r, late.name) == []
        assert _listed(r, "stopping-webhooks-") == []
    finally:
        server.stop()
    # Waiting for a job when Redis went away, each thread ends, and does not retry Redis for good.
    # Each ends after one reconnect: redis-py's default retry backs off up to 2 + 4 + 8 s, and RQ's
    # pubsub handler sleeps 2 s. On a quiet machine the delivery threads took 6.5-12.5 s. So the
    # bound is a minute: a thread retrying Redis for good still fails it.
    _wait("the delivery threads to end", lambda: not any(t.is_alive() for t in deliveries.threads), 60.0)
    _wait("their pubsub threads to end too", lambda: not any(t is not None and t.is_alive() for t in listening), 60.0)
