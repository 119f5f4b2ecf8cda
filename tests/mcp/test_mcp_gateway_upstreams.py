"""Upstreams that misbehave, or behave the usual way, behind the gateway: the official SDK's client,
the gateway's server, the test upstream (`mcp_upstream.py`, a subprocess on the SDK), Redis, and the
approver's clicks and form submissions as Slack sends them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from gateway_support import APPROVER, UPSTREAM, Gateway
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp import Client
from mcp_types import CallToolResult
from mcp_upstream import DOWN, PAY_AFTER, PAYMENTS

from bot.mcp.rules import RulesConfig, parse_config
from workers.runtime.sweep import expire_due

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


def config(files: Path, *, upstream: str = "", rules: str = '  - {tools: "*", action: allow}') -> RulesConfig:
    """One upstream, `files`, with `upstream`'s keys added; asked in the test channel of the approver."""
    command = json.dumps([sys.executable, str(UPSTREAM), str(files)])
    text = f"""
upstreams:
  files: {{command: {command}{", " + upstream if upstream else ""}}}
channel: {CHANNEL}
assignees: [{APPROVER}]
rules:
{rules}
"""
    return parse_config(text, {})


PAY_ASKED = """  - {tools: "files.pay", action: ask}
  - {tools: "*", action: allow}"""


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def history(bot: Bot, run_id: str) -> list[dict[str, Any]]:
    return [entry.model_dump() for entry in bot.runtime.store.history(run_id)]


def question_run(bot: Bot) -> str:
    [run] = [r for r in bot.runtime.store.runs(bot.runtime.store.list_ids(None, limit=5)) if r.agent == "question"]
    return run.id


def payments(files: Path) -> list[str]:
    made = files / PAYMENTS
    return made.read_text().splitlines() if made.exists() else []


async def listed(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def until(what: str, check: Any, timeout: float = 20) -> None:
    """Poll the async `check()` until it is true."""
    with anyio.fail_after(timeout):
        while not await check():
            await anyio.sleep(0.1)


def test_an_upstream_that_elicits_the_usual_way_is_answered_by_a_person_in_slack(gateway: Gateway, files: Path) -> None:
    async def scenario() -> CallToolResult:
        async with gateway.open(config(files), progress_every=0.2) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool("files.ask_plainly", {})

            def person() -> None:
                view = gateway.modal(gateway.approval(), "parley_open_form")
                gateway.submit(view, {"Environment": "production", "Replicas": "4", "Confirm": ["Yes"]})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(person)
            return got["r"]

    result = anyio.run(scenario)
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == {
        "action": "accept",
        "content": {"environment": "production", "replicas": 4, "confirm": True},
    }


def test_a_protocol_the_sdk_does_not_speak_is_refused_in_the_rules_file(files: Path) -> None:
    with pytest.raises(ValueError, match="`protocol` '2024-01-01' is not one of legacy, auto, 2026-07-28"):
        config(files, upstream='protocol: "2024-01-01"')
    assert config(files, upstream='protocol: "2026-07-28"').upstreams["files"].protocol == "2026-07-28"


@pytest.mark.parametrize(
    ("limits", "times", "asked"),
    [("", 25, 3), ("elicitations: {per_call: 5, per_minute: 2}", 4, 2)],
    ids=["per-call", "per-minute"],
)
def test_one_call_cannot_flood_the_channel_with_elicitations(
    gateway: Gateway, bot: Bot, files: Path, limits: str, times: int, asked: int
) -> None:
    """Each question put to people expires unanswered (`cancel`); past the cap the upstream hears
    `decline` at once and nobody is pinged."""

    async def scenario() -> CallToolResult:
        async with gateway.open(config(files, upstream=limits)) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool("files.ask_many", {"times": times})

            def let_each_expire() -> None:
                for _ in range(asked):
                    gateway.approval()
                    # Only the expiry: a whole sweep this far ahead would also lapse the lease of
                    # the next question's run, which the gateway may be posting meanwhile.
                    assert len(expire_due(bot.runtime, now=time.time() + 1000)) == 1

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(let_each_expire)
            return got["r"]

    result = anyio.run(scenario)
    assert not result.is_error, text_of(result)
    assert [getattr(c, "text", "") for c in result.content] == ["cancel"] * asked + ["decline"] * (times - asked)
    posted = [c for c in bot.ws.calls("chat.postMessage") if f"of {times}" in json.dumps(c["args"])]
    assert len(posted) == asked


def test_a_call_the_upstream_never_answers_ends_at_its_timeout_in_the_error_and_the_history(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    rules = """  - {tools: "files.hang", action: ask}
  - {tools: "*", action: allow}"""

    async def scenario() -> CallToolResult:
        async with gateway.open(config(files, upstream="timeout: 1", rules=rules)) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(30):
                    got["r"] = await client.call_tool("files.hang", {})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(lambda: gateway.click(gateway.approval(), "parley_approve"))
            return got["r"]

    result = anyio.run(scenario)
    said = "upstream 'files' did not answer hang within 1 second (its `timeout`); the call was stopped"
    assert result.is_error and text_of(result) == said
    failed = [e for e in history(bot, question_run(bot)) if e["event"] == "upstream failed"]
    assert [e["detail"]["error"] for e in failed] == [said]


def test_a_crashed_upstream_is_unlisted_and_reconnected_once_it_can_start(gateway: Gateway, files: Path) -> None:
    async def scenario() -> tuple[CallToolResult, list[str], CallToolResult, CallToolResult]:
        async with gateway.open(config(files), backoff=(0.2, 0.5)) as client:
            (files / DOWN).touch()  # it cannot start again, for now
            with anyio.fail_after(20):
                crashed = await client.call_tool("files.crash", {})
            await until("its tools to be unlisted", lambda: _none_listed(client))
            unlisted = sorted(await listed(client))
            unreachable = await client.call_tool("files.read_file", {"path": "a.txt"})
            (files / DOWN).unlink()
            (files / "a.txt").write_text("back")
            await until("its tools to be listed again", lambda: _listed(client, "files.read_file"))
            back = await client.call_tool("files.read_file", {"path": "a.txt"})
            return crashed, unlisted, unreachable, back

    crashed, unlisted, unreachable, back = anyio.run(scenario)
    assert crashed.is_error and "upstream 'files' failed on crash" in text_of(crashed)
    assert unlisted == []
    assert unreachable.is_error and text_of(unreachable).startswith("upstream 'files' is unreachable:")
    assert not back.is_error and back.structured_content == {"result": "back"}


def test_an_approved_call_whose_upstream_went_down_says_so_and_is_not_forwarded(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    async def scenario() -> CallToolResult:
        got: dict[str, CallToolResult] = {}
        async with gateway.open(config(files, rules=PAY_ASKED), backoff=(0.2, 0.5)) as client:

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool("files.pay", {"amount": 50, "account": "internal-7"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                message = await anyio.to_thread.run_sync(gateway.approval)
                (files / DOWN).touch()  # it cannot start again, for now
                with anyio.fail_after(20):
                    await client.call_tool("files.crash", {})
                await until("its tools to be unlisted", lambda: _none_listed(client))
                await anyio.to_thread.run_sync(lambda: gateway.click(message, "parley_approve"))
            (files / DOWN).unlink()
        return got["r"]

    result = anyio.run(scenario)
    assert result.is_error and text_of(result).startswith("upstream 'files' is unreachable (")
    assert text_of(result).endswith("nothing was forwarded: call it again once it is back")
    assert payments(files) == []
    events = [e for e in history(bot, question_run(bot)) if e["event"] in ("forwarded", "not forwarded")]
    assert [(e["event"], e["by"]) for e in events] == [("not forwarded", APPROVER)]


async def _none_listed(client: Client) -> bool:
    return not await listed(client)


async def _listed(client: Client, name: str) -> bool:
    return name in await listed(client)


def test_a_tool_redefined_while_its_call_waited_is_not_forwarded_on_the_old_approval(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    async def scenario() -> tuple[CallToolResult, CallToolResult, int]:
        async with gateway.open(config(files, rules=PAY_ASKED)) as client:
            with anyio.fail_after(20):  # refused at once: nobody is asked
                too_much = await client.call_tool("files.pay", {"amount": 5000, "account": "outside-1"})
            asked_before = len(bot.ws.calls("chat.postMessage"))
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool("files.pay", {"amount": 50, "account": "internal-7"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                message = await anyio.to_thread.run_sync(gateway.approval)
                redefined = await client.call_tool("files.redefine", {})
                assert not redefined.is_error, text_of(redefined)

                async def changed() -> bool:
                    return (await listed(client))["files.pay"].description == PAY_AFTER

                await until("the gateway to re-read the upstream's tools", changed)
                await anyio.to_thread.run_sync(lambda: gateway.click(message, "parley_approve"))
            return too_much, got["r"], asked_before

    too_much, voided, asked_before = anyio.run(scenario)
    assert too_much.is_error and "amount: must be at most 100" in text_of(too_much)
    assert asked_before == 0  # nobody was asked about a call the tool refuses
    assert voided.is_error
    assert text_of(voided) == "files.pay: the tool changed while it waited for approval; call it again"
    assert payments(files) == []
    events = [e for e in history(bot, question_run(bot)) if e["event"] in ("forwarded", "not forwarded")]
    assert [(e["event"], e["by"]) for e in events] == [("not forwarded", APPROVER)]


def test_an_edit_the_tools_schema_refuses_is_refused_in_slack_naming_the_field(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    acks: list[Any] = []

    async def scenario() -> CallToolResult:
        async with gateway.open(config(files, rules=PAY_ASKED)) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool("files.pay", {"amount": 50, "account": "internal-7"})

            def edit() -> None:
                view = gateway.modal(gateway.approval(), "parley_open_form")
                acks.append(gateway.try_submit(view, {"Amount": "0"}))
                acks.append(payments(files))  # nothing was forwarded meanwhile
                gateway.submit(view, {"Amount": "20"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(edit)
            return got["r"]

    result = anyio.run(scenario)
    refused, paid_meanwhile = acks
    assert refused.status == 200
    body = json.loads(refused.body)
    assert body["response_action"] == "errors"
    [(field, said)] = body["errors"].items()
    assert field.endswith("|amount") and said == "must be more than 0"
    assert paid_meanwhile == []
    assert not result.is_error, text_of(result)
    assert payments(files) == ["20\tinternal-7"]
