"""`POST /api/v1/approvals` with arguments past the 2,000 characters an approval binds, answered in Slack.

The long value is shown in part (a note, its start, its sha256), bound by that digest and not
editable: the Edit… form has only the short argument, and an answer to the long one is refused.
The decision the caller reads back (long-poll, the Python client, MCP's `get_answer`) holds the
whole arguments with the edit applied. Arguments too long even in part are still a 422 saying so.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
import redis.asyncio as aioredis
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload
from starlette.applications import Starlette
from starlette.routing import Mount
from test_api_approvals import USER, _approval_message, modal, submit
from test_wide_and_long_approvals import assert_shown_in_part

from bot.api.app import create_api
from bot.mcp.server import Tools
from bot.playground import LoopbackServer
from parley.client import Parley
from workers.interaction import Answer, Decision
from workers.interaction.approval import approval_answers
from workers.interaction.context import CONTEXT_MAX, canonical
from workers.questions import Caller, QuestionService, tokens
from workers.questions.waiting import listening
from workers.runtime.acceptance import AcceptRefused, accept
from workers.store.closings import Closings

pytestmark = pytest.mark.integration

LONG_TEXT = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""
ARGS = {"path": "notes.txt", "text": LONG_TEXT}


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


@pytest.fixture
def server(bot: Bot, redis_url: str) -> Iterator[tuple[str, str]]:
    """`/api/v1` on a loopback HTTP server, and an `ask` token."""
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    token = tokens.create(service.store, "long-approvals", ["ask"]).token
    app = Starlette(routes=[Mount("/api/v1", create_api(service))], lifespan=lambda _app: listening(service))
    running = LoopbackServer(app, lifespan=True).start()
    try:
        yield running.url + "/api/v1", token
    finally:
        running.stop()


def test_a_5000_character_argument_is_shown_in_part_and_the_decision_holds_it_whole_with_the_edit(
    bot: Bot, server: tuple[str, str]
) -> None:
    url, token = server
    body = {"channel": CHANNEL, "action": "Save notes", "args": ARGS, "assignees": [USER]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        created = api.post("/approvals", json=body)
        assert created.status_code == 201, created.text
        question = created.json()
        shown = question["context"]  # what the approval is bound to: the text by its start and sha256
        assert shown["path"] == "notes.txt" and len(canonical(shown)) <= CONTEXT_MAX
        assert_shown_in_part(shown["text"], LONG_TEXT)
        message = bot.ws.message(CHANNEL, question["message_ts"])
        assert message is not None
        posted = json.dumps(message, ensure_ascii=False)
        assert "(shown in part: the first " in posted and "line 0000" in posted and "line 0499" not in posted

        iid = bot.runtime.store.get(question["id"]).interrupt
        interrupt = bot.runtime.store.interrupt(iid)
        assert interrupt is not None
        tampered = [*approval_answers(interrupt.request, [], approve=True), Answer(id="text", free_text="rm -rf /")]
        with pytest.raises(AcceptRefused, match="unknown item id 'text'"):
            accept(bot.runtime, iid, USER, tampered)
        form = modal(bot, message, "parley_open_form")
        assert [b["block_id"].split("|")[-1] for b in form["blocks"] if b["type"] == "input"] == ["path"]
        submit(bot, form, "path", "edited.txt")
        work(bot.runtime)
        answered = api.get(f"/questions/{question['id']}", params={"wait": 5}).json()
    assert answered["status"] == "answered" and answered["context"] == shown
    assert answered["decision"] == {
        "approved": True,
        "args": {"path": "edited.txt", "text": LONG_TEXT},  # whole, with the edit
        "edited": True,
        "changes": [["path", "notes.txt", "edited.txt"]],
        "reason": None,
        "by": USER,
        "standing": False,
    }


def test_the_python_client_gets_the_whole_arguments_once_approved(bot: Bot, server: tuple[str, str]) -> None:
    url, token = server
    decisions: list[Decision] = []
    with Parley(url.removesuffix("/api/v1"), token) as client:
        asking = threading.Thread(
            target=lambda: decisions.append(
                client.approve("Save notes", ARGS, channel=CHANNEL, assignees=[USER], timeout=30)
            )
        )
        asking.start()
        message = bot.wait_for("the approval to be posted", lambda: _approval_message(bot))
        block, button = find_element(message["blocks"], "parley_approve")
        payload = block_actions_payload(
            user=USER,
            message=message,
            channel=CHANNEL,
            action=button_action(block, button),
            trigger=bot.ws.issue_trigger(USER),
        )
        assert bot.interact(payload).status == 200
        work(bot.runtime)
        asking.join(timeout=30)
    [decision] = decisions
    assert (decision.approved, decision.edited, decision.args, decision.by) == (True, False, ARGS, USER)


def test_mcp_request_approval_takes_long_args_and_get_answer_returns_them_whole(bot: Bot, redis_url: str) -> None:
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    caller = Caller("assistant", via="mcp")
    tools = Tools(service, lambda ctx: caller)
    args = {"channel": CHANNEL, "action": "Save notes", "args": ARGS, "assignees": [USER], "wait_seconds": 0}
    first = asyncio.run(tools.request_approval(caller, args))
    assert first["status"] == "waiting"
    message = bot.wait_for("the approval to be posted", lambda: _approval_message(bot))
    submit(bot, modal(bot, message, "parley_open_form"), "path", "edited.txt")
    work(bot.runtime)
    done = asyncio.run(tools.get_answer(caller, {"question_id": first["question_id"], "wait_seconds": 5}))
    assert done["status"] == "answered"
    assert done["decision"]["args"] == {"path": "edited.txt", "text": LONG_TEXT}


def test_arguments_too_long_even_in_part_are_refused_saying_so(server: tuple[str, str]) -> None:
    url, token = server
    wide = {f"k{n}": "z" * 100 for n in range(40)}
    body = {"channel": CHANNEL, "action": "Save notes", "args": wide, "assignees": [USER]}
    refused = httpx.post(f"{url}/approvals", json=body, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 422 and refused.headers["content-type"].startswith("application/problem+json")
    assert "even with their long values shown in part" in refused.json()["detail"]
