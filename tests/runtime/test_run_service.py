"""`RunService`, the door hosts come in by: start, answer, decline, reassign, wait and admin, on a real Redis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import runtime_and_host, work

from workers.exceptions import AdminError
from workers.interaction import Answer
from workers.runs import (
    AnswerOutcome,
    Closings,
    InterruptRecord,
    ReassignRefused,
    RefusalReason,
    RunService,
    RunStatus,
    StartLimits,
    StartRefused,
    Where,
)
from workers.store import connection
from workers.store.starts import Rate

pytestmark = pytest.mark.integration
CONVERSATION = {"host": "test", "team": "T1", "channel": "C1"}


def _paused(service: RunService, params: dict[str, object], user: str = "U1") -> InterruptRecord:
    """A run of `t-ask` started through the service and worked until it waits on its question."""
    run = service.start("t-ask", json.dumps(params), user, CONVERSATION)
    assert not isinstance(run, StartRefused)
    work(service.runtime)
    interrupt = service.interrupt(service.run(run.id).interrupt)
    assert interrupt is not None
    return interrupt


def test_start_queues_the_run_once_and_the_answer_finishes_it(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    prepared: list[str] = []
    run = service.start("t-ask", "{}", "U1", CONVERSATION, before=lambda run: prepared.append(run.id))
    assert not isinstance(run, StartRefused) and run.status is RunStatus.QUEUED
    assert prepared == [run.id]
    assert rt.queue.count == 1  # one job, which a worker takes
    work(rt)
    interrupt = service.question(service.run(run.id).interrupt, "U1")
    assert isinstance(interrupt, InterruptRecord)
    where = Where(team="T1", channel="C1")
    outcome = service.answer(interrupt, "U1", [Answer(id="colour", choice="green")], token="t1", where=where)
    assert outcome.ok and outcome.run_id == run.id
    again = service.answer(interrupt, "U1", [Answer(id="colour", choice="red")], token="t2", where=where)
    assert again.reason is RefusalReason.ANSWERED  # accepted once; the second answer changes nothing
    work(rt)
    assert service.run(run.id).status is RunStatus.SUCCEEDED
    assert host.finals == [(run.id, "colour green")]


def test_a_start_limit_refuses_and_creates_nothing(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    limits = StartLimits(per_user=Rate(1, 60.0))
    assert not isinstance(service.create("t-ask", "{}", "U1", CONVERSATION, limits=limits), StartRefused)
    refused = service.create("t-ask", "{}", "U1", CONVERSATION, limits=limits)
    assert isinstance(refused, StartRefused) and refused.admission.retry_after > 0
    assert sum(service.counts().values()) == 1


def test_an_answer_from_another_workspace_is_refused(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    interrupt = _paused(service, {})
    answers = [Answer(id="colour", choice="green")]
    outcome = service.answer(interrupt, "U1", answers, token="t", where=Where(team="T2", channel="C1"))
    assert isinstance(outcome, AnswerOutcome) and outcome.reason is RefusalReason.WRONG_TEAM
    assert service.run(interrupt.run_id).status is RunStatus.PAUSED


def test_lookup_of_a_question_that_is_not_there_is_a_refusal(r: Redis, tmp_path: Path) -> None:
    service = RunService(runtime_and_host(r, tmp_path)[0])
    found = service.question("i-no-such", "U1")
    assert isinstance(found, AnswerOutcome) and found.reason is RefusalReason.UNKNOWN


def test_reassign_tells_the_host_and_refuses_a_stranger(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    interrupt = _paused(service, {"assignees": ["U1"]})
    with pytest.raises(ReassignRefused):
        service.reassign(interrupt, by="U9", to="U2", is_admin=False, to_is_bot=False)
    now = service.reassign(interrupt, by="U1", to="U2", is_admin=False, to_is_bot=False)
    assert now.assignees == ["U2"]
    assert host.reassignments == [(interrupt.run_id, interrupt.id, "U1", "U2")]


def test_cancel_closes_the_question_and_queues_its_effects(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    interrupt = _paused(service, {})
    cancelled = service.cancel(interrupt.run_id, by="U-admin")
    assert cancelled.status is RunStatus.CANCELLED
    assert host.closed == []  # the lock is a worker's job, not the asker's
    work(rt)
    assert host.closed == [(interrupt.run_id, "cancelled")]
    with pytest.raises(AdminError):
        service.cancel(interrupt.run_id, by="U-admin")
    assert [h.event for h in service.show(interrupt.run_id).history][-1] == "cancelled"


def test_remind_retry_and_listing(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    interrupt = _paused(service, {})
    service.remind(interrupt.run_id, by="U-admin")
    assert host.reminders == [(interrupt.run_id, interrupt.id)]
    page = service.list_runs(RunStatus.PAUSED)
    assert [service.summarize(run).run_id for run in page.runs] == [interrupt.run_id]
    with pytest.raises(AdminError):
        service.retry(interrupt.run_id, by="U-admin")  # only failed or expired runs are retried
    assert service.counts()["paused"] == 1


def test_decline_closes_the_question_once(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    service = RunService(rt)
    interrupt = _paused(service, {})
    where = Where(team="T1", channel="C1")
    assert service.decline(interrupt, "U1", where=where).ok
    assert service.run(interrupt.run_id).status is RunStatus.CANCELLED
    assert host.closed == [(interrupt.run_id, "cancelled")]
    again = service.decline(interrupt, "U1", where=where)
    assert again.reason is RefusalReason.CANCELLED


def test_wait_wakes_on_the_close(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    interrupt = _paused(RunService(rt), {})  # the worker runs here: it sets signal handlers

    async def scenario() -> tuple[InterruptRecord | None, InterruptRecord | None]:
        closings = Closings(connection.connect_async(_url(r)))
        await closings.start()
        service = RunService(rt, closings)
        timed_out = await service.wait(interrupt.id, 0.2)
        answers = [Answer(id="colour", choice="red")]
        where = Where(team="T1", channel="C1")
        waiting = asyncio.ensure_future(service.wait(interrupt.id, 10.0))
        await asyncio.sleep(0.2)
        outcome = await asyncio.to_thread(service.answer, interrupt, "U1", answers, token="w", where=where)
        assert outcome.ok, outcome
        closed = await waiting
        await closings.stop()
        return timed_out, closed

    timed_out, closed = asyncio.run(scenario())
    assert timed_out is not None and timed_out.state.value == "open"
    assert closed is not None and closed.state.value == "answered"


def _url(r: Redis) -> str:
    kw = r.connection_pool.connection_kwargs
    if kw.get("path"):
        return f"unix://{kw['path']}?db={kw.get('db', 0)}"
    return f"redis://{kw.get('host', '127.0.0.1')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
