"""Reading one question's receipt through each surface, and a person's clicks on its Slack message.

The surfaces are those of docs/receipts.md: the API's `GET /questions/{id}/receipt`, the
webhook's `data.receipt`, MCP's structured results (the official SDK's client on `/mcp`, with
the asker's token) and the Python clients, `Parley` and `AsyncParley`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import httpx2
import slack_forms
from api_support import Receiver, Token
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from slack_forms import button_action, find_element, form_state, texts
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import SlackStack

from parley.async_client import AsyncParley
from parley.client import Parley
from workers.store import keys

CHANNEL = "C0GENERAL"


# ---- a person in Slack ---------------------------------------------------------------------
def message_with(stack: SlackStack, text: str, action_id: str) -> dict[str, Any]:
    """The open question message whose text holds `text` and that offers `action_id`."""

    def found() -> dict[str, Any] | None:
        for message in stack.ws.messages(CHANNEL):
            blocks = message.get("blocks") or []
            if text in texts(blocks) and any(e.get("action_id") == action_id for e in _elements(blocks)):
                return message
        return None

    message: dict[str, Any] = stack.wait_for(f"the question {text!r}", found)
    stack.wait_for(f"the run to park on {text!r}", lambda: parked(stack, message))
    return message


def parked(stack: SlackStack, message: dict[str, Any]) -> bool:
    """Whether the run of `message`'s question (or group) is paused on it: a click before then is refused.

    A question is posted just before its run parks, and a person is never that quick.
    """
    assert stack.redis is not None
    ids = {b["block_id"].split("|")[1] for b in message["blocks"] if b.get("block_id", "").count("|") >= 1}
    for qid in ids:
        run_id = stack.redis.hget(keys.interrupt(qid), "run_id") or stack.redis.hget(keys.group(qid), "run_id")
        if run_id is not None:
            return stack.status(run_id.decode()) == "paused"
    return False


def _elements(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for block in blocks:
        out += [e for e in block.get("elements") or [] if isinstance(e, dict)]
        out += [block[k] for k in ("element", "accessory") if isinstance(block.get(k), dict)]
    return out


def press(
    stack: SlackStack, message: dict[str, Any], action_id: str, user: str, fills: dict[str, Any] | None = None
) -> None:
    """`user` clicks `action_id` on `message`, with the message's inputs filled as `fills` says."""
    block, button = find_element(message["blocks"], action_id)
    state = form_state(message["blocks"], fills) if fills else None
    payload = block_actions_payload(
        user=user,
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        state_values=state,
        trigger=stack.ws.issue_trigger(user),
    )
    resp = stack.interact(payload)
    assert resp.status_code == 200, resp.text


def fill_modal(stack: SlackStack, message: dict[str, Any], action_id: str, user: str, fills: dict[str, str]) -> None:
    """`user` clicks `action_id`, which opens a modal, and submits it filled as `fills` says."""
    mark = stack.mark()
    press(stack, message, action_id, user)
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    view = stack.ws.open_views(user)[-1]
    resp = stack.interact(view_submission_payload(user=user, view=view, state_values=form_state(view["blocks"], fills)))
    assert resp.status_code == 200 and not resp.content, resp.text


def posted_blocks(stack: SlackStack, question_id: str) -> list[dict[str, Any]]:
    """The blocks of the chat.postMessage that posted question `question_id`, as the Web API received them."""
    return slack_forms.posted_blocks(stack.calls("chat.postMessage"), question_id)


def api_client(stack: SlackStack, token: Token) -> httpx.Client:
    """An HTTP client on the stack's `/api/v1`, as `token`."""
    assert stack.http is not None
    return httpx.Client(base_url=str(stack.http.base_url) + "/api/v1", headers=token.auth, timeout=40)


# ---- the surfaces --------------------------------------------------------------------------
def from_api(stack: SlackStack, token: Token, qid: str) -> dict[str, Any]:
    """`GET /api/v1/questions/{id}/receipt` once the question closed and its receipt is written."""
    with api_client(stack, token) as client:
        stack.wait_for("the question to close", lambda: client.get(f"/questions/{qid}").json()["status"] != "waiting")
        got = stack.wait_for("its receipt", lambda: (r := client.get(f"/questions/{qid}/receipt")).is_success and r)
    body: dict[str, Any] = got.json()
    return body


def from_webhook(stack: SlackStack, hooks: Receiver, name: str) -> tuple[str, dict[str, Any]]:
    """The webhook's event type and its `data.receipt`, as the receiver got them."""
    [delivery] = stack.wait_for(f"the webhook {name}", lambda: hooks.deliveries(name))
    event = json.loads(delivery["body"])
    return str(event["type"]), dict(event["data"]["receipt"])


def mcp_client(stack: SlackStack, token: Token) -> Client:
    http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
    return Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http))


def mcp_call(stack: SlackStack, token: Token, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool call over `/mcp`; its structured result."""

    async def call() -> dict[str, Any]:
        async with mcp_client(stack, token) as client:
            done = await client.call_tool(tool, args)
        assert not done.is_error, done.content
        return dict(done.structured_content or {})

    return anyio.run(call)


def from_mcp(stack: SlackStack, token: Token, qid: str) -> dict[str, Any]:
    """`get_answer`'s structured result for a closed question."""
    return mcp_call(stack, token, "get_answer", {"question_id": qid, "wait_seconds": 0})


def from_clients(stack: SlackStack, token: Token, qid: str) -> dict[str, dict[str, Any] | None]:
    """The receipt as each Python client gives it: `receipt()`, `outcome().receipt`, `outcome().decision.receipt`."""
    url = str(stack.http.base_url)  # type: ignore[union-attr]
    with Parley(url, token.token) as python:
        ended = python.outcome(qid, timeout=30)
        got = {"Parley.receipt()": python.receipt(qid), "Parley.outcome().receipt": ended.receipt}
        if ended.decision is not None:
            got["Parley.outcome().decision.receipt"] = ended.decision.receipt

    async def asynchronously() -> None:
        async with AsyncParley(url, token.token) as python:
            ended = await python.outcome(qid, timeout=30)
            got["AsyncParley.receipt()"] = await python.receipt(qid)
            got["AsyncParley.outcome().receipt"] = ended.receipt

    asyncio.run(asynchronously())
    return got
