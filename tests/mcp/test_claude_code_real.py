"""The real Claude Code asks Parley before each tool use, set up as docs/api.md#claude-code shows.

`claude -p --mcp-config parley.json --permission-prompt-tool mcp__parley__approve_tool_use` runs
as the doc writes it (the binary from npm, `claude_code_real`), with a scripted model that asks
to write a file in the run's directory. A person decides in Slack with signed clicks: Approve
writes the file, Edit… writes the edited content, and Reject's reason is what Claude Code tells
the model next; a run stopped while a person is asked withdraws its approval. The rules' allow
and deny ask nobody and take effect, and `/mcp` over HTTP is asked as the stdio server is.
Behind the gateway, a call a rule asks about is forwarded once a person approves, and a reject
reaches the model.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from anthropic_standin import MessagesAPI, Turn, result_text, text, tool_results, tool_use
from api_support import create_token
from claude_code_real import ClaudeCode, claude_binary, doc_command, offered
from claude_code_support import approval, click, doc_rules, fenced, submit
from mcp_upstream import __file__ as UPSTREAM
from slack_forms import has_action, texts
from slack_stack import SlackStack, free_port, stop_process_group
from stacks import Stacks

pytestmark = pytest.mark.system

STARTUP = 90.0
"""Seconds Claude Code and the MCP server it starts may take to ask, on a busy machine."""


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory, stacks: Stacks) -> Iterator[SlackStack]:
    claude_binary()  # skip (or, on CI, fail) before starting anything
    yield stacks(redis_url=redis_url, workers=1)


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI().serving() as serving:
        yield serving


@pytest.fixture
def claude(stack: SlackStack, api: MessagesAPI, tmp_path: Path) -> ClaudeCode:
    return ClaudeCode(stack, api, tmp_path)


def doc_rules_text(first: str = "") -> str:
    """The doc's rules file, with one rule of the test's put first."""
    [rules] = fenced("yaml")
    return rules.replace("rules:\n", f"rules:\n  - {first}\n", 1) if first else rules


def write(target: Path, content: str) -> list[Turn]:
    """The model asks to write `content` to `target`, then ends its turn once told the outcome."""
    return [lambda body: [tool_use("Write", {"file_path": str(target), "content": content})], lambda body: [text("ok")]]


def told(api: MessagesAPI) -> str:
    """What Claude Code told the model about its tool use: the tool_result of the model's next request."""
    [result] = tool_results(api.conversation()[1])
    return result_text(result)


# ---- a person decides ----------------------------------------------------------------------------
def test_approve_in_slack_writes_the_file(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    target = claude.workdir / "notes.txt"
    api.turns += write(target, "approved text\n")
    claude.doc_setup(doc_rules_text())
    proc = claude.start(doc_command())
    click(stack, approval(stack, "Write", timeout=STARTUP), "parley_approve")
    claude.finish(proc)
    assert target.read_text() == "approved text\n"
    assert "invalid result" not in told(api)


def test_edit_in_slack_writes_the_edited_content(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    target = claude.workdir / "config.txt"
    api.turns += write(target, "DEBUG=1\n")
    claude.doc_setup(doc_rules_text())
    proc = claude.start(doc_command())
    form = click(stack, approval(stack, "Write", timeout=STARTUP), "parley_open_form")
    assert form is not None
    submit(stack, form, {"Content": "DEBUG=0"})
    claude.finish(proc)
    assert target.read_text() == "DEBUG=0"


def test_reject_in_slack_tells_the_model_the_reason(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    target = claude.workdir / "prod.env"
    api.turns += write(target, "DEBUG=1\n")
    claude.doc_setup(doc_rules_text())
    proc = claude.start(doc_command())
    form = click(stack, approval(stack, "Write", timeout=STARTUP), "parley_reject")
    assert form is not None
    submit(stack, form, {"Reason": "not on a Friday"})
    claude.finish(proc)
    assert not target.exists()
    assert "not on a Friday" in told(api), told(api)


def test_a_stopped_run_withdraws_its_approval(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    """Claude Code stopped (SIGTERM) while a person is asked: the approval is cancelled in Slack."""
    target = claude.workdir / "never.txt"
    api.turns += write(target, "nobody approved this\n")
    claude.doc_setup(doc_rules_text())
    proc = claude.start(doc_command())
    ts = approval(stack, "Write", timeout=STARTUP)["ts"]
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)

    def withdrawn() -> bool:
        now = next(m for m in stack.ws.messages(doc_rules()["channel"]) if m.get("ts") == ts)
        return not has_action(now["blocks"], "parley_approve") and "Cancelled" in texts(now["blocks"])

    stack.wait_for("the approval to be cancelled", withdrawn)
    assert not target.exists()


# ---- the rules decide, nobody is asked -----------------------------------------------------------
def test_a_rule_that_allows_asks_nobody(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    target = claude.workdir / "allowed.txt"
    api.turns += write(target, "by the rules\n")
    claude.doc_setup(doc_rules_text('{tools: "Write", action: allow}'))
    mark = stack.mark()
    claude.run(doc_command())
    assert target.read_text() == "by the rules\n"
    assert stack.calls("chat.postMessage", since=mark) == []


def test_a_rule_that_denies_asks_nobody(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    denied = next(rule for rule in doc_rules()["rules"] if rule["action"] == "deny")
    fetch = {"url": "https://docs.example.test/", "prompt": "Summarise the page"}
    api.turns += [lambda body: [tool_use(denied["tools"], fetch)], lambda body: [text("ok")]]
    claude.doc_setup(doc_rules_text())
    mark = stack.mark()
    claude.run(doc_command())
    assert denied["reason"] in told(api), told(api)
    assert stack.calls("chat.postMessage", since=mark) == []


def test_the_other_tools_results_reach_the_model(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    """ask_human's structured result (it declares an outputSchema) is what the model reads."""
    question = {"id": "region", "header": "Region", "question": "Which region?", "type": "free"}
    asked = {"questions": [question], "channel": doc_rules()["channel"], "wait_seconds": 0}
    api.turns += [lambda body: [tool_use(offered(body, "__ask_human"), asked)], lambda body: [text("ok")]]
    claude.doc_setup(doc_rules_text('{tools: "mcp__parley__*", action: allow}'))
    claude.run(doc_command())
    result = json.loads(told(api))
    assert result["status"] == "waiting" and result["question_id"].startswith("r"), result


# ---- over HTTP -----------------------------------------------------------------------------------
def test_over_http_a_person_approves_and_the_file_is_written(
    stack: SlackStack, api: MessagesAPI, claude: ClaudeCode
) -> None:
    """`/mcp` of a `parley serve` with `PARLEY_MCP_CONFIG` as Claude Code's MCP server, by bearer token."""
    (claude.workdir / "rules.yml").write_text(doc_rules_text())
    port = free_port()
    stack.extra_env["PARLEY_MCP_CONFIG"] = str(claude.workdir / "rules.yml")
    try:
        serve = stack.spawn_serve(f"serve-claude-{port}", port)
    finally:
        del stack.extra_env["PARLEY_MCP_CONFIG"]
    try:
        stack.wait_for("the second parley serve", lambda: _answers(port), timeout=30)
        token = create_token(stack, "claude-code-real-http")
        server = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp", "headers": token.auth}
        (claude.workdir / "parley.json").write_text(json.dumps({"mcpServers": {"parley": server}}))
        target = claude.workdir / "over-http.txt"
        api.turns += write(target, "by token\n")
        proc = claude.start(doc_command())
        click(stack, approval(stack, "Write", timeout=STARTUP), "parley_approve")
        claude.finish(proc)
    finally:
        stop_process_group(serve)
    assert target.read_text() == "by token\n"


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


# ---- behind the gateway --------------------------------------------------------------------------
def gateway_setup(claude: ClaudeCode, files: Path) -> list[str]:
    """`parley mcp gateway` in front of the test upstream as Claude Code's MCP server; the command line."""
    files.mkdir()
    rules = {
        "upstreams": {"files": {"command": [sys.executable, UPSTREAM, str(files)]}},
        "channel": doc_rules()["channel"],
        "assignees": doc_rules()["assignees"],
        "rules": [{"tools": "files.write_file", "action": "ask"}],
    }
    (claude.workdir / "gateway.yml").write_text(json.dumps(rules))
    claude.server_config("gateway", "parley", ["mcp", "gateway", "--config", "gateway.yml"], {})
    return ["claude", "-p", "--mcp-config", "gateway.json", "--allowedTools", "mcp__gateway", "--", "Write the report"]


def gateway_write(arguments: dict[str, Any]) -> list[Turn]:
    return [
        lambda body: [tool_use(offered(body, "write_file"), arguments)],
        lambda body: [text("ok")],
    ]


def test_a_gateway_call_a_person_approves_is_forwarded(stack: SlackStack, api: MessagesAPI, claude: ClaudeCode) -> None:
    files = claude.workdir / "files"
    argv = gateway_setup(claude, files)
    api.turns += gateway_write({"path": "report.txt", "text": "quarterly"})
    proc = claude.start(argv)
    click(stack, approval(stack, "files.write_file", heading="asks to call", timeout=STARTUP), "parley_approve")
    claude.finish(proc)
    assert (files / "report.txt").read_text() == "quarterly"
    assert "wrote" in told(api), told(api)


def test_a_gateway_call_a_person_rejects_tells_the_model_why(
    stack: SlackStack, api: MessagesAPI, claude: ClaudeCode
) -> None:
    files = claude.workdir / "files"
    argv = gateway_setup(claude, files)
    api.turns += gateway_write({"path": "report.txt", "text": "quarterly"})
    proc = claude.start(argv)
    form = click(stack, approval(stack, "files.write_file", heading="asks to call", timeout=STARTUP), "parley_reject")
    assert form is not None
    submit(stack, form, {"Reason": "wait for the audit"})
    claude.finish(proc)
    assert not (files / "report.txt").exists()
    assert "wait for the audit" in told(api), told(api)
