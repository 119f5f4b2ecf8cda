"""An MCP call that ends before its answer withdraws its question; a cancel is `cancel`, a decline `decline`.

A call cut short never returned the `question_id`, so nobody could read the answer. Its client's
timeout (`notifications/cancelled`), its session's `DELETE`, a dropped stream where `/mcp` keeps
no sessions, or a stdio host exiting cancels the question, locks its message and frees the
token's open-question cap. A stream that only drops on a resumable session leaves it waiting.
Over `/mcp` of a live `parley serve` and over `parley mcp`, with the `mcp` package's own client
(raw HTTP or stdio where a stream is dropped, a session ended or a host gone by hand), real
workers and the Web API stand-in. A question cancelled by any token, its asker or an admin named
like a Slack user id (`WORKFLOW`, `U123ABC`), is `cancel`; only a person's Decline is `decline`.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from api_support import Token, create_token
from mcp.shared.exceptions import MCPError
from slack_forms import has_action, texts
from slack_stack import PARLEY, SlackStack, free_port, stop_process_group
from test_mcp_conformance import PROTOCOL, RawSession
from test_mcp_elicitation import click_decline
from test_mcp_system import CHANNEL, over_http, posted, questions, result_of, topic

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

FORM: dict[str, Any] = {"type": "object", "required": ["go"], "properties": {"go": {"type": "boolean", "title": "Go"}}}


def question_about(stack: SlackStack, token: Token, about: str) -> dict[str, Any]:
    """The token's one question mentioning `about`, as `/api/v1` shows it: its caller never got its id."""

    def found() -> dict[str, Any] | None:
        listed = stack.http.get("/api/v1/questions", headers=token.auth).json()["questions"]
        return next((q for q in listed if about in json.dumps(q)), None)

    return stack.wait_for(f"the question about {about} to be created", found)


def withdrawn(stack: SlackStack, token: Token, question: dict[str, Any]) -> dict[str, Any]:
    """`question` once it is cancelled by its asker and its message locked; it as it is then."""

    def cancelled() -> dict[str, Any] | None:
        now = stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json()
        return now if now["status"] == "cancelled" else None

    now = stack.wait_for("the question to be withdrawn", cancelled)
    assert now["cancelled_by"] == token.name
    stack.wait_for("the question's message to be locked", lambda: locked(stack, now["message_ts"]))
    return now


def locked(stack: SlackStack, ts: str) -> bool:
    """Whether the question message `ts` reads "Cancelled" and takes no answer."""
    message = stack.ws.message(CHANNEL, ts)
    if message is None or "Cancelled" not in texts(message["blocks"]):
        return False
    return not any(has_action(message["blocks"], action) for action in ("parley_submit", "parley_approve"))


def approval_args(about: str) -> dict[str, Any]:
    return {"action": f"Deploy {about}", "args": {"service": about}, "channel": CHANNEL}


@pytest.mark.parametrize("tool", ["ask_human", "request_approval"])
def test_a_call_its_client_times_out_withdraws_its_question_and_frees_the_cap(stack: SlackStack, tool: str) -> None:
    capped = create_token(stack, f"mcp-timed-out-{tool.replace('_', '-')}", open_questions=1)
    about, then = topic(), topic()
    args = {**questions(about), "channel": CHANNEL} if tool == "ask_human" else approval_args(about)
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with over_http(stack, capped) as client:
            with pytest.raises(MCPError) as caught:  # the client stops waiting, and says so
                await client.call_tool(tool, {**args, "wait_seconds": 45}, read_timeout_seconds=3)
            got["timeout"] = caught.value
            got["question"] = await anyio.to_thread.run_sync(lambda: question_about(stack, capped, about))
            await anyio.to_thread.run_sync(lambda: withdrawn(stack, capped, got["question"]))
            again = {**questions(then), "channel": CHANNEL, "wait_seconds": 0}
            got["next"] = await client.call_tool("ask_human", again)  # within the cap of 1 once it is withdrawn

    anyio.run(scenario)
    assert "question_id" not in str(got["timeout"])  # the id never reached the client
    assert result_of(got["next"])["status"] == "waiting"
    posted(stack, then)


def test_a_dropped_stream_leaves_the_question_waiting_and_ending_the_session_withdraws_it(
    stack: SlackStack,
) -> None:
    token = create_token(stack, "mcp-session-ended")
    about = topic()
    session = RawSession(stack, token)
    try:
        session.call_then_drop(5, "ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 45})
        posted(stack, about)
        question = question_about(stack, token, about)
        time.sleep(2)  # the stream dropped: on a resumable session, the call goes on waiting
        now = stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json()
        assert now["status"] == "waiting", now
        ended = session.http.delete("/mcp")  # the session ends, and the call waiting in it with it
        assert ended.status_code == 200, ended.text
        withdrawn(stack, token, question)
    finally:
        session.http.close()


def test_without_sessions_a_dropped_stream_withdraws_its_question(stack: SlackStack) -> None:
    """`parley serve --workers 2` keeps no sessions: a dropped stream cannot be resumed, and its call ends."""
    token = create_token(stack, "mcp-stateless")
    port = free_port()
    stack.spawn_serve("serve-stateless-drop", port, "--workers", "2")
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    stack.wait_for("the two-process server", healthy, timeout=30)
    about = topic()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL, **token.auth}
    args = {**questions(about), "channel": CHANNEL, "wait_seconds": 45}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_human", "arguments": args}}
    with httpx.Client(timeout=60) as http, http.stream("POST", f"{url}/mcp", json=call, headers=headers) as resp:
        assert resp.status_code == 200  # stateless: each request stands alone, no initialize first
        posted(stack, about)  # asked; leaving the block drops the stream mid-call
    withdrawn(stack, token, question_about(stack, token, about))


def test_a_stdio_host_that_exits_mid_call_withdraws_its_question(stack: SlackStack, tmp_path: Path) -> None:
    """The host closes `parley mcp`'s stdin while `ask_human` waits, sending no cancel first."""
    about = topic()
    with stdio_ask(stack, tmp_path, "exiting-host", {**questions(about), "wait_seconds": 45}) as host:
        message = posted(stack, about)
        host.stdin.close()  # the host exits: end of input, and nothing else
        host.wait(timeout=30)

    stack.wait_for("the question to be withdrawn and its message locked", lambda: locked(stack, message["ts"]))


@pytest.mark.parametrize("name", ["WORKFLOW", "probe-lower"])
def test_an_askers_own_cancel_is_cancel_and_a_persons_decline_is_decline(stack: SlackStack, name: str) -> None:
    token = create_token(stack, name)
    mine, theirs = f"Ship {uuid.uuid4().hex[:6]}?", f"Roll back {uuid.uuid4().hex[:6]}?"
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with over_http(stack, token) as client:

            async def ask(message: str, **extra: Any) -> str:
                args = {"channel": CHANNEL, "message": message, "requested_schema": FORM, "wait_seconds": 0}
                return str(result_of(await client.call_tool("ask_human", {**args, **extra}))["question_id"])

            qid = await ask(mine)
            cancel = f"/api/v1/questions/{qid}/cancel"
            resp = await anyio.to_thread.run_sync(lambda: stack.http.post(cancel, headers=token.auth))
            assert resp.status_code == 200, resp.text
            got["mine"] = result_of(await client.call_tool("get_answer", {"question_id": qid, "wait_seconds": 10}))

            qid = await ask(theirs, assignees=["U0CAROL"])
            message = await anyio.to_thread.run_sync(lambda: find_posted(stack, theirs))
            await anyio.to_thread.run_sync(lambda: click_decline(stack, message, "U0CAROL"))
            got["theirs"] = result_of(await client.call_tool("get_answer", {"question_id": qid, "wait_seconds": 30}))

    anyio.run(scenario)
    assert (got["mine"]["status"], got["mine"]["cancelled_by"], got["mine"]["action"]) == ("cancelled", name, "cancel")
    theirs_said = (got["theirs"]["status"], got["theirs"]["cancelled_by"], got["theirs"]["action"])
    assert theirs_said == ("cancelled", "U0CAROL", "decline")
    for qid, declined in ((got["mine"]["question_id"], False), (got["theirs"]["question_id"], True)):
        shown = stack.http.get(f"/api/v1/questions/{qid}", headers=token.auth).json()  # the API's view says so too
        assert (shown["status"], shown["declined"]) == ("cancelled", declined), shown


@pytest.mark.parametrize("admin", ["U123ABC", "WATCHDOG"])
def test_an_admin_tokens_cancel_is_cancel_whatever_its_name(stack: SlackStack, admin: str) -> None:
    """Another token's cancel is `cancel`, even named like a Slack user id."""
    asker, canceller = create_token(stack, f"asker-for-{admin.lower()}"), create_token(stack, admin, "admin")
    about = f"Scale {uuid.uuid4().hex[:6]}?"
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with over_http(stack, asker) as client:
            args = {"channel": CHANNEL, "message": about, "requested_schema": FORM, "wait_seconds": 0}
            qid = str(result_of(await client.call_tool("ask_human", args))["question_id"])
            cancel = f"/api/v1/questions/{qid}/cancel"
            resp = await anyio.to_thread.run_sync(lambda: stack.http.post(cancel, headers=canceller.auth))
            assert resp.status_code == 200, resp.text
            got["mcp"] = result_of(await client.call_tool("get_answer", {"question_id": qid, "wait_seconds": 10}))

    anyio.run(scenario)
    said = got["mcp"]
    assert (said["status"], said["cancelled_by"], said["action"]) == ("cancelled", admin, "cancel"), said
    for token in (asker, canceller):  # the API's view, as the asker and as the admin read it
        shown = stack.http.get(f"/api/v1/questions/{said['question_id']}", headers=token.auth).json()
        assert (shown["status"], shown["cancelled_by"], shown["declined"]) == ("cancelled", admin, False), shown
    stack.wait_for("its message to read cancelled", lambda: locked(stack, shown["message_ts"]))
    assert "Declined" not in texts(stack.ws.message(CHANNEL, shown["message_ts"])["blocks"])  # nor in Slack


@contextmanager
def stdio_ask(stack: SlackStack, tmp_path: Path, origin: str, args: dict[str, Any]) -> Iterator[Any]:
    """`parley mcp` over raw stdio, initialised and sent `ask_human` with `args`; stopped after."""
    env = {**stack.env(), "PARLEY_MCP_ORIGIN": origin}
    with (tmp_path / "mcp.log").open("wb") as log:
        host = subprocess.Popen(
            [str(PARLEY), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            start_new_session=True,
        )  # fmt: skip
    assert host.stdin is not None and host.stdout is not None
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL,
                "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
        call = {"name": "ask_human", "arguments": {**args, "channel": CHANNEL}}
        for message in (
            init,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ):
            host.stdin.write(json.dumps(message).encode() + b"\n")
            host.stdin.flush()
        assert json.loads(host.stdout.readline())["id"] == 1
        yield host
    finally:
        stop_process_group(host)


def find_posted(stack: SlackStack, text: str) -> dict[str, Any]:
    return stack.wait_for(
        f"{text!r} to be posted",
        lambda: next((m for m in stack.ws.messages(CHANNEL) if text in texts(m["blocks"])), None),
    )
