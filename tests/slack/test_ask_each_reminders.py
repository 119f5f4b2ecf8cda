"""An `ask_each` question shares one message: it is reminded there once, never escalated, claimed or reassigned.

The bot's bolt app in this process, signed Slack requests, real Redis, the Web API stand-in,
and the sweep called as the worker calls it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from effect_counters import count
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from slack_forms import find_element, is_question, texts

from bot.playground import User
from bot.slack.blocks_question import REASSIGN_ACTION_ID
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.sweep import sweep
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
PEOPLE = [f"U0E{n:02d}" for n in range(4)]


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        for person in PEOPLE:  # people of the workspace: each is told by DM, never named in the thread as gone
            running.ws.add_user(User(person, person.lower()))
        yield running


def posts_after(bot: Bot, root_ts: str, ts: str) -> list[str]:
    return [m["text"] for m in bot.ws.thread(CHANNEL, root_ts) if float(m["ts"]) > float(ts)]


def test_the_shared_message_is_reminded_once_naming_who_is_yet_to_answer(bot: Bot) -> None:
    run, root_ts = bot.started("s-each", json.dumps({"people": PEOPLE, "quorum": 4, "expires_in": 7200}) + " go")
    work(bot.runtime)
    store = bot.runtime.store
    group = store.groups.group(store.get(run.id).interrupt)
    assert group is not None
    members = store.groups.members(group)
    [question] = [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]

    swept = sweep(bot.runtime, now=members[0].asked_at + 3601)  # half-life
    [reminder] = posts_after(bot, root_ts, question["ts"])  # one post, not one per person
    assert len(swept.reminded) == 1 and all(f"<@{p}>" in reminder for p in PEOPLE)

    first = next(m for m in members if m.assignees == [PEOPLE[0]])
    accept(bot.runtime, first.id, PEOPLE[0], [Answer(id="decision", choice="Approve")])  # one person answers
    swept = sweep(bot.runtime, now=members[0].asked_at + 7200 - 14 * 60)  # the last call
    assert len(swept.reminded) == 1
    last_call = posts_after(bot, root_ts, question["ts"])[-1]
    assert f"<@{PEOPLE[0]}>" not in last_call and all(f"<@{p}>" in last_call for p in PEOPLE[1:])


def test_an_ask_each_with_escalation_fails_at_once_saying_why(bot: Bot) -> None:
    params = {"people": PEOPLE, "expires_in": 7200, "escalate_after": 600, "escalate_to": ["U0LEAD"]}
    run, root_ts = bot.started("s-each", json.dumps(params) + " go")
    work(bot.runtime)
    failed = bot.runtime.store.get(run.id)
    assert failed.status is RunStatus.FAILED and "cannot be escalated" in failed.error
    assert not [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]  # nobody was asked


def test_an_ask_each_with_claim_fails_at_once_saying_why(bot: Bot) -> None:
    run, root_ts = bot.started("s-each-claim", json.dumps({"people": PEOPLE}) + " go")
    work(bot.runtime)
    failed = bot.runtime.store.get(run.id)
    assert failed.status is RunStatus.FAILED and "cannot be claimed" in failed.error
    assert count(bot.runtime.settings.data_dir, run.id, "exec") == 1  # refused, not retried
    assert not [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]  # nobody was asked


def test_the_shared_message_offers_no_reassign(bot: Bot) -> None:
    """Each person answers their own question, so none is handed to someone else."""
    run, root_ts = bot.started("s-each", json.dumps({"people": PEOPLE}) + " go")
    work(bot.runtime)
    store = bot.runtime.store
    group = store.groups.group(store.get(run.id).interrupt)
    assert group is not None
    [question] = [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]
    with pytest.raises(LookupError):
        find_element(question["blocks"], REASSIGN_ACTION_ID)

    paused = PausedRun(store.get(run.id), root_ts, question, store.groups.members(group)[0])
    assert bot.click(paused, "parley_open_form", user=PEOPLE[0]).status == 200
    form = bot.wait_call("views.open")["args"]["view"]  # nor one person's form, opened from it
    assert form["blocks"] and REASSIGN_ACTION_ID not in json.dumps(form)
    assert bot.click(paused, "parley_submit", user=PEOPLE[1], fills={"Decision": "Approve"}).status == 200
    bot.settle()
    work(bot.runtime)  # the job showing the progress
    now = bot.ws.message(CHANNEL, question["ts"])
    assert "1 of 4 answered" in texts(now["blocks"])
    with pytest.raises(LookupError):  # nor once the message shows progress
        find_element(now["blocks"], REASSIGN_ACTION_ID)

    single = bot.paused("s-form", {"assignees": ["U0CAROL"]})  # a question to one person still has it
    assert find_element(single.question["blocks"], REASSIGN_ACTION_ID)
