"""Races and lost workers, on real Redis and RQ: one answer wins, stale workers cannot write."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from effect_counters import count
from prometheus_client import REGISTRY
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from runtime_helpers import held_at_gate, history_events, make_runtime, parked, runtime_and_host, start, work

from parley.worker import enqueue_overdue
from workers.exceptions import StaleEpoch
from workers.interaction import Answer
from workers.runtime.acceptance import Accepted, AcceptRefused, accept
from workers.runtime.queues import SWEEP
from workers.runtime.sweep import sweep
from workers.store.job_ids import resume as resume_job_id
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


def test_fifty_people_answering_at_once_resume_the_run_exactly_once(r: Redis, tmp_path: Path) -> None:
    users = [f"U{i:02d}" for i in range(50)]
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"assignees": users})
    barrier = threading.Barrier(len(users))
    results: list[Accepted | AcceptRefused | None] = [None] * len(users)

    def answer(i: int) -> None:
        barrier.wait()
        try:
            results[i] = accept(rt, iid, users[i], [Answer(id="colour", choice="green" if i % 2 else "red")])
        except AcceptRefused as exc:
            results[i] = exc

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(len(users))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    accepted = [x for x in results if isinstance(x, Accepted)]
    refused = [x for x in results if isinstance(x, AcceptRefused)]
    assert len(accepted) == 1 and len(refused) == len(users) - 1
    winner = accepted[0].answered_by
    assert all(e.reason == "answered" and e.refusal.by == winner for e in refused)
    assert all(winner in str(e) for e in refused)
    assert rt.queue.job_ids == [resume_job_id(run_id, iid)]
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None and interrupt.answered_by == winner
    assert len(history_events(rt, run_id, "answered")) == 1

    work(rt)
    run = rt.store.get(run_id)
    colour = "green" if users.index(winner) % 2 else "red"
    assert run.status is RunStatus.SUCCEEDED and run.result == f"colour {colour}"
    assert count(tmp_path, run_id, "executions") == 2


def test_the_same_answer_delivered_twice_is_accepted_once(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    answers = [Answer(id="colour", choice="green")]

    first = accept(rt, iid, "U1", answers, token="delivery-1")
    again = accept(rt, iid, "U1", answers, token="delivery-1")
    assert first.answered_by == again.answered_by == "U1"
    assert rt.queue.job_ids == [resume_job_id(run_id, iid)]
    assert len(history_events(rt, run_id, "answered")) == 1
    with pytest.raises(AcceptRefused) as err:
        accept(rt, iid, "U1", [Answer(id="colour", choice="red")], token="delivery-2")
    assert err.value.reason == "answered"

    work(rt)
    accept(rt, iid, "U1", answers, token="delivery-1")  # a late redelivery after the run moved on
    assert rt.queue.job_ids == []
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "colour green"
    assert count(tmp_path, run_id, "executions") == 2


def _answered_total() -> float:
    return REGISTRY.get_sample_value("parley_questions_answered_total") or 0.0


def test_a_double_click_with_the_same_answers_is_one_acceptance_counted_once(r: Redis, tmp_path: Path) -> None:
    """Two clicks of Submit (two deliveries, two tokens) by the same person with the same answers,
    racing: both are told it is accepted, and it is accepted, recorded, counted and resumed once."""
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    answers = [Answer(id="colour", choice="green")]
    before = _answered_total()
    barrier = threading.Barrier(2)
    results: list[Accepted | AcceptRefused | None] = [None, None]

    def click(i: int) -> None:
        barrier.wait()
        try:
            results[i] = accept(rt, iid, "U1", answers, token=f"U1:click-{i}")
        except AcceptRefused as exc:
            results[i] = exc

    threads = [threading.Thread(target=click, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert all(isinstance(x, Accepted) and x.answered_by == "U1" for x in results), results
    assert _answered_total() == before + 1
    assert rt.queue.job_ids == [resume_job_id(run_id, iid)]
    assert len(history_events(rt, run_id, "answered")) == 1
    accept(rt, iid, "U1", answers, token="U1:click-late")  # a third, after both: the same acceptance again
    assert _answered_total() == before + 1


def test_a_lapsed_lease_requeues_the_run_and_fences_the_old_epoch(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run = rt.store.create("t-gate", "", "U1", {"host": "test"})
    # A worker claimed the run and died: its lease ran out a second ago.
    ok, epoch, _ = rt.store.transition(
        run.id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(time.time() - 1), bump_epoch=True
    )
    assert ok and epoch == "1"
    report = sweep(rt)
    assert report.lapsed == [run.id]
    lapsed = rt.store.get(run.id)
    assert lapsed.status is RunStatus.QUEUED and lapsed.epoch == 2 and lapsed.failures == 1
    assert "worker lost" in lapsed.error
    assert rt.queue.job_ids == [f"lapse-{run.id}-1"]
    assert sweep(rt).lapsed == []  # a second sweep finds nothing more to do

    # The new execution holds the run (epoch 3); the dead worker's epoch cannot write.
    with held_at_gate(rt, run.id) as out:
        current = rt.store.get(run.id)
        assert current.status is RunStatus.RUNNING and current.epoch == 3
        with pytest.raises(StaleEpoch):
            rt.store.record(run.id, 1, "step:after", {"v": "stale"})
        with pytest.raises(StaleEpoch):
            rt.store.record(run.id, 2, "step:after", {"v": "stale"})
        assert rt.store.journal_get(run.id, "step:after") is None
    assert out == ["succeeded"]
    assert rt.store.get(run.id).result == "1 epoch 3"


def test_a_frozen_execution_that_lost_its_lease_stops_without_writing(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path, lease_ttl=1.0)
    run_id = start(rt, "t-gate")
    with held_at_gate(rt, run_id) as out:
        # Seen from a minute later, the execution stopped renewing long ago.
        assert sweep(rt, now=time.time() + 60).lapsed == [run_id]
    assert out == ["stale"]
    assert rt.store.journal_get(run_id, "step:after") is None
    assert rt.store.get(run_id).status is RunStatus.QUEUED

    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "1 epoch 3"
    assert count(tmp_path, run_id, "step") == 1
    assert host.finals == [(run_id, "1 epoch 3")]


def test_a_queued_run_whose_job_vanished_is_enqueued_again_by_the_sweep(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path, requeue_grace=30.0)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="red")])
    job_id = resume_job_id(run_id, iid)
    # The process that accepted died between closing the question and enqueueing the resume.
    Job.fetch(job_id, connection=r, serializer=JSONSerializer).delete()
    assert rt.queue.job_ids == []

    assert sweep(rt).requeued == []  # within the grace period the enqueue may still be on its way
    assert sweep(rt, now=time.time() + 31).requeued == [run_id]
    assert rt.queue.job_ids == [job_id]
    assert sweep(rt, now=time.time() + 32).requeued == []  # its job is queued now: not a second one

    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "colour red"
    assert count(tmp_path, run_id, "executions") == 2


def test_a_job_taken_by_a_worker_that_died_before_starting_it_is_enqueued_again_a_lease_later(
    r: Redis, tmp_path: Path
) -> None:
    rt = make_runtime(r, tmp_path, lease_ttl=30.0)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="red")])
    job_id = resume_job_id(run_id, iid)
    # A worker takes the job as RQ's work loop does (LMOVE into the intermediate queue), then dies.
    taken = Queue.dequeue_any([rt.queue], None, connection=r, serializer=JSONSerializer)
    assert taken is not None and taken[0].id == job_id
    assert rt.queue.intermediate_queue.get_job_ids() == [job_id]
    assert taken[0].get_status() is JobStatus.QUEUED and taken[0].started_at is None

    assert sweep(rt).requeued == []  # just taken: a live worker starts it within milliseconds
    assert sweep(rt, now=time.time() + 20).requeued == []  # still within a lease of being seen taken
    assert sweep(rt, now=time.time() + 31).requeued == [run_id]
    assert sweep(rt, now=time.time() + 32).requeued == []  # its new job is queued: not a second one
    assert sweep(rt, now=time.time() + 90).requeued == []
    assert len(rt.queue.job_ids) == 1

    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "colour red"
    assert count(tmp_path, run_id, "executions") == 2  # the first execution and the one resume


def test_overdue_scheduled_jobs_are_enqueued_once_by_many_workers(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    overdue = datetime.fromtimestamp(time.time() - 60, tz=UTC)
    rt.queue.enqueue_at(overdue, SWEEP, job_id="parley-sweep-1", unique=True)
    rt.queue.enqueue_at(datetime.now(tz=UTC), SWEEP, job_id="parley-sweep-2", unique=True)
    barrier = threading.Barrier(20)
    rescued: list[str] = []

    def rescue() -> None:
        barrier.wait()
        rescued.extend(enqueue_overdue(rt))

    threads = [threading.Thread(target=rescue) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert rescued == ["parley-sweep-1"]
    assert rt.queue.job_ids == ["parley-sweep-1"]
    assert rt.queue.scheduled_job_registry.get_job_ids() == ["parley-sweep-2"]  # not overdue: the scheduler's
