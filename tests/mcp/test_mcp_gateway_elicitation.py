"""An upstream's elicitation forwarded to people through the gateway: the official SDK's client, the
gateway's server, the test upstream (`mcp_upstream.py`, a subprocess), Redis, and the answers as Slack
sends them. Each path runs on both protocol generations the SDK's client speaks to an upstream: a
2026-07-28 connection (the call's `InputRequiredResult`) and a handshake-era one (`elicitation/create`).
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
from backtracking import BACKTRACKING, FORTY, within_deadline
from gateway_support import APPROVER, UPSTREAM, Gateway
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp_types import CallToolResult
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.mcp.rules import RulesConfig, parse_config
from workers.runtime.sweep import sweep
from workers.store.records import InterruptState

pytestmark = pytest.mark.integration
MODES = ["auto", "legacy"]


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


def rules(tmp_path: Path) -> RulesConfig:
    command = json.dumps([sys.executable, str(UPSTREAM), str(tmp_path)])
    text = f"""
upstreams:
  files: {{command: {command}}}
channel: {CHANNEL}
assignees: [{APPROVER}]
expires_in: 900
rules:
  - {{tools: "files.ask_person", action: allow}}
  - {{tools: "*", action: allow}}
"""
    return parse_config(text, {})


def question(bot: Bot, kind: str) -> dict[str, Any]:
    """The newest open question message with a `kind` actions block ("qa": a form, "qc": buttons)."""

    def found() -> dict[str, Any] | None:
        open_ones = []
        for message in bot.ws.messages(CHANNEL):
            for block in message.get("blocks") or []:
                if block.get("block_id", "").startswith(f"{kind}|"):
                    interrupt = bot.runtime.store.interrupt(block["block_id"].split("|")[1])
                    if interrupt is not None and interrupt.state is InterruptState.OPEN:
                        open_ones.append(message)
        return open_ones[-1] if open_ones else None

    return bot.wait_for("the question to be posted", found, timeout=20)


def call_while(
    gateway: Gateway, tmp_path: Path, tool: str, person: Callable[[], None], mode: str
) -> tuple[CallToolResult, list[float]]:
    """Call `files.<tool>` through the gateway while `person()` acts in Slack."""
    progress: list[float] = []

    async def scenario() -> CallToolResult:
        async with gateway.open(rules(tmp_path), progress_every=0.2, mode=mode) as client:
            got: dict[str, CallToolResult] = {}

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            async def call() -> None:
                with anyio.fail_after(60):
                    got["r"] = await client.call_tool(f"files.{tool}", {}, progress_callback=on_progress)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(person)
            return got["r"]

    return anyio.run(scenario), progress


def got(result: CallToolResult) -> Any:
    """What the upstream's tool says it got back: its JSON text."""
    assert not result.is_error, result
    return json.loads(" ".join(getattr(c, "text", "") for c in result.content))


def text_of(message: dict[str, Any]) -> str:
    return json.dumps(message["blocks"], ensure_ascii=False)


@pytest.mark.parametrize("mode", MODES)
def test_a_form_answered_in_slack_reaches_the_upstream_as_accept_with_typed_content(
    gateway: Gateway, bot: Bot, tmp_path: Path, mode: str
) -> None:
    seen: dict[str, Any] = {}

    def answer() -> None:
        message = question(bot, "qa")
        seen["text"] = text_of(message)
        time.sleep(0.5)  # progress reaches the gateway's caller meanwhile
        view = gateway.modal(message, "parley_open_form")
        gateway.submit(view, {"Environment": "staging", "Replicas": "3", "Confirm": ["Yes"]})

    result, progress = call_while(gateway, tmp_path, "ask_person", answer, mode)
    assert got(result) == {"action": "accept", "content": {"environment": "staging", "replicas": 3, "confirm": True}}
    assert "files.ask_person, called by gateway-tests, asks: Where should this be deployed?" in seen["text"]
    assert progress and progress == sorted(progress)


@pytest.mark.parametrize("mode", MODES)
def test_a_form_declined_in_slack_reaches_the_upstream_as_decline(
    gateway: Gateway, bot: Bot, tmp_path: Path, mode: str
) -> None:
    """Decline beside Submit: someone not asked is refused and nothing changes; the assignee's decline
    closes the question as theirs, locks it saying so, and the upstream gets `decline`."""
    seen: dict[str, Any] = {}

    def decline() -> None:
        message = question(bot, "qa")
        [row] = [b for b in message["blocks"] if b.get("block_id", "").startswith("qa|")]
        seen["buttons"] = [e["text"]["text"] for e in row["elements"]]
        iid = row["block_id"].split("|")[1]
        block, button = find_element(message["blocks"], "parley_decline")
        stranger = block_actions_payload(
            user="U0DAVE", message=message, channel=CHANNEL, action=button_action(block, button)
        )
        assert bot.interact(stranger).status == 200
        told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == "U0DAVE")
        seen["told"] = told["args"]["text"]
        interrupt = bot.runtime.store.interrupt(iid)
        assert interrupt is not None and interrupt.state is InterruptState.OPEN  # the refusal changed nothing
        gateway.click(message, "parley_decline")

        def locked() -> dict[str, Any] | None:
            now = [m for m in bot.ws.messages(CHANNEL) if m["ts"] == message["ts"]]
            return now[0] if now and "Declined by" in text_of(now[0]) else None

        seen["locked"] = text_of(bot.wait_for("the question to be locked", locked))
        seen["closed"] = bot.runtime.store.interrupt(iid)

    result, _ = call_while(gateway, tmp_path, "ask_person", decline, mode)
    assert got(result) == {"action": "decline", "content": None}
    assert seen["buttons"] == ["Submit", "Answer in a form", "Decline"]
    assert APPROVER in seen["told"]  # who may answer it
    assert f"Declined by <@{APPROVER}>" in seen["locked"] and "parley_decline" not in seen["locked"]
    closed = seen["closed"]
    assert closed.state is InterruptState.CANCELLED and closed.closed_by == APPROVER


@pytest.mark.parametrize("mode", MODES)
def test_expiry_reaches_the_upstream_as_cancel(gateway: Gateway, bot: Bot, tmp_path: Path, mode: str) -> None:
    def let_it_expire() -> None:
        question(bot, "qa")
        sweep(bot.runtime, now=time.time() + 1000)

    result, _ = call_while(gateway, tmp_path, "ask_person", let_it_expire, mode)
    assert got(result) == {"action": "cancel", "content": None}


@pytest.mark.parametrize("mode", MODES)
def test_url_mode_is_a_link_with_done_and_decline(gateway: Gateway, bot: Bot, tmp_path: Path, mode: str) -> None:
    seen: dict[str, Any] = {}

    def done() -> None:
        message = question(bot, "qc")
        seen["text"] = text_of(message)
        gateway.click(message, "parley_choose_0")

    accepted, _ = call_while(gateway, tmp_path, "open_link", done, mode)
    assert got(accepted) == {"action": "accept", "content": None}
    assert "https://example.com/authorize?session=42" in seen["text"] and '"Done"' in seen["text"]
    assert "Sign in to the tracker" in seen["text"]
    assert "parley_decline" not in seen["text"]  # its own Decline choice says it

    declined, _ = call_while(
        gateway, tmp_path, "open_link", lambda: gateway.click(question(bot, "qc"), "parley_choose_1"), mode
    )
    assert got(declined) == {"action": "decline", "content": None}


def test_a_schema_outside_the_subset_is_refused_naming_the_property(gateway: Gateway, bot: Bot, tmp_path: Path) -> None:
    async def scenario() -> tuple[CallToolResult, CallToolResult]:
        async with gateway.open(rules(tmp_path)) as modern, gateway.open(rules(tmp_path), mode="legacy") as legacy:
            with anyio.fail_after(30):
                return await modern.call_tool("files.ask_nested", {}), await legacy.call_tool("files.ask_nested", {})

    modern, legacy = anyio.run(scenario)
    assert bot.ws.calls("chat.postMessage") == []  # nobody was asked
    said = "elicitation cannot be asked in Slack: property 'address': a nested object"
    assert modern.is_error and said in str(modern.content)  # the call's error, on a 2026-07-28 connection
    assert legacy.is_error and said in str(legacy.content)  # the upstream's tool got the error, and said so


def ask_code(gateway: Gateway, tmp_path: Path, mode: str, pattern: str, default: str) -> CallToolResult:
    """`files.ask_code` through the gateway: the upstream elicits a code matching `pattern`, offering `default`."""

    async def scenario() -> CallToolResult:
        async with gateway.open(rules(tmp_path), mode=mode) as client:
            return await client.call_tool("files.ask_code", {"pattern": pattern, "default": default})

    kind, result = within_deadline(lambda: anyio.run(scenario))
    assert kind == "ok", result
    return result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_an_upstreams_backtracking_pattern_is_decided_at_once(
    gateway: Gateway, bot: Bot, tmp_path: Path, mode: str, pattern: str
) -> None:
    """Anchored (so that the whole default must match), each pattern refuses forty a's and a "!" at once."""
    result = ask_code(gateway, tmp_path, mode, f"^{pattern}$", FORTY + "!")
    said = "elicitation cannot be asked in Slack: property 'code': "
    assert result.is_error and said in str(result.content) and "default is not a valid answer" in str(result.content)
    assert bot.ws.calls("chat.postMessage") == []  # nobody was asked


def test_an_upstreams_backreference_is_refused_naming_the_property(gateway: Gateway, bot: Bot, tmp_path: Path) -> None:
    result = ask_code(gateway, tmp_path, "auto", r"^(a)\1$", "aa")
    said = "property 'code': item 'code': pattern is not a regular expression RE2 accepts"
    assert result.is_error and said in str(result.content), result
    assert bot.ws.calls("chat.postMessage") == []
