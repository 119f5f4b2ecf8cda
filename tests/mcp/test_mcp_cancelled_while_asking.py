"""A call cancelled while its question is still being created and posted withdraws that question.

The question is created and posted in a worker thread, which a cancel cannot stop. Here the
Web API stand-in holds the question's `chat.postMessage` while the call is cancelled: by its
client (`notifications/cancelled`), by its session's `DELETE`, or by a stdio host that exits.
Once the post goes through, the question is withdrawn and its message locked, whatever the
call's `wait_seconds`. Its client never got the question's id, so nobody could read the answer.
Over `/mcp` of a live `parley serve` and over `parley mcp`, with real workers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from api_support import create_token
from slack_stack import SlackStack
from test_mcp_cancelled_calls import locked, question_about, stdio_ask, withdrawn
from test_mcp_conformance import RawSession
from test_mcp_system import CHANNEL, over_http, questions, topic

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

HELD = 4.0
"""Seconds the stand-in holds the question's post: the call is cancelled meanwhile."""


def hold_the_post(stack: SlackStack) -> None:
    """Hold the next `chat.postMessage`, the question's own."""
    stack.ws.faults.clear()
    stack.ws.faults.delay_next("chat.postMessage", HELD)


def post_held(stack: SlackStack) -> None:
    """Until the question's post reached the stand-in, which holds it: the create is under way."""
    stack.wait_for("the question's post to be held", lambda: stack.ws.faults.pending() == 0)


@pytest.mark.parametrize("wait", [0, 45])
def test_a_call_its_client_cancels_while_the_question_is_posted_withdraws_it(stack: SlackStack, wait: int) -> None:
    token = create_token(stack, f"mcp-cancelled-posting-{wait}")
    about = topic()
    hold_the_post(stack)
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with over_http(stack, token) as client:
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    await client.call_tool("ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": wait})
                    got["returned"] = True  # never: the call is cancelled first

                tg.start_soon(ask)
                await anyio.to_thread.run_sync(lambda: post_held(stack))
                tg.cancel_scope.cancel()  # the client gives up on the call and says so
            # the session stays open: only the cancel notification ends the question
            question = await anyio.to_thread.run_sync(lambda: question_about(stack, token, about))
            await anyio.to_thread.run_sync(lambda: withdrawn(stack, token, question))

    anyio.run(scenario)
    assert "returned" not in got


def test_ending_the_session_while_the_question_is_posted_withdraws_it(stack: SlackStack) -> None:
    token = create_token(stack, "mcp-ended-posting")
    about = topic()
    hold_the_post(stack)
    session = RawSession(stack, token)
    try:
        session.call_then_drop(5, "ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 0})
        post_held(stack)
        ended = session.http.delete("/mcp")
        assert ended.status_code == 200, ended.text
        withdrawn(stack, token, question_about(stack, token, about))
    finally:
        session.http.close()


def test_a_stdio_host_that_exits_while_the_question_is_posted_withdraws_it(stack: SlackStack, tmp_path: Path) -> None:
    about = topic()
    hold_the_post(stack)
    before = {m["ts"] for m in stack.ws.messages(CHANNEL)}
    with stdio_ask(stack, tmp_path, "exiting-while-posting", {**questions(about), "wait_seconds": 0}) as host:
        post_held(stack)
        host.stdin.close()  # the host exits while the question is posted: end of input, and nothing else
        host.wait(timeout=30)
        answered = host.stdout.read()

    assert b"question_id" not in answered  # the id never reached the host
    asked = stack.wait_call("chat.postMessage", lambda c: about in json.dumps(c["args"]), what="the question's post")
    assert asked["error"] is None, asked
    [ts] = [m["ts"] for m in stack.ws.messages(CHANNEL) if m["ts"] not in before]  # its message, locked or not
    stack.wait_for("the question to be withdrawn and its message locked", lambda: locked(stack, ts))
