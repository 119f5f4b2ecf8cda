"""`parley mcp` while its Redis is down: each tool says so as a tool error, as `/api/v1` answers 503.

The server runs on a private `redis-server` of its own, killed before a call or while one waits;
the stack's Web API stand-in and loopback Slack are the rest. `ask_human`, `get_answer` and
`request_approval` are tool errors saying Redis is unavailable and when to try again, not
JSON-RPC's opaque `-32603`; `approve_tool_use` denies with that reason. A call whose question was
asked before Redis went names that question and says to call `get_answer` with it, so a retry
never asks people twice: that Redis keeps its data on disk, and once it is back `get_answer`
reads the question, then its answer, given through a `parley serve` on that Redis.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult
from redis_servers import Server, data_server, have_redis_server, scratch_dir
from slack_forms import button_action, find_element, form_state
from slack_payloads import EVENTS_PATH, FORM, block_actions_payload, interaction_body, signed_headers
from slack_stack import PARLEY, SlackStack, free_port, stop_process_group
from test_mcp_system import CHANNEL, posted, questions, result_of, topic

pytestmark = [
    pytest.mark.system,
    pytest.mark.stack(workers=1),
    pytest.mark.skipif(not have_redis_server(), reason="needs redis-server"),
]

UNAVAILABLE = "Parley's Redis is unavailable; try again in 5 s"
RULES = "channel: C0GENERAL\nexpires_in: 900\nrules:\n  - {tools: '*', action: ask}\n"
KEPT = ("--appendonly", "yes", "--appendfsync", "always")
"""A redis-server that keeps what it was told on disk: killed and started again, it has it all."""
USER = "U0CAROL"


@pytest.fixture
def private(tmp_path: Path) -> Iterator[Server]:
    """A redis-server of the test's own, on a free port: killing it touches no other test's Redis."""
    with scratch_dir(tmp_path / "redis-logs") as workdir:
        server = data_server("outage", workdir).start()
        try:
            yield server
        finally:
            server.stop()


def parley_mcp(stack: SlackStack, server: Server, tmp_path: Path) -> Client:
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    env = {**stack.env(), "REDIS_URL": url_of(server), "PARLEY_MCP_ORIGIN": "outage-desk"}
    params = StdioServerParameters(command=str(PARLEY), args=["mcp", "--config", str(rules)], env=env)
    return Client(params, read_timeout_seconds=60)


def url_of(server: Server) -> str:
    return f"redis://127.0.0.1:{server.port}/0"


def text_of(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


def test_each_tool_says_redis_is_unavailable_when_it_is_down_before_the_call(
    stack: SlackStack, private: Server, tmp_path: Path
) -> None:
    about = topic()
    got: dict[str, tuple[float, CallToolResult]] = {}
    calls: dict[str, dict[str, Any]] = {
        "ask_human": {**questions(about), "channel": CHANNEL, "wait_seconds": 30},
        "get_answer": {"question_id": "r0000000000000000", "wait_seconds": 30},
        "request_approval": {"action": "Deploy api", "args": {"service": "api"}, "channel": CHANNEL},
        "approve_tool_use": {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_outage"},
    }

    async def scenario() -> None:
        async with parley_mcp(stack, private, tmp_path) as client:
            await client.list_tools()
            private.kill()
            for tool, args in calls.items():
                start = time.monotonic()
                result = await client.call_tool(tool, args)
                got[tool] = (time.monotonic() - start, result)

    anyio.run(scenario)
    for tool in ("ask_human", "get_answer", "request_approval"):
        took, result = got[tool]
        assert result.is_error and text_of(result) == UNAVAILABLE, (tool, result)
        assert took < 20, (tool, took)  # not the whole wait
    took, denied = got["approve_tool_use"]
    assert not denied.is_error and json.loads(text_of(denied)) == {"behavior": "deny", "message": UNAVAILABLE}
    assert took < 20
    assert not any(about in json.dumps(m) for m in stack.ws.messages(CHANNEL))  # nothing was asked


def test_a_call_waiting_when_redis_goes_down_names_its_question_for_get_answer(
    stack: SlackStack, tmp_path: Path
) -> None:
    """The error names the question; get_answer reads it once Redis is back."""
    about = topic()
    approval = {"action": f"Deploy {about}", "args": {"service": about}, "channel": CHANNEL}
    calls: dict[str, dict[str, Any]] = {
        "ask_human": {**questions(about), "channel": CHANNEL, "wait_seconds": 8},
        "request_approval": {**approval, "wait_seconds": 8},
    }
    got: dict[str, Any] = {}
    with scratch_dir(tmp_path / "redis-logs") as workdir:
        redis_server = data_server("kept", workdir, *KEPT).start()
        serve: subprocess.Popen[bytes] | None = None
        try:

            async def scenario() -> None:
                nonlocal redis_server, serve
                async with parley_mcp(stack, redis_server, tmp_path) as client:
                    async with anyio.create_task_group() as tg:
                        for tool, args in calls.items():
                            tg.start_soon(call, client, tool, args, got)
                        await anyio.to_thread.run_sync(lambda: both_posted(stack, about))
                        redis_server.kill()  # each call now waits on a question it cannot read
                    redis_server = data_server("kept", workdir, *KEPT, port=redis_server.port).start()  # its data kept
                    got["ids"] = {tool: named(got[tool]) for tool in calls}
                    for tool, qid in got["ids"].items():
                        got[f"{tool} again"] = result_of(await again(client, qid, 0))
                    port = free_port()
                    serve = stack.spawn_serve("serve-kept", port, env={"REDIS_URL": url_of(redis_server)})
                    await anyio.to_thread.run_sync(lambda: clicked(stack, port, about))
                    got["answered"] = result_of(await again(client, got["ids"]["ask_human"], 30))

            anyio.run(scenario)
        finally:
            if serve is not None:  # before its Redis goes
                stop_process_group(serve)
                stack.procs.remove(serve)
            redis_server.stop()

    for tool in calls:
        assert got[f"{tool} again"] == {"status": "waiting", "question_id": got["ids"][tool]}, tool  # still open
    answered = got["answered"]
    assert (answered["status"], answered["answered_by"]) == ("answered", USER), answered
    assert answered["answers"] == {"plan": "Canary", "plan__other": None}


async def call(client: Client, tool: str, args: dict[str, Any], got: dict[str, Any]) -> None:
    got[tool] = await client.call_tool(tool, args)


async def again(client: Client, question_id: str, wait: int) -> CallToolResult:
    return await client.call_tool("get_answer", {"question_id": question_id, "wait_seconds": wait})


def both_posted(stack: SlackStack, about: str) -> None:
    for text in (f"Which plan for {about}?", f"Deploy {about}"):
        stack.wait_for(
            f"{text!r} to be posted", lambda t=text: any(t in json.dumps(m) for m in stack.ws.messages(CHANNEL))
        )


def named(result: CallToolResult) -> str:
    """The question id the tool error names, and says to pass to get_answer."""
    assert result.is_error, result
    text = text_of(result)
    found = re.search(r'call get_answer with question_id "(r[\w-]+)" once Redis is back', text)
    assert found is not None and text.startswith("Parley's Redis became unavailable"), text
    assert f"question {found[1]}" in text and "Do not ask again" in text, text
    return found[1]


def clicked(stack: SlackStack, port: int, about: str) -> None:
    """`USER` picks Canary, as Slack sends it to the `parley serve` on `port`."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15) as http:
        stack.wait_for("the serve on the kept Redis", lambda: healthy(http), timeout=30)
        message = posted(stack, about)
        block, button = find_element(message["blocks"], "parley_submit")
        label = next(
            b["label"]["text"] for b in message["blocks"] if b.get("type") == "input" and "Plan" in json.dumps(b)
        )
        payload = block_actions_payload(
            user=USER,
            message=message,
            channel=CHANNEL,
            action=button_action(block, button),
            state_values=form_state(message["blocks"], {label: "Canary"}),
        )
        body = interaction_body(payload)
        resp = http.post(EVENTS_PATH, content=body.encode(), headers=signed_headers(body, FORM))
        assert resp.status_code == 200, resp.text


def healthy(http: httpx.Client) -> bool:
    try:
        return http.get("/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
