"""Replies in plain words (`PARLEY_LLM_ANSWERS=on`): a model proposes, only the replier's Confirm decides.

The bot's bolt app in this process, signed Slack events and clicks, real Redis, the Web API
stand-in, and a scripted chat-completions model on loopback. The scripted model returns the
worst reading it could (approve, for every reply), so the checks that hold are Parley's own.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, answers_of, running_bot
from llm_standin import ChatStandin, HTTPReply, final
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload, thread_reply_event

from bot.slack.reply_reading import CONFIRM_ACTION_ID, ReplyReader
from workers.llm import LLMConfig
from workers.llm.replies import plainly_approves
from workers.store.records import InterruptState

pytestmark = pytest.mark.integration

USER = "U0BOB"


@pytest.fixture
def model() -> Iterator[ChatStandin]:
    with ChatStandin() as standin:
        yield standin


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path, model: ChatStandin) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        config = LLMConfig(base_url=model.base_url, model="reader", timeout=2)
        running.deps.reader = ReplyReader(config, running.runtime.store.proposals)
        yield running
        running.deps.reader.close()


def reads(answers: dict[str, Any]) -> dict[str, Any]:
    return final(json.dumps({"answers": answers}))


def reply(bot: Bot, paused: PausedRun, text: str, user: str = USER) -> None:
    event = thread_reply_event(
        user=user, channel=paused.channel, text=text, ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(event).status == 200


def thread(bot: Bot, paused: PausedRun) -> list[dict[str, Any]]:
    return bot.ws.thread(paused.channel, paused.root_ts)[1:]


def proposal(bot: Bot, paused: PausedRun) -> dict[str, Any]:
    """The message showing what was read, once it is posted."""
    return bot.wait_for(
        "what was read", lambda: next((m for m in thread(bot, paused) if "I read" in str(m.get("blocks"))), None)
    )


def confirm(bot: Bot, paused: PausedRun, message: dict[str, Any], user: str) -> None:
    block, button = find_element(message["blocks"], CONFIRM_ACTION_ID)
    payload = block_actions_payload(
        user=user, message=message, channel=paused.channel, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200


def said(bot: Bot, paused: PausedRun, words: str) -> dict[str, Any]:
    """The thread message saying `words`, once it is posted."""
    return bot.wait_for(words, lambda: next((m for m in thread(bot, paused) if words in m["text"]), None))


def approval(bot: Bot) -> PausedRun:
    """An `s-approve` run parked on its approval, asked of `USER`."""
    run, root_ts = bot.started("s-approve", json.dumps({"assignees": [USER]}) + " " + secrets.token_hex(4))
    work(bot.runtime)
    interrupt = bot.runtime.store.interrupt(bot.runtime.store.get(run.id).interrupt)
    assert interrupt is not None
    message = next(m for m in bot.ws.thread(CHANNEL, root_ts) if "qa|" in json.dumps(m.get("blocks")))
    return PausedRun(run, root_ts, message, interrupt, CHANNEL)


def state(bot: Bot, paused: PausedRun) -> InterruptState:
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None
    return interrupt.state


def test_a_reply_is_read_and_nothing_is_answered_until_the_replier_confirms(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER, "U0CAROL"]})
    model.add(reads({"colour": "Green", "note": "after lunch"}))
    reply(bot, paused, "the second one, after lunch")
    shown = proposal(bot, paused)
    assert "*Colour*: Green" in str(shown["blocks"]) and "*Note*: after lunch" in str(shown["blocks"])
    assert state(bot, paused) is InterruptState.OPEN

    sent = model.requests[0]["messages"][1]["content"]
    assert json.loads(sent)["reply"] == "the second one, after lunch"  # the reply goes as data

    confirm(bot, paused, shown, "U0CAROL")  # asked too, but not the replier
    bot.wait_call("chat.postEphemeral", lambda c: "Only the person who replied" in str(c["args"].get("text")))
    assert state(bot, paused) is InterruptState.OPEN

    confirm(bot, paused, shown, USER)
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Green", "note": "after lunch"}
    bot.wait_for("the proposal to say so", lambda: "Confirmed by <@U0BOB>" in str(thread(bot, paused)))
    confirm(bot, paused, shown, USER)  # again: the proposal is gone, nothing more is written
    work(bot.runtime)
    assert model.problems == []


@pytest.mark.parametrize(
    "text", ["no, don't approve", "not yet", "I wouldn't approve this", "approve it?", "I wouldn\u2019t approve this"]
)
def test_a_reply_that_does_not_plainly_approve_never_proposes_approve(bot: Bot, model: ChatStandin, text: str) -> None:
    paused = approval(bot)
    model.add(reads({"_decision": "approve"}))  # the worst reading
    reply(bot, paused, text)
    said = bot.wait_for(
        "the answer", lambda: next((m for m in thread(bot, paused) if "could not read" in m["text"]), None)
    )
    assert "does not plainly say to approve" in said["text"]
    assert CONFIRM_ACTION_ID not in str(said.get("blocks"))
    assert state(bot, paused) is InterruptState.OPEN
    assert bot.runtime.store.redis.keys("parley:proposal:*") == []


def test_approve_it_is_proposed_and_needs_confirm(bot: Bot, model: ChatStandin) -> None:
    paused = approval(bot)
    model.add(reads({"_decision": "approve"}))
    reply(bot, paused, "approve it")
    shown = proposal(bot, paused)
    assert state(bot, paused) is InterruptState.OPEN
    confirm(bot, paused, shown, USER)
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id))["_decision"] == "approve"


def test_yes_on_a_question_that_is_not_yes_or_no_is_only_a_proposal(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    model.add(final(json.dumps({"unreadable": "yes does not pick a colour"})))
    reply(bot, paused, "yes")
    said = bot.wait_for(
        "the answer", lambda: next((m for m in thread(bot, paused) if "could not read" in m["text"]), None)
    )
    assert "yes does not pick a colour" in said["text"]
    assert state(bot, paused) is InterruptState.OPEN


def slow(body: dict[str, Any]) -> dict[str, Any]:
    time.sleep(3)  # past the reader's timeout of 2 s
    return reads({"colour": "Green"})


@pytest.mark.parametrize("failure", [HTTPReply(503, {"error": {"message": "overloaded"}}), slow], ids=["503", "slow"])
def test_a_model_that_fails_or_times_out_changes_nothing(bot: Bot, model: ChatStandin, failure: Any) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    model.add(failure)
    reply(bot, paused, "green please")
    said = bot.wait_for(
        "the answer", lambda: next((m for m in thread(bot, paused) if "model could not" in m["text"]), None)
    )
    assert "Nothing was answered" in said["text"]
    assert state(bot, paused) is InterruptState.OPEN
    assert bot.runtime.store.redis.keys("parley:proposal:*") == []


def test_someone_not_asked_is_not_read_at_all(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    reply(bot, paused, "make it green", user="U0CAROL")
    bot.settle()
    assert model.requests == []
    assert state(bot, paused) is InterruptState.OPEN


@pytest.mark.parametrize(
    ("text", "approves"),
    [
        ("yes", True),
        ("approve it", True),
        ("lgtm 👍", True),
        ("no, don't approve", False),
        ("not yet", False),
        ("I wouldn't approve this", False),
        ("yes but wait", False),
        ("approve?", False),
        ("go ahead", True),
        ("approve", True),
        ("yes, approve it", True),
        ("LGTM", True),
        ("ship it", True),
        ("I wouldn\u2019t approve this", False),  # a curly apostrophe, as Slack on macOS and iOS sends
        ("I couldn't approve this", False),
        ("don\u2019t approve", False),
        ("I didn't say approve", False),
        ("you mustn't approve", False),
        ("I'd approve if the amount were lower", False),
        ("approve only if the cost is under 1k", False),
        ("LGTM except the replica count", False),
        ("ok, after the freeze ends", False),
        ("I don\u00b4t approve", False),  # an acute accent, as German and Spanish keyboards type it
        ("I don`t approve", False),
        ("I don\uff07t approve", False),  # a fullwidth apostrophe
    ],
)
def test_plainly_approves(text: str, approves: bool) -> None:
    assert plainly_approves(text) is approves


@pytest.mark.parametrize(
    ("reading", "shown", "raw"),
    [
        (
            {"unreadable": "<!channel> answer at <https://evil.example/login|the form>"},
            "&lt;!channel&gt; answer at &lt;https://evil.example/login|the form&gt;",
            ["<!channel>", "<https://"],
        ),
        ({"answers": {"colour": "<!here>"}}, "&lt;!here&gt;", ["<!here>"]),
    ],
    ids=["unreadable", "invalid-value"],
)
def test_the_models_words_are_posted_as_plain_text(
    bot: Bot, model: ChatStandin, reading: dict[str, Any], shown: str, raw: list[str]
) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    model.add(final(json.dumps(reading)))
    reply(bot, paused, "something purple-ish")
    told = said(bot, paused, "could not read")
    assert shown in told["text"]
    posted = [str(c["args"].get("text")) for c in bot.calls("chat.postMessage")]
    assert not [t for t in posted if any(markup in t for markup in raw)]


def test_chatter_is_read_at_most_three_times_and_answered_once(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER, "U0CAROL"]})
    model.add(*[final(json.dumps({"unreadable": "it is chatter"}))] * 6)
    for n, text in enumerate(["thanks!", "lol", "will look after lunch", "who owns this?", "ok", "brb"], 1):
        reply(bot, paused, text)
        bot.wait_for("the reading", lambda n=n: len(model.requests) >= min(n, 3))
        bot.settle()
    assert len(model.requests) == 3
    told = [m for m in thread(bot, paused) if "Nothing was answered" in m["text"]]
    assert len(told) == 1 and "could not read" in told[0]["text"]
    assert bot.calls("chat.postEphemeral") == []  # nor told privately past the readings
    assert state(bot, paused) is InterruptState.OPEN

    reply(bot, paused, "hmm", user="U0CAROL")  # someone else asked has readings of their own
    bot.wait_for("Carol's reply to be read", lambda: len(model.requests) == 4)
    said(bot, paused, "<@U0CAROL>: I could not read that")
    assert state(bot, paused) is InterruptState.OPEN


def test_a_long_reading_is_shown_cut_and_its_confirm_records_it_whole(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    note = "word " * 589 + "word!"  # 2,950 characters: a valid note, too long to show whole
    model.add(reads({"colour": "Green", "note": note}))
    reply(bot, paused, "green, and a long note")
    shown = proposal(bot, paused)
    section = shown["blocks"][0]["text"]["text"]
    assert "*Colour*: Green" in section and "cut here; Confirm records it whole" in section
    assert note not in section and len(section) <= 3000
    confirm(bot, paused, shown, USER)
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Green", "note": note}


def test_a_reading_the_thread_cannot_show_is_not_kept(bot: Bot, model: ChatStandin) -> None:
    paused = bot.paused("s-form", {"assignees": [USER]})
    model.add(reads({"colour": "Green"}))
    bot.ws.faults.fail_next("chat.postMessage", status=200, error="invalid_blocks")
    reply(bot, paused, "the colour of grass")
    told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == USER)
    assert "Nothing was answered" in str(told["args"].get("text"))
    assert bot.runtime.store.redis.keys("parley:proposal:*") == []
    assert state(bot, paused) is InterruptState.OPEN


def test_a_reply_sent_while_the_last_is_read_gets_the_rules_answer(bot: Bot, model: ChatStandin) -> None:
    """Told once already, a quick correction while a reading is in flight is not dropped in silence."""
    paused = bot.paused("s-pick", {"assignees": [USER]})
    gate = threading.Event()

    def held(body: dict[str, Any]) -> dict[str, Any]:
        gate.wait(20)
        return final(json.dumps({"unreadable": "still chatter"}))

    model.add(final(json.dumps({"unreadable": "it is chatter"})), held)
    reply(bot, paused, "thanks!")
    said(bot, paused, "I could not read that")
    reply(bot, paused, "hmm")
    bot.wait_for("the second reading", lambda: len(model.requests) == 2)
    try:
        reply(bot, paused, "whichever is cheapest")
        told = bot.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == USER)
        assert "couldn't tell which option" in str(told["args"].get("text"))
    finally:
        gate.set()
    assert state(bot, paused) is InterruptState.OPEN
