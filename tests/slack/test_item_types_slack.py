"""The new item types as Slack drives them: posted with their elements, refused by label, returned typed.

Signed `block_actions` and `view_submission` payloads against the bot in this process, the Web
API stand-in, real Redis and an in-process RQ worker (`inprocess_bot`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from blockcheck import assert_valid_message, assert_valid_view
from inprocess_bot import CHANNEL, Bot, answers_of, running_bot
from runtime_helpers import work
from slack_forms import form_state
from slack_payloads import thread_reply_event, view_submission_payload
from slack_stack import snapshot

from bot.slack.refusals import ONE_FIELD
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

START = 1796405400  # 2026-12-04T17:30:00Z


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def _kinds(blocks: list[dict]) -> dict[str, str]:
    return {b["label"]["text"]: b["element"]["type"] for b in blocks if b["type"] == "input"}


def test_the_form_posts_each_native_element_refuses_by_label_and_returns_typed(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("s-typed")
    assert_valid_message(paused.question["blocks"], paused.question.get("text"))
    assert bot.click(paused, "parley_open_form", user="U0BOB").status == 200
    bot.wait_call("views.open")
    [view] = bot.ws.open_views("U0BOB")
    assert_valid_view(view)
    assert _kinds(view["blocks"]) == {
        "Replicas": "number_input",
        "Ratio": "number_input",
        "Go ahead?": "radio_buttons",
        "Notify?": "checkboxes",
        "Contact": "email_text_input",
        "Runbook": "url_text_input",
        "At": "timepicker",
        "Start": "datetimepicker",
    }
    fields = {b["label"]["text"]: b["block_id"] for b in view["blocks"] if b["type"] == "input"}
    good = {
        "Replicas": "4",
        "Ratio": "0.5",
        "Go ahead?": "No",
        "Contact": "ops@example.com",
        "Runbook": "https://example.com/runbook",
        "At": "09:30",
        "Start": START,
    }

    before = snapshot(r)
    bad = {**good, "Replicas": "11", "Contact": "ops at example", "Runbook": "ftp://example.com/x"}
    resp = bot.interact(view_submission_payload(user="U0BOB", view=view, state_values=form_state(view["blocks"], bad)))
    assert resp.status == 200
    assert json.loads(resp.body) == {
        "response_action": "errors",
        "errors": {
            fields["Replicas"]: "at most 10",
            fields["Contact"]: "not an email address",
            fields["Runbook"]: "not a web address (http or https)",
        },
    }
    assert snapshot(r) == before  # nothing is accepted while any item is refused

    resp = bot.interact(view_submission_payload(user="U0BOB", view=view, state_values=form_state(view["blocks"], good)))
    assert (resp.status, resp.body) == (200, "")
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {
        "replicas": 4,
        "ratio": 0.5,
        "go": False,
        "notify": False,
        "contact": "ops@example.com",
        "runbook": "https://example.com/runbook",
        "at": "09:30",
        "start": "2026-12-04T17:30:00Z",
    }
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    done = bot.ws.thread(CHANNEL, paused.root_ts)[-1]["text"]
    assert "replicas=4:int" in done and "ratio=0.5:float" in done and "go=False:bool" in done
    assert "notify=False:bool" in done and "2026-12-04T17:30:00Z" in done


def test_the_message_uses_inputs_slack_allows_there_and_validates_them(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("s-typed")
    blocks = paused.question["blocks"]
    assert _kinds(blocks) == {
        "Replicas": "plain_text_input",
        "Ratio": "plain_text_input",
        "Go ahead?": "radio_buttons",
        "Notify?": "checkboxes",
        "Contact": "plain_text_input",
        "Runbook": "plain_text_input",
        "At": "timepicker",
        "Start": "datetimepicker",
    }
    before = snapshot(r)
    fills = {"Replicas": "twelve", "Go ahead?": "Yes", "Contact": "ops@example.com", "Notify?": ["Yes"]}
    assert bot.click(paused, "parley_submit", user="U0BOB", fills=fills).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == ":warning: Your answer was not accepted:\n• *Replicas*: not a number"
    assert snapshot(r) == before

    fills["Replicas"] = "7"
    assert bot.click(paused, "parley_submit", user="U0BOB", fills=fills).status == 200
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert answers_of(interrupt) == {"replicas": 7, "go": True, "notify": True, "contact": "ops@example.com"}
    work(bot.runtime)
    done = bot.ws.thread(CHANNEL, paused.root_ts)[-1]["text"]
    assert "replicas=7:int" in done and "go=True:bool" in done and "ratio=None" in done


@pytest.mark.parametrize(
    ("items", "reply", "answers"),
    [
        (["go"], "Yes", {"go": True}),
        (["go"], "no", {"go": False}),
        (["replicas"], "3", {"replicas": 3}),
    ],
)
def test_a_thread_reply_answers_a_single_required_yes_no_or_number(bot: Bot, items, reply, answers) -> None:
    paused = bot.paused("s-typed", {"items": items})
    event = thread_reply_event(user="U0BOB", channel=CHANNEL, text=reply, ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(event).status == 200
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert answers_of(interrupt) == answers


@pytest.mark.parametrize(
    ("items", "reply", "problem"),
    [(["go"], "maybe", "*Go ahead?*: expected yes or no"), (["replicas"], "40", "*Replicas*: at most 10")],
)
def test_a_thread_reply_that_does_not_fit_is_refused_by_label(bot: Bot, items, reply, problem) -> None:
    paused = bot.paused("s-typed", {"items": items})
    event = thread_reply_event(user="U0BOB", channel=CHANNEL, text=reply, ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(event).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == f":warning: Your answer was not accepted:\n• {problem}"
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN


def test_a_thread_reply_leaves_an_optional_yes_no_alone(bot: Bot) -> None:
    paused = bot.paused("s-typed", {"items": ["notify"]})
    event = thread_reply_event(user="U0BOB", channel=CHANNEL, text="yes", ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(event).status == 200
    bot.settle(0.3)
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN  # a reply would only guess
    told = [c["args"]["text"] for c in bot.calls("chat.postEphemeral")]
    assert told == [ONE_FIELD]  # told once, privately, why and what to use instead
