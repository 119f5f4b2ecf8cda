"""`LeanJob`: a job's success transaction writes its status once and no key that cannot exist.

Real RQ workers (in-process, burst) against the test Redis; `NotingRedis` notes each round trip.
"""

from __future__ import annotations

import pytest
from noting_redis import NotingRedis
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from workers.runtime import job_guard
from workers.runtime.rq_jobs import LeanJob
from workers.runtime.rq_workers import ParleySimpleWorker

pytestmark = pytest.mark.integration

JOBS = 5


@pytest.fixture
def noted(r: Redis, monkeypatch: pytest.MonkeyPatch) -> NotingRedis:
    """The noting client; `len` counts as one of Parley's job functions here, so the guard lets it run."""
    monkeypatch.setattr(job_guard, "JOB_FUNCTIONS", job_guard.JOB_FUNCTIONS | {"builtins.len"})
    return NotingRedis(connection_pool=r.connection_pool)


def _drain(noted: NotingRedis, job_class: type[Job], name: str) -> tuple[list[Job], list[list[str]]]:
    q = Queue(f"rq-jobs-{name}", connection=noted, serializer=JSONSerializer)
    jobs = [q.enqueue("builtins.len", "abc", job_id=f"{name}-{i}", unique=True, result_ttl=600) for i in range(JOBS)]
    noted.clear()
    worker = ParleySimpleWorker([q], connection=noted, serializer=JSONSerializer, name=name, job_class=job_class)
    worker.work(burst=True, with_scheduler=False)
    successes = [t for t in noted.trips if any(c[0] == "XADD" for c in t)]  # RQ's success transactions
    return jobs, [c for t in successes for c in t]


def test_a_success_writes_the_status_once_and_no_dependencies_key(noted: NotingRedis, r: Redis) -> None:
    _, stock = _drain(noted, Job, "stock")
    jobs, lean = _drain(noted, LeanJob, "lean")

    def status_alone(cmds: list[list[str]]) -> list[list[str]]:
        return [c for c in cmds if c[0] == "HSET" and c[2:] == ["status", "finished"]]

    def dependencies(cmds: list[list[str]]) -> list[list[str]]:
        return [c for c in cmds if c[0] == "EXPIRE" and c[1].endswith(":dependencies")]

    assert len(status_alone(stock)) == len(dependencies(stock)) == JOBS  # RQ's own (the baseline)
    assert status_alone(lean) == dependencies(lean) == []
    assert len(lean) == len(stock) - 2 * JOBS
    assert len([c for c in lean if c[0] == "EXPIRE" and c[1].endswith(":dependents")]) == JOBS
    for job in jobs:  # what RQ keeps of a success is all there
        stored = Job.fetch(job.id, connection=r, serializer=JSONSerializer)
        assert stored.get_status() is JobStatus.FINISHED and stored.return_value() == 3
        assert 0 < r.ttl(job.key) <= 600 and job.id in stored.finished_job_registry.get_job_ids()


def test_a_job_that_depends_on_a_lean_one_still_runs_after_it(noted: NotingRedis, r: Redis) -> None:
    q = Queue("rq-jobs-deps", connection=r, serializer=JSONSerializer)
    first = q.enqueue("builtins.len", "ab", job_id="first", unique=True, result_ttl=600)
    then = q.enqueue("builtins.len", "abcd", depends_on=first, result_ttl=600)
    assert then.get_status() is JobStatus.DEFERRED
    worker = ParleySimpleWorker([q], connection=noted, serializer=JSONSerializer, name="deps", job_class=LeanJob)
    worker.work(burst=True, with_scheduler=False)
    assert Job.fetch(then.id, connection=r, serializer=JSONSerializer).return_value() == 4
