"""A run as Slack's agent session in its thread, through the bolt app and the Web API stand-in.

The session goes processing → suspended (titled with who must answer) → processing → its end,
and never stays processing. A thread a worker starts to ask (or to end the run) gets its session
in that state at once, in one call. A workspace without Slack's agent surfaces gets the same run
with plain messages and one log line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from noting_redis import NotingRedis
from runtime_helpers import work
from slack_forms import button_action, find_element, is_question
from slack_payloads import block_actions_payload

from bot.playground.agent_methods import AgentSession
from workers.registry import load_agents
from workers.runtime.queues import enqueue_run
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(noted: NotingRedis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(noted, tmp_path) as running:
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
    assert bot.calls("agents.sessions.rename") == []  # a workspace without sessions renames none
    lacks = [r for r in caplog.records if "lacks an agent surface" in r.getMessage()]
    assert len(lacks) == 1  # once for the method, not once per call
    assert not bot.runtime.redis.exists(keys.session_status(second.run.id))  # the first run found them lacking


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


def _worker_started(bot: Bot, agent: str, params: dict[str, list[str]] | None = None) -> PausedRun | str:
    """A run queued with no thread, as `/parley` leaves it when its root post failed, worked once:
    the worker posts the root. Its question (parked), or its root's ts (ended)."""
    text = (json.dumps(params) + " " if params else "") + "from the worker"
    run = bot.runtime.store.create(agent, text, "U0BOB", {"host": "slack", "team": bot.ws.team_id, "channel": CHANNEL})
    enqueue_run(bot.runtime.queue, run.id, run.job)
    work(bot.runtime)
    now = bot.runtime.store.get(run.id)
    root_ts = str(now.conversation["thread_ts"])
    if now.status is not RunStatus.PAUSED:
        return root_ts
    [question] = [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]
    interrupt = bot.runtime.store.interrupt(now.interrupt)
    assert interrupt is not None
    return PausedRun(now, root_ts, question, interrupt)


def test_a_thread_the_worker_starts_to_ask_gets_its_session_suspended_in_one_call(bot: Bot) -> None:
    paused = _worker_started(bot, "s-pick", {"assignees": ["U0CAROL"]})
    assert isinstance(paused, PausedRun)
    session = _session(bot, paused)
    assert session.statuses == ["suspended"]  # never "processing" for the moment between root and question
    assert (session.titles, session.initiator) == (["s-pick is waiting for @carol"], "U0BOB")
    assert len(bot.calls("agents.sessions.setStatus")) == 1 and bot.calls("agents.sessions.rename") == []

    _pick(bot, paused, user="U0CAROL")
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    assert session.statuses == ["suspended", "processing", "closed"]
    assert session.titles[-1] == f"s-pick: {paused.run.text}"


def test_a_run_that_ends_in_the_thread_the_worker_starts_gets_its_session_closed_in_one_call(bot: Bot) -> None:
    root_ts = _worker_started(bot, "as-done")
    assert isinstance(root_ts, str)
    session = bot.ws.agents.sessions[(CHANNEL, root_ts)]
    assert (session.statuses, session.titles) == (["closed"], ["as-done: from the worker"])
    assert len(bot.calls("agents.sessions.setStatus")) == 1


def test_a_person_slack_does_not_know_is_named_by_id_and_looked_up_once(bot: Bot) -> None:
    for _ in range(2):
        paused = bot.paused("s-pick", {"assignees": ["U0GONE"]})
        assert _session(bot, paused).titles[-1] == "s-pick is waiting for @U0GONE"
    looked_up = bot.calls("users.info", lambda c: c["args"].get("user") == "U0GONE")
    assert [c["error"] for c in looked_up] == ["user_not_found"]  # remembered as unknown by this process


def test_what_redis_remembers_of_a_workspaces_surfaces_is_read_once_not_per_call(bot: Bot, noted: NotingRedis) -> None:
    for _ in range(2):
        paused = bot.paused("s-pick")
        _pick(bot, paused)
        work(bot.runtime)
    assert len(bot.calls("agents.sessions.setStatus")) == 8 and len(bot.calls("agents.sessions.rename")) == 4
    read = [c[1] for c in noted.sent if c[0] == "EXISTS" and c[1].startswith(keys.surface_off(bot.ws.team_id, ""))]
    assert sorted(read) == [
        keys.surface_off(bot.ws.team_id, m) for m in ("agents.sessions.rename", "agents.sessions.setStatus")
    ]
