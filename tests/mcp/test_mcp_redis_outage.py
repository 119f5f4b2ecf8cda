"""`parley mcp` while its Redis is down: each tool says so as a tool error, as `/api/v1` answers 503.

The server runs on a private `redis-server` of its own, killed before a call or while one waits;
the stack's Web API stand-in and loopback Slack are the rest. `ask_human`, `get_answer` and
`request_approval` are tool errors saying Redis is unavailable and when to try again, not
JSON-RPC's opaque `-32603`; `approve_tool_use` denies with that reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult
from redis_servers import Server, data_server, have_redis_server, scratch_dir
from slack_stack import PARLEY, SlackStack
from test_mcp_system import CHANNEL, questions, topic

pytestmark = [
    pytest.mark.system,
    pytest.mark.stack(workers=1),
    pytest.mark.skipif(not have_redis_server(), reason="needs redis-server"),
]

UNAVAILABLE = "Parley's Redis is unavailable; try again in 5 s"
RULES = "channel: C0GENERAL\nexpires_in: 900\nrules:\n  - {tools: '*', action: ask}\n"


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
    env = {**stack.env(), "REDIS_URL": f"redis://127.0.0.1:{server.port}/0", "PARLEY_MCP_ORIGIN": "outage-desk"}
    params = StdioServerParameters(command=str(PARLEY), args=["mcp", "--config", str(rules)], env=env)
    return Client(params, read_timeout_seconds=60)


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


def test_a_call_waiting_when_redis_goes_down_ends_as_a_tool_error(
    stack: SlackStack, private: Server, tmp_path: Path
) -> None:
    about = topic()
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with parley_mcp(stack, private, tmp_path) as client, anyio.create_task_group() as tg:

            async def ask() -> None:
                args = {**questions(about), "channel": CHANNEL, "wait_seconds": 8}
                got["result"] = await client.call_tool("ask_human", args)

            tg.start_soon(ask)
            await anyio.to_thread.run_sync(
                lambda: stack.wait_for(
                    "the question to be posted",
                    lambda: any(f"Which plan for {about}?" in json.dumps(m) for m in stack.ws.messages(CHANNEL)),
                )
            )
            private.kill()

    anyio.run(scenario)
    result: CallToolResult = got["result"]
    assert result.is_error and text_of(result) == UNAVAILABLE, result
