"""The live plan of a run: one message in its thread with a `plan` block of `task_card`s.

Driven through the bolt app (signed requests), an in-process RQ worker and the Web API
stand-in, which checks every payload with slack_sdk's models and Slack's limits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.slack.live_plan import INTERVAL
from workers.registry import load_agents
from workers.runtime.retention import purge_finished
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
VALIDATOR = Path("/work/shared/slack/scripts/validate_blocks.py")


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        load_agents(["agent_session_agents"])
        yield running


def plan_messages(bot: Bot, root_ts: str) -> list[dict[str, Any]]:
    return [m for m in bot.ws.thread(CHANNEL, root_ts) if any(b.get("type") == "plan" for b in m.get("blocks") or [])]


def cards(message: dict[str, Any]) -> list[tuple[str, str]]:
    [plan] = message["blocks"]
    return [(t["title"], t["status"]) for t in plan["tasks"]]


def plan_writes(bot: Bot, ts: str) -> int:
    """Posts and updates of the plan message `ts`."""
    posts = bot.calls("chat.postMessage", lambda c: any(b.get("type") == "plan" for b in c["args"].get("blocks") or []))
    return len(posts) + len(bot.calls("chat.update", lambda c: c["args"].get("ts") == ts))


def _pick(bot: Bot, paused: PausedRun) -> None:
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    action = button_action(block, button)
    assert (
        bot.interact(
            block_actions_payload(user="U0BOB", message=paused.question, channel=CHANNEL, action=action)
        ).status
        == 200
    )


def test_the_plan_follows_named_steps_and_the_question_card_links_to_its_message(bot: Bot) -> None:
    paused = bot.paused("as-plan")
    [plan] = plan_messages(bot, paused.root_ts)
    assert cards(plan) == [("Fetch the invoice", "complete"), ("Approve it", "in_progress"), ("Pay it", "pending")]
    question_card = plan["blocks"][0]["tasks"][1]
    [asked] = bot.ws.calls("chat.getPermalink")
    assert asked["args"]["message_ts"] == paused.question["ts"]
    assert f"/archives/{CHANNEL}/p{paused.question['ts'].replace('.', '')}?" in question_card["sources"][0]["url"]

    _pick(bot, paused)
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    [plan] = plan_messages(bot, paused.root_ts)  # still the one message, updated
    assert cards(plan) == [("Fetch the invoice", "complete"), ("Approve it", "complete"), ("Pay it", "complete")]
    assert plan["text"] == "Plan of as-plan: 3 of 3 steps done."

    # Retention purges the run with what its session and plan kept.
    assert purge_finished(bot.runtime, 0, now=time.time() + 1) == [paused.run.id]
    assert [k for k in bot.runtime.redis.scan_iter(match=f"*{paused.run.id}*")] == []


def test_fifty_steps_update_the_plan_no_faster_than_once_per_interval(bot: Bot, tmp_path: Path) -> None:
    started = time.monotonic()
    run, root_ts = bot.started("as-steps", "count")
    work(bot.runtime)
    elapsed = time.monotonic() - started
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    [plan] = plan_messages(bot, root_ts)
    shown = cards(plan)
    assert shown[0] == ("11 earlier steps", "complete") and len(shown) == 40  # 50 steps, folded to fit
    assert all(status == "complete" for _, status in shown)
    # One post, one update per interval at most, and the forced update at the end.
    assert plan_writes(bot, plan["ts"]) <= 2 + int(elapsed / INTERVAL)
    payload = tmp_path / "plan.json"
    payload.write_text(json.dumps({"text": plan["text"], "blocks": plan["blocks"]}))
    checked = subprocess.run([sys.executable, str(VALIDATOR), str(payload)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_plan_update_slack_did_not_take_is_tried_again_until_it_shows_the_end(bot: Bot) -> None:
    bot.ws.faults.fail_next("chat.update", status=500)  # the end's forced update: the run's only one
    run, root_ts = bot.started("as-steps", "count")
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    assert any(c.get("error") == "internal_error" for c in bot.calls("chat.update"))
    bot.wait_for(  # a timer tries again an interval later: nothing else would, the run has ended
        "the plan to show the run's end",
        lambda: all(status == "complete" for _, status in cards(plan_messages(bot, root_ts)[0])),
        timeout=4 * INTERVAL,
    )


def test_a_step_that_raises_shows_an_error_card(bot: Bot) -> None:
    run, root_ts = bot.started("as-step-fails", "x")
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.FAILED
    [plan] = plan_messages(bot, root_ts)
    assert cards(plan) == [("read", "complete"), ("write", "error")]


def test_a_run_without_steps_gets_no_plan(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    assert plan_messages(bot, paused.root_ts) == []
    assert bot.ws.calls("chat.getPermalink") == []


def test_a_workspace_without_plans_gets_the_same_run_in_plain_messages(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    bot.ws.agents.without_agents = True
    with caplog.at_level("INFO", logger="parley.slack.agents"):
        paused = bot.paused("as-plan")
        _pick(bot, paused)
        work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    assert plan_messages(bot, paused.root_ts) == []
    refused = bot.calls("chat.postMessage", lambda c: c["error"] == "invalid_blocks")
    assert len(refused) == 1  # tried once, then remembered
    lacks = [r.getMessage() for r in caplog.records if "lacks an agent surface" in r.getMessage()]
    assert len(lacks) == 2  # agents.sessions.setStatus and the plan: once each (no rename after the first)
