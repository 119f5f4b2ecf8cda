"""Typed answers in a run's thread, whatever kind of message carries them.

A reply sent with "Also send to channel" (subtype `thread_broadcast`) and a reply with a file
attached (`file_share`) are a person speaking and answer like a plain reply; an edit
(`message_changed`) and an integration's message (`bot_message`) never answer. A reply answers
a question's one required choice (the shipped `deploy`'s Decision); on a question with several
fields the person is told once, privately, to use Submit or the form.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, answers_of, running_bot
from runtime_helpers import work
from slack_payloads import (
    bot_message_event,
    file_share_reply_event,
    message_changed_event,
    thread_broadcast_event,
    thread_reply_event,
)
from slack_stack import snapshot

from workers.store import job_ids
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def test_a_reply_also_sent_to_the_channel_answers(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    root = bot.ws.message(CHANNEL, paused.root_ts)
    assert root is not None
    reply = thread_broadcast_event(
        root=root, user="U0BOB", channel=CHANNEL, text="2", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply).status == 200
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert answers_of(interrupt) == {"target": "Staging US"}
    assert interrupt is not None and interrupt.answered_by == "U0BOB"
    assert job_ids.resume(paused.run.id, paused.interrupt.id) in bot.runtime.queue.job_ids


def test_a_reply_with_a_file_attached_answers_with_its_text(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    reply = file_share_reply_event(
        user="U0BOB", channel=CHANNEL, text="production", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"target": "Production"}
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.QUEUED


def test_edits_and_bots_messages_never_answer_but_the_next_broadcast_does(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("s-pick")
    said = thread_reply_event(user="U0BOB", channel=CHANNEL, text="hmm", ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    before = snapshot(r)
    for event in (
        message_changed_event(channel=CHANNEL, message=said, new_text="2"),
        bot_message_event(channel=CHANNEL, text="2", ts=bot.ws.next_ts(), thread_ts=paused.root_ts),
    ):
        resp = bot.event(event)
        assert (resp.status, resp.body) == (200, "")
    bot.settle(0.2)
    assert snapshot(r) == before
    assert bot.ws.calls("chat.postEphemeral") == []

    root = bot.ws.message(CHANNEL, paused.root_ts)
    assert root is not None
    broadcast = thread_broadcast_event(
        root=root, user="U0BOB", channel=CHANNEL, text="Staging EU", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(broadcast).status == 200
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert answers_of(interrupt) == {"target": "Staging EU"}


def test_a_reply_answers_deploys_one_required_choice_and_the_run_goes_on(bot: Bot) -> None:
    """`deploy`'s approval has one required Decision (the replicas pre-filled) and an optional Reason:
    "the second one" is Reject, and the run goes on to record it; "approve" records the deployment."""
    paused = bot.paused("deploy")
    reply = thread_reply_event(
        user="U0BOB", channel=CHANNEL, text="the second one", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply).status == 200
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert answers_of(interrupt) == {"_decision": "reject", "replicas": 3}
    work(bot.runtime)
    rejected = bot.runtime.store.get(paused.run.id)
    assert rejected.status is RunStatus.SUCCEEDED and "rejected" in rejected.result

    second = bot.paused("deploy")
    approve = thread_reply_event(
        user="U0BOB", channel=CHANNEL, text="approve", ts=bot.ws.next_ts(), thread_ts=second.root_ts
    )
    assert bot.event(approve).status == 200
    work(bot.runtime)
    approved = bot.runtime.store.get(second.run.id)
    assert approved.status is RunStatus.SUCCEEDED and "approved and recorded" in approved.result
    assert bot.ws.calls("chat.postEphemeral") == []


def test_a_reply_to_a_question_with_several_fields_is_told_why_once_privately(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("ticket")
    for text in ("the second one", "High"):
        reply = thread_reply_event(
            user="U0BOB", channel=CHANNEL, text=text, ts=bot.ws.next_ts(), thread_ts=paused.root_ts
        )
        assert bot.event(reply).status == 200
        bot.settle(0.2)
    told = bot.ws.calls("chat.postEphemeral")
    assert len(told) == 1, told
    assert told[0]["args"]["user"] == "U0BOB"
    assert told[0]["args"]["thread_ts"] == paused.root_ts
    assert told[0]["args"]["text"].startswith("This question has several fields: use Submit or Answer in a form")
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN and interrupt.answers == []

    other = thread_reply_event(user="U0CAROL", channel=CHANNEL, text="2", ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(other).status == 200
    bot.wait_call("chat.postEphemeral", lambda c: c["args"]["user"] == "U0CAROL")


@pytest.mark.parametrize("typed", ["R&D", "<none>", "sales & marketing"])
def test_a_reply_naming_an_option_with_and_or_angle_brackets_answers_it(bot: Bot, typed: str) -> None:
    paused = bot.paused("s-team")  # Slack sends the typed "&", "<" and ">" escaped
    reply = thread_reply_event(user="U0BOB", channel=CHANNEL, text=typed, ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(reply).status == 200
    answered = answers_of(bot.runtime.store.interrupt(paused.interrupt.id))
    assert answered == {"team": {"R&D": "R&D", "<none>": "<none>"}.get(typed, "Sales & Marketing")}


def test_a_long_reply_is_refused_at_once_quoting_only_its_start(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    text = "&" * 20_000 + "." * 20_000 + "x"
    reply = thread_reply_event(user="U0BOB", channel=CHANNEL, text=text, ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(reply).status == 200  # at once: the trailing-filler pattern took seconds before the ack
    told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == "U0BOB")
    assert "is not one of the options" in told["args"]["text"] and len(told["args"]["text"]) < 1000
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {}


def test_people_not_asked_talk_in_the_thread_unbothered_and_are_told_once_if_they_answer(bot: Bot) -> None:
    paused = bot.paused("s-pick", {"assignees": ["U0BOB"]})

    def say(text: str) -> None:
        reply = thread_reply_event(
            user="U0CAROL", channel=CHANNEL, text=text, ts=bot.ws.next_ts(), thread_ts=paused.root_ts
        )
        assert bot.event(reply).status == 200

    for chat in ("thanks, watching this", "any news?", "ok"):
        say(chat)
    bot.settle()
    assert not bot.calls("chat.postEphemeral", lambda c: c["args"].get("user") == "U0CAROL")  # talk, not answers
    say("production")
    said = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == "U0CAROL")
    assert "not yours to answer" in said["args"]["text"]
    say("staging eu")
    bot.settle()
    assert len(bot.calls("chat.postEphemeral", lambda c: c["args"].get("user") == "U0CAROL")) == 1  # once
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {}
