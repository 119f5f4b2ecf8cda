"""A prose answer streamed into the run's thread (`chat.startStream` and the rest), with feedback buttons.

Through the bolt app (signed requests), an in-process RQ worker and the Web API stand-in.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from agent_session_agents import ANSWER
from inprocess_bot import CHANNEL, Bot, running_bot
from prometheus_client import REGISTRY
from runtime_helpers import work
from slack_payloads import block_actions_payload

from workers.registry import load_agents
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        load_agents(["agent_session_agents"])
        yield running


def rate(bot: Bot, message: dict, user: str, rating: str) -> None:
    [block] = [b for b in message["blocks"] if b["type"] == "context_actions"]
    buttons = block["elements"][0]
    button = buttons["positive_button" if rating == "good" else "negative_button"]
    action = {
        "type": "feedback_buttons",
        "action_id": buttons["action_id"],
        "block_id": block["block_id"],
        "value": button["value"],
        "text": button["text"],
        "action_ts": f"{time.time():.6f}",
    }
    assert bot.interact(block_actions_payload(user=user, message=message, channel=CHANNEL, action=action)).status == 200


def ratings(bot: Bot, run_id: str) -> list[tuple[str, str]]:
    return [(h.by, h.detail.get("rating")) for h in bot.runtime.store.history(run_id) if h.event == "feedback"]


def test_the_answer_is_streamed_and_each_person_rates_it_once(bot: Bot) -> None:
    run, root_ts = bot.started("as-answer", "what is due?")
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    [start] = bot.calls("chat.startStream")
    assert (start["args"]["recipient_user_id"], start["args"]["recipient_team_id"]) == ("U0BOB", bot.ws.team_id)
    assert bot.calls("chat.appendStream")  # it appeared in parts: started, appended to, stopped
    [answer] = [m for m in bot.ws.thread(CHANNEL, root_ts) if m["text"] == ANSWER]
    assert len(bot.ws.agents.streams[answer["ts"]]) >= 3
    assert not bot.calls("chat.postMessage", lambda c: "Done" in str(c["args"].get("text")))  # not posted again
    assert bot.ws.agents.sessions[(CHANNEL, root_ts)].statuses == ["processing", "closed"]

    good = REGISTRY.get_sample_value("parley_answer_feedback_total", {"agent": "as-answer", "rating": "good"}) or 0
    rate(bot, answer, "U0BOB", "good")
    # Each click is recorded after its ack, on bolt's lazy-listener thread: the second waits for the first.
    bot.wait_for("the first rating", lambda: len(ratings(bot, run.id)) == 1)
    rate(bot, answer, "U0BOB", "bad")  # a second click of the same person changes nothing
    rate(bot, answer, "U0CAROL", "bad")
    bot.wait_for("two ratings", lambda: len(ratings(bot, run.id)) == 2)
    bot.settle()
    assert ratings(bot, run.id) == [("U0BOB", "good"), ("U0CAROL", "bad")]
    now = REGISTRY.get_sample_value("parley_answer_feedback_total", {"agent": "as-answer", "rating": "good"})
    assert now == good + 1


def test_a_workspace_without_streaming_gets_the_answer_posted(bot: Bot) -> None:
    bot.ws.agents.without_agents = True
    run, root_ts = bot.started("as-answer", "what is due?")
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    assert [c["error"] for c in bot.calls("chat.startStream")] == ["unknown_method"]
    final = [m for m in bot.ws.thread(CHANNEL, root_ts) if "The invoice was paid" in m["text"]]
    assert len(final) == 1 and final[0]["text"].startswith(":white_check_mark:")
    _, second_root = bot.started("as-answer", "and now?")
    work(bot.runtime)
    assert len(bot.calls("chat.startStream")) == 1  # remembered: not tried again in this workspace
    assert any("The invoice was paid" in m["text"] for m in bot.ws.thread(CHANNEL, second_root))


FAULTS = {
    "refused": lambda f: f.fail_next("chat.appendStream", status=200, error="message_not_in_streaming_state"),
    "rate-limited": lambda f: f.fail_next("chat.appendStream", status=429, retry_after=0, times=6),
    "timed-out": lambda f: f.hold_next("chat.appendStream", 4.0),  # served, its reply lost past 2 s
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_stream_that_fails_part_way_ends_with_the_whole_answer_once(
    r: redis.Redis, tmp_path: Path, fault: str
) -> None:
    with running_bot(r, tmp_path, client_timeout=2) as bot:
        load_agents(["agent_session_agents"])
        FAULTS[fault](bot.ws.faults)
        run, root_ts = bot.started("as-answer", "what is due?")
        work(bot.runtime)
        assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
        shown = [m for m in bot.ws.thread(CHANNEL, root_ts) if "The invoice was paid" in m["text"]]
        assert [m["text"] for m in shown] == [ANSWER]  # the streamed message, completed: never cut, never twice
        assert not bot.calls("chat.postMessage", lambda c: "The invoice was paid" in str(c["args"].get("text")))


def test_a_stream_that_cannot_be_completed_has_its_answer_posted(bot: Bot) -> None:
    bot.ws.faults.fail_next("chat.appendStream", status=200, error="message_not_in_streaming_state")
    bot.ws.faults.fail_next("chat.update", status=200, error="edit_window_closed")
    run, root_ts = bot.started("as-answer", "what is due?")
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    posted = [m for m in bot.ws.thread(CHANNEL, root_ts) if m["text"].startswith(":white_check_mark:")]
    assert len(posted) == 1 and "nothing else is due" in posted[0]["text"]  # the part streamed stays above it
