"""Parley's MCP server where the spec asks more than the tools' own checks, end to end with a live
`parley serve` (streamable HTTP at `/mcp`) and `parley mcp` (stdio), real `parley worker`s, Redis and
the Web API stand-in, answered with Slack's signed payloads:

- every tool's `structuredContent`, in every outcome, validates against its `outputSchema`;
- `serverInfo.version` is the installed distribution's version;
- a call to an unknown tool is JSON-RPC `-32602`, while bad arguments stay tool errors;
- a client that drops a waiting `ask_human` stream and reconnects with `Last-Event-ID` receives the
  answer (a raw HTTP client, since dropping a stream on purpose is not something the SDK's client does).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from importlib.metadata import version
from typing import Any

import anyio
import anyio.to_thread
import httpx
import httpx2
import jsonschema
import pytest
from api_support import Token, approval, create_token
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import SlackStack, free_port
from test_mcp_system import CHANNEL, TRANSPORTS, click_submit, over_http, posted, questions, result_of

from bot.mcp.sessions import SESSIONS_PER_TOKEN
from parley.client import Parley

pytestmark = [pytest.mark.system, pytest.mark.stack()]

PROTOCOL = "2025-11-25"  # the first version with priming events


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "mcp-conformance")


def over_http_legacy(stack: SlackStack, token: Token) -> Client:
    """The SDK's client with the initialize handshake (2025-11-25), as today's hosts connect: a session,
    where the default client speaks the 2026 protocol (a request stands alone)."""
    http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
    return Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http), mode="legacy")


CONNECTS = {**TRANSPORTS, "http-legacy": over_http_legacy}


@pytest.fixture(params=list(CONNECTS))
def connect(request: pytest.FixtureRequest, stack: SlackStack, token: Token) -> Callable[[], Client]:
    return lambda: CONNECTS[request.param](stack, token)


def topic() -> str:
    return f"conform-{uuid.uuid4().hex[:8]}"


def validated(schemas: dict[str, dict[str, Any]], tool: str, called: CallToolResult) -> dict[str, Any]:
    """The result's structured content, once it validates against `tool`'s listed outputSchema."""
    result = result_of(called)
    jsonschema.validate(result, schemas[tool])
    return result


async def output_schemas(client: Client) -> dict[str, dict[str, Any]]:
    tools = (await client.list_tools()).tools
    bare = [t.name for t in tools if t.output_schema is None]
    assert bare == ["approve_tool_use"], bare  # Claude Code's permission prompt answers with one text block only
    return {t.name: dict(t.output_schema or {}) for t in tools if t.output_schema is not None}


# ---- outputSchema --------------------------------------------------------------------------
def test_asked_waiting_and_answered_results_validate(stack: SlackStack, connect: Callable[[], Client]) -> None:
    about = topic()

    async def scenario() -> list[dict[str, Any]]:
        async with connect() as client:
            schemas = await output_schemas(client)
            args = {**questions(about), "channel": CHANNEL, "wait_seconds": 0}
            waiting = validated(schemas, "ask_human", await client.call_tool("ask_human", args))
            qid = {"question_id": waiting["question_id"]}
            still = validated(schemas, "get_answer", await client.call_tool("get_answer", {**qid, "wait_seconds": 0}))
            got: dict[str, Any] = {}

            async def wait() -> None:
                got["answered"] = await client.call_tool("get_answer", {**qid, "wait_seconds": 40})

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.to_thread.run_sync(lambda: click_submit(stack, about, "Canary", "U0CAROL"))
            return [waiting, still, validated(schemas, "get_answer", got["answered"])]

    waiting, still, answered = anyio.run(scenario)
    assert (waiting["status"], still["status"], answered["status"]) == ("waiting", "waiting", "answered")
    assert answered["answers"] == {"plan": "Canary", "plan__other": None}


def approval_message(stack: SlackStack, action: str) -> dict[str, Any]:
    return stack.wait_for(
        f"the approval of {action} to be posted",
        lambda: next(
            (m for m in stack.ws.messages(CHANNEL) if action in json.dumps(m) and "parley_approve" in json.dumps(m)),
            None,
        ),
    )


def click(stack: SlackStack, message: dict[str, Any], action_id: str, user: str = "U0BOB") -> None:
    block, button = find_element(message["blocks"], action_id)
    payload = block_actions_payload(
        user=user,
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(user),
    )
    assert stack.interact(payload).status_code == 200


def reject(stack: SlackStack, message: dict[str, Any], reason: str, user: str = "U0BOB") -> None:
    mark = stack.mark()
    click(stack, message, "parley_reject", user)
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    view = stack.ws.open_views(user)[-1]
    iid = view["private_metadata"].split("|")[0]
    state = {f"f|{iid}|_reason": {"answer": {"type": "plain_text_input", "value": reason}}}
    resp = stack.interact(view_submission_payload(user=user, view=view, state_values=state))
    assert resp.status_code == 200, resp.text


def test_approval_decisions_validate(stack: SlackStack, token: Token) -> None:
    approve_it, reject_it = f"Deploy {topic()}", f"Deploy {topic()}"

    async def scenario() -> list[dict[str, Any]]:
        async with over_http(stack, token) as client:
            schemas = await output_schemas(client)
            decided = []
            for action, decide in (
                (approve_it, lambda m: click(stack, m, "parley_approve")),
                (reject_it, lambda m: reject(stack, m, "not during the freeze")),
            ):
                args = {"action": action, "args": {"replicas": 2}, "channel": CHANNEL, "wait_seconds": 0}
                asked = validated(schemas, "request_approval", await client.call_tool("request_approval", args))
                message = await anyio.to_thread.run_sync(lambda a=action: approval_message(stack, a))  # type: ignore[misc]
                await anyio.to_thread.run_sync(lambda m=message, d=decide: d(m))  # type: ignore[misc]
                wait = {"question_id": asked["question_id"], "wait_seconds": 30}
                decided.append(validated(schemas, "get_answer", await client.call_tool("get_answer", wait)))
            return decided

    approved, rejected = anyio.run(scenario)
    assert approved["decision"]["approved"] is True and approved["decision"]["args"] == {"replicas": 2}
    assert rejected["decision"]["approved"] is False and rejected["decision"]["reason"] == "not during the freeze"


def test_expired_and_cancelled_results_validate(stack: SlackStack, token: Token) -> None:
    with Parley(f"http://127.0.0.1:{stack.port}", token.token) as api:  # the same owner as the MCP calls
        expiring = api.submit(approval("Expire soon?", expires_in=1), channel=CHANNEL)
        cancelled = api.submit(approval("Cancel soon?"), channel=CHANNEL)
        api.cancel(cancelled)

    async def scenario() -> list[dict[str, Any]]:
        async with over_http(stack, token) as client:
            schemas = await output_schemas(client)
            return [
                validated(
                    schemas, "get_answer", await client.call_tool("get_answer", {"question_id": q, "wait_seconds": 30})
                )
                for q in (expiring, cancelled)
            ]

    expired, gone = anyio.run(scenario)
    assert (expired["status"], expired["answers"]) == ("expired", None)
    assert gone["status"] == "cancelled"


# ---- serverInfo.version and unknown tools --------------------------------------------------
def test_server_info_version_is_the_installed_version(
    connect: Callable[[], Client], request: pytest.FixtureRequest
) -> None:
    async def scenario() -> tuple[str | None, str | None]:
        async with connect() as client:
            return (client.server_info.version if client.server_info else None), client.protocol_version

    served, protocol = anyio.run(scenario)
    assert served == version("parley-slack") != ""
    if request.node.callspec.params["connect"] == "http-legacy":
        assert protocol == PROTOCOL  # the handshake era's latest: a session, with resumable streams


def test_an_unknown_tool_is_invalid_params_and_bad_arguments_stay_tool_errors(
    stack: SlackStack, connect: Callable[[], Client]
) -> None:
    mark = stack.mark()

    async def scenario() -> tuple[MCPError, CallToolResult]:
        async with connect() as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("no_such_tool", {"channel": CHANNEL})
            bad = await client.call_tool("ask_human", {**questions("x"), "channel": CHANNEL, "wait_seconds": 99})
            return caught.value, bad

    error, bad = anyio.run(scenario)
    assert error.code == INVALID_PARAMS == -32602
    assert "no_such_tool" in error.message and "ask_human" in error.message
    assert bad.is_error and "wait_seconds must be" in bad.content[0].text  # type: ignore[union-attr]
    assert stack.calls("chat.postMessage", since=mark) == []


# ---- resumable streams ---------------------------------------------------------------------
def sse(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """SSE events (their `id`, `retry`, `event`, `data` fields) as they arrive."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")


class RawSession:
    """An MCP session over plain HTTP, so that a stream can be dropped mid-call and resumed by hand."""

    def __init__(self, stack: SlackStack, token: Token) -> None:
        base = {"Accept": "application/json, text/event-stream", **token.auth}
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{stack.port}", headers=base, timeout=60)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL,
                "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
        opened = self.http.post("/mcp", json=init)
        assert opened.status_code == 200, opened.text
        self.id = opened.headers["mcp-session-id"]
        self.http.headers.update({"Mcp-Session-Id": self.id, "MCP-Protocol-Version": PROTOCOL})
        done = self.http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text

    def call_then_drop(self, request_id: int, tool: str, args: dict[str, Any]) -> dict[str, str]:
        """Call `tool`, read the stream's first event (the priming event), and drop the connection."""
        call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": args}}
        with self.http.stream("POST", "/mcp", json=call) as resp:
            assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
            return next(sse(resp.iter_lines()))  # leaving the block closes the connection mid-stream

    def resume(self, last_event_id: str, request_id: int) -> list[dict[str, str]]:
        """`GET` with `Last-Event-ID`: the events sent on until the call's response."""
        got: list[dict[str, str]] = []
        headers = {"Accept": "text/event-stream", "Last-Event-ID": last_event_id}
        with self.http.stream("GET", "/mcp", headers=headers) as resp:
            assert resp.status_code == 200, resp.read()
            for event in sse(resp.iter_lines()):
                got.append(event)
                if event.get("data") and json.loads(event["data"]).get("id") == request_id:
                    break
        return got

    def close(self) -> None:
        self.http.delete("/mcp")
        self.http.close()


@pytest.fixture
def raw(stack: SlackStack, token: Token) -> Iterator[RawSession]:
    session = RawSession(stack, token)
    yield session
    session.close()


def answer_of(events: list[dict[str, str]], request_id: int) -> dict[str, Any]:
    [response] = [
        json.loads(e["data"]) for e in events if e.get("data") and json.loads(e["data"]).get("id") == request_id
    ]
    return dict(response["result"]["structuredContent"])


@pytest.mark.parametrize("when", ["answered-before-reconnecting", "answered-after-reconnecting"])
def test_a_dropped_ask_human_stream_resumes_with_last_event_id(stack: SlackStack, raw: RawSession, when: str) -> None:
    about = topic()
    priming = raw.call_then_drop(7, "ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 45})
    assert priming["id"] and priming["retry"] == "2000" and priming.get("data", "") == ""
    assert stack.redis is not None
    [key] = stack.redis.keys(f"parley:mcp:events:{raw.id}:7")
    assert 0 < stack.redis.ttl(key) <= 600  # bounded in time (and in length: MAXLEN)

    if when == "answered-before-reconnecting":
        click_submit(stack, about, "Full rollout", "U0CAROL")
        stack.wait_for("the answer to be kept in Redis", lambda: stack.redis and stack.redis.xlen(key) >= 2)
        stored = stack.redis.xrange(key)[-1][1][b"data"]
        assert json.loads(stored)["result"]["structuredContent"]["status"] == "answered"  # JSON, not pickled
        events = raw.resume(priming["id"], 7)
    else:
        got: dict[str, list[dict[str, str]]] = {}

        async def scenario() -> None:
            async def resume() -> None:
                got["events"] = await anyio.to_thread.run_sync(lambda: raw.resume(priming["id"], 7))

            async with anyio.create_task_group() as tg:
                tg.start_soon(resume)
                posted(stack, about)
                await anyio.sleep(1)  # the GET is open, waiting, when the answer comes
                await anyio.to_thread.run_sync(lambda: click_submit(stack, about, "Full rollout", "U0CAROL"))

        anyio.run(scenario)
        events = got["events"]

    result = answer_of(events, 7)
    assert result["status"] == "answered" and result["answers"] == {"plan": "Full rollout", "plan__other": None}
    assert all(e.get("id") for e in events)  # each event resumable in turn


def test_an_event_id_of_another_session_replays_nothing(stack: SlackStack, token: Token, raw: RawSession) -> None:
    about = topic()
    priming = raw.call_then_drop(3, "ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 0})
    other = RawSession(stack, token)  # the same token, another session: its streams are its own
    try:
        headers = {"Accept": "text/event-stream", "Last-Event-ID": priming["id"]}
        with other.http.stream("GET", "/mcp", headers=headers) as resp:
            body = resp.read().decode()
        assert resp.status_code == 200 and "question_id" not in body
    finally:
        other.close()
    assert answer_of(raw.resume(priming["id"], 3), 3)["status"] == "waiting"


def test_a_token_holds_a_bounded_number_of_sessions_and_never_another_tokens(stack: SlackStack) -> None:
    """The SDK caps sessions for the whole process: one token filling them refused every other client."""
    greedy, other = (create_token(stack, f"sessions-{n}", rate_limit=10_000) for n in ("greedy", "other"))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL,
            "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.port}", headers=accept, timeout=30) as http:
        opened = [http.post("/mcp", json=init, headers=greedy.auth) for _ in range(SESSIONS_PER_TOKEN)]
        assert {r.status_code for r in opened} == {200}
        refused = http.post("/mcp", json=init, headers=greedy.auth)
        assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
        assert f"{SESSIONS_PER_TOKEN} MCP sessions open" in refused.json()["detail"], refused.text
        theirs = http.post("/mcp", json=init, headers=other.auth)
        assert theirs.status_code == 200 and theirs.headers["mcp-session-id"]  # another token is not held up
        ended = http.delete("/mcp", headers={**greedy.auth, "Mcp-Session-Id": opened[0].headers["mcp-session-id"]})
        assert ended.status_code == 200, ended.text
        again = http.post("/mcp", json=init, headers=greedy.auth)
        assert again.status_code == 200, again.text  # a session ended frees its place
        for resp in [*opened[1:], theirs, again]:
            owner = other if resp is theirs else greedy
            http.delete("/mcp", headers={**owner.auth, "Mcp-Session-Id": resp.headers["mcp-session-id"]})


def test_several_server_processes_serve_mcp_stateless(stack: SlackStack, token: Token) -> None:
    """`parley serve --workers 2`: a session would live in one process only, so `/mcp` keeps none there and
    any process answers any request (a dropped stream is not resumed)."""
    port = free_port()
    stack.spawn_serve("serve-mcp-2", port, "--workers", "2")
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    stack.wait_for("the two-process server", healthy, timeout=30)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL,
            "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", **token.auth}
    for _ in range(3):
        with httpx.Client(timeout=15) as fresh:  # a new connection each: spread over the processes
            opened = fresh.post(f"{url}/mcp", json=init, headers=headers)
        assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
        assert "retry:" not in opened.text  # no priming event: nothing is kept to resume from
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}
    with httpx.Client(timeout=15) as fresh:
        answered = fresh.post(f"{url}/mcp", json=call, headers={**headers, "MCP-Protocol-Version": PROTOCOL})
    [event] = [e for e in sse(iter(answered.text.splitlines())) if e.get("data")]
    assert json.loads(event["data"])["error"]["code"] == INVALID_PARAMS
