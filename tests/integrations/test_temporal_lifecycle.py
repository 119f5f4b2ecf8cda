"""A Temporal workflow that ends while its question waits in Slack, end to end.

A real `temporal server start-dev`, a Temporal worker process running `temporal_workflows`, a live
`parley serve`, real `parley worker`s and the Slack Web API stand-in, as in `test_temporal_system.py`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from api_support import Token, create_token
from slack_stack import SlackStack
from stacks import Stacks
from temporal_steps import click_submit, message_of, questions_of, status
from temporal_support import SHIP_REQUEST, TASK_QUEUE, TemporalDev, TemporalWorker, stack_env
from temporalio.client import Client, WorkflowExecutionStatus

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDev]:
    yield from TemporalDev.running(tmp_path_factory.mktemp("temporal"))


@pytest.fixture(scope="module")
def stack(redis_url: str, temporal: TemporalDev, stacks: Stacks) -> SlackStack:
    return stacks(redis_url=redis_url, extra_env=stack_env(temporal))


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "workflows", temporal=("*Workflow-*",))


@pytest.fixture(scope="module")
def worker(stack: SlackStack, temporal: TemporalDev, token: Token) -> Iterator[TemporalWorker]:
    yield from TemporalWorker.for_stack(temporal, stack, token.token)


def test_a_workflow_timing_out_while_its_question_waits_leaves_it_expired_not_open(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """A timed-out workflow runs no more code to cancel its question, so the question expires with it.

    It expires no later than the workflow: the workflow takes `expired` just before its timeout, or
    times out just after; either way nobody can answer a question nobody waits for.
    """
    wid = f"AskWorkflow-{uuid.uuid4().hex[:8]}"
    asked = {"request": SHIP_REQUEST, "channel": CHANNEL, "expires_in": 3600}

    async def begin() -> None:
        client = await Client.connect(temporal.address)
        timeout = timedelta(seconds=8)
        await client.start_workflow("AskWorkflow", asked, id=wid, task_queue=TASK_QUEUE, execution_timeout=timeout)

    asyncio.run(begin())
    [question] = questions_of(stack, token, wid)
    assert stack.http is not None

    def view() -> dict[str, str]:
        assert stack.http is not None
        return dict(stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json())

    ended = (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.TIMED_OUT)
    stack.wait_for("the workflow to end", lambda: status(temporal, wid) in ended, timeout=30)
    stack.wait_for("the question to expire with it", lambda: view()["status"] == "expired")
    stack.wait_for("the message locked", lambda: "parley_submit" not in json.dumps(message_of(stack, question)))


def test_a_workflow_terminated_while_its_question_waits_has_its_question_cancelled(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """A terminated workflow runs no code to cancel its question: the sweep finds it ended and cancels it.

    The message is locked as cancelled, with a note in its thread saying why, and nobody can answer it.
    """
    wid = f"AskWorkflow-{uuid.uuid4().hex[:8]}"
    asked = {"request": SHIP_REQUEST, "channel": CHANNEL, "expires_in": 3600}

    async def begin() -> None:
        client = await Client.connect(temporal.address)
        await client.start_workflow("AskWorkflow", asked, id=wid, task_queue=TASK_QUEUE)

    asyncio.run(begin())
    [question] = questions_of(stack, token, wid)

    async def terminate() -> None:
        client = await Client.connect(temporal.address)
        await client.get_workflow_handle(wid).terminate(reason="no longer needed")

    asyncio.run(terminate())
    assert status(temporal, wid) is WorkflowExecutionStatus.TERMINATED

    def view() -> dict[str, str]:
        assert stack.http is not None
        return dict(stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json())

    stack.wait_for("the question to be cancelled", lambda: view()["status"] == "cancelled", timeout=30)
    assert view()["cancelled_by"] == "temporal"
    stack.wait_for("the message locked", lambda: "parley_submit" not in json.dumps(message_of(stack, question)))
    assert ":no_entry_sign: Cancelled" in json.dumps(message_of(stack, question))
    ended = [h for h in _history(stack, question["id"]) if h["event"] == "temporal workflow ended"]
    assert ended and ended[0]["detail"]["workflow_status"] == "TERMINATED", ended

    def note() -> list[dict[str, object]]:
        thread = stack.ws.thread(question["channel"], question["message_ts"])[1:]
        return [m for m in thread if "Temporal workflow that asked this has ended (terminated)" in str(m.get("text"))]

    stack.wait_for("a note in the question's thread saying why", note)


def test_an_answer_to_a_question_whose_workflow_had_ended_says_it_reached_nobody(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """Answered before the sweep found the workflow ended: Temporal refuses the signal, and the thread says so."""
    assert stack.redis is not None
    resting = "parley:temporal:watch:resting"
    stack.redis.set(resting, "1", ex=120)  # the check rests, so the answer comes first
    try:
        wid = f"AskWorkflow-{uuid.uuid4().hex[:8]}"
        asked = {"request": SHIP_REQUEST, "channel": CHANNEL, "expires_in": 3600}

        async def begin() -> None:
            client = await Client.connect(temporal.address)
            await client.start_workflow("AskWorkflow", asked, id=wid, task_queue=TASK_QUEUE)

        async def terminate() -> None:
            client = await Client.connect(temporal.address)
            await client.get_workflow_handle(wid).terminate(reason="no longer needed")

        asyncio.run(begin())
        [question] = questions_of(stack, token, wid)
        asyncio.run(terminate())
        assert click_submit(stack, question, {"Ship": "yes", "How many": "3"}, "U0CAROL").status_code == 200
        stack.wait_for(
            "the signal refused",
            lambda: any(h["event"] == "temporal signal refused" for h in _history(stack, question["id"])),
        )

        def note() -> list[dict[str, object]]:
            thread = stack.ws.thread(question["channel"], question["message_ts"])[1:]
            return [m for m in thread if "This answer reached nobody" in str(m.get("text"))]

        stack.wait_for("a note in the question's thread that the answer reached nobody", note)
    finally:
        stack.redis.delete(resting)


def _history(stack: SlackStack, question_id: str) -> list[dict[str, Any]]:
    assert stack.redis is not None
    return [json.loads(e) for e in stack.redis.lrange(f"parley:run:{question_id}:history", 0, -1)]


def test_a_question_naming_another_namespace_is_refused_with_422(stack: SlackStack, token: Token) -> None:
    """Parley signals one namespace; a workflow in another would wait for a signal that never comes."""
    assert stack.http is not None
    target = {"workflow_id": "AskWorkflow-billing", "namespace": "billing", "key": "tw-1"}
    asked = {"request": SHIP_REQUEST, "channel": CHANNEL, "temporal": target}
    resp = stack.http.post("/api/v1/questions", json=asked, headers=token.auth)
    assert resp.status_code == 422, resp.text
    assert resp.json()["errors"][0]["loc"] == ["temporal", "namespace"]
    listed = stack.http.get("/api/v1/questions", headers=token.auth).json()["questions"]
    assert not [q for q in listed if (q.get("temporal") or {}).get("workflow_id") == target["workflow_id"]]


def test_with_temporal_unreachable_the_sweep_goes_on_and_leaves_waiting_questions_open(
    stack: SlackStack, temporal: TemporalDev, token: Token
) -> None:
    """Temporal down: the check skips its pass at once, so questions still expire and none is cancelled."""
    assert stack.http is not None
    temporal.stop()
    try:
        asked = []
        for expires_in in (3600, 2):
            target = {"workflow_id": f"AskWorkflow-{uuid.uuid4().hex[:8]}", "namespace": "default", "key": "tw-1"}
            body = {"request": {**SHIP_REQUEST, "expires_in": expires_in}, "channel": CHANNEL, "temporal": target}
            resp = stack.http.post("/api/v1/questions", json=body, headers=token.auth)
            assert resp.status_code in (200, 201), resp.text
            asked.append(resp.json()["id"])
        waiting, expiring = asked

        def state(qid: str) -> str:
            assert stack.http is not None
            return str(stack.http.get(f"/api/v1/questions/{qid}", headers=token.auth).json()["status"])

        stack.wait_for("the short question to expire", lambda: state(expiring) == "expired", timeout=30)
        assert state(waiting) == "waiting"
        assert stack.redis is not None
        resting = "parley:temporal:watch:resting"  # the check met Temporal away and rests a while
        stack.wait_for("the check to rest", lambda: stack.redis is not None and stack.redis.exists(resting))
        assert not [h for h in _history(stack, waiting) if h["event"] == "temporal workflow ended"]
    finally:
        temporal.start()
        if stack.redis is not None:
            stack.redis.delete("parley:temporal:watch:resting")
