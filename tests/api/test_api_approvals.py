"""Approvals over the HTTP API (`POST /api/v1/approvals`) and MCP (`request_approval`), answered in Slack.

The approval is posted by the question service to the Web API stand-in; the approver's Edit…,
Reject and their forms are Slack's signed payloads to the bolt app; the run resumes on a real
RQ worker; the decision is read back by long-poll, by the Python client and by MCP's tools.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio as aioredis
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from starlette.applications import Starlette
from starlette.routing import Mount

from bot.api.app import create_api
from bot.mcp.server import Tools
from bot.mcp.tools import ToolInputError
from bot.playground import LoopbackServer
from parley.client import Parley
from workers.interaction import Decision
from workers.questions import Caller, QuestionService, tokens
from workers.questions.waiting import listening
from workers.store.closings import Closings
from workers.store.records import InterruptState

pytestmark = pytest.mark.integration

USER = "U0CAROL"
ARGS = {"service": "api", "note": "nightly", "replicas": 3}


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


@pytest.fixture
def server(bot: Bot, redis_url: str) -> Iterator[tuple[str, str]]:
    """`/api/v1` on a loopback HTTP server, and an `ask` token."""
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    token = tokens.create(service.store, "approvals", ["ask"]).token
    app = Starlette(routes=[Mount("/api/v1", create_api(service))], lifespan=lambda _app: listening(service))
    running = LoopbackServer(app, lifespan=True).start()
    try:
        yield running.url + "/api/v1", token
    finally:
        running.stop()


def modal(bot: Bot, message: dict[str, Any], action_id: str) -> dict[str, Any]:
    """Click `action_id` on the approval `message` as `USER`; the modal it opened, as Slack holds it."""
    block, button = find_element(message["blocks"], action_id)
    payload = block_actions_payload(
        user=USER,
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        trigger=bot.ws.issue_trigger(USER),
    )
    assert bot.interact(payload).status == 200
    bot.wait_for("the modal to open", lambda: bot.ws.open_views(USER))
    return bot.ws.open_views(USER)[-1]


def submit(bot: Bot, view: dict[str, Any], item: str, value: str) -> None:
    iid = view["private_metadata"].split("|")[0]
    state = {f"f|{iid}|{item}": {"answer": {"type": "plain_text_input", "value": value}}}
    ack = bot.interact(view_submission_payload(user=USER, view=view, state_values=state))
    assert (ack.status, ack.body) == (200, "")


def test_an_approval_over_the_api_is_edited_in_slack_and_the_client_gets_the_decision(
    bot: Bot, server: tuple[str, str]
) -> None:
    url, token = server
    body = {"channel": CHANNEL, "action": "Deploy api", "args": ARGS, "editable": ["note"], "assignees": [USER]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        created = api.post("/approvals", json=body)
        assert created.status_code == 201, created.text
        question = created.json()
        assert (question["kind"], question["status"], question["decision"]) == ("approval", "waiting", None)
        message = bot.ws.message(CHANNEL, question["message_ts"])
        assert message is not None
        form = modal(bot, message, "parley_open_form")
        assert [b["block_id"].split("|")[-1] for b in form["blocks"] if b["type"] == "input"] == ["note"]
        submit(bot, form, "note", "nightly, after the backup")
        work(bot.runtime)
        answered = api.get(f"/questions/{question['id']}", params={"wait": 5}).json()
    assert answered["status"] == "answered" and answered["kind"] == "approval"
    assert answered["decision"] == {
        "approved": True,
        "args": {**ARGS, "note": "nightly, after the backup"},
        "edited": True,
        "changes": [["note", "nightly", "nightly, after the backup"]],
        "reason": None,
        "by": USER,
        "standing": False,
    }

    bad = httpx.post(
        f"{url}/approvals",
        json={**body, "editable": ["nope"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert bad.status_code == 422 and "not among the args" in bad.json()["detail"]


def test_the_python_client_returns_a_rejections_reason(bot: Bot, server: tuple[str, str]) -> None:
    url, token = server
    decisions: list[Decision] = []
    with Parley(url.removesuffix("/api/v1"), token) as client:
        asking = threading.Thread(
            target=lambda: decisions.append(
                client.approve("Deploy api", ARGS, channel=CHANNEL, assignees=[USER], timeout=30)
            )
        )
        asking.start()
        message = bot.wait_for("the approval to be posted", lambda: _approval_message(bot))
        submit(bot, modal(bot, message, "parley_reject"), "_reason", "not during the freeze")
        work(bot.runtime)  # the run resumes on an RQ worker, in this (the main) thread
        asking.join(timeout=30)
    [decision] = decisions
    assert (decision.approved, decision.reason, decision.args, decision.by) == (
        False,
        "not during the freeze",
        ARGS,
        USER,
    )


def _approval_message(bot: Bot) -> dict[str, Any] | None:
    """The approval's message once its question is open for answers (it is posted just before)."""
    for message in bot.ws.messages(CHANNEL):
        for block in message.get("blocks") or []:
            if block.get("block_id", "").startswith("qa|"):
                interrupt = bot.runtime.store.interrupt(block["block_id"].split("|")[1])
                return message if interrupt is not None and interrupt.state is InterruptState.OPEN else None
    return None


def test_mcp_request_approval_takes_action_args_and_schema(bot: Bot, redis_url: str) -> None:
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    caller = Caller("assistant", via="mcp")
    tools = Tools(service, lambda ctx: caller)
    schema = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 40}}}
    proposed = {"service": "api", "note": "nightly"}
    args = {"channel": CHANNEL, "action": "Deploy api", "args": proposed, "schema": schema, "wait_seconds": 0}
    first = asyncio.run(tools.request_approval(caller, args))
    assert first["status"] == "waiting"
    message = bot.wait_for("the approval to be posted", lambda: _approval_message(bot))
    form = modal(bot, message, "parley_open_form")
    [note] = [b for b in form["blocks"] if b["type"] == "input" and b["block_id"].endswith("|note")]
    assert note["element"]["max_length"] == 40  # typed by the schema
    submit(bot, form, "note", "weekly")
    work(bot.runtime)
    done = asyncio.run(tools.get_answer(caller, {"question_id": first["question_id"], "wait_seconds": 5}))
    assert done["status"] == "answered"
    assert done["decision"]["args"]["note"] == "weekly" and done["decision"]["changes"] == [
        ["note", "nightly", "weekly"]
    ]


def test_mcp_request_approval_refuses_a_schema_no_edit_could_be_checked_against(bot: Bot, redis_url: str) -> None:
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    caller = Caller("assistant", via="mcp")
    tools = Tools(service, lambda ctx: caller)
    args = {"channel": CHANNEL, "action": "Deploy api", "args": {"note": "x"}, "schema": {"$ref": "#"}}
    with pytest.raises(ToolInputError, match="refers to itself without end"):
        asyncio.run(tools.request_approval(caller, {**args, "wait_seconds": 0}))
    assert bot.ws.messages(CHANNEL) == []


def test_a_question_over_the_api_names_no_model(server: tuple[str, str]) -> None:
    url, token = server
    request = {"reason": "Plan?", "items": [{"id": "a", "text": "A", "type": "free_text"}], "form": "os:PathLike"}
    resp = httpx.post(
        f"{url}/questions",
        json={"request": request, "channel": CHANNEL},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert resp.status_code == 422
    assert "a pydantic model is named only by an agent's run.ask_form" in resp.text


FALSY = {"content": "", "count": 0, "force": False, "tags": [], "note": None}
"""Pydantic AI's own example clears `.env` with `content=''`: every falsy value, as proposed."""
FALSY_SCHEMA = {
    "type": "object",
    "properties": {
        "content": {"type": "string"},
        "count": {"type": "integer"},
        "force": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "kept"},
    },
    "required": ["content", "count", "force", "tags", "note"],
}


@pytest.mark.parametrize("via", ["approve", "edit-unchanged"])
@pytest.mark.parametrize("schema", [FALSY_SCHEMA, None], ids=["schema", "inferred"])
def test_approve_approves_empty_and_falsy_arguments_exactly_as_proposed(
    bot: Bot, server: tuple[str, str], schema: dict[str, Any] | None, via: str
) -> None:
    url, token = server
    body = {"channel": CHANNEL, "action": "Write .env", "args": FALSY, "schema": schema, "assignees": [USER]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        created = api.post("/approvals", json=body)
        assert created.status_code == 201, created.text
        question = created.json()
        message = bot.ws.message(CHANNEL, question["message_ts"])
        assert message is not None
        if via == "approve":
            block, button = find_element(message["blocks"], "parley_approve")
            payload = block_actions_payload(
                user=USER,
                message=message,
                channel=CHANNEL,
                action=button_action(block, button),
                trigger=bot.ws.issue_trigger(USER),
            )
            assert bot.interact(payload).status == 200
        else:  # Edit…, then Submit with every field as it was pre-filled
            form = modal(bot, message, "parley_open_form")
            state = form_state(form["blocks"], {})
            ack = bot.interact(view_submission_payload(user=USER, view=form, state_values=state))
            assert (ack.status, ack.body) == (200, ""), ack.body
        work(bot.runtime)
        answered = api.get(f"/questions/{question['id']}", params={"wait": 5}).json()
    refusals = bot.ws.calls("chat.postEphemeral")
    assert refusals == [], refusals  # nobody was told "an answer is required"
    assert answered["status"] == "answered", answered
    decision = answered["decision"]
    assert (decision["approved"], decision["edited"], decision["changes"]) == (True, False, [])
    assert decision["args"] == FALSY
    assert [type(decision["args"][k]) for k in FALSY] == [type(v) for v in FALSY.values()]


def test_an_edit_the_approvals_schema_refuses_is_refused_in_slack_naming_the_field(
    bot: Bot, server: tuple[str, str]
) -> None:
    """Parley's number item reads `exclusiveMinimum` as an inclusive bound; the schema itself is checked too."""
    url, token = server
    schema = {"type": "object", "properties": {"amount": {"type": "number", "exclusiveMinimum": 0}}}
    args = {"amount": 50.0, "to": "acct-7"}
    body = {"channel": CHANNEL, "action": "Pay", "args": args, "schema": schema, "assignees": [USER]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        created = api.post("/approvals", json=body)
        assert created.status_code == 201, created.text
        question = created.json()
        message = bot.ws.message(CHANNEL, question["message_ts"])
        assert message is not None
        form = modal(bot, message, "parley_open_form")
        zero = bot.interact(
            view_submission_payload(user=USER, view=form, state_values=form_state(form["blocks"], {"Amount": "0"}))
        )
        assert zero.status == 200 and "errors" in zero.body
        refused = json.loads(zero.body)
        assert api.get(f"/questions/{question['id']}").json()["status"] == "waiting"  # nothing was decided
        fixed = bot.interact(
            view_submission_payload(user=USER, view=form, state_values=form_state(form["blocks"], {"Amount": "20"}))
        )
        assert (fixed.status, fixed.body) == (200, "")
        work(bot.runtime)
        answered = api.get(f"/questions/{question['id']}", params={"wait": 5}).json()
    assert refused["response_action"] == "errors"
    assert [(k.split("|")[-1], v) for k, v in refused["errors"].items()] == [("amount", "must be more than 0")]
    assert answered["decision"]["args"] == {"amount": 20, "to": "acct-7"}
