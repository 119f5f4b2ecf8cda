"""The gateway's `ask` rule past the form's limit and the binding's, end to end in one process.

The official SDK's client calls the gateway's server, which forwards to a real upstream (a subprocess
on the official SDK). The approver clicks in Slack as Slack sends the payloads. A nine-argument call
is asked with the first eight editable. A call with a 5,000-character argument is asked with it
shown in part. Each is forwarded once, with the whole arguments and the edit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from gateway_support import APPROVER, SECRET, Gateway, rules
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp_types import CallToolResult
from test_mcp_gateway import call_and_then, text_of, writes
from wide_upstream import FIELDS, TICKETS

from bot.mcp.rules import RulesConfig, parse_config
from workers.interaction.approval import MAX_EDITABLE
from workers.interaction.schema_items import readable

pytestmark = pytest.mark.integration

WIDE_UPSTREAM = Path(__file__).resolve().with_name("wide_upstream.py")
LONG_TEXT = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


def wide_rules(files: Path) -> RulesConfig:
    command = json.dumps([sys.executable, str(WIDE_UPSTREAM), str(files)])
    text = f"""
upstreams:
  wide: {{command: {command}}}
channel: {CHANNEL}
assignees: [{APPROVER}]
rules:
  - {{tools: "wide.*", action: ask}}
"""
    return parse_config(text, {})


def inputs(view: dict[str, Any]) -> list[str]:
    return [b["label"]["text"] for b in view["blocks"] if b["type"] == "input"]


def test_a_nine_argument_call_is_asked_with_eight_editable_and_forwarded_once_with_the_edit(
    gateway: Gateway, files: Path
) -> None:
    arguments = {name: f"{name} as proposed" for name in FIELDS}
    seen: dict[str, Any] = {}

    async def scenario() -> CallToolResult:
        async with gateway.open(wide_rules(files)) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                with anyio.fail_after(60):
                    got["result"] = await client.call_tool("wide.file_ticket", arguments)

            def edit() -> None:
                message = gateway.approval()
                seen["message"] = json.dumps(message)
                view = gateway.modal(message, "parley_open_form")
                seen["inputs"] = inputs(view)
                gateway.submit(view, {"Title": "title as edited"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(edit)
            return got["result"]

    result = anyio.run(scenario)
    assert not result.is_error, text_of(result)
    assert all(f"{name} as proposed" in seen["message"] for name in FIELDS)  # all nine shown
    assert seen["inputs"] == [readable(name) for name in FIELDS[:MAX_EDITABLE]]  # `due` shown, not editable
    ran = [json.loads(line) for line in (files / TICKETS).read_text().splitlines()]
    assert ran == [{**arguments, "title": "title as edited"}]  # forwarded once


def test_a_5000_character_argument_is_shown_in_part_and_forwarded_once_whole_with_the_edit(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    seen: dict[str, Any] = {}

    def edit(message: dict[str, Any]) -> None:
        seen["message"] = json.dumps(message, ensure_ascii=False)
        view = gateway.modal(message, "parley_open_form")
        seen["inputs"] = inputs(view)
        gateway.submit(view, {"Path": "edited.txt"})

    arguments = {"path": "long.txt", "text": LONG_TEXT, "token": SECRET}
    result, _ = call_and_then(gateway, rules(files), arguments, edit)

    assert not result.is_error, text_of(result)
    assert (files / "edited.txt").read_text() == LONG_TEXT  # the whole text, not the part shown
    assert writes(files) == [f"edited.txt\t{SECRET}"]  # forwarded once, the redacted token restored
    assert "(shown in part: the first " in seen["message"] and " of 5,000 characters)" in seen["message"]
    assert "line 0000" in seen["message"] and "line 0499" not in seen["message"]
    assert seen["inputs"] == ["Path"]  # the long text and the token are shown, not editable
    assert all(SECRET not in json.dumps(call) for call in bot.ws.calls())
