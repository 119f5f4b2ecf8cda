"""`ask_human` with MCP elicitation's `requested_schema`, end to end: a form covering every type of the
2025-11-25 form-mode subset is asked over MCP (stdio and `/mcp`), filled in Slack's form (a signed
click and view submission, as Slack sends them), and comes back as `action: accept` with `content`
typed as the schema says; declined in Slack (its "Decline" button, by someone it waits on) it is
`action: decline`; a schema outside the subset is a tool error naming the property, and
nothing is posted.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from api_support import Token, create_token
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from slack_forms import button_action, find_element, form_state, texts
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import PARLEY, SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

CHANNEL = "C0GENERAL"
USER = "U0CAROL"
AT = datetime(2026, 12, 4, 17, 30, tzinfo=UTC)

SCALARS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ticket": {"type": "string", "title": "Ticket", "minLength": 5, "maxLength": 12, "pattern": "^[A-Z]+-[0-9]+$"},
        "owner": {"type": "string", "format": "email", "title": "Owner"},
        "runbook": {"type": "string", "format": "uri", "title": "Runbook"},
        "due": {"type": "string", "format": "date", "title": "Due"},
        "window": {"type": "string", "format": "date-time", "title": "Window"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "title": "Canary ratio"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2, "title": "Replicas"},
        "urgent": {"type": "boolean", "title": "Urgent"},
        "size": {"type": "string", "enum": ["small", "large"], "title": "Size"},
        "tier": {
            "type": "string",
            "title": "Tier",
            "oneOf": [{"const": "gold", "title": "Gold support"}, {"const": "free", "title": "Community"}],
        },
    },
    "required": ["ticket", "owner", "due", "urgent", "tier"],
}
CHOICES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "regions": {"type": "array", "items": {"type": "string", "enum": ["eu", "us", "ap"]}, "title": "Regions"},
        "areas": {
            "type": "array",
            "title": "Areas",
            "items": {"anyOf": [{"const": "api", "title": "Public API"}, {"const": "web", "title": "Web app"}]},
            "default": ["api"],
        },
        "note": {"type": "string", "title": "Note", "default": "none"},
    },
    "required": ["regions"],
}


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "elicitation-agent")


def stdio(stack: SlackStack) -> Client:
    params = StdioServerParameters(command=str(PARLEY), args=["mcp"], env=stack.env())
    return Client(params, read_timeout_seconds=90)


def over_http(stack: SlackStack, token: Token) -> Client:
    http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
    return Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http))


def fill_the_form(stack: SlackStack, message_text: str, fills: dict[str, Any]) -> dict[str, Any]:
    """A person opens the question's form and submits it with `fills` by property; the form as it opened."""
    stack.wait_for("the question", lambda: any(message_text in texts(m["blocks"]) for m in stack.ws.messages(CHANNEL)))
    stack.settle()
    message = next(m for m in stack.ws.messages(CHANNEL) if message_text in texts(m["blocks"]))
    block, button = find_element(message["blocks"], "parley_open_form")
    mark = stack.mark()
    click = block_actions_payload(
        user=USER, message=message, channel=CHANNEL, action=button_action(block, button),
        trigger=stack.ws.issue_trigger(USER),
    )  # fmt: skip
    assert stack.interact(click).status_code == 200
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    view = stack.ws.open_views(USER)[-1]
    labels = {b["block_id"].split("|")[-1]: b["label"]["text"] for b in view["blocks"] if b["type"] == "input"}
    state = form_state(view["blocks"], {labels[name]: value for name, value in fills.items()})
    resp = stack.interact(view_submission_payload(user=USER, view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == "", resp.text
    return view


def ask_and_answer(client: Client, stack: SlackStack, args: dict[str, Any], fills: dict[str, Any]) -> dict[str, Any]:
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with client:

            async def ask() -> None:
                got["result"] = await client.call_tool("ask_human", args)

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                got["view"] = await anyio.to_thread.run_sync(lambda: fill_the_form(stack, args["message"], fills))

    anyio.run(scenario)
    result: CallToolResult = got["result"]
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return {"result": dict(result.structured_content or {}), "view": got["view"]}


def test_every_scalar_type_round_trips_through_slack_typed(stack: SlackStack) -> None:
    message = f"Hand-over {uuid.uuid4().hex[:6]}: fill in the release details"
    args = {"channel": CHANNEL, "message": message, "requested_schema": SCALARS, "wait_seconds": 45}
    fills = {
        "ticket": "OPS-1234",
        "owner": "ana@example.com",
        "runbook": "https://wiki.example.com/runbooks/api",
        "due": "2026-12-24",
        "window": int(AT.timestamp()),
        "ratio": "0.25",
        "replicas": "3",
        "urgent": "Yes",
        "size": "large",
        "tier": "Gold support",
    }
    done = ask_and_answer(stdio(stack), stack, args, fills)
    result, view = done["result"], done["view"]
    kinds = {b["block_id"].split("|")[-1]: b["element"]["type"] for b in view["blocks"] if b["type"] == "input"}
    assert kinds == {
        "ticket": "plain_text_input", "owner": "email_text_input", "runbook": "url_text_input",
        "due": "datepicker", "window": "datetimepicker", "ratio": "number_input", "replicas": "number_input",
        "urgent": "radio_buttons", "size": "static_select", "tier": "static_select",
    }  # fmt: skip
    assert result["status"] == "answered" and result["action"] == "accept", result
    assert result["content"] == {
        "ticket": "OPS-1234",
        "owner": "ana@example.com",
        "runbook": "https://wiki.example.com/runbooks/api",
        "due": "2026-12-24",
        "window": "2026-12-04T17:30:00Z",
        "ratio": 0.25,
        "replicas": 3,
        "urgent": True,
        "size": "large",
        "tier": "gold",
    }
    assert type(result["content"]["replicas"]) is int and type(result["content"]["ratio"]) is float


def test_multi_choices_and_defaults_round_trip_over_http(stack: SlackStack, token: Token) -> None:
    message = f"Rollout {uuid.uuid4().hex[:6]}: where does it go?"
    args = {"channel": CHANNEL, "message": message, "requested_schema": CHOICES, "wait_seconds": 45}
    done = ask_and_answer(over_http(stack, token), stack, args, {"regions": ["eu", "ap"]})
    view = done["view"]
    areas = next(b for b in view["blocks"] if b["type"] == "input" and b["block_id"].endswith("|areas"))
    assert [o["text"]["text"] for o in areas["element"]["options"]] == ["Public API", "Web app"]
    result = done["result"]
    assert result["action"] == "accept", result
    assert result["content"] == {"regions": ["eu", "ap"], "areas": ["api"], "note": "none"}  # defaults kept


def test_a_wrong_answer_is_refused_in_the_form_as_the_schema_says(stack: SlackStack) -> None:
    """The schema's pattern is the item's: a ticket not matching it is refused in the form."""
    message = f"Hand-over {uuid.uuid4().hex[:6]}: the ticket"
    schema = {"type": "object", "properties": {"ticket": SCALARS["properties"]["ticket"]}, "required": ["ticket"]}

    async def ask() -> dict[str, Any]:
        async with stdio(stack) as client:
            called = await client.call_tool(
                "ask_human", {"channel": CHANNEL, "message": message, "requested_schema": schema, "wait_seconds": 0}
            )
            return dict(called.structured_content or {})

    asked = anyio.run(ask)
    assert asked["status"] == "waiting"
    stack.wait_for("the question", lambda: any(message in texts(m["blocks"]) for m in stack.ws.messages(CHANNEL)))
    stack.settle()
    msg = next(m for m in stack.ws.messages(CHANNEL) if message in texts(m["blocks"]))
    block, button = find_element(msg["blocks"], "parley_open_form")
    mark = stack.mark()
    click = block_actions_payload(
        user=USER, message=msg, channel=CHANNEL, action=button_action(block, button),
        trigger=stack.ws.issue_trigger(USER),
    )  # fmt: skip
    assert stack.interact(click).status_code == 200
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    view = stack.ws.open_views(USER)[-1]
    [label] = [b["label"]["text"] for b in view["blocks"] if b["type"] == "input"]
    wrong = stack.interact(
        view_submission_payload(user=USER, view=view, state_values=form_state(view["blocks"], {label: "ops 12"}))
    ).json()
    assert wrong["response_action"] == "errors"
    assert list(wrong["errors"].values()) == ["does not match the pattern ^[A-Z]+-[0-9]+$"]


def test_a_schema_outside_the_subset_is_refused_naming_the_property(stack: SlackStack) -> None:
    mark = stack.mark()
    outside = {
        "type": "object",
        "properties": {
            "address": {"type": "object", "properties": {"city": {"type": "string"}}},
            "api_key": {"type": "string", "format": "password"},
            "token": {"type": "string", "writeOnly": True},
            "when": {"type": "string", "format": "time"},
            "odd": {"type": "number", "multipleOf": 2},
            "ok": {"type": "boolean"},
        },
    }

    async def ask() -> list[CallToolResult]:
        async with stdio(stack) as client:
            return [
                await client.call_tool("ask_human", {"channel": CHANNEL, "requested_schema": outside}),
                await client.call_tool(
                    "ask_human",
                    {"channel": CHANNEL, "requested_schema": SCALARS, "questions": [{"id": "x"}], "message": "Hi"},
                ),
            ]

    refused, both = anyio.run(ask)
    assert refused.is_error and both.is_error
    text = refused.content[0].text  # type: ignore[union-attr]
    assert "requested_schema: property 'address': a nested object" in text
    assert "property 'api_key': asks for a secret" in text and "property 'token': asks for a secret" in text
    assert "property 'when': format 'time' is outside the subset" in text
    assert "property 'odd': multipleOf is outside the subset for a number" in text
    assert "'ok'" not in text
    assert "give questions or requested_schema, not both" in both.content[0].text  # type: ignore[union-attr]
    assert stack.calls("chat.postMessage", since=mark) == []


DECIDE: dict[str, Any] = {
    "type": "object",
    "properties": {"go": {"type": "boolean", "title": "Go ahead?"}, "note": {"type": "string", "title": "Note"}},
    "required": ["go"],
}


def call(tool: str, args: dict[str, Any], stack: SlackStack) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with stdio(stack) as client:
            called = await client.call_tool(tool, args)
            assert not called.is_error, called.content
            return dict(called.structured_content or {})

    return anyio.run(run)


def posted(stack: SlackStack, message_text: str) -> dict[str, Any]:
    stack.wait_for("the question", lambda: any(message_text in texts(m["blocks"]) for m in stack.ws.messages(CHANNEL)))
    stack.settle()
    return next(m for m in stack.ws.messages(CHANNEL) if message_text in texts(m["blocks"]))


def click_decline(stack: SlackStack, message: dict[str, Any], user: str) -> None:
    block, button = find_element(message["blocks"], "parley_decline")
    click = block_actions_payload(user=user, message=message, channel=CHANNEL, action=button_action(block, button))
    assert stack.interact(click).status_code == 200


def test_a_form_declined_in_slack_is_decline_and_only_its_assignees_may_decline(stack: SlackStack) -> None:
    message = f"Deploy {uuid.uuid4().hex[:6]}: go ahead?"
    args = {"channel": CHANNEL, "message": message, "requested_schema": DECIDE, "assignees": [USER], "wait_seconds": 0}
    asked = call("ask_human", args, stack)
    assert asked["status"] == "waiting"
    qid = asked["question_id"]
    question = posted(stack, message)
    [row] = [b for b in question["blocks"] if b.get("block_id", "").startswith("qa|")]
    assert [e["text"]["text"] for e in row["elements"]] == ["Submit", "Answer in a form", "Decline"]

    mark = stack.mark()
    click_decline(stack, question, "U0DAVE")  # not asked: refused, and the question still waits
    stack.wait_ephemeral("U0DAVE", lambda text: f"not yours to answer; it is waiting on <@{USER}>" in text, since=mark)
    assert call("get_answer", {"question_id": qid, "wait_seconds": 0}, stack)["status"] == "waiting"

    click_decline(stack, question, USER)
    result = call("get_answer", {"question_id": qid, "wait_seconds": 30}, stack)
    assert result["status"] == "cancelled" and result["action"] == "decline", result
    assert result["cancelled_by"] == USER and "content" not in result
    stack.wait_for(
        "the question to be locked",
        lambda: any(f"Declined by <@{USER}>" in texts(m["blocks"]) for m in stack.ws.messages(CHANNEL)),
    )


def test_decline_after_submit_changes_nothing(stack: SlackStack) -> None:
    message = f"Deploy {uuid.uuid4().hex[:6]}: go ahead, then?"
    args = {"channel": CHANNEL, "message": message, "requested_schema": DECIDE, "wait_seconds": 0}
    asked = call("ask_human", args, stack)
    question = posted(stack, message)  # as it was before the answer: a late click carries it
    fill_the_form(stack, message, {"go": "Yes"})
    answered = call("get_answer", {"question_id": asked["question_id"], "wait_seconds": 30}, stack)
    assert answered["action"] == "accept" and answered["content"] == {"go": True}, answered

    mark = stack.mark()
    click_decline(stack, question, USER)
    stack.wait_ephemeral(USER, lambda text: f"already answered by <@{USER}>" in text, since=mark)
    again = call("get_answer", {"question_id": asked["question_id"], "wait_seconds": 0}, stack)
    assert again == answered
