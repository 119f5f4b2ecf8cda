"""Runs that raise, re-ask, or lose their worker: retried a bounded number of times, steps never repeated."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from effect_counters import count
from redis import Redis
from runtime_helpers import history_events, make_runtime, runtime_and_host, start, work

from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


def test_a_run_that_raises_twice_is_retried_and_succeeds(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": 2})
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    assert run.result == "ok after 3 executions, step 1"
    assert run.failures == 2
    assert [h.detail["error"] for h in history_events(rt, run_id, "retry")] == [
        "RuntimeError: flaky on execution 1",
        "RuntimeError: flaky on execution 2",
    ]
    assert "flaky on execution 2" in history_events(rt, run_id, "retry")[-1].detail["trace"]
    assert count(tmp_path, run_id, "step") == 1  # recorded before the first raise, replayed after
    assert host.finals == [(run_id, run.result)] and host.failures == []


def test_a_run_that_always_raises_fails_after_three_retries(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": "always"})
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.FAILED
    assert run.error == "RuntimeError: still broken on execution 4"
    assert count(tmp_path, run_id, "executions") == 4
    assert len(history_events(rt, run_id, "retry")) == 3 and run.failures == 3
    assert [h.detail["error"] for h in history_events(rt, run_id, "failed")] == [run.error]
    assert host.failures == [(run_id, run.error)] and host.finals == []
    assert count(tmp_path, run_id, "step") == 1
    assert rt.queue.job_ids == []


def test_re_asking_a_key_opens_new_attempts_until_the_limit(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-reask")
    work(rt)
    asked = []
    for _ in range(3):
        iid = rt.store.get(run_id).interrupt
        assert rt.store.get(run_id).status is RunStatus.PAUSED and iid not in asked
        asked.append(iid)
        accept(rt, iid, "U1", [Answer(id="colour", choice="red")])
        work(rt)

    assert rt.store.journal_get(run_id, "ask:colour") == asked
    attempts = [rt.store.interrupt(iid).attempt for iid in asked]  # type: ignore[union-attr]
    assert attempts == [1, 2, 3]
    answered = history_events(rt, run_id, "answered")
    assert [(h.detail["attempt"], h.detail["interrupt_id"]) for h in answered] == list(
        zip([1, 2, 3], asked, strict=True)
    )
    assert all(h.detail["answers"] == [{"id": "colour", "choice": "red"}] for h in answered)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.FAILED
    assert "asked 3 times" in run.error and "'colour'" in run.error
    assert host.failures == [(run_id, run.error)]
    assert len(host.questions) == 3


def test_a_re_asked_question_answered_well_lets_the_run_finish(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-reask")
    work(rt)
    for choice in ("red", "red", "green"):
        accept(rt, rt.store.get(run_id).interrupt, "U1", [Answer(id="colour", choice=choice)])
        work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "green at last"
    assert [h.detail["attempt"] for h in history_events(rt, run_id, "answered")] == [1, 2, 3]


def test_a_run_whose_workers_keep_dying_fails_after_three_retries(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-gate", "", "U1", {"host": "test"})
    for attempt in range(1, 5):
        ok, _, _ = rt.store.transition(
            run.id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(time.time() - 1), bump_epoch=True
        )
        assert ok, attempt
        assert sweep(rt).lapsed == [run.id]
    failed = rt.store.get(run.id)
    assert failed.status is RunStatus.FAILED
    assert failed.error == "worker lost while running (attempt 4)"
    assert len(history_events(rt, run.id, "lease lapsed")) == 3
    assert host.failures == [(run.id, failed.error)]
    assert sweep(rt).lapsed == [] and host.failures == [(run.id, failed.error)]


def _lose_worker(rt: Runtime, run_id: str) -> None:
    """A worker claims the run and dies at once: its lease lapsed a second ago; the sweep notices."""
    ok, _, _ = rt.store.transition(
        run_id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(time.time() - 1), bump_epoch=True
    )
    assert ok
    assert sweep(rt).lapsed == [run_id]


def test_worker_losses_are_counted_only_while_the_run_makes_no_progress(r: Redis, tmp_path: Path) -> None:
    """Two losses before the question and two after the answer: four in all, but never four in a row."""
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-ask")
    for n in (1, 2):
        _lose_worker(rt, run_id)
        assert rt.store.get(run_id).failures == n
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.PAUSED
    accept(rt, run.interrupt, "U1", [Answer(id="colour", choice="green")])
    assert rt.store.get(run_id).failures == 0  # the accepted answer is progress
    rt.queue.empty()  # the resume job: the workers that take it die before claiming
    for n in (1, 2):
        _lose_worker(rt, run_id)
        assert rt.store.get(run_id).failures == n
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    assert run.result == "colour green"
    assert len(history_events(rt, run_id, "lease lapsed")) == 4


def test_a_recorded_step_restarts_the_count_of_worker_losses(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-counter")
    for _ in range(3):
        _lose_worker(rt, run_id)
    work(rt)  # asks the first question
    accept(rt, rt.store.get(run_id).interrupt, "U1", [Answer(id="colour", choice="red")])
    for _ in range(3):
        _lose_worker(rt, run_id)
    work(rt)  # records the counted step, then asks the second question
    assert rt.store.get(run_id).failures == 0
    assert rt.store.get(run_id).status is RunStatus.PAUSED
