"""The gateway forwards an approved call with its receipt in `_meta`; the upstream checks it.

The official SDK's client calls through the gateway (in-process, real Redis, the in-process bolt
app taking the approver's click); the upstream (`receipt_upstream.py`, a subprocess) verifies the
receipt and refuses a call whose arguments are not the approved ones, as a tampered gateway sends.
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
from gateway_support import APPROVER, Gateway
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult
from receipt_support import key_files

from bot.mcp.rules import RulesConfig, parse_config
from bot.slack.api_host import ApiQuestionHost
from workers.receipts import KeyRing, ReceiptError, Signer
from workers.receipts.upstream import DIGEST, RECEIPT, check_call

pytestmark = pytest.mark.integration
UPSTREAM = Path(__file__).resolve().parents[1] / "receipt_upstream.py"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Signer, Path, Path]:
    return key_files(tmp_path)


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path, keys: tuple[Signer, Path, Path]) -> Iterator[Bot]:
    with running_bot(r, tmp_path, receipt_key=keys[0].private_pem()) as running:
        rt = running.runtime
        rt.hosts.register("api", ApiQuestionHost(running.deps.client, rt.store))
        yield running


def rules(root: Path, public: Path) -> RulesConfig:
    command = json.dumps([sys.executable, str(UPSTREAM), str(root), str(public)])
    text = f"""
upstreams:
  deploys: {{command: {command}}}
channel: {CHANNEL}
assignees: [{APPROVER}]
expires_in: 900
rules:
  - {{tools: "deploys.*", action: ask}}
"""
    return parse_config(text, {})


def verdicts(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / ".verdicts").read_text().splitlines()]


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_an_approved_call_carries_its_receipt_and_the_upstream_refuses_other_arguments(
    bot: Bot, redis_url: str, tmp_path: Path, keys: tuple[Signer, Path, Path]
) -> None:
    root = tmp_path / "upstream"
    root.mkdir()
    gateway = Gateway(bot, redis_url)
    approved = {"service": "api", "replicas": 3}

    async def through_the_gateway() -> CallToolResult:
        async with gateway.open(rules(root, keys[2])) as client:
            got: dict[str, CallToolResult] = {}

            async def call() -> None:
                got["result"] = await client.call_tool("deploys.deploy", approved)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(lambda: gateway.click(gateway.approval(), "parley_approve"))
            return got["result"]

    result = anyio.run(through_the_gateway)
    assert not result.is_error, text_of(result)
    [first] = verdicts(root)
    assert first["verdict"] == "ok" and first["arguments"] == approved
    meta = first["meta"]
    assert meta[DIGEST] == meta[RECEIPT]["digest"]["sha256"]

    async def straight_to_the_upstream(arguments: dict[str, Any]) -> CallToolResult:
        params = StdioServerParameters(command=sys.executable, args=[str(UPSTREAM), str(root), str(keys[2])])
        async with Client(stdio_client(params), cache=None) as client:
            return await client.call_tool("deploy", arguments, meta=meta)

    changed = anyio.run(straight_to_the_upstream, {"service": "api", "replicas": 30})
    assert changed.is_error and "the arguments differ from the ones a person approved" in text_of(changed)
    same = anyio.run(straight_to_the_upstream, approved)  # the check is not simply refusing everything
    assert not same.is_error, text_of(same)
    assert [v["verdict"][:7] for v in verdicts(root)] == ["ok", "refused", "ok"]
    ring = KeyRing.from_files([keys[2]])
    check_call(meta, approved, ring, tool="deploys.deploy")  # the gateway's full name, or the upstream's own
    with pytest.raises(ReceiptError, match="not a call of 'delete'"):
        check_call(meta, approved, ring, tool="delete")  # another tool with the same arguments
    with pytest.raises(ReceiptError, match="older than 0 s"):
        check_call(meta, approved, ring, tool="deploy", max_age=0)
