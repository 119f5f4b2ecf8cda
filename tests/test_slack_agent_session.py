"""A run as Slack's agent session in its thread, through the bolt app and the Web API stand-in.

The session goes processing → suspended (titled with who must answer) → processing → its end,
and never stays processing. A workspace without Slack's agent surfaces gets the same run with
plain messages and one log line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.playground.agent_methods import AgentSession
from workers.registry import load_agents
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        load_agents(["agent_session_agents"])
        yield running


def _session(bot: Bot, paused: PausedRun) -> AgentSession:
    return bot.ws.agents.sessions[(paused.channel, paused.root_ts)]


def _pick(bot: Bot, paused: PausedRun, user: str = "U0BOB") -> None:
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    payload = block_actions_payload(
        user=user, message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200


def test_a_run_is_processing_then_suspended_on_its_question_then_processing_then_closed(bot: Bot) -> None:
    paused = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    session = _session(bot, paused)
    assert session.statuses == ["processing", "suspended"]
    assert session.initiator == "U0BOB"
    assert session.titles[0] == f"s-pick: {paused.run.text}"
    assert session.titles[-1] == "s-pick is waiting for @carol"

    _pick(bot, paused, user="U0CAROL")
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    assert session.statuses == ["processing", "suspended", "processing", "closed"]
    assert session.titles[-1] == f"s-pick: {paused.run.text}"  # its own title again once it went on


def test_a_run_that_fails_after_its_answer_leaves_processing_and_stays_open_for_a_retry(bot: Bot) -> None:
    paused = bot.paused("as-ask-fail")
    assert _session(bot, paused).titles[-1] == "as-ask-fail is waiting for @bob"
    _pick(bot, paused)
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.FAILED
    assert _session(bot, paused).statuses == ["processing", "suspended", "processing", "active"]


def test_a_workspace_without_agent_surfaces_gets_the_same_run_and_one_log_line(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    bot.ws.agents.without_agents = True
    with caplog.at_level("INFO", logger="parley.slack.agents"):
        first = bot.paused("s-pick")
        _pick(bot, first)
        work(bot.runtime)
        second = bot.paused("s-pick")
        _pick(bot, second)
        work(bot.runtime)
    for run in (first, second):
        assert bot.runtime.store.get(run.run.id).status is RunStatus.SUCCEEDED
    assert bot.ws.agents.sessions == {}
    assert [c["error"] for c in bot.calls("agents.sessions.setStatus")] == ["unknown_method"]  # then never again
    lacks = [r for r in caplog.records if "lacks an agent surface" in r.getMessage()]
    assert len(lacks) == 2  # once per method (setStatus, rename), not once per call


def test_a_thread_without_a_session_gets_none_when_its_run_ends(bot: Bot) -> None:
    """An API question's thread, or one started before sessions were kept: ending its run creates none."""
    root = bot.ws.post_message(CHANNEL, "A question asked through the API")
    conversation = {"host": "slack", "team": bot.ws.team_id, "channel": CHANNEL, "thread_ts": root["ts"]}
    run = bot.runtime.store.create("s-pick", "deploy", "U0BOB", conversation)
    bot.deps.slack.run_cancelled(run)
    bot.deps.slack.failed(run, "it broke")
    assert bot.calls("agents.sessions.setStatus") == []
    assert bot.ws.agents.sessions == {}


def test_in_a_dm_thread_the_assistant_status_says_the_same(bot: Bot) -> None:
    dm = "D0BOB"  # /parley typed in Parley's DM: the run's thread is there, where assistant threads live
    paused = bot.paused("s-pick", {"assignees": ["U0CAROL"]}, channel=dm)
    assert bot.ws.agents.assistant[(dm, paused.root_ts)] == ["is working on it…", "is waiting for @carol"]
    _pick(bot, paused, user="U0CAROL")
    work(bot.runtime)
    assert bot.ws.agents.assistant[(dm, paused.root_ts)][2:] == ["is working on it…", ""]  # cleared at the end
