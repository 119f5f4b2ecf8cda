"""The gateway in front of real MCP servers: `@modelcontextprotocol/server-filesystem` and `mcp-server-git`.

Both run as the rules file's upstreams (`real_upstreams.py`) behind `parley mcp gateway --config`
over stdio and behind `/mcp/gateway` of a live `parley serve`, driven by the official `mcp`
SDK's client. Reads go straight through; a write or a commit asks a person in Slack, and only
Approve makes it happen, once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from api_support import create_token
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from real_upstreams import FIRST_COMMIT, Upstreams, approve, git, prepare, reject
from slack_stack import PARLEY, SlackStack
from stacks import Stacks

from workers.store.runs import RunStore

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Upstreams:
    return prepare(tmp_path_factory.mktemp("real-upstreams"))


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, upstreams: Upstreams, stacks: Stacks
) -> Iterator[SlackStack]:
    env = {"PARLEY_MCP_CONFIG": str(upstreams.config)}
    yield stacks(redis_url=redis_url, workers=1, extra_env=env)


def over_stdio(stack: SlackStack, upstreams: Upstreams) -> Client:
    args = ["mcp", "gateway", "--config", str(upstreams.config)]
    return Client(StdioServerParameters(command=str(PARLEY), args=args, env=stack.env()), read_timeout_seconds=60)


def over_http(stack: SlackStack, upstreams: Upstreams) -> Client:
    token = create_token(stack, f"real-{uuid.uuid4().hex[:6]}")
    http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
    return Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp/gateway", http_client=http))


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, stack: SlackStack, upstreams: Upstreams) -> Callable[[], Client]:
    how = {"stdio": over_stdio, "http": over_http}[request.param]
    return lambda: how(stack, upstreams)


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def decided(
    connect: Callable[[], Client], calls: list[tuple[str, dict[str, Any]]], person: Callable[[int], None]
) -> list[CallToolResult]:
    """Each call in turn, `person(n)` deciding the `n`-th in Slack while it waits."""
    results: list[CallToolResult] = []

    async def scenario() -> None:
        async with connect() as client:
            for n, (tool, arguments) in enumerate(calls):

                async def call(tool: str = tool, arguments: dict[str, Any] = arguments) -> None:
                    results.append(await client.call_tool(tool, arguments))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await anyio.to_thread.run_sync(person, n)

    anyio.run(scenario)
    return results


def forwarded(stack: SlackStack, marker: str) -> int:
    """How many times a call whose recorded arguments show `marker` was forwarded to its upstream."""
    assert stack.redis is not None
    store = RunStore(stack.redis)
    events = [e for r in store.list_ids(None, limit=200) for e in store.history(r) if e.event == "forwarded"]
    return sum(marker in str(e.detail) for e in events)


def test_tools_are_listed_under_their_upstreams_and_reads_return_real_content(
    connect: Callable[[], Client], upstreams: Upstreams
) -> None:
    async def scenario() -> tuple[set[str], CallToolResult, CallToolResult]:
        async with connect() as client:
            names = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool("fs.read_text_file", {"path": str(upstreams.files / "notes.txt")})
            log = await client.call_tool("git.git_log", {"repo_path": str(upstreams.repo)})
            return names, read, log

    names, read, log = anyio.run(scenario)
    assert {"fs.read_text_file", "fs.write_file", "git.git_log", "git.git_add", "git.git_commit"} <= names
    assert all(name.startswith(("fs.", "git.")) for name in names), names
    assert not read.is_error and text(read) == "read me through the gateway\n"
    assert not log.is_error and FIRST_COMMIT in text(log)


def test_an_approved_write_and_commit_happen_once(
    connect: Callable[[], Client], stack: SlackStack, upstreams: Upstreams
) -> None:
    name = f"approved-{uuid.uuid4().hex[:8]}.txt"
    message = f"add {name}"
    commits = int(git(upstreams.repo, "rev-list", "--count", "HEAD"))
    calls = [
        ("fs.write_file", {"path": str(upstreams.files / name), "content": "approved in Slack"}),
        ("git.git_add", {"repo_path": str(upstreams.repo), "files": [str(upstreams.repo / name)]}),
        ("git.git_commit", {"repo_path": str(upstreams.repo), "message": message}),
    ]
    (upstreams.repo / name).write_text("to be committed\n")  # what git_add stages once approved
    markers = [name, name, message]

    results = decided(connect, calls, lambda n: approve(stack, markers[n]))

    assert [r.is_error for r in results] == [False, False, False], [text(r) for r in results]
    assert (upstreams.files / name).read_text() == "approved in Slack"
    assert git(upstreams.repo, "log", "-1", "--format=%s").strip() == message
    assert int(git(upstreams.repo, "rev-list", "--count", "HEAD")) == commits + 1
    assert name in git(upstreams.repo, "show", "--name-only", "--format=", "HEAD")
    assert forwarded(stack, str(upstreams.files / name)) == 1  # the write reached the filesystem server once
    assert forwarded(stack, message) == 1


def test_a_rejected_write_and_commit_do_not_happen(
    connect: Callable[[], Client], stack: SlackStack, upstreams: Upstreams
) -> None:
    name = f"rejected-{uuid.uuid4().hex[:8]}.txt"
    message = f"never {name}"
    head = git(upstreams.repo, "rev-parse", "HEAD")
    calls = [
        ("fs.write_file", {"path": str(upstreams.files / name), "content": "never written"}),
        ("git.git_commit", {"repo_path": str(upstreams.repo), "message": message}),
    ]
    markers = [name, message]

    results = decided(connect, calls, lambda n: reject(stack, markers[n], "not today"))

    assert [r.is_error for r in results] == [True, True]
    assert all("not today" in text(r) for r in results), [text(r) for r in results]
    assert not (upstreams.files / name).exists()
    assert git(upstreams.repo, "rev-parse", "HEAD") == head
    assert forwarded(stack, name) == 0


def test_a_tool_no_rule_allows_or_asks_is_denied_without_asking(stack: SlackStack, upstreams: Upstreams) -> None:
    before = len(stack.ws.messages("C0GENERAL"))

    async def scenario() -> CallToolResult:
        async with over_http(stack, upstreams) as client:
            return await client.call_tool(
                "git.git_create_branch", {"repo_path": str(upstreams.repo), "branch_name": "x"}
            )

    result = anyio.run(scenario)
    assert result.is_error and "only reads, writes and commits here" in text(result)
    assert "x" not in git(upstreams.repo, "branch", "--format=%(refname:short)").split()
    assert len(stack.ws.messages("C0GENERAL")) == before
