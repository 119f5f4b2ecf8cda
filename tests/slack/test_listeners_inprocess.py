"""The bot's bolt app in this process, driven with Slack's signed requests (see `inprocess_bot`).

Each listener surface in turn: slash commands, clicks, the form, option loads, thread replies,
the Home tab and the admins' buttons, against real Redis, an in-process RQ worker and the
Web API stand-in.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, answers_of, running_bot
from runtime_helpers import work
from slack_bolt import BoltResponse
from slack_bolt.request import BoltRequest
from slack_forms import (
    button_action,
    find_element,
    form_state,
    is_question,
)
from slack_payloads import (
    ADMIN,
    FORM,
    app_home_opened_event,
    block_actions_payload,
    block_suggestion_payload,
    home_actions_payload,
    signed_headers,
    slash_command_body,
    thread_reply_event,
    view_submission_payload,
)
from slack_stack import snapshot

from bot.playground.workspace import TEAM_ID
from bot.slack.refusals import WRONG_WORKSPACE
from workers.store import job_ids
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


# ---- slash command ---------------------------------------------------------------------------
def test_slash_command_creates_a_run_and_its_root_message_follows_the_ack(bot: Bot) -> None:
    resp = bot.command("s-form Paint the shed")
    assert (resp.status, resp.body) == (200, "")
    [run] = bot.runs()
    assert (run.agent, run.text, run.started_by, run.status) == ("s-form", "Paint the shed", "U0BOB", RunStatus.QUEUED)
    assert {k: run.conversation[k] for k in ("host", "team", "channel")} == {
        "host": "slack",
        "team": TEAM_ID,
        "channel": CHANNEL,
    }

    posted = bot.wait_call("chat.postMessage")
    assert posted["args"]["text"] == "<@U0BOB> started *s-form*: Paint the shed"
    assert posted["args"]["channel"] == CHANNEL and "thread_ts" not in posted["args"]
    bot.wait_for("the run to be enqueued", lambda: job_ids.first(run.id) in bot.runtime.queue.job_ids)
    [root] = bot.roots()
    assert bot.runtime.store.thread_run(CHANNEL, root["ts"]) == run.id


def test_a_replayed_slash_command_starts_one_run(bot: Bot) -> None:
    """The same signed request three times within the signature window: one run, one root message."""
    body = slash_command_body("ticket Create ticket for login issue", user="U0BOB", channel=CHANNEL)
    headers = signed_headers(body, FORM)
    first = bot.app.dispatch(BoltRequest(body=body, headers=headers))
    assert (first.status, first.body) == (200, "")
    for _ in range(2):
        replay = bot.app.dispatch(BoltRequest(body=body, headers=headers))
        assert replay.status == 200
        assert json.loads(replay.body) == {
            "response_type": "ephemeral",
            "text": "Parley already received this command, so nothing new was started.",
        }
    bot.wait_call("chat.postMessage")
    bot.settle()
    [run] = bot.runs()
    assert (run.agent, run.text) == ("ticket", "Create ticket for login issue")
    assert [m["text"] for m in bot.roots()] == ["<@U0BOB> started *ticket*: Create ticket for login issue"]
    assert bot.runtime.queue.job_ids == [job_ids.first(run.id)]


def test_slash_command_for_an_unknown_agent_starts_nothing(bot: Bot) -> None:
    resp = bot.command("nosuchagent do it")
    assert resp.status == 200
    reply = json.loads(resp.body)
    assert reply["response_type"] == "ephemeral"
    assert "There is no agent called `nosuchagent`." in reply["text"] and "*s-form*" in reply["text"]
    bot.settle()
    assert bot.runs() == [] and bot.ws.calls("chat.postMessage") == []


def test_slash_command_without_the_text_an_agent_needs_answers_its_usage(bot: Bot) -> None:
    for text in ("ticket", "ticket   "):
        resp = bot.command(text)
        assert resp.status == 200
        reply = json.loads(resp.body)
        assert reply["response_type"] == "ephemeral"
        assert reply["text"].startswith(":information_source: Usage: `/parley ticket &lt;what is wrong&gt;`\n")
        assert "File a ticket in the local tracker" in reply["text"]
    bot.settle()
    assert bot.runs() == [] and bot.ws.calls("chat.postMessage") == []  # nothing started, nothing posted


# ---- block_actions ---------------------------------------------------------------------------
def test_submit_is_accepted_before_the_ack_and_the_resume_is_enqueued(bot: Bot) -> None:
    paused = bot.paused("s-form")
    resp = bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Green", "Note": "soon"})
    assert (resp.status, resp.body) == (200, "")

    # Accepted and enqueued before the ack returned: nothing here waits on a worker.
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert interrupt.answered_by == "U0BOB" and answers_of(interrupt) == {"colour": "Green", "note": "soon"}
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.QUEUED
    assert job_ids.resume(paused.run.id, paused.interrupt.id) in bot.runtime.queue.job_ids

    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    thread = bot.ws.thread(CHANNEL, paused.root_ts)
    assert thread[-1]["text"] == ":white_check_mark: Done: colour Green, note soon"
    assert not any(is_question(m) for m in thread)  # the resumed run locked the question
    assert bot.ws.calls("chat.postEphemeral") == []


def test_a_refused_submit_is_told_to_the_clicker_after_the_ack(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0BOB"]})
    before = snapshot(r)
    resp = bot.click(paused, "parley_submit", user="U0CAROL", fills={"Colour": "Red"})
    assert (resp.status, resp.body) == (200, "")

    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == "This question is not yours to answer; it is waiting on <@U0BOB>."
    assert (told["args"]["user"], told["args"]["channel"]) == ("U0CAROL", CHANNEL)
    assert told["args"]["thread_ts"] == paused.root_ts
    assert snapshot(r) == before  # a refusal writes nothing
    assert job_ids.resume(paused.run.id, paused.interrupt.id) not in bot.runtime.queue.job_ids


def test_a_refused_answer_names_each_field_by_the_label_people_read(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("ticket")
    before = snapshot(r)
    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Due date": "2026-03-01"}).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == (
        ":warning: Your answer was not accepted:\n"
        "• *Describe the bug*: an answer is required\n"
        "• *Severity*: an answer is required\n"
        "• *Components*: an answer is required"
    )
    assert snapshot(r) == before


def test_a_submit_without_a_team_is_refused_and_says_why(bot: Bot, r: redis.Redis) -> None:
    """Slack sends `"team": null` for org-wide installs; only the run's own workspace may answer."""
    paused = bot.paused("s-form", {"assignees": ["U0BOB"]})
    blocks = paused.question["blocks"]
    block, button = find_element(blocks, "parley_submit")
    payload = block_actions_payload(
        user="U0BOB",
        message=paused.question,
        channel=CHANNEL,
        action=button_action(block, button),
        state_values=form_state(blocks, {"Colour": "Red"}),
    )
    payload.update(team=None, enterprise={"id": "E0ELSEWHERE", "name": "Elsewhere"}, is_enterprise_install=True)
    before = snapshot(r)
    assert bot.interact(payload).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == WRONG_WORKSPACE
    assert told["args"]["user"] == "U0BOB"
    assert snapshot(r) == before
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.PAUSED


@pytest.mark.parametrize("where", ["another channel", "another message"])
def test_a_click_away_from_the_questions_own_message_is_refused_and_says_where(
    bot: Bot, r: redis.Redis, where: str
) -> None:
    """The question is in #general, on its own message; the same blocks clicked anywhere else answer nothing."""
    paused = bot.paused("s-form", {"assignees": ["U0BOB"]})
    place = {"channel": "C0OPS"} if where == "another channel" else {"message_ts": paused.root_ts}
    before = snapshot(r)
    resp = bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}, **place)
    assert (resp.status, resp.body) == (200, "")
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == (
        "This question was asked in <#C0GENERAL>; it can only be answered on its own message there."
    )
    assert told["args"]["user"] == "U0BOB"
    assert snapshot(r) == before
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.PAUSED

    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Red"}


def test_a_one_click_choice_answers(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    assert button["value"] == "Staging EU"
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=CHANNEL, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"target": "Staging EU"}
    assert job_ids.resume(paused.run.id, paused.interrupt.id) in bot.runtime.queue.job_ids


def test_a_signed_click_of_a_shape_slack_never_sends_is_refused_with_400_and_changes_nothing(
    bot: Bot, r: redis.Redis
) -> None:
    """The shape check runs before authorization and before any listener (`bot.app.RefuseMalformed`)."""
    paused = bot.paused("s-form")
    block, button = find_element(paused.question["blocks"], "parley_submit")
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    before = snapshot(r)
    assert bot.interact({**payload, "user": "U0BOB"}).status == 400  # `user` is an object in every payload
    assert bot.interact({**payload, "actions": []}).status == 400
    assert snapshot(r) == before
    assert bot.runtime.store.interrupt(paused.interrupt.id).state is InterruptState.OPEN  # type: ignore[union-attr]
    assert bot.interact(payload).status == 200  # the same click, well formed, answers


def test_answer_in_a_form_without_a_live_trigger_opens_nothing_and_fails_nothing(bot: Bot) -> None:
    """A click whose trigger is missing, or has expired by the time the form opens, is acked; no 5xx."""
    paused = bot.paused("s-form")
    blocks = paused.question["blocks"]
    block, button = find_element(blocks, "parley_open_form")
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    payload.pop("trigger_id", None)
    assert (bot.interact(payload).status, bot.calls("views.open")) == (200, [])

    bot.ws.faults.fail_next("views.open", status=200, error="expired_trigger_id")
    assert bot.click(paused, "parley_open_form", user="U0BOB").status == 200
    refused = bot.wait_call("views.open")
    assert (refused["status"], refused["error"]) == (200, "expired_trigger_id")
    assert bot.ws.open_views("U0BOB") == []


# ---- view_submission -------------------------------------------------------------------------
def test_form_submission_shows_an_invalid_field_inline(bot: Bot) -> None:
    paused = bot.paused("s-form")
    assert bot.click(paused, "parley_open_form", user="U0BOB").status == 200
    opened = bot.wait_call("views.open")
    assert opened["status"] == 200
    [view] = bot.ws.open_views("U0BOB")
    fields = {b["label"]["text"]: b["block_id"] for b in view["blocks"] if b["type"] == "input"}

    missing = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {"Note": "in a hurry"})
    )
    resp = bot.interact(missing)
    assert resp.status == 200
    assert json.loads(resp.body) == {"response_action": "errors", "errors": {fields["Colour"]: "an answer is required"}}
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN

    valid = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {"Colour": "Blue"})
    )
    resp = bot.interact(valid)
    assert (resp.status, resp.body) == (200, "")
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Blue"}


# ---- block_suggestion ------------------------------------------------------------------------
def test_options_are_filtered_by_what_is_typed(bot: Bot) -> None:
    paused = bot.paused("s-many")
    region = next(b for b in paused.question["blocks"] if b["type"] == "input" and b["label"]["text"] == "Region")
    assert region["element"]["type"] == "external_select"

    def suggest(value: str) -> list[str]:
        payload = block_suggestion_payload(
            user="U0BOB",
            message=paused.question,
            channel=CHANNEL,
            block_id=region["block_id"],
            action_id=region["element"]["action_id"],
            value=value,
        )
        resp = bot.interact(payload)
        assert resp.status == 200
        return [o["value"] for o in json.loads(resp.body)["options"]]

    assert suggest("042") == ["region-042"]
    assert suggest("REGION 00") == [f"region-00{n}" for n in range(10)]
    assert suggest("nowhere") == []


# ---- message events --------------------------------------------------------------------------
def test_a_thread_reply_answers_a_single_select(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    reply = thread_reply_event(user="U0BOB", channel=CHANNEL, text="2", ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    resp = bot.event(reply)
    assert (resp.status, resp.body) == (200, "")
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert answers_of(interrupt) == {"target": "Staging US"}
    assert interrupt is not None and interrupt.answered_by == "U0BOB"
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.QUEUED
    assert job_ids.resume(paused.run.id, paused.interrupt.id) in bot.runtime.queue.job_ids


def test_an_ambiguous_thread_reply_lists_the_options_after_the_ack(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    reply = thread_reply_event(
        user="U0BOB", channel=CHANNEL, text="staging", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"].startswith("I couldn't tell which option you meant: ")
    assert "Staging EU" in told["args"]["text"] and "Staging US" in told["args"]["text"]
    assert (told["args"]["user"], told["args"]["thread_ts"]) == ("U0BOB", paused.root_ts)
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN


# ---- app_home_opened and the admins' buttons -------------------------------------------------
def test_app_home_opened_publishes_waiting_questions_and_admin_runs(bot: Bot) -> None:
    paused = bot.paused("s-pick", user="U0CAROL")
    assert bot.event(app_home_opened_event("U0CAROL")).status == 200
    published = bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == "U0CAROL")
    assert published["status"] == 200
    waiting = {b["block_id"]: b for b in published["args"]["view"]["blocks"]}
    assert "*s-pick* · waiting" in waiting["hw|0"]["text"]["text"]
    assert f"hr|{paused.run.id}" not in waiting  # not an admin

    assert bot.event(app_home_opened_event(ADMIN)).status == 200
    admin_home = bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == ADMIN)
    rows = {b["block_id"]: b for b in admin_home["args"]["view"]["blocks"]}
    assert "waiting on <@U0CAROL>" in rows[f"hr|{paused.run.id}"]["text"]["text"]
    assert [e["action_id"] for e in rows[f"hra|{paused.run.id}"]["elements"]] == [
        "parley_admin_cancel",
        "parley_admin_remind",
        "parley_inspect",
    ]


def test_a_home_tab_slack_refuses_is_logged_as_whose_it_was(bot: Bot, caplog: pytest.LogCaptureFixture) -> None:
    """bolt logged an error without the person (a traceback from its lazy listener); now a warning names them."""
    caplog.set_level(logging.WARNING)
    bot.ws.faults.fail_next("views.publish", status=200, error="invalid_blocks")
    assert bot.event(app_home_opened_event("U0CAROL")).status == 200
    bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == "U0CAROL")
    bot.settle()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    [told] = [r for r in caplog.records if r.getMessage() == "home tab not published"]
    assert (told.ctx["user"], told.ctx["error"]) == ("U0CAROL", "invalid_blocks")


def test_admin_cancel_from_the_home_tab_and_a_non_admin_refused(bot: Bot) -> None:
    paused = bot.paused("s-pick")
    assert bot.event(app_home_opened_event(ADMIN)).status == 200
    bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == ADMIN)
    home = bot.ws.home(ADMIN)
    assert home is not None
    block = next(b for b in home["blocks"] if b.get("block_id") == f"hra|{paused.run.id}")
    _, cancel = find_element([block], "parley_admin_cancel")

    def click(user: str) -> BoltResponse:
        action = button_action(block, cancel)
        return bot.interact(home_actions_payload(user=user, view=home, action=action))

    refused = click("U0BOB")
    assert (refused.status, refused.body) == (200, "")
    told = bot.wait_call("chat.postMessage", lambda c: c["args"].get("channel") == "U0BOB")
    assert told["args"]["text"] == "Only Parley admins can do that."
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.PAUSED

    assert click(ADMIN).status == 200
    bot.wait_for("the run to be cancelled", lambda: bot.runtime.store.get(paused.run.id).status is RunStatus.CANCELLED)
    work(bot.runtime)  # a worker locks the question
    bot.wait_call("chat.update", lambda c: c["args"].get("ts") == paused.question["ts"])
    # The admin's home is published again after the cancel (off the ack path, so waited for).
    bot.wait_for(
        "the admin's home to be refreshed",
        lambda: len(bot.calls("views.publish", lambda c: c["args"].get("user_id") == ADMIN)) >= 2,
    )
