"""Parley's RQ queue: a unique enqueue lists the queue in `rq:queues` once a minute, not every time.

Real RQ against the test Redis; `NotingRedis` notes each command sent.
"""

from __future__ import annotations

import pytest
from noting_redis import NotingRedis
from redis import Redis
from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer

from workers.runtime import queues
from workers.runtime.queues import enqueue_run, queue

pytestmark = pytest.mark.integration


def _commands(noted: NotingRedis) -> list[list[str]]:
    return [c for trip in noted.trips for c in trip]


def _listings(noted: NotingRedis) -> list[list[str]]:
    return [c for c in _commands(noted) if c[0] == "SADD" and c[1] == Queue.redis_queues_keys]


def test_the_queue_is_listed_by_the_first_enqueue_and_not_again(r: Redis) -> None:
    noted = NotingRedis(connection_pool=r.connection_pool)
    pq = queue(noted)
    assert [enqueue_run(pq, f"run{i}", f"run-run{i}") for i in range(5)] == [True] * 5
    assert _listings(noted) == [["SADD", Queue.redis_queues_keys, pq.key]]
    first = _commands(noted).index(_listings(noted)[0])
    later = [c[0] for c in _commands(noted)[first + 1 :]]
    assert "MULTI" not in later and later.count("EVALSHA") == 5  # each enqueue: RQ's unique script alone
    assert [q.name for q in Queue.all(connection=r, serializer=JSONSerializer)] == [queues.QUEUE_NAME]
    assert pq.job_ids == [f"run-run{i}" for i in range(5)]
    assert enqueue_run(pq, "run0", "run-run0") is False  # a duplicate is still refused
    assert pq.count == 5


def test_the_listing_is_renewed_once_its_time_is_up(r: Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    noted = NotingRedis(connection_pool=r.connection_pool)
    pq = queue(noted)
    enqueue_run(pq, "run0", "run-run0")
    r.delete(Queue.redis_queues_keys)  # e.g. `rq empty`, or a flushed database
    monkeypatch.setattr(queues, "REGISTERED_FOR", 0.0)
    enqueue_run(pq, "run1", "run-run1")
    assert len(_listings(noted)) == 2
    assert r.smembers(Queue.redis_queues_keys) == {pq.key.encode()}


def test_a_job_enqueued_without_listing_runs(r: Redis) -> None:
    pq = queue(r)
    enqueue_run(pq, "a", "job-a")
    enqueue_run(pq, "b", "job-b")
    assert pq.job_ids == ["job-a", "job-b"]
    worker = SimpleWorker([pq], connection=r)
    assert worker.count(queue=pq) == 0
    assert len(pq) == 2
