"""Slack's stop button (`agent_session_stopped`), signed as Slack signs, through the bolt app.

An admin's stop cancels the run the way Cancel does: questions locked as cancelled, the
cancel-effects job run by a worker, the session out of processing, who stopped it recorded.
Anyone else's stop is refused privately and the run and its session go on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work
from slack_payloads import ADMIN

from bot.listeners.agent_session import ENDED, REFUSED
from workers.registry import load_agents
from workers.store import keys
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def stopped_event(user: str, thread_ts: str, channel: str = CHANNEL) -> dict[str, Any]:
    """The event as Slack's reference shows it (docs.slack.dev/reference/events/agent_session_stopped)."""
    return {
        "type": "agent_session_stopped",
        "channel": channel,
        "thread_ts": thread_ts,
        "user": user,
        "streaming_message_ts": [],
        "event_ts": f"{time.time():.6f}",
    }


def test_an_admins_stop_cancels_a_working_run_and_takes_its_session_out_of_processing(bot: Bot) -> None:
    run, root_ts = bot.started("s-pick", "deploy")  # queued: its session is processing
    session = bot.ws.agents.sessions[(CHANNEL, root_ts)]
    assert session.statuses == ["processing"]

    assert bot.event(stopped_event(ADMIN, root_ts)).status == 200
    bot.wait_for("the run to be cancelled", lambda: bot.runtime.store.get(run.id).status is RunStatus.CANCELLED)
    told = bot.wait_call(
        "chat.postMessage", lambda c: c["args"].get("thread_ts") == root_ts and "Stopped" in c["args"]["text"]
    )
    history = bot.runtime.store.history(run.id)  # the stop is noted after the cancel, before it is told
    assert [(h.event, h.by) for h in history if h.event in ("cancelled", "stopped")] == [
        ("cancelled", ADMIN),
        ("stopped", ADMIN),
    ]
    assert told["args"]["text"] == f":octagonal_sign: Stopped by <@{ADMIN}>."

    work(bot.runtime)  # the cancel-effects job, and the queued execution that finds the run cancelled
    assert session.statuses == ["processing", "closed"]
    assert bot.calls("chat.postMessage", lambda c: c["args"].get("blocks") is not None) == []  # it never asked


def test_a_stop_of_a_parked_run_locks_its_question_as_cancelled(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    assert bot.event(stopped_event(ADMIN, paused.root_ts)).status == 200
    bot.wait_for("the run to be cancelled", lambda: bot.runtime.store.get(paused.run.id).status is RunStatus.CANCELLED)
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.CANCELLED
    work(bot.runtime)
    locked = bot.ws.message(CHANNEL, paused.question["ts"])
    assert locked is not None and "Cancelled" in locked["text"]
    assert bot.ws.agents.sessions[(CHANNEL, paused.root_ts)].statuses == ["processing", "suspended", "closed"]


def test_anyone_elses_stop_is_refused_and_the_run_goes_on(bot: Bot) -> None:
    run, root_ts = bot.started("s-pick", "deploy")
    assert bot.event(stopped_event("U0BOB", root_ts)).status == 200  # Bob started it, but is no admin
    told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == "U0BOB")
    assert told["args"]["text"] == REFUSED
    assert bot.runtime.store.get(run.id).status is RunStatus.QUEUED
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.PAUSED  # it went on to its question
    assert bot.ws.agents.sessions[(CHANNEL, root_ts)].statuses == ["processing", "suspended"]
    assert not any(h.event in ("cancelled", "stopped") for h in bot.runtime.store.history(run.id))


def test_a_stop_delivered_twice_cancels_once(bot: Bot) -> None:
    run, root_ts = bot.started("s-pick", "deploy")
    assert bot.event(stopped_event(ADMIN, root_ts), eid="Ev0STOP1").status == 200
    assert bot.event(stopped_event(ADMIN, root_ts), eid="Ev0STOP1").status == 200
    bot.wait_for("the run to be cancelled", lambda: bot.runtime.store.get(run.id).status is RunStatus.CANCELLED)
    bot.settle()
    assert [h.event for h in bot.runtime.store.history(run.id)].count("stopped") == 1


def test_a_session_whose_end_slack_missed_is_ended_by_a_stop_click(bot: Bot) -> None:
    load_agents(["agent_session_agents"])
    bot.ws.faults.delay_next("agents.sessions.setStatus", 0.0, times=1)  # processing is shown
    bot.ws.faults.fail_next("agents.sessions.setStatus", status=500, times=5)  # the end: 500, and every retry
    run, root_ts = bot.started("as-done", "tidy up")
    work(bot.runtime)
    session = bot.ws.agents.sessions[(CHANNEL, root_ts)]
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED and session.statuses == ["processing"]
    assert bot.runtime.redis.get(keys.session_status(run.id)) == b"processing"  # the end Slack missed is due
    bot.ws.faults.clear()

    assert bot.event(stopped_event(ADMIN, root_ts)).status == 200  # the stop button Slack still shows
    told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == ADMIN)
    assert told["args"]["text"] == ENDED and session.statuses == ["processing", "closed"]
    assert bot.runtime.redis.get(keys.session_status(run.id)) == b"closed"
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED  # nothing was cancelled or posted
    assert not bot.calls("chat.postMessage", lambda c: "Stopped" in str(c["args"].get("text")))
