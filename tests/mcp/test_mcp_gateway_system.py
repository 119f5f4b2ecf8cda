"""The approval gateway as people run it, from docs/api.md#gateway: `parley mcp gateway` spawned over stdio
by the SDK's client and `/mcp/gateway` of a live `parley serve` over streamable HTTP, each with the doc's own
rules file and host configuration. What a reader changes is changed here too: the upstreams' commands and
URL (the test upstream, `mcp_upstream.py`, one over stdio and one over HTTP), the channel and approver,
the paths, the address and the token. Approvals are answered with Slack's signed payloads.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
import yaml
from api_support import Token, create_token
from gateway_support import APPROVER, SECRET, UPSTREAM
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload
from slack_stack import PARLEY, SlackStack, free_port, stop_process_group
from stacks import Stacks

from workers.store.records import InterruptState
from workers.store.runs import RunStore

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
CHANNEL = "C0GENERAL"


def doc_blocks(language: str) -> list[str]:
    """The `language` code blocks of docs/api.md's Gateway section, in order."""
    text = (ROOT / "docs/api.md").read_text()
    section = text[text.index("\n## Gateway\n") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("gateway")
    out = {"files": base / "files", "tickets": base / "tickets", "stack": base / "stack"}
    for path in out.values():
        path.mkdir()
    return out


@pytest.fixture(scope="module")
def tickets(dirs: dict[str, Path]) -> Iterator[str]:
    """The test upstream over streamable HTTP, as the doc's `tickets`: its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(UPSTREAM), str(dirs["tickets"]), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.HTTPError:
                assert time.monotonic() < deadline, "the HTTP upstream did not start"
                time.sleep(0.1)
        yield url
    finally:
        stop_process_group(proc)


@pytest.fixture(scope="module")
def gateway_yml(dirs: dict[str, Path], tickets: str) -> Path:
    [text] = doc_blocks("yaml")
    config = yaml.safe_load(text)
    config["upstreams"]["files"]["command"] = [sys.executable, str(UPSTREAM), str(dirs["files"])]
    config["upstreams"]["tickets"]["url"] = tickets
    config.update(channel=CHANNEL, assignees=[APPROVER])
    path = dirs["stack"].parent / "gateway.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def stack(redis_url: str, dirs: dict[str, Path], gateway_yml: Path, stacks: Stacks) -> Iterator[SlackStack]:
    env = {"PARLEY_MCP_CONFIG": str(gateway_yml), "TICKETS_TOKEN": "tickets-token"}
    yield stacks(redis_url=redis_url, workers=1, extra_env=env)


def host_config(n: int) -> dict[str, Any]:
    """The doc's `n`-th host configuration (0: stdio, 1: HTTP), its one server."""
    [server] = json.loads(doc_blocks("json")[n])["mcpServers"].values()
    return dict(server)


def approve(stack: SlackStack, path: str) -> dict[str, Any]:
    """The approver clicks Approve on the approval to write `path`; the message as it was posted."""

    assert stack.redis is not None
    store = RunStore(stack.redis)

    def posted() -> dict[str, Any] | None:
        """The approval's message once its question is open for answers (it is posted just before)."""
        for message in stack.ws.messages(CHANNEL):
            ids = [
                b["block_id"].split("|")[1] for b in message.get("blocks") or [] if b.get("block_id", "")[:3] == "qa|"
            ]
            interrupt = store.interrupt(ids[0]) if ids and path in json.dumps(message) else None
            if interrupt is not None and interrupt.state is InterruptState.OPEN:
                return message
        return None

    message = stack.wait_for(f"the approval to write {path}", posted)
    block, button = find_element(message["blocks"], "parley_approve")
    action = button_action(block, button)
    payload = block_actions_payload(user=APPROVER, message=message, channel=CHANNEL, action=action)
    assert stack.interact(payload).status_code == 200
    return message


async def call_approved(
    client: Client, stack: SlackStack, tool: str, arguments: dict[str, Any], progress: list[float] | None = None
) -> CallToolResult:
    """Call `tool` and approve it in Slack; with `progress`, only once a progress notification has come."""
    got: dict[str, CallToolResult] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        assert progress is not None
        progress.append(value)

    async def call() -> None:
        report = on_progress if progress is not None else None
        got["result"] = await client.call_tool(tool, arguments, progress_callback=report)

    def person() -> None:
        if progress is not None:  # the gateway's interval is 15 s
            stack.wait_for("a progress notification while the call waits", lambda: progress, timeout=40)
        approve(stack, arguments["path"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.to_thread.run_sync(person)
    return got["result"]


def test_the_docs_stdio_configuration_runs_parley_mcp_gateway(
    stack: SlackStack, gateway_yml: Path, dirs: dict[str, Path]
) -> None:
    server = host_config(0)
    assert server["command"] == "parley" and server["args"][:2] == ["mcp", "gateway"]
    args = [str(gateway_yml) if a.endswith("gateway.yml") else a for a in server["args"]]
    env = {**server["env"], **stack.env()}  # the reader's own Redis and Slack settings
    params = StdioServerParameters(command=str(PARLEY), args=args, env=env)
    (dirs["files"] / "readme.txt").write_text("hello")

    async def scenario() -> tuple[set[str], CallToolResult, CallToolResult]:
        async with Client(params, read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool("files.read_file", {"path": "readme.txt"})  # allow: straight through
            written = await call_approved(
                client, stack, "files.write_file", {"path": "stdio.txt", "text": "via stdio", "token": SECRET}
            )
            return names, read, written

    names, read, written = anyio.run(scenario)
    assert {"files.write_file", "files.read_file", "tickets.write_file"} <= names
    assert read.structured_content == {"result": "hello"}
    assert not written.is_error, written.content
    assert (dirs["files"] / "stdio.txt").read_text() == "via stdio"
    assert (dirs["files"] / ".writes").read_text().splitlines() == [f"stdio.txt\t{SECRET}"]
    assert all(SECRET not in json.dumps(call) for call in stack.ws.calls())
    assert stack.redis is not None
    store = RunStore(stack.redis)
    [run_id] = [r for r in store.list_ids(None, limit=50) if any(e.event == "forwarded" for e in store.history(r))]
    listed = subprocess.run([str(PARLEY), "runs", "list"], env=stack.env(), capture_output=True, text=True, check=True)
    assert any(line.startswith(run_id) for line in listed.stdout.splitlines())  # the approval is a run
    forwarded = next(e for e in store.history(run_id) if e.event == "forwarded")
    assert forwarded.by == APPROVER and forwarded.detail["args"]["token"] == "••••"


def test_the_docs_http_configuration_reaches_mcp_gateway_under_parley_serve(
    stack: SlackStack, dirs: dict[str, Path]
) -> None:
    server = host_config(1)
    token: Token = create_token(stack, "gateway-http")
    url = server["url"].replace("https://parley.example.com", f"http://127.0.0.1:{stack.port}")
    headers = {k: v.replace("pk_…", token.token) for k, v in server["headers"].items()}
    assert url.endswith("/mcp/gateway")

    progress: list[float] = []

    async def scenario() -> CallToolResult:
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=90))
        async with Client(streamable_http_client(url, http_client=http)) as client:
            arguments = {"path": "http.txt", "text": "via http"}
            return await call_approved(client, stack, "tickets.write_file", arguments, progress)

    result = anyio.run(scenario)
    assert not result.is_error, result.content
    assert progress and progress[0] > 0  # a progress notification reached the client over HTTP while it waited
    assert (dirs["tickets"] / "http.txt").read_text() == "via http"
    assert stack.http is not None
    refused = stack.http.post("/mcp/gateway", json={}, headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401  # no token, no gateway


def test_methods_the_streamable_http_transport_does_not_serve_are_405_with_allow(stack: SlackStack) -> None:
    """A stateless endpoint (`/mcp/gateway`; `/mcp` under `--workers N`) takes POST only: no SSE stream to `GET`,
    no session to `DELETE`. Such a `GET` was an empty stream held open, and one with `Last-Event-ID` a 500."""
    token = create_token(stack, "methods")
    port = free_port()
    stateless = stack.spawn_serve("serve-stateless", port, "--workers", "2")
    headers = {**token.auth, "Accept": "application/json, text/event-stream"}
    try:
        with httpx2.Client(timeout=10) as http:
            stack.wait_for("the second parley serve", lambda: _answers(http, f"http://127.0.0.1:{port}/healthz"), 30)
            for url in (f"http://127.0.0.1:{stack.port}/mcp/gateway", f"http://127.0.0.1:{port}/mcp"):
                for method, extra in [("GET", {}), ("GET", {"Last-Event-ID": "0-1"}), ("DELETE", {}), ("PUT", {})]:
                    with http.stream(method, url, headers={**headers, **extra}) as answer:
                        got = (method, extra, url, answer.status_code, answer.headers.get("allow"))
                        assert got == (method, extra, url, 405, "POST")
                        assert answer.headers["content-type"] == "application/problem+json"
                        answer.read()
                        assert f"{method} is not served here" in answer.json()["detail"]
            # `/mcp` of one process keeps sessions: it serves GET and DELETE, and says so.
            put = http.put(f"http://127.0.0.1:{stack.port}/mcp", headers=headers)
            assert (put.status_code, put.headers.get("allow")) == (405, "GET, POST, DELETE")
    finally:
        stop_process_group(stateless)


def _answers(http: httpx2.Client, url: str) -> bool:
    try:
        return http.get(url, timeout=1).status_code == 200
    except httpx2.HTTPError:
        return False
