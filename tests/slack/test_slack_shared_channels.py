"""Slack Connect: a run's thread in a channel shared with another organisation.

In a shared channel, the Events API envelope's `team_id` may be the other organisation's
team (the one the message came from), and a click's payload carries the clicker's own team.
The run's thread is found by channel and thread alone, and a person of another team answers
when they were asked and the answer was given in the question's own conversation. A payload
with no team at all (`"team": null`) still answers nothing but its own organisation's runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, answers_of, running_bot
from slack_forms import form_state
from slack_payloads import thread_reply_event, view_submission_payload
from slack_stack import snapshot

from bot.playground.workspace import TEAM_ID, User
from bot.slack.refusals import WRONG_WORKSPACE
from workers.store import job_ids
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

PARTNER_TEAM = "T0PARTNER"
PARTNER = "U0ERIN"
"""A person of the partner organisation, a member of the shared channel #general."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        running.ws.add_user(User(PARTNER, "erin", "Erin Partner"))
        yield running


def test_a_partners_reply_delivered_under_their_team_answers(bot: Bot) -> None:
    """The envelope names the partner's team; the thread was recorded under the team of `/parley`."""
    paused = bot.paused("s-pick", {"assignees": [PARTNER]})
    reply = thread_reply_event(
        user=PARTNER,
        channel=CHANNEL,
        text="2",
        ts=bot.ws.next_ts(),
        thread_ts=paused.root_ts,
        user_team=PARTNER_TEAM,
    )
    resp = bot.event(reply, team=PARTNER_TEAM, installed_team=TEAM_ID, shared=True)
    assert (resp.status, resp.body) == (200, "")
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert answers_of(interrupt) == {"target": "Staging US"}
    assert interrupt is not None and interrupt.answered_by == PARTNER
    assert job_ids.resume(paused.run.id, paused.interrupt.id) in bot.runtime.queue.job_ids


def test_an_own_teams_reply_delivered_under_the_partners_envelope_answers(bot: Bot) -> None:
    paused = bot.paused("s-pick", {"assignees": ["U0BOB"]})
    reply = thread_reply_event(
        user="U0BOB", channel=CHANNEL, text="Production", ts=bot.ws.next_ts(), thread_ts=paused.root_ts
    )
    assert bot.event(reply, team=PARTNER_TEAM, installed_team=TEAM_ID, shared=True).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"target": "Production"}


def test_a_partners_click_is_accepted_when_they_were_asked_and_only_in_the_questions_channel(
    bot: Bot, r: redis.Redis
) -> None:
    paused = bot.paused("s-form", {"assignees": [PARTNER]})
    before = snapshot(r)
    elsewhere = bot.click(
        paused, "parley_submit", user=PARTNER, team=PARTNER_TEAM, channel="C0OPS", fills={"Colour": "Red"}
    )
    assert elsewhere.status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert (told["args"]["text"], told["args"]["user"]) == (WRONG_WORKSPACE, PARTNER)
    assert snapshot(r) == before

    resp = bot.click(paused, "parley_submit", user=PARTNER, team=PARTNER_TEAM, fills={"Colour": "Blue"})
    assert (resp.status, resp.body) == (200, "")
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert (interrupt.answered_by, answers_of(interrupt)) == (PARTNER, {"colour": "Blue"})
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.QUEUED


def test_a_partners_form_is_accepted_when_they_were_asked(bot: Bot) -> None:
    """The form carries no channel: it answers from the channel it was opened in."""
    paused = bot.paused("s-form", {"assignees": [PARTNER]})
    assert bot.click(paused, "parley_open_form", user=PARTNER, team=PARTNER_TEAM).status == 200
    bot.wait_call("views.open")
    [view] = bot.ws.open_views(PARTNER)
    submitted = view_submission_payload(
        user=PARTNER, view=view, state_values=form_state(view["blocks"], {"Colour": "Red"}), team=PARTNER_TEAM
    )
    resp = bot.interact(submitted)
    assert (resp.status, resp.body) == (200, "")
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Red"}


def test_a_partner_who_was_not_asked_is_told_so(bot: Bot, r: redis.Redis) -> None:
    """The assignee check decides by user id: the partner's team gets them no further than anyone else."""
    paused = bot.paused("s-form", {"assignees": ["U0BOB"]})
    before = snapshot(r)
    assert bot.click(paused, "parley_submit", user=PARTNER, team=PARTNER_TEAM, fills={"Colour": "Red"}).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert told["args"]["text"] == "This question is not yours to answer; it is waiting on <@U0BOB>."
    assert told["args"]["user"] == PARTNER
    assert snapshot(r) == before
