"""Who may answer a question, as it changes: user groups, escalation, "Reassign…", DMs to the people asked.

The bot's bolt app in this process (`inprocess_bot`), signed Slack requests, real Redis, an
in-process RQ worker, the sweep called as the worker calls it, and the Web API stand-in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, answers_of, running_bot
from runtime_helpers import work
from slack_forms import find_element, form_state, is_question, texts, users_select_action, users_select_state
from slack_payloads import ADMIN, block_actions_payload, home_actions_payload

from bot.playground.directory import User, UserGroup
from bot.slack import people
from bot.slack.blocks_question import REASSIGN_ACTION_ID
from workers.runtime.sweep import sweep
from workers.store.people import Change
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def dms(bot: Bot, user: str) -> list[dict[str, Any]]:
    """Messages Parley posted in its DM with `user`."""
    return [m for m in bot.ws.messages("D" + user[1:]) if m.get("user") == bot.ws.bot_user_id]


def current(bot: Bot, paused: PausedRun) -> PausedRun:
    """`paused` with its question message as it reads now (after an update)."""
    message = bot.ws.message(paused.channel, paused.question["ts"])
    assert message is not None
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None
    return PausedRun(paused.run, paused.root_ts, message, interrupt, paused.channel)


def pick(bot: Bot, paused: PausedRun, *, user: str, target: str) -> None:
    """`user` picks `target` in the question message's "Reassign…" select."""
    blocks = paused.question["blocks"]
    block, element = find_element(blocks, REASSIGN_ACTION_ID)
    payload = block_actions_payload(
        user=user,
        message=paused.question,
        channel=paused.channel,
        action=users_select_action(block, element, target),
        state_values={**form_state(blocks, {}), **users_select_state(block, element, target)},
    )
    assert bot.interact(payload).status == 200


def ephemeral(bot: Bot, user: str, words: str) -> dict[str, Any]:
    return bot.wait_call(
        "chat.postEphemeral", lambda c: c["args"]["user"] == user and words in str(c["args"].get("text"))
    )


# ---- user groups -----------------------------------------------------------------------------
def test_a_user_group_is_resolved_when_asked_and_any_member_may_answer(bot: Bot) -> None:
    paused = bot.paused("s-form", {"assignees": ["S0REVIEWERS"]})
    assert paused.interrupt.assignees == ["U0ALICE", "U0CAROL"]
    assert paused.interrupt.groups == {"S0REVIEWERS": ["U0ALICE", "U0CAROL"]}
    assert "Asked of <!subteam^S0REVIEWERS>" in texts(paused.question["blocks"])
    assert bot.calls("usergroups.users.list")[0]["args"]["usergroup"] == "S0REVIEWERS"
    assert bot.runtime.store.waiting_on("U0CAROL") == [paused.interrupt.id]

    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}).status == 200
    ephemeral(bot, "U0BOB", "not yours to answer")
    assert bot.runtime.store.interrupt(paused.interrupt.id).state is InterruptState.OPEN  # type: ignore[union-attr]
    assert bot.click(paused, "parley_submit", user="U0CAROL", fills={"Colour": "Red"}).status == 200
    answered = bot.runtime.store.interrupt(paused.interrupt.id)
    assert answered is not None and (answered.state, answered.answered_by) == (InterruptState.ANSWERED, "U0CAROL")


def test_an_unknown_user_group_fails_the_run_naming_it(bot: Bot) -> None:
    run, _ = bot.started("s-form", '{"assignees": ["S0NOBODY"]} x1')
    work(bot.runtime)
    run = bot.runtime.store.get(run.id)
    assert run.status.value == "failed" and "S0NOBODY" in run.error and "no_such_subteam" in run.error


@pytest.mark.parametrize(
    ("agent", "params"),
    [
        ("s-form", {"assignees": ["S0EMPTY"]}),
        ("s-any", {"a": "S0EMPTY", "b": "S0EMPTY"}),
        ("s-each", {"people": ["S0EMPTY", "U0CAROL"]}),
    ],
)
def test_a_user_group_with_no_members_fails_the_run_naming_it(bot: Bot, agent: str, params: dict[str, Any]) -> None:
    bot.ws.add_usergroup(UserGroup("S0EMPTY", "empty", ()))  # usergroups.users.list answers no users
    run, root_ts = bot.started(agent, json.dumps(params) + " x1")
    work(bot.runtime)
    failed = bot.runtime.store.get(run.id)
    assert failed.status is RunStatus.FAILED and "S0EMPTY" in failed.error and "no members" in failed.error
    assert "retry" not in [h.event for h in bot.runtime.store.history(run.id)]  # no retry would fill the group
    assert not [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]  # nobody was asked


# ---- DMs to the people asked -----------------------------------------------------------------
def test_each_person_asked_but_the_starter_gets_one_dm_with_the_link(bot: Bot) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0BOB", "U0CAROL"]})
    link = bot.calls("chat.getPermalink")[0]
    assert link["args"]["message_ts"] == paused.question["ts"]
    [dm] = dms(bot, "U0CAROL")
    assert "<@U0BOB>'s run *s-form* is asking you a question" in dm["text"]
    assert f"/archives/{paused.channel}/p{paused.question['ts'].replace('.', '')}" in dm["text"]
    assert dms(bot, "U0BOB") == []  # the starter asked themselves
    # Told once per question: a second notice of the same question to the same person sends nothing.
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None
    assert not people.notify(bot.deps.client, bot.runtime.store.people, interrupt, "U0CAROL", "again")
    assert len(dms(bot, "U0CAROL")) == 1


def test_no_dm_when_switched_off(bot: Bot) -> None:
    bot.deps.slack.notify_assignees = False
    bot.paused("s-form", {"assignees": ["U0CAROL"]})
    assert dms(bot, "U0CAROL") == [] and bot.calls("conversations.open") == []


# ---- escalation ------------------------------------------------------------------------------
def test_escalation_adds_people_after_the_delay_tells_them_and_says_so(bot: Bot) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0ALICE"], "escalate_after": 60, "escalate_to": ["U0CAROL"]})
    assert bot.click(paused, "parley_submit", user="U0CAROL", fills={"Colour": "Red"}).status == 200
    ephemeral(bot, "U0CAROL", "not yours to answer")

    assert sweep(bot.runtime, now=time.time()).escalated == []  # not yet due
    report = sweep(bot.runtime, now=time.time() + 61)
    assert report.escalated == [paused.interrupt.id]
    assert sweep(bot.runtime, now=time.time() + 122).escalated == []  # once
    [dm] = dms(bot, "U0CAROL")
    assert "escalated to you" in dm["text"] and "/archives/" in dm["text"]
    now = current(bot, paused)
    assert "Escalated to <@U0CAROL>" in texts(now.question["blocks"])
    assert now.interrupt.assignees == ["U0ALICE", "U0CAROL"]
    entry = next(h for h in bot.runtime.store.history(paused.run.id) if h.event == "escalated")
    assert entry.detail["to"] == ["U0CAROL"] and entry.detail["interrupt_id"] == paused.interrupt.id

    assert bot.click(now, "parley_submit", user="U0CAROL", fills={"Colour": "Blue"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Blue"}


# ---- reassign --------------------------------------------------------------------------------
def test_reassign_hands_the_question_over(bot: Bot) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    pick(bot, paused, user="U0CAROL", target="U0BOB")
    ephemeral(bot, "U0CAROL", "Reassigned to <@U0BOB>")
    now = current(bot, paused)
    assert now.interrupt.assignees == ["U0BOB"]
    assert "<@U0CAROL> reassigned this to <@U0BOB>" in texts(now.question["blocks"])
    [dm] = dms(bot, "U0BOB")
    assert "<@U0CAROL> reassigned a question to you" in dm["text"]
    assert bot.runtime.store.waiting_on("U0CAROL") == [] and bot.runtime.store.waiting_on("U0BOB") == [now.interrupt.id]

    assert bot.click(now, "parley_submit", user="U0CAROL", fills={"Colour": "Red"}).status == 200
    ephemeral(bot, "U0CAROL", "not yours to answer")
    assert bot.click(now, "parley_submit", user="U0BOB", fills={"Colour": "Green"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Green"}
    history = bot.runtime.store.history(paused.run.id)
    moved = next(h for h in history if h.event == "reassigned")
    assert (moved.by, moved.detail["from"], moved.detail["to"]) == ("U0CAROL", ["U0CAROL"], "U0BOB")
    assert next(h for h in history if h.event == "answered").by == "U0BOB"


@pytest.mark.parametrize(
    ("by", "target", "words"),
    [
        ("U0CAROL", "U0CAROL", "to yourself"),
        ("U0CAROL", "U0PARLEYBOT", "That's a bot"),
        ("U0BOB", "U0ALICE", "Only the people asked, or a Parley admin"),
        ("U0CAROL", "U0NOSUCH", "does not know that person"),
    ],
)
def test_reassign_refusals_change_nothing(bot: Bot, by: str, target: str, words: str) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    before = bot.runtime.store.interrupt(paused.interrupt.id)
    pick(bot, paused, user=by, target=target)
    ephemeral(bot, by, words)
    assert bot.runtime.store.interrupt(paused.interrupt.id) == before
    assert not any(h.event == "reassigned" for h in bot.runtime.store.history(paused.run.id))


def open_form(bot: Bot, paused: PausedRun, user: str) -> dict[str, Any]:
    """`user` clicks "Answer in a form"; returns the modal Slack shows them."""
    before = len(bot.calls("views.open"))
    assert bot.click(paused, "parley_open_form", user=user).status == 200
    bot.wait_for("the form to open", lambda: len(bot.calls("views.open")) > before)
    return bot.ws.open_views(user)[-1]


def test_an_admin_reassigns_from_the_form_and_everyone_asked_is_replaced(bot: Bot) -> None:
    bot.ws.add_user(User("U0DAVE", "dave", "Dave"))
    paused = bot.paused("s-form", {"assignees": ["U0BOB", "U0CAROL"]})
    view = open_form(bot, paused, ADMIN)
    block, element = find_element(view["blocks"], REASSIGN_ACTION_ID)
    payload = home_actions_payload(user=ADMIN, view=view, action=users_select_action(block, element, "U0BOB"))
    assert bot.interact(payload).status == 200
    bot.wait_for("the form to say why not", lambda: "already asked" in texts(bot.ws.view(view["id"])["blocks"]))
    assert bot.runtime.store.interrupt(paused.interrupt.id).assignees == ["U0BOB", "U0CAROL"]  # type: ignore[union-attr]

    view = open_form(bot, paused, ADMIN)
    block, element = find_element(view["blocks"], REASSIGN_ACTION_ID)
    payload = home_actions_payload(user=ADMIN, view=view, action=users_select_action(block, element, "U0DAVE"))
    assert bot.interact(payload).status == 200
    bot.wait_for("the form to say so", lambda: "Reassigned to <@U0DAVE>" in texts(bot.ws.view(view["id"])["blocks"]))
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.assignees == ["U0DAVE"]
    moved = next(h for h in bot.runtime.store.history(paused.run.id) if h.event == "reassigned")
    assert (moved.by, moved.detail["from"], moved.detail["to"]) == (ADMIN, ["U0BOB", "U0CAROL"], "U0DAVE")
    assert len(dms(bot, "U0DAVE")) == 1


# ---- a change racing an answer ---------------------------------------------------------------
def locked(bot: Bot, paused: PausedRun) -> bool:
    """Whether the question's message shows no controls any more."""
    try:
        find_element(current(bot, paused).question["blocks"], "parley_submit")
    except LookupError:
        return True
    return False


def test_an_escalation_racing_an_answer_tells_nobody(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0ALICE"], "escalate_after": 60, "escalate_to": ["U0CAROL"]})
    store = bot.runtime.store
    escalate = store.people.escalate

    def escalate_then_answer(*args: Any, **kwargs: Any) -> Change:
        change = escalate(*args, **kwargs)  # Alice's Submit lands right after the escalation's write
        assert bot.click(paused, "parley_submit", user="U0ALICE", fills={"Colour": "Red"}).status == 200
        return change

    monkeypatch.setattr(store.people, "escalate", escalate_then_answer)
    sweep(bot.runtime, now=time.time() + 61)
    bot.settle()
    assert dms(bot, "U0CAROL") == []
    assert answers_of(store.interrupt(paused.interrupt.id)) == {"colour": "Red"}


def test_a_reassignment_racing_an_answer_tells_nobody(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    bot.ws.add_user(User("U0DAVE", "dave", "Dave"))
    paused = bot.paused("s-form", {"assignees": ["U0ALICE", "U0CAROL"]})
    store = bot.runtime.store
    reassign = store.people.reassign

    def reassign_then_answer(*args: Any, **kwargs: Any) -> Change:
        change = reassign(*args, **kwargs)  # Alice's Submit lands right after Carol's reassignment
        assert bot.click(paused, "parley_submit", user="U0ALICE", fills={"Colour": "Red"}).status == 200
        return change

    monkeypatch.setattr(store.people, "reassign", reassign_then_answer)
    updated = bot.deps.runs.reassign(paused.interrupt, by="U0CAROL", to="U0DAVE", is_admin=False, to_is_bot=False)
    bot.settle()
    assert updated.state is InterruptState.ANSWERED  # what the clicker is told follows from this
    assert dms(bot, "U0DAVE") == []


@pytest.mark.parametrize("change", ["escalated", "reassigned"])
def test_the_host_tells_nobody_of_a_question_answered_before_it_shows_a_change(bot: Bot, change: str) -> None:
    """The store's change, then an answer, then the host's step: the host reads the question again."""
    bot.ws.add_user(User("U0DAVE", "dave", "Dave"))
    paused = bot.paused(
        "s-form", {"assignees": ["U0ALICE", "U0CAROL"], "escalate_after": 60, "escalate_to": ["U0DAVE"]}
    )
    store, iid, run_id = bot.runtime.store, paused.interrupt.id, paused.run.id
    if change == "escalated":
        assert store.people.escalate(iid, run_id, now=time.time() + 61).done
    else:
        assert store.people.reassign(iid, run_id, "U0CAROL", "U0DAVE", whole=False).done
    changed = store.interrupt(iid)  # as the runtime read it, still open
    assert changed is not None and changed.state is InterruptState.OPEN
    assert bot.click(paused, "parley_submit", user="U0ALICE", fills={"Colour": "Red"}).status == 200
    bot.settle()  # answered and locked
    if change == "escalated":
        bot.deps.slack.escalated(paused.run, changed, ["U0DAVE"])
    else:
        bot.deps.slack.reassigned(paused.run, changed, by="U0CAROL", to="U0DAVE")
    bot.settle()
    assert dms(bot, "U0DAVE") == []
    assert locked(bot, paused)  # the answered question shows no controls again
