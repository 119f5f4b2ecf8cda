"""Questions nobody answers in time, reminders, and cancelled runs, on real Redis and RQ."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from effect_counters import count
from pydantic import ValidationError
from redis import Redis
from rq.job import Job
from runtime_helpers import dump_database, held_at_gate, make_runtime, parked, paused, runtime_and_host, start, work

from workers.interaction import Answer, Item, ItemType, Request
from workers.runtime import admin
from workers.runtime.acceptance import Accepted, AcceptRefused, accept
from workers.runtime.execute import execute
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.job_ids import resume as resume_job_id
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

RED = [Answer(id="colour", choice="red")]


def refused(rt: Runtime, iid: str, answers: list[Answer] = RED) -> AcceptRefused:
    with pytest.raises(AcceptRefused) as err:
        accept(rt, iid, "U1", answers)
    return err.value


def expire(rt: Runtime, run_id: str, iid: str) -> None:
    expires_at = rt.store.interrupt(iid).expires_at  # type: ignore[union-attr]
    assert expires_at is not None
    assert sweep(rt, now=expires_at - 0.01).expired == []  # not due yet
    assert sweep(rt, now=time.time() + 2).expired == [iid]
    assert rt.store.get(run_id).status is RunStatus.QUEUED
    assert rt.queue.job_ids == [resume_job_id(run_id, iid)]


def test_an_expired_question_fails_a_run_that_does_not_catch_it(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 1})
    expire(rt, run_id, iid)
    assert host.closed == []  # shown by the resumed run, not by the sweep
    assert r.zcard(keys.waiting_index("U1")) == 0 and r.zcard(keys.expiry_index()) == 0

    before = dump_database(r)
    assert refused(rt, iid).reason == "expired"
    assert dump_database(r) == before

    work(rt)
    assert host.closed == [(run_id, "expired")]
    run = rt.store.get(run_id)
    assert run.status is RunStatus.EXPIRED
    assert run.error == "expired: question '#1' expired without an answer"
    assert host.failures == [(run_id, run.error)] and host.finals == []
    assert count(tmp_path, run_id, "executions") == 2
    # reminded halfway (by the first sweep), the question expired, then the run
    assert [h.event for h in rt.store.history(run_id)] == ["started", "reminded", "expired", "expired"]


def test_a_run_that_catches_the_expiry_finishes(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-ask", {"expires_in": 1, "catch": True})
    work(rt)
    expire(rt, run_id, paused(rt, run_id))
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "nobody answered"
    assert host.finals == [(run_id, "nobody answered")] and host.failures == []


def test_an_expired_question_with_use_defaults_gives_the_run_its_defaults(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 1, "on_expiry": "use_defaults", "default": "green"})
    expire(rt, run_id, iid)
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None and interrupt.state is InterruptState.EXPIRED
    assert interrupt.answers == [Answer(id="colour", choice="green")]
    assert refused(rt, iid).reason == "expired"
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "colour green"


def test_an_answer_after_the_deadline_is_refused_before_the_sweep_ran(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 1})
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None and interrupt.expires_at is not None
    time.sleep(max(0.0, interrupt.expires_at - time.time()) + 0.05)
    assert rt.store.interrupt(iid).state is InterruptState.OPEN  # type: ignore[union-attr]

    before = dump_database(r)
    assert refused(rt, iid).reason == "expired"
    assert dump_database(r) == before
    assert sweep(rt).expired == [iid]  # the sweep closes it as expired, and the run goes on
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.EXPIRED


def test_assignees_are_reminded_once_halfway_to_expiry(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 100})
    asked = rt.store.interrupt(iid).asked_at  # type: ignore[union-attr]

    assert sweep(rt, now=asked + 40).reminded == []
    assert sweep(rt, now=asked + 51).reminded == [iid]
    assert sweep(rt, now=asked + 60).reminded == []
    assert host.reminders == [(run_id, iid)]
    assert [h.event for h in rt.store.history(run_id)].count("reminded") == 1
    assert rt.store.get(run_id).status is RunStatus.PAUSED  # a reminder is not an expiry
    assert accept(rt, iid, "U1", RED).answered_by == "U1"


def test_a_question_of_two_hours_gets_a_last_call_fifteen_minutes_before_expiry(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 7200})
    asked = rt.store.interrupt(iid).asked_at  # type: ignore[union-attr]

    assert sweep(rt, now=asked + 3601).reminded == [iid]  # half-life
    assert host.last_calls == []
    assert sweep(rt, now=asked + 6290).reminded == []
    assert sweep(rt, now=asked + 6301).reminded == [iid]  # 900 s before expiry
    assert sweep(rt, now=asked + 7000).reminded == []  # once
    assert host.reminders == [(run_id, iid), (run_id, iid)] and host.last_calls == [(run_id, iid)]
    entries = [h.detail for h in rt.store.history(run_id) if h.event == "reminded"]
    assert [e.get("last_call", False) for e in entries] == [False, True]
    assert accept(rt, iid, "U1", RED).answered_by == "U1"
    assert r.zcard(keys.remind_index()) == 0


@pytest.mark.parametrize(
    ("fields", "due"),
    [
        ({"expires_in": 3600}, [(1801, False)]),  # an hour or less: no last call unless asked
        ({"expires_in": 3000, "last_call": 2000}, [(1001, True)]),  # before half-life: the only reminder
        ({"expires_in": 7200, "last_call": 0}, [(3601, False)]),  # 0: none
        ({"expires_in": 600, "last_call": 60}, [(301, False), (541, True)]),
    ],
)
def test_last_calls_follow_the_request(
    r: Redis, tmp_path: Path, fields: dict[str, int], due: list[tuple[int, bool]]
) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", fields)
    asked = rt.store.interrupt(iid).asked_at  # type: ignore[union-attr]
    for after, last_call in due:
        assert sweep(rt, now=asked + after).reminded == [iid]
        assert ((run_id, iid) in host.last_calls) is last_call
        host.last_calls.clear()
    assert sweep(rt, now=asked + fields["expires_in"] - 1).reminded == []
    assert len(host.reminders) == len(due)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"last_call": 60}, "last_call needs expires_in"),
        ({"expires_in": 600, "last_call": 600}, "must be shorter than expires_in"),
        ({"expires_in": 600, "last_call": -1}, "greater than or equal to 0"),
    ],
)
def test_a_last_call_that_cannot_come_is_refused(fields: dict[str, int], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        Request(reason="Pick", items=[Item(id="x", text="X", type=ItemType.FREE_TEXT)], **fields)


def test_cancelling_a_paused_run_closes_its_question(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"expires_in": 100})

    cancelled = admin.cancel(rt, run_id, by="U-admin")
    assert cancelled.status is RunStatus.CANCELLED
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None and interrupt.state is InterruptState.CANCELLED and interrupt.closed_by == "U-admin"
    assert host.closed == []  # a worker shows the cancel
    work(rt)
    assert host.closed == [(run_id, "cancelled")]
    assert rt.store.waiting_on("U1") == [] and r.zcard(keys.expiry_index()) == 0 and r.zcard(keys.remind_index()) == 0

    before = dump_database(r)
    err = refused(rt, iid)
    assert err.reason == "cancelled" and err.refusal.by == "U-admin"
    assert dump_database(r) == before
    assert sweep(rt, now=time.time() + 200) == sweep(rt)  # nothing left to expire or remind
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.CANCELLED
    assert count(tmp_path, run_id, "executions") == 1


def test_a_cancel_racing_an_answer_closes_the_question_once(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_ids = [start(rt, "t-ask") for _ in range(15)]
    work(rt)
    for run_id in run_ids:
        iid = paused(rt, run_id)
        barrier = threading.Barrier(2)
        results: dict[str, Any] = {}

        def answer(iid: str = iid, results: dict[str, Any] = results, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                results["answer"] = accept(rt, iid, "U1", RED)
            except AcceptRefused as exc:
                results["answer"] = exc

        def cancel(
            run_id: str = run_id, results: dict[str, Any] = results, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            results["cancel"] = admin.cancel(rt, run_id, by="U-admin")

        threads = [threading.Thread(target=answer), threading.Thread(target=cancel)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)

        interrupt = rt.store.interrupt(iid)
        assert interrupt is not None
        closes = [h for h in rt.store.history(run_id) if h.detail.get("interrupt_id") == iid]
        assert len(closes) == 1, closes  # the question was closed exactly once
        assert results["cancel"].status is RunStatus.CANCELLED  # a cancel after the answer cancels the queued run
        if isinstance(results["answer"], Accepted):
            assert interrupt.state is InterruptState.ANSWERED and closes[0].event == "answered"
        else:
            assert results["answer"].reason == "cancelled"
            assert interrupt.state is InterruptState.CANCELLED and closes[0].event == "cancelled"
            assert not Job.exists(resume_job_id(run_id, iid), connection=r)
        assert rt.store.get(run_id).status is RunStatus.CANCELLED
    work(rt)
    for run_id in run_ids:
        assert rt.store.get(run_id).status is RunStatus.CANCELLED
        assert count(tmp_path, run_id, "executions") == 1  # no resume executed the agent
    assert rt.store.count(RunStatus.CANCELLED) == len(run_ids) and rt.store.count(RunStatus.QUEUED) == 0


def test_cancelling_a_running_run_stops_its_execution_from_writing(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-gate")
    with held_at_gate(rt, run_id) as out:
        assert admin.cancel(rt, run_id, by="U-admin").status is RunStatus.CANCELLED
    assert out == ["stale"]
    assert rt.store.journal_get(run_id, "step:after") is None
    assert rt.store.get(run_id).status is RunStatus.CANCELLED
    assert host.finals == [] and host.failures == []
    assert [h.event for h in rt.store.history(run_id)] == ["started", "cancelled"]


def test_the_resumed_run_shows_the_answer_once_and_a_cancel_before_resume_shows_it_too(
    r: Redis, tmp_path: Path
) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    resumed, cancelled = start(rt, "t-ask"), start(rt, "t-ask")
    work(rt)
    for run_id in (resumed, cancelled):
        accept(rt, paused(rt, run_id), "U1", RED)
    assert host.closed == []  # the ack path shows nothing; the worker does
    admin.cancel(rt, cancelled, by="U-admin")  # answered, queued, never resumes
    assert host.closed == []  # the admin's process shows nothing either; a worker does
    work(rt)
    assert sorted(host.closed) == sorted([(cancelled, "answered"), (resumed, "answered")])
    execute(rt, resumed)  # nothing queued: no second update
    assert len(host.closed) == 2
