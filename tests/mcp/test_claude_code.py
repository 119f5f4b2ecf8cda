"""Claude Code's permission prompt, set up as docs/api.md#claude-code shows it.

The rules file and the `parley.json` MCP configuration are read out of the doc; the server is
started exactly as that configuration says (`parley mcp --config rules.yml`, by the `mcp` SDK's
stdio client, with the stack's Redis and Slack in place of the doc's placeholders), and each
`approve_tool_use` result is read as Claude Code reads it: one text content holding JSON, allow
with `updatedInput` or deny with `message`. People decide in Slack with signed clicks and view
submissions; the rules' allow and deny answer without asking anyone. `/mcp` under a `parley
serve` with `PARLEY_MCP_CONFIG` follows the same file.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from api_support import create_token
from claude_code_support import (
    TOOL,
    Allow,
    Deny,
    approval,
    as_claude_code_reads,
    claude_code_client,
    click,
    decide,
    doc_rules,
    doc_server,
    fenced,
    submit,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from slack_forms import has_action, texts
from slack_stack import SlackStack, free_port

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]


# ---- the setup -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def setup_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the reader saved `rules.yml` and `parley.json`, as the doc says."""
    where = tmp_path_factory.mktemp("claude-code-setup")
    [rules] = fenced("yaml")
    (where / "rules.yml").write_text(rules)
    (where / "parley.json").write_text(json.dumps({"mcpServers": {"parley": doc_server()}}))
    return where


# ---- the tests -------------------------------------------------------------------------------
def test_the_doc_shows_the_whole_setup() -> None:
    [command] = [line for block in fenced("bash") for line in block.splitlines() if line.startswith("claude ")]
    argv = shlex.split(command)
    assert argv[:6] == [
        "claude",
        "-p",
        "--mcp-config",
        "parley.json",
        "--permission-prompt-tool",
        f"mcp__parley__{TOOL}",
    ]
    server = doc_server()
    assert (server["command"], server["args"]) == ("parley", ["mcp", "--config", "rules.yml"])
    actions = {rule["tools"]: rule["action"] for rule in doc_rules()["rules"]}
    assert {"allow", "deny", "ask"} <= set(actions.values())


def test_rules_allow_and_deny_without_asking(stack: SlackStack, setup_dir: Path) -> None:
    denied = next(rule for rule in doc_rules()["rules"] if rule["action"] == "deny")
    allowed = next(rule for rule in doc_rules()["rules"] if rule["action"] == "allow")
    mark = stack.mark()

    async def scenario() -> tuple[CallToolResult, CallToolResult, list[str]]:
        async with claude_code_client(stack, setup_dir) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            read = await client.call_tool(
                TOOL, {"tool_name": allowed["tools"], "input": {"file_path": "/srv/app/README.md"},
                       "tool_use_id": "toolu_01"},
            )  # fmt: skip
            fetch = await client.call_tool(TOOL, {"tool_name": denied["tools"], "input": {"url": "https://x.test"}})
            return read, fetch, list(tools)

    read, fetch, names = anyio.run(scenario)
    assert TOOL in names
    assert as_claude_code_reads(read) == Allow(behavior="allow", updatedInput={"file_path": "/srv/app/README.md"})
    assert as_claude_code_reads(fetch) == Deny(behavior="deny", message=denied["reason"])
    assert stack.calls("chat.postMessage", since=mark) == []  # nobody was asked


def test_approve_allows_the_input_as_proposed(stack: SlackStack, setup_dir: Path) -> None:
    proposed = {"command": "git push origin main", "description": "Push the fix"}

    def approve() -> None:
        message = approval(stack, "Bash")
        shown = texts(message["blocks"])
        assert "*command*\ngit push origin main" in shown
        click(stack, message, "parley_approve")

    result = decide(
        stack, lambda: claude_code_client(stack, setup_dir),
        {"tool_name": "Bash", "input": proposed, "tool_use_id": "toolu_02"}, approve,
    )  # fmt: skip
    assert as_claude_code_reads(result) == Allow(behavior="allow", updatedInput=proposed)


def test_edit_allows_the_edited_input(stack: SlackStack, setup_dir: Path) -> None:
    proposed = {"command": "git push --force origin main", "description": "Push", "timeout": 60000}

    def edit() -> None:
        form = click(stack, approval(stack, "Bash"), "parley_open_form")
        assert form is not None
        submit(stack, form, {"Command": "git push origin fix-tests"})

    result = decide(stack, lambda: claude_code_client(stack, setup_dir), {"tool_name": "Bash", "input": proposed}, edit)
    assert as_claude_code_reads(result) == Allow(
        behavior="allow", updatedInput={**proposed, "command": "git push origin fix-tests"}
    )


def test_reject_denies_with_the_reason(stack: SlackStack, setup_dir: Path) -> None:
    def reject() -> None:
        form = click(stack, approval(stack, "Write"), "parley_reject")
        assert form is not None and form["callback_id"] == "parley_reject_form"
        submit(stack, form, {"Reason": "not on a Friday"})

    args = {"tool_name": "Write", "input": {"file_path": "/srv/app/prod.env", "content": "DEBUG=1"}}
    result = decide(stack, lambda: claude_code_client(stack, setup_dir), args, reject)
    assert as_claude_code_reads(result) == Deny(behavior="deny", message="not on a Friday")


def test_a_redacted_argument_is_never_shown_and_goes_back_unchanged(stack: SlackStack, setup_dir: Path) -> None:
    redacting = next(rule for rule in doc_rules()["rules"] if rule.get("redact"))
    tool = redacting["tools"].replace("*", "release")
    secret_value = "tok-do-not-show-8c1f"
    proposed = {"service": "api", "token": secret_value}
    mark = stack.mark()

    def approve() -> None:
        message = approval(stack, tool)
        assert "*token*\n••••" in texts(message["blocks"])
        click(stack, message, "parley_approve")

    result = decide(
        stack, lambda: claude_code_client(stack, setup_dir), {"tool_name": tool, "input": proposed}, approve
    )
    assert as_claude_code_reads(result) == Allow(behavior="allow", updatedInput=proposed)
    assert secret_value not in json.dumps(stack.calls(since=mark))  # no Web API call carried it


def test_mcp_over_http_follows_parley_mcp_config(stack: SlackStack, setup_dir: Path) -> None:
    port = free_port()
    stack.extra_env["PARLEY_MCP_CONFIG"] = str(setup_dir / "rules.yml")
    try:
        stack.spawn_serve("serve-rules", port)
    finally:
        del stack.extra_env["PARLEY_MCP_CONFIG"]
    token = create_token(stack, "claude-code-http")
    stack.wait_for("the second parley serve", lambda: _answers(port))
    denied = next(rule for rule in doc_rules()["rules"] if rule["action"] == "deny")

    async def scenario() -> CallToolResult:
        http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            return await client.call_tool(TOOL, {"tool_name": denied["tools"], "input": {"url": "https://x.test"}})

    assert as_claude_code_reads(anyio.run(scenario)) == Deny(behavior="deny", message=denied["reason"])


def _answers(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx2.HTTPError:
        return False


def test_a_prompt_claude_code_gives_up_on_withdraws_its_approval(stack: SlackStack, setup_dir: Path) -> None:
    """Claude Code stops waiting (the run ended): the approval is cancelled in Slack, not left to approve."""
    asked: dict[str, Any] = {}

    async def scenario() -> None:
        async with claude_code_client(stack, setup_dir) as client, anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool(TOOL, {"tool_name": "Edit", "input": {"file_path": "/srv/app/main.py"}})

            tg.start_soon(call)
            asked["message"] = await anyio.to_thread.run_sync(lambda: approval(stack, "Edit"))
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    ts, channel = asked["message"]["ts"], doc_rules()["channel"]

    def locked() -> bool:
        now = next(m for m in stack.ws.messages(channel) if m.get("ts") == ts)
        return not has_action(now["blocks"], "parley_approve") and "Cancelled" in texts(now["blocks"])

    stack.wait_for("the approval to be cancelled", locked)


def test_a_waiting_prompt_reports_progress(stack: SlackStack, setup_dir: Path) -> None:
    """While a person is asked, the call sends MCP progress notifications (every 15 s), so a client that
    resets its timeout on progress keeps waiting."""
    progress: list[float] = []
    proposed = {"file_path": "/srv/app/notes.md"}

    def approve_later() -> None:
        message = approval(stack, "NotebookEdit")
        stack.wait_for("a progress notification", lambda: progress, timeout=30)
        click(stack, message, "parley_approve")

    args = {"tool_name": "NotebookEdit", "input": proposed}
    result = decide(stack, lambda: claude_code_client(stack, setup_dir), args, approve_later, progress)
    assert as_claude_code_reads(result) == Allow(behavior="allow", updatedInput=proposed)
    assert progress and progress[0] == 15


def test_a_repeated_tool_use_id_joins_the_first_approval(stack: SlackStack, setup_dir: Path) -> None:
    """Claude Code asking twice about one tool use (a retry, a second prompt) posts one approval,
    and both calls get the one answer given; the same id with another input is denied."""
    proposed = {"tool_name": "Bash", "input": {"command": "make release"}, "tool_use_id": "toolu_repeat_01"}
    mark = stack.mark()
    got: list[CallToolResult] = []

    def posted() -> list[dict[str, Any]]:
        return [c for c in stack.calls("chat.postMessage", since=mark) if "make release" in json.dumps(c)]

    async def scenario() -> CallToolResult:
        async with claude_code_client(stack, setup_dir) as client, anyio.create_task_group() as tg:

            async def call() -> None:
                got.append(await client.call_tool(TOOL, proposed))

            tg.start_soon(call)
            message = await anyio.to_thread.run_sync(lambda: approval(stack, "Bash"))
            tg.start_soon(call)
            await anyio.to_thread.run_sync(stack.settle)
            assert len(posted()) == 1, "the second call posted an approval of its own"
            other = {**proposed, "input": {"command": "make clean"}}
            conflicting = await client.call_tool(TOOL, other)
            await anyio.to_thread.run_sync(lambda: click(stack, message, "parley_approve"))
            return conflicting

    conflicting = anyio.run(scenario)
    assert [as_claude_code_reads(r) for r in got] == [Allow(behavior="allow", updatedInput=proposed["input"])] * 2
    assert as_claude_code_reads(conflicting) == Deny(
        behavior="deny", message="tool_use_id 'toolu_repeat_01' was asked about already, with another input"
    )
    assert len(posted()) == 1


def test_another_token_with_the_same_tool_use_id_joins_nothing(stack: SlackStack, setup_dir: Path) -> None:
    """Over `/mcp`, a tool_use_id joins only its own token's approval: another token reusing it is asked
    anew and never reads the first token's answer."""
    port = free_port()
    stack.extra_env["PARLEY_MCP_CONFIG"] = str(setup_dir / "rules.yml")
    try:
        stack.spawn_serve(f"serve-ids-{port}", port)
    finally:
        del stack.extra_env["PARLEY_MCP_CONFIG"]
    first, second = create_token(stack, "claude-code-a"), create_token(stack, "claude-code-b")
    stack.wait_for("the second parley serve", lambda: _answers(port))
    proposed = {"tool_name": "Bash", "input": {"command": "make deploy"}, "tool_use_id": "toolu_shared_01"}
    mark = stack.mark()

    def posted() -> int:
        return sum("make deploy" in json.dumps(c) for c in stack.calls("chat.postMessage", since=mark))

    async def call(token: Any) -> None:
        http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            await client.call_tool(TOOL, proposed)

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, first)
            await anyio.to_thread.run_sync(lambda: stack.wait_for("the first approval", lambda: posted() == 1))
            tg.start_soon(call, second)
            await anyio.to_thread.run_sync(lambda: stack.wait_for("the second approval", lambda: posted() == 2))
            tg.cancel_scope.cancel()

    anyio.run(scenario)
