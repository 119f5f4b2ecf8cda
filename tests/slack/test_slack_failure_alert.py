"""A failed run's message as Slack's `alert` block, and plain where a workspace lacks it.

Driven through the bolt app (signed requests), an in-process RQ worker and the Web API
stand-in, which checks every payload with slack_sdk's models and Slack's limits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from blockcheck import assert_valid_message, units
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload
from slack_sdk.models.blocks import AlertBlock, Block

from bot.slack.blocks import ADMIN_RETRY_ACTION_ID
from bot.slack.blocks_alert import ALERT_TEXT_MAX, failed_alert_blocks
from workers.registry import load_agents
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
VALIDATOR = Path("/work/shared/slack/scripts/validate_blocks.py")


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        load_agents(["agent_session_agents"])
        yield running


def _fail(bot: Bot) -> PausedRun:
    """Start `as-ask-fail`, answer its question, and let it fail."""
    paused = bot.paused("as-ask-fail")
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.FAILED
    return paused


def _failure(bot: Bot, root_ts: str) -> dict[str, Any]:
    [failure] = [m for m in bot.ws.thread(CHANNEL, root_ts) if m["text"].startswith(":x: Failed")]
    return failure


def test_a_failed_run_says_so_in_an_error_alert_with_its_retry_button(bot: Bot, tmp_path: Path) -> None:
    paused = _fail(bot)
    failure = _failure(bot, paused.root_ts)
    alert, actions = failure["blocks"]
    assert isinstance(Block.parse(alert), AlertBlock)
    assert alert["level"] == "error"
    assert alert["text"]["text"] == failure["text"] == ":x: Failed: Staging EU is unreachable"
    assert actions["elements"][0]["action_id"] == ADMIN_RETRY_ACTION_ID
    assert actions["elements"][0]["value"] == paused.run.id
    assert_valid_message(failure["blocks"], failure["text"])
    if VALIDATOR.exists():  # the shared checker of Slack's documented limits, where this machine has it
        payload = tmp_path / "failure.json"
        payload.write_text(json.dumps({"text": failure["text"], "blocks": failure["blocks"]}))
        checked = subprocess.run([sys.executable, str(VALIDATOR), str(payload)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_workspace_without_alerts_gets_the_plain_failure_and_one_log_line(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    bot.ws.agents.without_agents = True
    with caplog.at_level("INFO", logger="parley.slack.agents"):
        first, second = _fail(bot), _fail(bot)
    for paused in (first, second):
        failure = _failure(bot, paused.root_ts)
        assert [b["type"] for b in failure["blocks"]] == ["section", "actions"]
        assert failure["blocks"][0]["text"]["text"] == ":x: Failed: Staging EU is unreachable"
    refused = bot.calls("chat.postMessage", lambda c: c["error"] == "invalid_blocks")
    assert len(refused) == 1 and refused[0]["args"]["blocks"][0]["type"] == "alert"  # tried once, then remembered
    lacks = [r.__dict__["ctx"] for r in caplog.records if "lacks an agent surface" in r.getMessage()]
    assert [c["error"] for c in lacks if c["method"] == "alert"] == ["invalid_blocks"]  # one line per workspace


def test_a_long_failure_fits_the_alert_in_utf16_units() -> None:
    reason = "\U0001f680" * 4000  # 8,000 UTF-16 units
    blocks = failed_alert_blocks(reason, "r1", show_retry=False)
    assert [b["type"] for b in blocks] == ["alert"]
    assert units(blocks[0]["text"]["text"]) <= ALERT_TEXT_MAX
    assert_valid_message(blocks)
