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

import pytest
from api_support import Token, create_token
from slack_stack import SlackStack
from stacks import Stacks
from temporal_steps import message_of, questions_of, status
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
