"""Where a run's thread goes: public channels Parley is not in, DMs and group DMs.

Slack delivers a conversation's messages only to its members, so a run that talks where
Parley is not a member never hears its typed answers. In a public channel Parley joins
first (`conversations.join`); where it cannot post at all (a DM or group DM between people,
a private channel it was not invited to) the run's thread goes to the starter's DM with
Parley, and a reply typed there answers (`message.im`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, answers_of, running_bot
from slack_payloads import thread_reply_event

from bot.playground.workspace import Channel
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

STARTERS_DM = "D0BOB"
"""U0BOB's DM with Parley (the stand-in names a bot DM after its person)."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        running.ws.add_channel(Channel("C0RANDOM", "random", bot_is_member=False))
        running.ws.add_channel(Channel("C0SECRET", "secret", is_private=True, bot_is_member=False))
        yield running


def test_parley_joins_a_public_channel_before_starting_a_run_there(bot: Bot) -> None:
    paused = bot.paused("s-pick", channel="C0RANDOM")
    methods = [c["method"] for c in bot.ws.calls() if c["method"] in ("conversations.join", "chat.postMessage")]
    assert methods[:2] == ["conversations.join", "chat.postMessage"]
    assert bot.calls("conversations.join")[0]["args"]["channel"] == "C0RANDOM"
    joined = bot.ws.channel("C0RANDOM")
    assert joined is not None and joined.bot_is_member
    assert paused.run.conversation["channel"] == "C0RANDOM"

    reply = thread_reply_event(
        user="U0BOB", channel="C0RANDOM", text="3", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"target": "Production"}


@pytest.mark.parametrize(
    "typed_in",
    ["D0HUMANS", "G0GROUPDM", "C0SECRET"],
    ids=["a DM between people", "a group DM", "a private channel Parley is not in"],
)
def test_a_run_started_where_parley_cannot_post_talks_in_the_starters_dm(bot: Bot, typed_in: str) -> None:
    paused = bot.paused("s-pick", channel=typed_in, posted_in=STARTERS_DM)
    conversation = paused.run.conversation
    assert (conversation["channel"], conversation["started_in"]) == (STARTERS_DM, typed_in)
    assert bot.runtime.store.thread_run(STARTERS_DM, paused.root_ts) == paused.run.id

    reply = thread_reply_event(
        user="U0BOB",
        channel=STARTERS_DM,
        text="staging eu",
        ts=bot.ws.next_ts(),
        thread_ts=paused.root_ts,
        channel_type="im",
    )
    resp = bot.event(reply)
    assert (resp.status, resp.body) == (200, "")
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"target": "Staging EU"}
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.QUEUED
