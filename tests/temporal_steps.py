"""Steps of the Temporal system tests: start a workflow and read its result, find the question it
asked, and answer it in Slack with Slack's own signed payloads (approve, edit, reject, submit)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from api_support import Token
from slack_forms import button_action, find_element, form_state
from slack_payloads import (
    EVENTS_PATH,
    FORM,
    block_actions_payload,
    interaction_body,
    signed_headers,
    view_submission_payload,
)
from slack_stack import SlackStack, free_port
from temporal_support import TASK_QUEUE, TemporalDev
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus


def start(temporal: TemporalDev, workflow: str, arg: Any = None, *, task_queue: str = TASK_QUEUE) -> str:
    """Start `workflow` of `temporal_workflows` with `arg` on `task_queue`; its workflow id."""
    workflow_id = f"{workflow}-{uuid.uuid4().hex[:8]}"

    async def go() -> None:
        client = await Client.connect(temporal.address)
        args = [] if arg is None else [arg]
        await client.start_workflow(workflow, args=args, id=workflow_id, task_queue=task_queue)

    asyncio.run(go())
    return workflow_id


def result(temporal: TemporalDev, workflow_id: str, timeout: float = 30.0) -> Any:
    async def go() -> Any:
        client = await Client.connect(temporal.address)
        return await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), timeout)

    return asyncio.run(go())


def status(temporal: TemporalDev, workflow_id: str) -> WorkflowExecutionStatus | None:
    async def go() -> WorkflowExecutionStatus | None:
        client = await Client.connect(temporal.address)
        return (await client.get_workflow_handle(workflow_id).describe()).status

    return asyncio.run(go())


def questions_of(stack: SlackStack, token: Token, workflow_id: str, count: int = 1) -> list[dict[str, Any]]:
    """The workflow's questions, once posted and open for answers."""

    def find() -> list[dict[str, Any]] | None:
        assert stack.http is not None
        page = stack.http.get("/api/v1/questions", params={"limit": 100}, headers=token.auth).json()
        found = [
            q
            for q in page["questions"]
            if (q.get("temporal") or {}).get("workflow_id") == workflow_id and q["message_ts"]
        ]
        open_ = [q for q in found if is_open(stack, q)]
        return open_ if len(open_) >= count else None

    return stack.wait_for(f"{count} question(s) of {workflow_id}", find)


def is_open(stack: SlackStack, question: dict[str, Any]) -> bool:
    """The question's run is parked on it (it is posted just before): an answer now is taken."""
    return stack.status(question["id"]) == "paused"


def message_of(stack: SlackStack, question: dict[str, Any]) -> dict[str, Any]:
    message = stack.ws.message(question["channel"], question["message_ts"])
    assert message is not None
    return message


def submit_payload(stack: SlackStack, question: dict[str, Any], fills: dict[str, Any], user: str) -> dict[str, Any]:
    """`user` filling the question by label and clicking Submit, as Slack sends it."""
    message = message_of(stack, question)
    block, button = find_element(message["blocks"], "parley_submit")
    return block_actions_payload(
        user=user,
        message=message,
        channel=question["channel"],
        action=button_action(block, button),
        state_values=form_state(message["blocks"], fills),
    )


def click_submit(stack: SlackStack, question: dict[str, Any], fills: dict[str, Any], user: str) -> httpx.Response:
    return stack.interact(submit_payload(stack, question, fills, user))


def unreachable_serve(stack: SlackStack) -> int:
    """Start a second `parley serve` that cannot reach Temporal, and return its port.

    Its Temporal address is a closed port. An answer clicked there is accepted, its own signal
    fails at once, and a worker's delivery job sends it.
    """
    port = free_port()
    stack.spawn_serve("serve-unreachable", port, env={"PARLEY_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"})

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    stack.wait_for("the second parley serve to answer /healthz", healthy, timeout=30)
    return port


def interact_at(port: int, payload: dict[str, Any]) -> httpx.Response:
    """Send `payload`, signed as Slack signs it, to the `parley serve` on `port`."""
    body = interaction_body(payload)
    url = f"http://127.0.0.1:{port}{EVENTS_PATH}"
    return httpx.post(url, content=body.encode(), headers=signed_headers(body, FORM), timeout=15)


def modal(stack: SlackStack, question: dict[str, Any], action_id: str, user: str) -> dict[str, Any]:
    """`user` clicks `action_id` (Edit…, Reject) on the approval; the modal it opened, as Slack holds it."""
    message = message_of(stack, question)
    before = len(stack.ws.open_views(user))
    block, button = find_element(message["blocks"], action_id)
    payload = block_actions_payload(
        user=user,
        message=message,
        channel=question["channel"],
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(user),
    )
    assert stack.interact(payload).status_code == 200
    stack.wait_for("the modal to open", lambda: len(stack.ws.open_views(user)) > before)
    return stack.ws.open_views(user)[-1]


def submit_modal(stack: SlackStack, view: dict[str, Any], user: str, item: str, value: str) -> None:
    iid = view["private_metadata"].split("|")[0]
    state = {f"f|{iid}|{item}": {"answer": {"type": "plain_text_input", "value": value}}}
    resp = stack.interact(view_submission_payload(user=user, view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == "", resp.text


def click(stack: SlackStack, question: dict[str, Any], action_id: str, user: str) -> None:
    """`user` clicks a button that acts at once (Approve) on the question's message."""
    message = message_of(stack, question)
    block, button = find_element(message["blocks"], action_id)
    payload = block_actions_payload(
        user=user, message=message, channel=question["channel"], action=button_action(block, button)
    )
    assert stack.interact(payload).status_code == 200


def replayed(temporal: TemporalDev, workflow_id: str) -> None:
    """Replay the workflow's whole history on today's code: raises if it is not deterministic."""
    from temporal_workflows import WORKFLOWS
    from temporalio.worker import Replayer

    async def go() -> None:
        client = await Client.connect(temporal.address)
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        await Replayer(workflows=WORKFLOWS).replay_workflow(history)

    asyncio.run(go())


def signals_received(temporal: TemporalDev, workflow_id: str) -> int:
    """How many signals the workflow's history records, whoever sent them."""

    async def go() -> int:
        client = await Client.connect(temporal.address)
        events = (await client.get_workflow_handle(workflow_id).fetch_history()).events
        return sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)

    return asyncio.run(go())
