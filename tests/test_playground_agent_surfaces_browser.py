"""The playground draws Slack's agent surfaces, in Chromium: a plan's task cards, feedback buttons.

A plan message (as `bot.slack.blocks_plan` builds it) shows each card with its status and its
link; a click of 👍 under an answer sends the `block_actions` Slack sends for feedback buttons.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import browser_page, require_chromium
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace, agent_methods
from bot.playground.app import create_playground_app
from bot.slack.blocks_plan import plan_blocks, plan_text
from bot.slack.streamed_answer import FEEDBACK_ACTION_ID, feedback_blocks

pytestmark = [pytest.mark.system, pytest.mark.browser]

TASKS = [
    {"id": "step-fetch", "title": "Fetch the invoice", "status": "complete"},
    {"id": "question-q1", "title": "Approve it", "status": "in_progress", "link": "https://example.com/archives/C/p1"},
    {"id": "named-2", "title": "Pay it", "status": "pending"},
]


@pytest.fixture
def setup() -> Iterator[tuple[Any, Workspace, StubBot]]:
    require_chromium()
    ws, stub = Workspace(), StubBot()
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, browser_page(server.url, "playground-agents-last.png") as page:
            yield page, ws, stub


def test_a_plan_shows_its_cards_and_an_answer_takes_feedback(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    ws.post_message("C0GENERAL", plan_text("as-plan", TASKS), plan_blocks("as-plan", TASKS, 1))
    plan = page.get_by_test_id("block-plan")
    expect(plan.get_by_test_id("plan-title")).to_have_text("as-plan: 1 of 3 done")
    cards = plan.get_by_test_id("task-card")
    expect(cards).to_have_count(3)
    assert [cards.nth(n).get_attribute("data-status") for n in range(3)] == ["complete", "in_progress", "pending"]
    assert cards.nth(1).get_by_role("link", name="The question").get_attribute("href") == TASKS[1]["link"]

    answer = ws.post_message("C0GENERAL", "Paid.", feedback_blocks("rRun1"))
    message = page.locator(f'[data-testid="message"][data-ts="{answer["ts"]}"]')
    with page.expect_response("**/ui/action"):
        message.get_by_test_id("feedback-positive").click()
    [action] = stub.last()["actions"]
    assert (action["type"], action["action_id"], action["value"]) == (
        "feedback_buttons",
        FEEDBACK_ACTION_ID,
        "good:rRun1",
    )
    assert action["text"]["text"] == "👍"


def test_a_working_sessions_stop_button_sends_agent_session_stopped(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    root = ws.post_message("C0GENERAL", "<@U0ALICE> started *s-pick*")
    ws.post_message("C0GENERAL", "Working on it", thread_ts=root["ts"])
    where = {"channel_id": "C0GENERAL", "thread_ts": root["ts"]}
    agent_methods.set_status(ws, {**where, "status": "processing", "title": "s-pick: deploy"}, "", None)  # type: ignore[arg-type]
    page.locator(f'[data-testid="message"][data-ts="{root["ts"]}"]').get_by_test_id("open-thread").click()
    line = page.get_by_test_id("session-line")
    expect(line.locator(".session-title")).to_have_text("s-pick: deploy")
    expect(line.get_by_test_id("session-status")).to_have_text("working")
    with page.expect_response("**/ui/stop"):
        line.get_by_test_id("session-stop").click()
    event = stub.last()["event"]
    assert (event["type"], event["channel"], event["thread_ts"], event["user"]) == (
        "agent_session_stopped", "C0GENERAL", root["ts"], "U0ALICE",
    )  # fmt: skip
    assert event["streaming_message_ts"] == []

    agent_methods.set_status(ws, {**where, "status": "suspended"}, "", None)  # type: ignore[arg-type]
    expect(line.get_by_test_id("session-status")).to_have_text("waiting")
    expect(line.get_by_test_id("session-stop")).to_have_count(0)  # Slack shows it only while processing
