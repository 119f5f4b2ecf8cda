""" "Claim" on a question put to a channel or a group: one claimer, who alone may answer, until released.

The bot's bolt app in this process, signed Slack requests, real Redis, the Web API stand-in,
and the sweep called as the worker calls it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from effect_counters import count
from inprocess_bot import CHANNEL, Bot, PausedRun, answers_of, running_bot
from pydantic import ValidationError
from receipt_support import predicate, ring
from runtime_helpers import work
from slack_forms import find_element, form_state, texts, users_select_action, users_select_state
from slack_payloads import ADMIN, block_actions_payload

from bot.playground.directory import User
from bot.playground.workspace import TEAM_ID
from bot.slack.blocks_question import CLAIM_ACTION_ID, REASSIGN_ACTION_ID, RELEASE_ACTION_ID
from workers.interaction import Item, ItemType, Request
from workers.receipts import Signer
from workers.receipts.canonical import blocks_digest
from workers.runtime.sweep import sweep
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

PEOPLE = [f"U0P{n:02d}" for n in range(20)]


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        for n, user in enumerate(PEOPLE):
            running.ws.add_user(User(user, f"person{n}"))
        yield running


def current(bot: Bot, paused: PausedRun) -> PausedRun:
    message = bot.ws.message(paused.channel, paused.question["ts"])
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert message is not None and interrupt is not None
    return PausedRun(paused.run, paused.root_ts, message, interrupt, paused.channel)


def ephemerals(bot: Bot, words: str) -> list[dict[str, Any]]:
    return [c for c in bot.calls("chat.postEphemeral") if words in str(c["args"].get("text"))]


def history(bot: Bot, paused: PausedRun, event: str) -> list[Any]:
    return [h for h in bot.runtime.store.history(paused.run.id) if h.event == event]


def claim(bot: Bot, paused: PausedRun, user: str) -> None:
    assert bot.click(paused, CLAIM_ACTION_ID, user=user).status == 200


def test_twenty_concurrent_claims_make_one_claimer_who_alone_may_answer(bot: Bot) -> None:
    paused = bot.paused("s-form", {"claim": True})
    assert find_element(paused.question["blocks"], CLAIM_ACTION_ID)
    go = threading.Barrier(len(PEOPLE))

    def click(user: str) -> None:
        go.wait()
        claim(bot, paused, user)

    threads = [threading.Thread(target=click, args=(u,)) for u in PEOPLE]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    bot.wait_for("nineteen refusals", lambda: len(ephemerals(bot, "already claimed by")) == 19)
    bot.wait_for("the message", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    [claimed] = history(bot, paused, "claimed")
    winner = claimed.by
    now = current(bot, paused)
    assert now.interrupt.claimed_by == winner and now.interrupt.assignees == [winner]
    assert f"Claimed by <@{winner}>" in texts(now.question["blocks"])
    assert find_element(now.question["blocks"], RELEASE_ACTION_ID)
    assert {c["args"]["user"] for c in ephemerals(bot, "already claimed by")} == set(PEOPLE) - {winner}
    assert bot.runtime.store.waiting_on(winner) == [paused.interrupt.id]

    loser = next(u for u in PEOPLE if u != winner)
    assert bot.click(now, "parley_submit", user=loser, fills={"Colour": "Red"}).status == 200
    bot.wait_for("the refusal", lambda: ephemerals(bot, "not yours to answer"))
    assert bot.runtime.store.interrupt(paused.interrupt.id).state.value == "open"  # type: ignore[union-attr]
    assert bot.click(now, "parley_submit", user=winner, fills={"Colour": "Green"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(paused.interrupt.id)) == {"colour": "Green"}


def test_the_claimer_releases_and_the_question_is_everyones_again(bot: Bot) -> None:
    paused = bot.paused("s-form", {"claim": True, "assignees": ["S0REVIEWERS"]})
    claim(bot, paused, "U0CAROL")
    bot.wait_for("the claim", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    claimed = current(bot, paused)

    assert bot.click(claimed, RELEASE_ACTION_ID, user="U0BOB").status == 200  # not the claimer, not an admin
    bot.wait_for("the refusal", lambda: ephemerals(bot, "Only the person who claimed"))
    assert current(bot, paused).interrupt.claimed_by == "U0CAROL"

    assert bot.click(claimed, RELEASE_ACTION_ID, user="U0CAROL").status == 200
    bot.wait_for("the release", lambda: "Claimed by" not in texts(current(bot, paused).question["blocks"]))
    released = current(bot, paused)
    assert released.interrupt.assignees == ["U0ALICE", "U0CAROL"]
    assert "Claimed by" not in texts(released.question["blocks"])
    assert find_element(released.question["blocks"], CLAIM_ACTION_ID)
    assert bot.runtime.store.waiting_on("U0ALICE") == [paused.interrupt.id]
    [entry] = history(bot, paused, "released")
    assert (entry.by, entry.detail["claimed_by"]) == ("U0CAROL", "U0CAROL")

    claim(bot, paused, "U0BOB")  # not in the group
    bot.wait_for("the refusal", lambda: ephemerals(bot, "Only the people asked can claim"))
    assert current(bot, paused).interrupt.claimed_by == ""


def test_an_admin_reassigns_a_claimed_question_and_the_claim_moves(bot: Bot) -> None:
    paused = bot.paused("s-form", {"claim": True})
    claim(bot, paused, "U0P01")
    bot.wait_for("the claim", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    now = current(bot, paused)
    blocks = now.question["blocks"]
    block, element = find_element(blocks, REASSIGN_ACTION_ID)
    payload = block_actions_payload(
        user=ADMIN,
        message=now.question,
        channel=now.channel,
        action=users_select_action(block, element, "U0P02"),
        state_values={**form_state(blocks, {}), **users_select_state(block, element, "U0P02")},
    )
    assert bot.interact(payload).status == 200
    bot.wait_for("the hand-over", lambda: "Claimed by <@U0P02>" in texts(current(bot, paused).question["blocks"]))
    assert current(bot, paused).interrupt.assignees == ["U0P02"]
    assert current(bot, paused).interrupt.claimed_by == "U0P02"


def test_a_claim_is_taken_where_an_answer_is_and_refused_aloud_elsewhere(bot: Bot) -> None:
    bot.ws.add_user(User("U0ERIN", "erin"))  # a Slack Connect partner, asked in the shared channel
    paused = bot.paused("s-form", {"claim": True, "assignees": ["U0ERIN", "U0BOB"]})
    elsewhere = bot.click(paused, CLAIM_ACTION_ID, user="U0BOB", channel="C0OPS", message_ts="1.000001")  # a copy
    assert elsewhere.status == 200
    bot.wait_for("the refusal", lambda: ephemerals(bot, "it can only be answered on its own message there"))
    assert current(bot, paused).interrupt.claimed_by == ""
    assert bot.click(paused, CLAIM_ACTION_ID, user="U0ERIN", team="T0PARTNER").status == 200  # its own message
    bot.wait_for("the partner's claim", lambda: current(bot, paused).interrupt.claimed_by == "U0ERIN")


def test_an_admin_of_the_questions_workspace_may_release_its_claim(bot: Bot) -> None:
    bot.deps.team_admins = {TEAM_ID: frozenset({"U0CAROL"})}  # an admin of this workspace only
    paused = bot.paused("s-form", {"claim": True, "assignees": ["U0BOB", "U0ALICE"]})
    claim(bot, paused, "U0BOB")
    bot.wait_for("the claim", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    assert bot.click(current(bot, paused), RELEASE_ACTION_ID, user="U0CAROL").status == 200
    bot.wait_for("the release", lambda: current(bot, paused).interrupt.claimed_by == "")
    assert not ephemerals(bot, "Only the person who claimed")


def test_a_claim_handed_on_and_then_released_goes_back_to_whom_it_was_handed(bot: Bot) -> None:
    paused = bot.paused("s-form", {"claim": True, "assignees": ["U0P01", "U0P02"]})
    claim(bot, paused, "U0P01")
    bot.wait_for("the claim", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    now = current(bot, paused)
    block, element = find_element(now.question["blocks"], REASSIGN_ACTION_ID)
    payload = block_actions_payload(  # the claimer hands their place, and so the claim, to U0P03
        user="U0P01",
        message=now.question,
        channel=now.channel,
        action=users_select_action(block, element, "U0P03"),
        state_values={**form_state(now.question["blocks"], {}), **users_select_state(block, element, "U0P03")},
    )
    assert bot.interact(payload).status == 200
    bot.wait_for("the hand-over", lambda: current(bot, paused).interrupt.claimed_by == "U0P03")
    bot.wait_for("the message", lambda: "Claimed by <@U0P03>" in texts(current(bot, paused).question["blocks"]))
    assert bot.click(current(bot, paused), RELEASE_ACTION_ID, user="U0P03").status == 200
    bot.wait_for("the release", lambda: current(bot, paused).interrupt.claimed_by == "")
    assert current(bot, paused).interrupt.assignees == ["U0P02", "U0P03"]  # not U0P01, who handed it on
    assert bot.runtime.store.waiting_on("U0P03") == [paused.interrupt.id]
    assert bot.runtime.store.waiting_on("U0P01") == []


def test_an_unclaimed_question_escalates_and_a_claimed_one_does_not(bot: Bot) -> None:
    fields = {"claim": True, "expires_in": 3600, "escalate_after": 600, "escalate_to": ["U0ALICE"]}
    quiet = bot.paused("s-form", {**fields, "assignees": ["U0P01", "U0P02"]})
    taken = bot.paused("s-form", {**fields, "assignees": ["U0P03", "U0P04"]})
    claim(bot, taken, "U0P03")
    bot.wait_for("the claim", lambda: current(bot, taken).interrupt.claimed_by == "U0P03")

    later = quiet.interrupt.asked_at + 601
    sweep(bot.runtime, now=later)
    assert "U0ALICE" in current(bot, quiet).interrupt.assignees
    assert current(bot, taken).interrupt.assignees == ["U0P03"]  # a claim counts as taking it up
    assert not history(bot, taken, "escalated")

    assert bot.click(current(bot, taken), RELEASE_ACTION_ID, user="U0P03").status == 200
    bot.wait_for("the release", lambda: current(bot, taken).interrupt.claimed_by == "")
    sweep(bot.runtime, now=later + 1)
    assert "U0ALICE" in current(bot, taken).interrupt.assignees  # released, it is due again


def test_a_channel_question_of_ask_any_is_claimed_and_answered_as_with_ask(bot: Bot) -> None:
    run, root_ts = bot.started("s-any-claim", json.dumps({"b": "U0ALICE"}) + " go")
    work(bot.runtime)
    store = bot.runtime.store
    paused_run = store.get(run.id)
    assert paused_run.status is RunStatus.PAUSED, paused_run.error
    group = store.groups.group(paused_run.interrupt)
    assert group is not None
    asked = next(m for m in store.groups.members(group) if m.key == "channel")
    assert asked.assignees == []  # put to the channel, not to the starter
    message = bot.ws.message(CHANNEL, asked.message["ts"])
    assert message is not None and find_element(message["blocks"], CLAIM_ACTION_ID)
    paused = PausedRun(paused_run, root_ts, message, asked)

    claim(bot, paused, PEOPLE[3])
    bot.wait_for("the claim", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
    assert bot.click(current(bot, paused), "parley_submit", user=PEOPLE[3], fills={"Decision": "Approve"}).status == 200
    bot.settle()
    work(bot.runtime)
    done = store.get(run.id)
    assert (done.status, done.result) == (RunStatus.SUCCEEDED, "channel Approve")
    assert count(bot.runtime.settings.data_dir, run.id, "exec") == 2  # the first execution and one resume


def test_claim_is_refused_for_a_question_with_one_person() -> None:
    item = Item(id="x", text="X", type=ItemType.FREE_TEXT)
    with pytest.raises(ValidationError, match="claim is for a question put to a channel"):
        Request(reason="Mine?", items=[item], assignees=["U0BOB"], claim=True)
    assert Request(reason="Ours?", items=[item], assignees=["S0REVIEWERS"], claim=True).claim


def test_a_receipt_digests_the_blocks_shown_when_answered_not_first(r: redis.Redis, tmp_path: Path) -> None:
    """Claim redraws the question in place; the answer's receipt names the redrawn blocks."""
    signer = Signer.generate()
    with running_bot(r, tmp_path, receipt_key=signer.private_pem()) as bot:
        paused = bot.paused("s-form", {"claim": True})
        first = blocks_digest(paused.question["blocks"])
        claim(bot, paused, PEOPLE[0])
        bot.wait_for("the redrawn message", lambda: "Claimed by" in texts(current(bot, paused).question["blocks"]))
        bot.settle()  # the redraw's record written after its chat.update
        now = current(bot, paused)
        shown = blocks_digest(now.question["blocks"])
        assert shown != first
        assert bot.click(now, "parley_submit", user=PEOPLE[0], fills={"Colour": "Green"}).status == 200
        bot.settle()
        work(bot.runtime)
        receipt = bot.runtime.receipts.get(paused.interrupt.id)
        assert receipt is not None
        assert predicate(receipt.line(), ring(signer))["question"]["shown_digest"] == {"sha256": shown}
