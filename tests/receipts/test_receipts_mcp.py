"""Receipts in MCP's structured results: `request_approval` and `get_answer` carry the signed receipt.

An in-process bot (bolt, the Web API stand-in, real Redis and an RQ worker) takes the approver's
click; `approve_tool_use`'s single text block stays as Claude Code parses it, without a receipt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.mcp.server import Tools
from bot.mcp.tools import RESULT_SCHEMA
from bot.slack.api_host import ApiQuestionHost
from workers.questions import Caller, QuestionService
from workers.questions.waiting import listening
from workers.receipts import KeyRing, Signer
from workers.receipts.canonical import digest
from workers.receipts.verify import verify_envelope
from workers.store.closings import Closings
from workers.store.records import InterruptState

pytestmark = pytest.mark.integration
USER = "U0CAROL"


@pytest.fixture
def signer() -> Signer:
    return Signer.generate()


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path, signer: Signer) -> Iterator[Bot]:
    with running_bot(r, tmp_path, receipt_key=signer.private_pem()) as running:
        rt = running.runtime
        rt.hosts.register("api", ApiQuestionHost(running.deps.client, rt.store))
        yield running


def approve_posted(bot: Bot) -> None:
    def posted() -> dict | None:  # type: ignore[type-arg]
        for message in bot.ws.messages(CHANNEL):
            for block in message.get("blocks") or []:
                if block.get("block_id", "").startswith("qa|"):
                    question = bot.runtime.store.interrupt(block["block_id"].split("|")[1])
                    return message if question is not None and question.state is InterruptState.OPEN else None
        return None

    message = bot.wait_for("the approval to be posted", posted)
    block, button = find_element(message["blocks"], "parley_approve")
    action = button_action(block, button)
    assert bot.interact(block_actions_payload(user=USER, message=message, channel=CHANNEL, action=action)).status == 200


def test_request_approval_and_get_answer_return_the_signed_receipt(bot: Bot, redis_url: str, signer: Signer) -> None:
    import jsonschema

    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    caller = Caller("assistant", via="mcp")
    tools = Tools(service, lambda ctx: caller)

    def listened(call: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """`call` with the service's close notifications subscribed, as `parley serve` runs it."""

        async def run() -> dict[str, Any]:
            async with listening(service):
                return await call()

        return asyncio.run(run())

    proposed = {"service": "api", "replicas": 3}
    args = {"channel": CHANNEL, "action": "Scale api", "args": proposed, "assignees": [USER], "wait_seconds": 0}
    first = listened(lambda: tools.request_approval(caller, args))
    assert first["status"] == "waiting" and "receipt" not in first
    approve_posted(bot)
    work(bot.runtime)
    done = listened(lambda: tools.get_answer(caller, {"question_id": first["question_id"], "wait_seconds": 5}))
    jsonschema.validate(done, RESULT_SCHEMA)  # the structured result still meets the declared outputSchema
    receipt = done["receipt"]
    verified = verify_envelope(receipt["envelope"], KeyRing([signer.public]), receipt["digest"]["sha256"])
    p = verified.predicate
    assert (p["outcome"], p["question"]["origin"], p["who"]["user"]) == ("approved", "mcp", USER)
    assert p["approval"]["arguments_digest"] == digest(proposed)
    again = asyncio.run(tools.request_approval(caller, {**args, "wait_seconds": 0}))
    assert "receipt" not in again  # a new approval, still waiting
