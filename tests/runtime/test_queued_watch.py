"""The sweep finds queued runs by the queued status index: no index of its own to write.

A start, an answer and a claim each wrote a second index (`idx:accepted`) holding the same
runs with the same scores; these tests show the sweep needs only the status index.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis import Redis
from rq.job import Job
from rq.serializers import JSONSerializer
from runtime_helpers import make_runtime, parked, work

from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.sweep import sweep
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


def test_a_full_cycle_writes_no_second_index_of_queued_runs(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    assert r.zscore(keys.status_index(RunStatus.QUEUED), run.id) is not None
    assert not r.exists(keys.accepted_index())  # started: in the queued status index alone
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="red")])
    assert r.zscore(keys.status_index(RunStatus.QUEUED), run_id) is not None
    assert not r.exists(keys.accepted_index())  # answered: the same
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert not r.exists(keys.accepted_index())


def test_a_first_job_lost_before_any_worker_is_enqueued_again(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path, requeue_grace=30.0)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})  # queued, its job never enqueued
    assert sweep(rt, now=time.time() + 31).requeued == [run.id]
    assert Job.fetch(run.job, connection=r, serializer=JSONSerializer).get_status() == "queued"


def test_unwatching_leaves_a_run_queued_again_meanwhile_and_drops_one_gone(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    queued = keys.status_index(RunStatus.QUEUED)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    rt.store.unwatch_queued(run.id)  # the sweep read it as not queued; it is queued by now
    assert r.zscore(queued, run.id) is not None
    r.zadd(queued, {"r-gone": 1.0})  # an entry whose run was deleted
    rt.store.unwatch_queued("r-gone")
    assert r.zscore(queued, "r-gone") is None
