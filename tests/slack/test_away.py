"""Away, with a delegate: new questions for someone away go to the person they named, until they are back.

The store's rules on real Redis; then the bot's bolt app in this process with signed Slack
payloads, App Home and the Web API stand-in; and `parley people` as an operator runs it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, answers_of, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element, is_question, texts
from slack_payloads import TEAM_ID, app_home_opened_event, home_actions_payload, view_submission_payload

from bot.playground.directory import User
from bot.slack.blocks_away import AWAY_BACK_ACTION_ID, AWAY_OPEN_ACTION_ID, DELEGATE_BLOCK, UNTIL_BLOCK
from parley.cli import main
from workers.runtime.sweep import sweep
from workers.store.away import AwayStore
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

ALICE, DANA, ERIN = "U0ALICE", "U0DANA", "U0ERIN"
WEEK = 7 * 86400


# ---- the store's rules --------------------------------------------------------------------------
def test_a_delegate_who_is_away_too_is_followed_once_more_and_never_in_a_loop(r: redis.Redis) -> None:
    away, now = AwayStore(r), time.time()
    away.set("T1", "U1", now + WEEK, "U2", by="U1")
    assert away.stand_ins("T1", ["U1", "U9"]).people == ["U2", "U9"]
    away.set("T1", "U2", now + WEEK, "U3", by="U2")
    asked = away.stand_ins("T1", ["U1"])
    assert asked.people == ["U3"] and asked.standing_in == {"U3": [{"user": "U1", "until": now + WEEK}]}
    away.set("T1", "U3", now + WEEK, "U4", by="U3")
    assert away.stand_ins("T1", ["U1"]).people == ["U3"]  # two steps at most
    assert away.stand_ins("T1", ["U1", "U2", "U3"]).people == ["U3", "U4"]  # each person once
    away.set("T1", "U2", now + WEEK, "U1", by="U2")  # U1 -> U2 -> U1 would loop: it stops at U2
    assert away.stand_ins("T1", ["U1"]).people == ["U2"]


def test_an_absence_ends_on_time_and_is_per_workspace_unless_set_for_all(r: redis.Redis) -> None:
    away, now = AwayStore(r), time.time()
    away.set("T1", "U1", now + 60, "U2", by="U1")
    assert away.stand_ins("T1", ["U1"], now=now + 59).people == ["U2"]
    assert away.stand_ins("T1", ["U1"], now=now + 61).people == ["U1"]  # back
    assert away.stand_ins("T2", ["U1"], now=now).people == ["U1"]  # another workspace's questions
    away.set("", "U5", now + 60, "U6", by="cli")
    assert away.stand_ins("T2", ["U5"], now=now).people == ["U6"]  # set for every workspace
    assert away.clear("T1", "U1") and away.stand_ins("T1", ["U1"], now=now).people == ["U1"]


# ---- in Slack -----------------------------------------------------------------------------------
@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        running.ws.add_user(User(DANA, "dana", "Dana"))
        running.ws.add_user(User(ERIN, "erin", "Erin"))
        yield running


def test_a_question_for_someone_away_goes_to_their_delegate_who_answers_it(bot: Bot) -> None:
    until = time.time() + WEEK
    bot.runtime.store.away.set(TEAM_ID, "U0CAROL", until, DANA, by="U0CAROL")
    paused = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    assert paused.interrupt.assignees == [DANA]
    shown = texts(paused.question["blocks"])
    assert f"<@{DANA}> answers for <@U0CAROL>, who is away until <!date^{int(until)}^" in shown

    assert bot.click(paused, "parley_submit", user="U0CAROL", fills={"Colour": "Red"}).status == 200
    bot.wait_call("chat.postEphemeral", lambda c: "not yours to answer" in str(c["args"].get("text")))
    assert bot.click(paused, "parley_submit", user=DANA, fills={"Colour": "Green"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Green"}


def test_a_chain_of_two_and_the_end_of_the_absence(bot: Bot) -> None:
    bot.runtime.store.away.set(TEAM_ID, "U0CAROL", time.time() + WEEK, DANA, by="U0CAROL")
    bot.runtime.store.away.set(TEAM_ID, DANA, time.time() + 1.0, ERIN, by=DANA)
    chained = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    assert chained.interrupt.assignees == [ERIN]
    time.sleep(1.1)  # Dana is back: Carol's new questions go to Dana; the open one stays with Erin
    again = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    assert again.interrupt.assignees == [DANA]
    assert bot.runtime.store.interrupt(chained.interrupt.id).assignees == [ERIN]  # type: ignore[union-attr]


def test_a_quorum_counts_the_delegates_answer_once(bot: Bot) -> None:
    bot.runtime.store.away.set(TEAM_ID, "U0CAROL", time.time() + WEEK, "U0BOB", by="U0CAROL")
    run, root_ts = bot.started("s-each", '{"people": ["U0CAROL", "U0BOB", "U0ALICE"], "quorum": 3} q')
    work(bot.runtime)
    store = bot.runtime.store
    group = store.groups.group(store.get(run.id).interrupt)
    assert group is not None
    members = store.groups.members(group)
    assert sorted(m.assignees[0] for m in members) == ["U0ALICE", "U0BOB"]  # Bob is asked once
    [message] = [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]
    paused = PausedRun(run, root_ts, message, members[0], CHANNEL)
    assert "0 of 2 answered" in texts(paused.question["blocks"])  # the quorum needs no more than are asked

    for user in ("U0BOB", "U0BOB", "U0CAROL", "U0ALICE"):  # Bob twice, Carol (away) once: neither counts more
        assert bot.click(paused, "parley_submit", user=user, fills={"Decision": "Approve"}).status == 200
    work(bot.runtime)
    finished = store.get(paused.run.id)
    assert finished.status is RunStatus.SUCCEEDED, finished
    assert finished.result == "U0ALICE: Approve; U0BOB: Approve"


# ---- App Home -----------------------------------------------------------------------------------
def test_an_escalation_to_someone_away_goes_to_their_delegate(bot: Bot) -> None:
    bot.runtime.store.away.set(TEAM_ID, ALICE, time.time() + WEEK, DANA, by=ALICE)
    fields = {"assignees": ["U0BOB"], "expires_in": 3600, "escalate_after": 600, "escalate_to": [ALICE]}
    paused = bot.paused("s-form", fields)
    sweep(bot.runtime, now=paused.interrupt.asked_at + 601)
    escalated = bot.runtime.store.interrupt(paused.interrupt.id)
    assert escalated is not None and escalated.assignees == ["U0BOB", DANA]  # not Alice, who is away
    told = bot.wait_call("conversations.open", lambda c: c["args"].get("users") == DANA)
    assert told is not None and not bot.calls("conversations.open", lambda c: c["args"].get("users") == ALICE)


def test_a_person_sets_away_from_app_home_and_comes_back(bot: Bot) -> None:
    assert bot.event(app_home_opened_event("U0CAROL")).status == 200
    bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == "U0CAROL")
    home = bot.ws.home("U0CAROL")
    assert home is not None
    block, button = find_element(home["blocks"], AWAY_OPEN_ACTION_ID)
    payload = home_actions_payload(
        user="U0CAROL", view=home, action=button_action(block, button), trigger=bot.ws.issue_trigger("U0CAROL")
    )
    assert bot.interact(payload).status == 200
    form = bot.wait_for("the form", lambda: (bot.ws.open_views("U0CAROL") or [None])[-1])

    def submit(until: float, delegate: str) -> dict[str, object]:
        values = {
            UNTIL_BLOCK: {"until": {"type": "datetimepicker", "selected_date_time": int(until)}},
            DELEGATE_BLOCK: {"delegate": {"type": "users_select", "selected_user": delegate}},
        }
        resp = bot.interact(view_submission_payload(user="U0CAROL", view=form, state_values=values))
        assert resp.status == 200
        return dict(json.loads(resp.body)) if resp.body else {}

    assert submit(time.time() + WEEK, "U0CAROL")["errors"] == {DELEGATE_BLOCK: "Pick someone other than yourself."}
    assert submit(time.time() - 60, DANA)["errors"] == {UNTIL_BLOCK: "Pick a time in the future."}
    assert bot.runtime.store.away.get(TEAM_ID, "U0CAROL") is None  # a refusal saves nothing
    until = time.time() + WEEK
    assert submit(until, DANA) == {}
    saved = bot.runtime.store.away.get(TEAM_ID, "U0CAROL")
    assert saved is not None and saved.delegate == DANA and int(saved.until) == int(until)
    bot.wait_for("Home to say so", lambda: "You are away until" in texts(bot.ws.home("U0CAROL")["blocks"]))

    home = bot.ws.home("U0CAROL")
    block, button = find_element(home["blocks"], AWAY_BACK_ACTION_ID)
    assert (
        bot.interact(home_actions_payload(user="U0CAROL", view=home, action=button_action(block, button))).status == 200
    )
    bot.wait_for("Carol back", lambda: bot.runtime.store.away.get(TEAM_ID, "U0CAROL") is None)


# ---- the operator's command ---------------------------------------------------------------------
def test_parley_people_sets_lists_and_ends_an_absence(
    r: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    assert main(["people", "away", "U0CAROL", "--until", "3d", "--delegate", "U0DANA"]) == 0
    assert "U0CAROL is away until" in capsys.readouterr().out
    assert AwayStore(r).stand_ins("T0ANY", ["U0CAROL"]).people == ["U0DANA"]
    assert main(["people", "list"]) == 0
    assert "questions go to U0DANA" in capsys.readouterr().out
    assert main(["people", "away", "U0CAROL", "--until", "3d", "--delegate", "U0CAROL"]) == 2
    assert main(["people", "away", "nobody", "--until", "3d", "--delegate", "U0DANA"]) == 2
    assert main(["people", "back", "U0CAROL"]) == 0
    assert AwayStore(r).stand_ins("T0ANY", ["U0CAROL"]).people == ["U0CAROL"]


def test_an_absence_set_by_an_operator_ends_when_the_person_says_they_are_back(bot: Bot) -> None:
    bot.runtime.store.away.set(
        "", "U0CAROL", time.time() + WEEK, DANA, by="cli"
    )  # `parley people away`, all workspaces
    assert bot.event(app_home_opened_event("U0CAROL")).status == 200
    bot.wait_for(
        "Home to say so", lambda: "You are away until" in texts((bot.ws.home("U0CAROL") or {}).get("blocks", []))
    )
    home = bot.ws.home("U0CAROL")
    assert home is not None
    block, button = find_element(home["blocks"], AWAY_BACK_ACTION_ID)
    assert (
        bot.interact(home_actions_payload(user="U0CAROL", view=home, action=button_action(block, button))).status == 200
    )
    bot.wait_for("Carol back", lambda: bot.runtime.store.away.get(TEAM_ID, "U0CAROL") is None)
    assert bot.runtime.store.away.stand_ins(TEAM_ID, ["U0CAROL"]).people == ["U0CAROL"]


def test_parley_people_sees_absences_set_from_app_home_and_refuses_one_past_a_year(
    r: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    AwayStore(r).set(TEAM_ID, "U0CAROL", time.time() + WEEK, "U0DANA", by="U0CAROL")  # as App Home saves it
    assert main(["people", "list"]) == 0
    assert "U0CAROL  away until" in (said := capsys.readouterr().out) and f"workspace {TEAM_ID}" in said
    assert main(["people", "back", "U0CAROL"]) == 0
    assert "U0CAROL is back" in capsys.readouterr().out and AwayStore(r).get(TEAM_ID, "U0CAROL") is None
    with pytest.raises(SystemExit):
        main(["people", "away", "U0CAROL", "--until", "99999999d", "--delegate", "U0DANA"])
    assert "within a year" in capsys.readouterr().err
    assert main(["people", "list"]) == 0 and "nobody is away" in capsys.readouterr().out
