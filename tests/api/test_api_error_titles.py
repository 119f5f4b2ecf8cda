"""Every error under `/api/v1` and `/mcp` of a live `parley serve` is problem+json titled by what was wrong,
and a channel may be named `#name`: resolved with `conversations.list`, or refused listing the channels."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from api_support import Token, approval, create_token
from slack_stack import SlackStack

from bot.playground.directory import Channel

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=0, extra_env={"PARLEY_API_RATE_LIMIT": "100000"})]

PROBLEM = "application/problem+json"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}  # fmt: skip
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "titles")


def problem_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM), (response.headers, response.text)
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["title"] and body["detail"], body
    return body


def http(stack: SlackStack) -> httpx.Client:
    assert stack.http is not None
    return stack.http


def test_unknown_paths_and_methods_are_problems_naming_them(stack: SlackStack, token: Token) -> None:
    for path in ("/api/v1/nope", "/api/v1", "/api/v1/", "/mcp/nope"):
        body = problem_of(http(stack).get(path, headers=token.auth), 404)
        assert body["title"] == f"No such path: {path}"
        assert "/api/v1/openapi.json" in body["detail"]
    refused = http(stack).delete("/api/v1/questions", headers=token.auth)
    body = problem_of(refused, 405)
    assert body["title"] == "DELETE is not allowed here" and "GET" in refused.headers["allow"]


def test_a_bad_wait_and_an_empty_body_are_titled_by_what_was_wrong(stack: SlackStack, token: Token) -> None:
    body = problem_of(http(stack).get("/api/v1/questions/rNope?wait=600", headers=token.auth), 422)
    assert body["title"] == "wait is at most 60 seconds"
    assert body["errors"][0]["loc"] == ["query", "wait"]
    body = problem_of(http(stack).get("/api/v1/questions/rNope?wait=soon", headers=token.auth), 422)
    assert body["title"] == "wait is not a whole number"
    for raw in (b"", b"  \n"):
        body = problem_of(http(stack).post("/api/v1/questions", content=raw, headers=token.auth), 400)
        assert body["title"] == "The body is empty"


def test_mcps_refusals_are_problems_too(stack: SlackStack, token: Token) -> None:
    body = problem_of(http(stack).post("/mcp", json=INIT, headers=MCP_ACCEPT), 401)
    assert body["title"] == "Unauthorized"
    problem_of(http(stack).post("/mcp", json=INIT, headers={**MCP_ACCEPT, **token.auth, "Host": "evil.example"}), 421)
    problem_of(http(stack).post("/mcp", json=INIT, headers={**token.auth, "Accept": "text/html"}), 406)
    assert http(stack).post("/mcp", json=INIT, headers={**MCP_ACCEPT, **token.auth}).status_code == 200


def test_a_channel_by_name_is_asked_in_by_its_id(stack: SlackStack, token: Token) -> None:
    stack.ws.add_channel(Channel("C0DEPLOYS", "deploys", bot_is_member=False))
    body = {"channel": "#deploys", "request": approval("Deploy by name?")}
    created = http(stack).post("/api/v1/questions", json=body, headers=token.auth)
    assert created.status_code == 201, created.text
    assert created.json()["channel"] == "C0DEPLOYS"
    assert [m["text"] for m in stack.ws.messages("C0DEPLOYS")] != []


def test_an_unknown_channel_is_refused_listing_the_channels_parley_can_post_in(stack: SlackStack, token: Token) -> None:
    for channel in ("#nowhere", "C0123"):
        body = {"channel": channel, "request": approval("Where?")}
        refused = problem_of(http(stack).post("/api/v1/questions", json=body, headers=token.auth), 422)
        assert "#general (C0GENERAL)" in refused["detail"] and "#ops (C0OPS)" in refused["detail"], refused
    assert (
        problem_of(
            http(stack).post(
                "/api/v1/questions", json={"channel": "#nowhere", "request": approval("?")}, headers=token.auth
            ),
            422,
        )["title"]
        == "No channel #nowhere"
    )


def test_a_name_slack_will_not_list_is_refused_saying_where_ids_are(stack: SlackStack, token: Token) -> None:
    """An app installed before Parley asked for `channels:read`: Slack answers `missing_scope`, and the
    422 says where a channel's id is found instead of failing."""
    stack.ws.faults.fail_next("conversations.list", status=200, error="missing_scope", times=2)
    body = {"channel": "#general", "request": approval("Without the scope?")}
    refused = problem_of(http(stack).post("/api/v1/questions", json=body, headers=token.auth), 422)
    assert refused["title"] == "No channel #general"
    assert "channel's id" in refused["detail"] and "C…" in refused["detail"], refused


def test_a_lone_surrogate_anywhere_in_the_body_is_refused_and_asks_nothing(stack: SlackStack, token: Token) -> None:
    """`"\\ud800"` without its pair parses as JSON but is not Unicode text: 400, nothing created or posted.

    Context, metadata and an approval's args take any JSON, so nothing past the body's parse saw it:
    the question was posted, then the reply failed to encode (500)."""
    lone = '"\\ud800"'
    bodies = [
        ("/api/v1/questions", {"channel": "C0OPS", "request": approval("Lone?"), "context": {"service": "@"}}),
        ("/api/v1/questions", {"channel": "C0OPS", "request": approval("Lone?"), "metadata": {"@": 1}}),
        ("/api/v1/approvals", {"channel": "C0OPS", "action": "Deploy", "args": {"@": 1}}),
    ]
    listed = http(stack).get("/api/v1/questions", headers=token.auth).json()["questions"]
    posted = len(stack.ws.messages("C0OPS"))
    for path, body in bodies:
        raw = json.dumps(body).replace('"@"', lone).encode()
        refused = problem_of(http(stack).post(path, content=raw, headers=token.auth), 400)
        assert "lone surrogate" in refused["detail"], refused
    assert http(stack).get("/api/v1/questions", headers=token.auth).json()["questions"] == listed
    assert len(stack.ws.messages("C0OPS")) == posted
    paired = {"channel": "C0OPS", "request": approval("Paired?"), "context": {"service": "@"}}
    raw = json.dumps(paired).replace('"@"', '"\\ud83d\\ude80"').encode()  # a whole pair: 🚀
    created = http(stack).post("/api/v1/questions", content=raw, headers=token.auth)
    assert created.status_code == 201, created.text
    assert created.json()["context"] == {"service": "🚀"}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"$ref": "#"}, "refers to itself without end"),
        ({"type": "object", "properties": {"replicas": {"$ref": "http://127.0.0.1:9/s.json"}}}, "cannot be followed"),
        ({"type": "object", "properties": {"replicas": {"type": "integer", "multipleOf": 0}}}, "not valid JSON Schema"),
    ],
)
def test_an_approval_whose_schema_could_not_check_an_edit_is_refused(
    stack: SlackStack, token: Token, schema: dict[str, Any], why: str
) -> None:
    """An edit must meet the approval's schema. One that cannot be checked against was taken, and
    every edit then passed unchecked; now the approval is refused, and nothing is posted."""
    posted = len(stack.ws.messages("C0OPS"))
    body = {"channel": "C0OPS", "action": "Scale api", "args": {"replicas": 3}, "schema": schema}
    refused = problem_of(http(stack).post("/api/v1/approvals", json=body, headers=token.auth), 422)
    assert why in refused["detail"], refused
    assert len(stack.ws.messages("C0OPS")) == posted
