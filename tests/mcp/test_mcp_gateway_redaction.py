"""The gateway against an upstream that echoes what it is given, and one whose tool names dodge the rules.

A real upstream (`mcp_upstream.py`, a subprocess on the official SDK) echoes a redacted token in
its tool error, its protocol error, its result and an elicitation; the token must reach the
upstream and nothing else: not the client, Redis, `parley runs show`, Slack or a log line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from gateway_support import APPROVER, UPSTREAM, Gateway
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp_types import CallToolResult
from mcp_upstream import LOOKALIKE
from secret_support import CapturedLogs, captured_logs, keys_holding, redis_values

from bot.mcp.rules import REDACTED, RulesConfig, parse_config
from parley.cli import main
from workers.runtime.sweep import sweep

pytestmark = pytest.mark.integration

TOKEN = 'tok-7c1e-"never"-shown'
"""A redacted token with quotes, so its JSON-escaped echo differs from it."""
BACKUP = "bk-90ad-never-shown"
"""A redacted token inside a list of credentials."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


def config(files: Path, rules: str) -> RulesConfig:
    command = json.dumps([sys.executable, str(UPSTREAM), str(files)])
    text = f"""
upstreams:
  files: {{command: {command}}}
channel: {CHANNEL}
assignees: [{APPROVER}]
rules:
{rules}
"""
    return parse_config(text, {})


def asked(files: Path, action: str = "ask") -> RulesConfig:
    rule = f'  - {{tools: "files.sign_in", action: {action}, redact: ["token", "creds.*.token"]}}'
    return config(files, rule)


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def call_while(
    gateway: Gateway, settings: RulesConfig, tool: str, arguments: dict[str, Any], person: Callable[[], None]
) -> CallToolResult:
    """Call `tool` through the gateway while `person()` acts in Slack."""

    async def scenario() -> CallToolResult:
        async with gateway.open(settings) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool(tool, arguments)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(person)
            return got["r"]

    return anyio.run(scenario)


def sign_in(echo: str) -> dict[str, Any]:
    return {"account": "ops", "token": TOKEN, "creds": [{"name": "backup", "token": BACKUP}], "echo": echo}


def runs_show(run_id: str, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> str:
    """What `parley runs show RUN` prints, run in this process against the test Redis."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PARLEY_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PARLEY_AGENTS", raising=False)
    capsys.readouterr()
    try:
        code = main(["runs", "show", run_id])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out + err


def assert_nowhere(bot: Bot, logs: CapturedLogs, shown: list[str], *secrets: str) -> None:
    """No Redis key, Web API call, log line or shown text holds any of `secrets`, in any spelling."""
    everything = json.dumps(bot.ws.calls(), ensure_ascii=False)
    assert redis_values(bot.runtime.redis), "the search read no key"
    for secret in secrets:
        for form in {secret, json.dumps(secret)[1:-1]}:
            assert keys_holding(bot.runtime.redis, form) == []
            assert form not in everything
            assert logs.holding(form) == []
            assert [text for text in shown if form in text] == []


def test_a_redacted_value_echoed_by_the_upstream_reaches_nobody(
    gateway: Gateway,
    bot: Bot,
    files: Path,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    approve = lambda: gateway.click(gateway.approval(), "parley_approve")  # noqa: E731

    def approve_then_let_the_elicitation_expire() -> None:
        approve()
        elicited = gateway.approval()  # the upstream's own question, asked in Slack
        shown.append(json.dumps(elicited, ensure_ascii=False))
        assert "Confirm" in shown[-1] and REDACTED in shown[-1]
        sweep(bot.runtime, now=time.time() + 1000)

    shown: list[str] = []
    with captured_logs() as logs:
        tool_error = call_while(gateway, asked(files), "files.sign_in", sign_in("error"), approve)
        protocol_error = call_while(gateway, asked(files), "files.sign_in", sign_in("protocol"), approve)
        allowed = call_while(gateway, asked(files, "allow"), "files.sign_in", sign_in("result"), lambda: None)
        elicited = call_while(
            gateway, asked(files), "files.sign_in", sign_in("elicit"), approve_then_let_the_elicitation_expire
        )

    got = [json.loads(line) for line in (files / ".signins").read_text().splitlines()]
    assert len(got) >= 4  # each call reached the upstream (a 2026-07-28 elicitation calls again)
    assert {g["token"] for g in got} == {TOKEN} and {g["creds"][0]["token"] for g in got} == {BACKUP}
    assert tool_error.is_error and "refused" in text_of(tool_error) and REDACTED in text_of(tool_error)
    assert protocol_error.is_error and "no account matches" in text_of(protocol_error)
    assert not allowed.is_error and text_of(allowed).startswith("signed in with")
    assert "asked to confirm" in text_of(elicited)
    results = [r.model_dump_json() for r in (tool_error, protocol_error, allowed, elicited)]
    asked_runs = [run.id for run in bot.runs() if run.agent == "question"]
    assert len(asked_runs) == 4  # three approvals and the elicitation
    shown += [runs_show(run_id, redis_url, tmp_path, monkeypatch, capsys) for run_id in asked_runs]
    assert any("upstream failed" in text for text in shown)
    assert_nowhere(bot, logs, results + shown, TOKEN, BACKUP)


def test_redact_paths_reach_into_lists_so_slack_and_redis_never_hold_them(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    posted: list[dict[str, Any]] = []

    def approve() -> None:
        posted.append(gateway.approval())
        gateway.click(posted[-1], "parley_approve")

    arguments = {"account": "ops", "creds": [{"name": "backup", "token": BACKUP}], "echo": "result"}
    with captured_logs() as logs:
        result = call_while(gateway, asked(files), "files.sign_in", arguments, approve)
    assert not result.is_error, text_of(result)
    [got] = [json.loads(line) for line in (files / ".signins").read_text().splitlines()]
    assert got["creds"] == [{"name": "backup", "token": BACKUP}]  # forwarded with the real token
    fields = [f["text"] for b in posted[0]["blocks"] for f in b.get("fields") or []]
    assert f'*creds*\n[{{"name": "backup", "token": "{REDACTED}"}}]' in fields  # shown, its token redacted
    assert_nowhere(bot, logs, [result.model_dump_json()], BACKUP)


def test_a_deny_glob_stops_an_upstreams_tool_whatever_the_case_of_its_name(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    (files / "kept.txt").write_text("kept")
    rules = '  - {tools: "files.delete_*", action: deny, reason: "never deleted from here"}\n'
    rules += '  - {tools: "files.*", action: allow}'

    async def scenario() -> tuple[dict[str, Any], CallToolResult]:
        async with gateway.open(config(files, rules)) as client:
            listed = {tool.name: tool.description for tool in (await client.list_tools()).tools}
            return listed, await client.call_tool("files.Delete_file", {"path": "kept.txt"})

    with captured_logs() as logs:
        listed, deleted = anyio.run(scenario)
    assert deleted.is_error and text_of(deleted) == "files.Delete_file is denied: never deleted from here"
    assert (files / "kept.txt").read_text() == "kept"
    assert listed["files.Delete_file"] == "Delete a file under the directory."
    flagged = listed[f"files.{LOOKALIKE}"]
    assert flagged.startswith("[Parley: this tool's name, 'd\\u0435lete_tree', has characters outside ASCII")
    assert flagged.endswith("] Delete a directory under the directory.")
    warned = logs.holding("upstream lists a tool named outside ASCII")
    assert warned and all("'upstream': 'files'" in line and "lete_tree" in line for line in warned)
    assert bot.ws.calls("chat.postMessage") == []  # nobody was asked


def test_an_approval_of_a_tool_named_outside_ascii_says_so(gateway: Gateway, bot: Bot, files: Path) -> None:
    rules = '  - {tools: "files.delete_*", action: deny, reason: "never deleted from here"}'
    posted: list[dict[str, Any]] = []

    def reject() -> None:
        posted.append(gateway.approval())
        gateway.submit(gateway.modal(posted[-1], "parley_reject"), {"Reason": "a look-alike"})

    result = call_while(gateway, config(files, rules), f"files.{LOOKALIKE}", {"path": "tree"}, reject)
    assert result.is_error and text_of(result).endswith("a look-alike")
    header = json.dumps(posted[0]["blocks"], ensure_ascii=False)
    assert "has characters outside ASCII; it may imitate another tool's name" in header
