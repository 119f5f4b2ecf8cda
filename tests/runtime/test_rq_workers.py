"""The RQ worker classes `parley worker` runs: RQ's bookkeeping in fewer round trips, its TTLs kept.

Real RQ workers (in-process, burst) against the test Redis; `NotingRedis` notes every round trip.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from noting_redis import NotingRedis
from redis import Redis
from redis_servers import data_server, have_redis_server
from rq import Callback, Queue, SimpleWorker, get_current_job
from rq.serializers import JSONSerializer
from rq.suspension import is_suspended, resume, suspend

from parley.worker import WORKER_CLASSES
from workers.runtime import rq_workers
from workers.runtime.rq_workers import COALESCE_SECONDS, ParleyForkWorker, ParleySimpleWorker

pytestmark = pytest.mark.integration

JOBS = 10


def worker_key_ttl() -> int:
    """A job that reports the TTL of the key of the worker running it."""
    job = get_current_job()
    assert job is not None and job.worker_name
    return int(job.connection.ttl(f"rq:worker:{job.worker_name}"))


def _beats(trips: list[list[list[str]]], worker_key: str) -> list[list[list[str]]]:
    """The round trips that carried any of a heartbeat's commands: `HSET last_heartbeat` of
    `worker_key`, and the `EXPIRE`s of that key and of its executions' key."""
    beat = (["HSET", worker_key, "last_heartbeat"], ["EXPIRE", worker_key], ["EXPIRE", f"{worker_key}:executions"])
    return [t for t in trips if any(c[: len(b)] == b for c in t for b in beat)]


def _alone(beats: list[list[list[str]]]) -> list[list[list[str]]]:
    """The beats' round trips that carried one command alone."""
    return [t for t in beats if len(t) == 1]


def what_a_running_job_sees() -> dict[str, object]:
    """A job that reports what RQ's start wrote, read from Redis while it runs."""
    job = get_current_job()
    assert job is not None and job.worker_name
    r, worker_key = job.connection, f"rq:worker:{job.worker_name}"
    started = [m.decode() for m in r.zrange(f"rq:wip:{job.origin}", 0, -1)]
    executions = [m.decode() for m in r.smembers(f"{worker_key}:executions")]
    return {
        "status": r.hget(job.key, "status").decode(),
        "worker_state": r.hget(worker_key, "state").decode(),
        "in_started_registry": [m for m in started if m.startswith(f"{job.id}:")] != [],
        "execution_keys": [k for k in executions if k.startswith(f"{job.id}:")],
        "execution_saved": all(r.exists(f"rq:execution:{k}") for k in executions),
    }


def fails() -> None:
    raise RuntimeError("this job fails")


def on_success(job: object, connection: object, result: object) -> None:
    """A success callback: RQ runs it between the job's end and its success transaction."""


def _drain(cls: type[SimpleWorker], client: Redis, name: str, **enqueue: object) -> tuple[SimpleWorker, list[int]]:
    q = Queue("rq-workers-test", connection=client, serializer=JSONSerializer)
    jobs = [q.enqueue(worker_key_ttl, **enqueue) for _ in range(JOBS)]
    worker = cls([q], connection=client, serializer=JSONSerializer, name=name)
    worker.work(burst=True, with_scheduler=False)
    return worker, [int(j.latest_result().return_value) for j in jobs]  # type: ignore[union-attr]


def test_parley_worker_runs_these_classes() -> None:
    assert {"simple": ParleySimpleWorker, "fork": ParleyForkWorker} == WORKER_CLASSES


def test_a_busy_worker_beats_once_per_job_in_one_round_trip_and_writes_idle_once_with_it(noted: NotingRedis) -> None:
    stock, stock_ttls = _drain(SimpleWorker, noted, "stock")
    stock_beats = _beats(noted.trips, stock.key)
    noted_before = list(noted.trips)
    noted.clear()
    ours, our_ttls = _drain(ParleySimpleWorker, noted, "ours")
    our_beats = _beats(noted.trips, ours.key)

    assert len(_alone(stock_beats)) >= 9 * JOBS, "RQ's own loop (the baseline): three beats per job, command by command"
    assert _alone(our_beats) == [], "every beat of ours goes in one round trip with its TTLs"
    assert len(our_beats) <= len(stock_beats) - 9 * JOBS, "nine round trips fewer per job: one beat per job is left"
    stock_idle = [t for t in noted_before if t == [["HSET", stock.key, "state", "idle"]]]
    assert len(stock_idle) >= 2 * JOBS, "RQ writes `idle` after each job and again before the next dequeue"
    our_states = [c for t in noted.trips for c in t if c[:2] == ["HSET", ours.key] and "state" in c[2::2]]
    our_idle = [c for c in our_states if c[2:][c[2::2].index("state") * 2 + 1] == "idle"]
    assert 1 <= len(our_idle) <= JOBS + 1, "ours writes it once per job"
    assert all("last_heartbeat" in c[2::2] for c in our_states), "and only in a heartbeat's own HSET"
    # What the beats are for still holds: while a job runs, the worker key keeps the TTL RQ gives it.
    assert min(our_ttls) >= min(stock_ttls) - 5 > 0


@contextmanager
def registered(r: Redis, name: str) -> Iterator[ParleySimpleWorker]:
    """A worker of ours with its key in Redis, as RQ's loop has it once started; removed after."""
    worker = ParleySimpleWorker(
        [Queue("rq-workers-test", connection=r, serializer=JSONSerializer)], connection=r, name=name
    )
    worker.register_birth()
    try:
        yield worker
    finally:
        worker.register_death()


def test_a_default_beat_after_one_with_its_own_ttl_waits_for_the_next_beat_at_most(r: Redis) -> None:
    with registered(r, "beats") as worker:
        worker.heartbeat()
        worker.heartbeat(30)  # a job's own TTL, as RQ sets inside its pipelines
        assert 0 < r.ttl(worker.key) <= 30
        worker.heartbeat()  # RQ's beat right after the job: it waits for the suspension check's
        assert r.ttl(worker.key) <= 30
        assert not is_suspended(r, worker)  # RQ's own check, whose pipeline carries a beat
        assert r.ttl(worker.key) > worker.worker_ttl, "the key no longer keeps the job's 30 s"

        worker.heartbeat(30)
        worker.heartbeat()  # put off once...
        worker.heartbeat()  # ...but a second default beat before any other is sent
        assert r.ttl(worker.key) > worker.worker_ttl

        r.expire(worker.key, 100)
        worker.heartbeat()  # right after a default beat: nothing to add, so not sent
        assert r.ttl(worker.key) <= 100
        time.sleep(COALESCE_SECONDS + 0.05)
        worker.heartbeat()  # the window has passed: sent again
        assert r.ttl(worker.key) > worker.worker_ttl


def _job_beats_alone(trips: list[list[list[str]]]) -> list[list[list[str]]]:
    """Round trips that wrote a job's `last_heartbeat` and nothing else."""
    return [t for t in trips if len(t) == 1 and t[0][0] == "HSET" and t[0][1].startswith("rq:job:")]


def _starts(trips: list[list[list[str]]]) -> list[list[list[str]]]:
    """The round trips that saved an execution's record or set a job `started`."""
    return [
        t
        for t in trips
        if any(c[0] == "HSET" and c[1].startswith("rq:execution:") for c in t)
        or any(c[0] == "HSET" and c[1].startswith("rq:job:") and "started" in c[2:] for c in t)
    ]


def test_a_jobs_start_is_one_transaction_and_a_running_job_sees_all_of_it(noted: NotingRedis) -> None:
    def drain(cls: type[SimpleWorker], name: str) -> list[dict[str, object]]:
        q = Queue("rq-workers-test", connection=noted, serializer=JSONSerializer)
        jobs = [q.enqueue(what_a_running_job_sees, result_ttl=600) for _ in range(JOBS)]
        cls([q], connection=noted, serializer=JSONSerializer, name=name).work(burst=True, with_scheduler=False)
        return [j.latest_result().return_value for j in jobs]  # type: ignore[union-attr]

    stock_seen = drain(SimpleWorker, "stock")
    stock_starts = _starts(noted.trips)
    noted.clear()
    our_seen = drain(ParleySimpleWorker, "ours")
    our_starts = _starts(noted.trips)

    assert len(stock_starts) == 2 * JOBS, "RQ's own: the execution, then the job's start (the baseline)"
    assert len(our_starts) == JOBS, "ours: one round trip per job"
    for trip in our_starts:  # RQ's two transactions' commands, in RQ's order: the execution's first
        assert trip[0][0] == "HSET" and trip[0][1].startswith("rq:execution:")
        assert any(c[0] == "HSET" and c[1].startswith("rq:job:") and "started" in c[2:] for c in trip)
    for trip in our_starts:  # and without the writes the same transaction makes again
        assert len([c for c in trip if c[0] == "HSET" and c[1].startswith("rq:job:")]) == 1
        assert len([c for c in trip if c[:2] == ["EXPIRE", "rq:worker:ours:executions"]]) == 1
        assert [c[2::2] for c in trip if c[:2] == ["HSET", "rq:worker:ours"]] == [["last_heartbeat", "state"]]
    assert sum(map(len, our_starts)) == sum(map(len, stock_starts)) - 3 * JOBS
    expected = {
        "status": "started",
        "worker_state": "busy",
        "in_started_registry": True,
        "execution_saved": True,
    }
    for seen in (stock_seen, our_seen):
        assert [{k: v for k, v in s.items() if k != "execution_keys"} for s in seen] == [expected] * JOBS
        assert all(len(s["execution_keys"]) == 1 for s in seen)  # type: ignore[arg-type]


@pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)")
def test_a_start_redis_refuses_leaves_no_execution_behind(tmp_path: Path) -> None:
    server = data_server("refusing", tmp_path).start()  # its own: the test makes it refuse writes
    try:
        r = server.client()
        q = Queue("rq-workers-test", connection=r, serializer=JSONSerializer)
        job = q.enqueue(worker_key_ttl, result_ttl=600)
        worker = ParleySimpleWorker([q], connection=r, serializer=JSONSerializer, name="refused-start")
        worker.register_birth()
        execution = worker.prepare_execution(job)
        assert not r.exists(execution.key), "not written before the job's start"

        r.config_set("min-replicas-to-write", 1)  # no replica: Redis refuses every write
        with pytest.raises(redis.RedisError):
            worker.prepare_job_execution(job)
        r.config_set("min-replicas-to-write", 0)
        with r.pipeline() as pipe:  # a later pipelined beat does not carry the refused writes
            worker.heartbeat(60, pipeline=pipe)
            pipe.execute()
        assert not r.exists(execution.key)
        assert r.zrange(q.started_job_registry.key, 0, -1) == []
        assert r.hget(worker.key, "state") != b"busy"
        assert job.get_status(refresh=True) == "queued"

        worker.register_death()
        after = ParleySimpleWorker([q], connection=r, serializer=JSONSerializer, name="after")
        after.work(burst=True, with_scheduler=False)  # the job runs as if nothing had happened
        assert job.get_status(refresh=True) == "finished"
        assert r.zrange(q.started_job_registry.key, 0, -1) == []
    finally:
        server.stop()


def test_a_job_that_returned_has_its_last_heartbeat_saved_with_its_success(noted: NotingRedis) -> None:
    _drain(SimpleWorker, noted, "stock")
    assert len(_job_beats_alone(noted.trips)) >= JOBS, "RQ writes it on its own as each job ends (the baseline)"
    noted.clear()
    q = Queue("rq-workers-test", connection=noted, serializer=JSONSerializer)
    jobs = [q.enqueue(worker_key_ttl, result_ttl=600) for _ in range(JOBS)]
    ParleySimpleWorker([q], connection=noted, serializer=JSONSerializer, name="ours").work(burst=True)
    assert _job_beats_alone(noted.trips) == []
    for job in jobs:
        job.refresh()
        assert job.get_status() == "finished"
        assert job.last_heartbeat is not None and job.ended_at is not None
        assert job.started_at <= job.last_heartbeat == job.ended_at  # type: ignore[operator]


def test_a_job_that_failed_or_has_a_success_callback_keeps_rqs_own_write(noted: NotingRedis) -> None:
    q = Queue("rq-workers-test", connection=noted, serializer=JSONSerializer)
    failing = [q.enqueue(fails) for _ in range(JOBS)]
    called = [q.enqueue(worker_key_ttl, on_success=Callback(on_success)) for _ in range(JOBS)]
    ParleySimpleWorker([q], connection=noted, serializer=JSONSerializer, name="ours").work(burst=True)
    written = {t[0][1] for t in _job_beats_alone(noted.trips)}
    assert written == {j.key for j in failing + called}
    assert all(j.get_status(refresh=True) == "failed" for j in failing)
    assert all(j.get_status(refresh=True) == "finished" for j in called)


def test_a_state_set_is_in_redis_once_the_next_heartbeat_is_sent(r: Redis) -> None:
    with registered(r, "states") as worker:
        worker.heartbeat()
        worker.set_state("busy")
        assert worker.get_state() == "busy"
        worker.heartbeat()  # within the coalescing window: sent all the same, for the state
        assert r.hget(worker.key, "state") == b"busy"
        worker.set_state("idle")
        worker.heartbeat(pipeline=None)
        assert r.hget(worker.key, "state") == b"idle"
        assert r.ttl(worker.key) > worker.worker_ttl


def test_the_forking_class_saves_a_returned_jobs_heartbeat_with_its_success_too(r: Redis) -> None:
    q = Queue("rq-workers-test", connection=r, serializer=JSONSerializer)
    jobs = [q.enqueue(worker_key_ttl, result_ttl=600) for _ in range(3)]
    worker = ParleyForkWorker([q], connection=r, serializer=JSONSerializer, name="forks")
    worker.work(burst=True)
    for job in jobs:
        job.refresh()
        assert job.get_status() == "finished" and job.latest_result() is not None
        assert job.last_heartbeat is not None and job.last_heartbeat == job.ended_at, "set in memory, saved whole"
        assert int(job.latest_result().return_value) > 0  # type: ignore[union-attr]


def test_the_suspension_check_beats_in_a_plain_pipeline_and_a_suspended_worker_still_waits(
    noted: NotingRedis, r: Redis
) -> None:
    ours, _ = _drain(ParleySimpleWorker, noted, "plain-check")
    checks = [(t, a) for t, a in zip(noted.trips, noted.atomic, strict=True) if ["EXISTS", "rq:suspended"] in t]
    assert checks and all(not atomic and any(c[:2] == ["HSET", ours.key] for c in t) for t, atomic in checks)
    noted.clear()

    suspend(r)
    try:
        q = Queue("rq-workers-test", connection=r, serializer=JSONSerializer)
        job = q.enqueue(worker_key_ttl)
        worker = ParleySimpleWorker([q], connection=noted, serializer=JSONSerializer, name="suspended")
        worker.work(burst=True, with_scheduler=False)  # RQ's own rule: a suspended burst worker leaves
        assert job.get_status() == "queued" and is_suspended(r)
    finally:
        resume(r)


def test_a_simple_worker_writes_its_success_counters_with_a_beat_not_with_each_job(
    noted: NotingRedis, r: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rq_workers, "STATS_SECONDS", 3600.0)  # no beat is due: written as it stops
    stock, _ = _drain(SimpleWorker, noted, "stock-counts")
    stock_counts = [c for t in noted.trips for c in t if c[0] in ("HINCRBY", "HINCRBYFLOAT")]
    noted.clear()
    ours, _ = _drain(ParleySimpleWorker, noted, "our-counts")
    our_counts = [c for t in noted.trips for c in t if c[0] in ("HINCRBY", "HINCRBYFLOAT")]
    successes = [t for t in noted.trips if any(c[0] == "XADD" for c in t)]

    assert len(stock_counts) == 2 * JOBS  # RQ's own: both counters in every success transaction
    assert len(successes) == JOBS and not any(c[0].startswith("HINCRBY") for t in successes for c in t)
    assert [c[:3] for c in our_counts] == [
        ["HINCRBY", ours.key, "successful_job_count"],
        ["HINCRBYFLOAT", ours.key, "total_working_time"],
    ]
    for worker in (stock, ours):  # what the counters say is the same
        stored = r.hmget(worker.key, "successful_job_count", "total_working_time")
        assert int(stored[0] or 0) == JOBS and float(stored[1] or 0) > 0


def test_a_failure_is_counted_at_once_as_rq_counts_it(r: Redis) -> None:
    q = Queue("rq-workers-test", connection=r, serializer=JSONSerializer)
    q.enqueue(fails)
    worker = ParleySimpleWorker([q], connection=r, serializer=JSONSerializer, name="failure-counts")
    worker.work(burst=True, with_scheduler=False)
    assert r.hget(worker.key, "failed_job_count") == b"1"
    assert r.hget(worker.key, "successful_job_count") is None
