"""A caller's pattern cannot stall `parley serve`: each surface a pattern reaches, against a live server.

`(a|a)*b`, `((a+))+b`, `(a?){28}a{28}` and `(.*a){12}b` backtrack for ages in Python's `re` on
forty a's. Over `/api/v1` (a question's default, an approval's argument), in Slack (a typed
answer) and over `/mcp` (`ask_human`'s `requested_schema`), each is decided at once, and
`/healthz` answers while the request is in flight. A backreference is refused by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from api_support import Token, create_token
from backtracking import BACKTRACKING, DEADLINE, FORTY
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload
from slack_stack import SlackStack

from workers.store import keys

pytestmark = [pytest.mark.system, pytest.mark.stack()]

CHANNEL = "C0GENERAL"


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "patterns")


def while_healthz_answers(stack: SlackStack, fn: Callable[[], Any]) -> Any:
    """`fn()`, run in a thread while `/healthz` is asked; both must be done within `DEADLINE`."""
    got: dict[str, Any] = {}

    def call() -> None:
        try:
            got["value"] = fn()
        except Exception as exc:
            got["error"] = exc

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    health = httpx.get(f"http://127.0.0.1:{stack.port}/healthz", timeout=DEADLINE)
    assert health.status_code == 200
    caller.join(DEADLINE)
    assert not caller.is_alive(), f"still waiting after {DEADLINE} s: the server is stuck matching"
    if "error" in got:
        raise got["error"]
    return got["value"]


def post(stack: SlackStack, token: Token, path: str, body: dict[str, Any]) -> httpx.Response:
    url = f"http://127.0.0.1:{stack.port}/api/v1/{path}"
    return httpx.post(url, json=body, headers=token.auth, timeout=DEADLINE)


def free_text(pattern: str, default: str | None = None) -> dict[str, Any]:
    item = {"id": "code", "text": "Code", "type": "free_text", "pattern": pattern}
    return item if default is None else {**item, "default": default}


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_a_questions_default_is_refused_at_once_and_healthz_answers(
    stack: SlackStack, token: Token, pattern: str
) -> None:
    body = {"request": {"reason": "Which code?", "items": [free_text(pattern, FORTY + "!")]}, "channel": CHANNEL}
    resp = while_healthz_answers(stack, lambda: post(stack, token, "questions", body))
    assert resp.status_code == 422, resp.text
    assert "item 'code': default is not a valid answer: does not match the pattern" in resp.text


def test_a_questions_default_that_matches_is_asked(stack: SlackStack, token: Token) -> None:
    body = {"request": {"reason": "Which?", "items": [free_text(r"(a?){28}a{28}", FORTY)]}, "channel": CHANNEL}
    resp = while_healthz_answers(stack, lambda: post(stack, token, "questions", body))
    assert resp.status_code == 201, resp.text


def test_a_backreference_is_refused_naming_the_item(stack: SlackStack, token: Token) -> None:
    body = {"request": {"reason": "Which?", "items": [free_text(r"(a+)\1")]}, "channel": CHANNEL}
    resp = post(stack, token, "questions", body)
    assert resp.status_code == 422 and resp.headers["content-type"] == "application/problem+json"
    assert "item 'code': pattern is not a regular expression RE2 accepts" in resp.text


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_an_approvals_argument_is_checked_at_once(stack: SlackStack, token: Token, pattern: str) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    body = {"channel": CHANNEL, "action": "Deploy", "args": {"code": FORTY + "!"}, "schema": schema}
    resp = while_healthz_answers(stack, lambda: post(stack, token, "approvals", body))
    assert resp.status_code == 201, resp.text  # asked, the argument shown but not editable: it does not match
    assert stack.redis.exists(keys.run(resp.json()["id"]))  # the approval's run is stored


def test_an_approvals_backreference_is_refused_naming_the_property(stack: SlackStack, token: Token) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": r"(a)\1"}}}
    resp = post(
        stack, token, "approvals", {"channel": CHANNEL, "action": "Deploy", "args": {"code": "x"}, "schema": schema}
    )
    assert resp.status_code == 422, resp.text
    assert "item 'code': pattern is not a regular expression RE2 accepts" in resp.text


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_an_answer_typed_in_slack_is_checked_at_once(stack: SlackStack, token: Token, pattern: str) -> None:
    created = post(
        stack, token, "questions", {"request": {"reason": "Code?", "items": [free_text(pattern)]}, "channel": CHANNEL}
    )
    assert created.status_code == 201, created.text
    question = created.json()
    message = stack.ws.message(CHANNEL, question["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], "parley_submit")
    payload = block_actions_payload(
        user="U0CAROL",
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        state_values=form_state(message["blocks"], {"Code": FORTY + "!"}),
    )
    mark = stack.mark()
    assert while_healthz_answers(stack, lambda: stack.interact(payload)).status_code == 200
    told = stack.wait_call("chat.postEphemeral", since=mark)
    assert "does not match the pattern" in told["args"]["text"]
    status = httpx.get(
        f"http://127.0.0.1:{stack.port}/api/v1/questions/{question['id']}", headers=token.auth, timeout=10
    )
    assert status.json()["status"] == "waiting"


def ask_human(stack: SlackStack, token: Token, schema: dict[str, Any]) -> tuple[bool, str]:
    """`ask_human` with `requested_schema` over `/mcp`, by the `mcp` package's client: (is_error, its text)."""

    async def scenario() -> tuple[bool, str]:
        http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(DEADLINE))
        async with Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http)) as client:
            args = {"channel": CHANNEL, "message": "Which code?", "requested_schema": schema, "wait_seconds": 0}
            result = await client.call_tool("ask_human", args)
            return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

    return anyio.run(scenario)


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_ask_humans_requested_schema_default_is_decided_at_once(stack: SlackStack, token: Token, pattern: str) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern, "default": FORTY + "!"}}}
    is_error, text = while_healthz_answers(stack, lambda: ask_human(stack, token, schema))
    if pattern == r"(a?){28}a{28}":  # JSON Schema's pattern is found anywhere: 28 a's are in the default
        assert not is_error and '"status": "waiting"' in text, text
    else:
        assert is_error and "property 'code'" in text and "default is not a valid answer" in text, text


def test_ask_humans_requested_schema_backreference_is_a_tool_error_naming_the_property(
    stack: SlackStack, token: Token
) -> None:
    schema = {"type": "object", "properties": {"ticket": {"type": "string", "pattern": r"([A-Z])\1-\d+"}}}
    is_error, text = ask_human(stack, token, schema)
    assert is_error and "ticket" in text and "RE2" in text, text
