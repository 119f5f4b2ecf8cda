"""Several questions at once, ended by an expiry: their messages say so, never that the run went on.

An expiry with `on_expiry="fail"` ends the group's wait and fails the run. The `ask_each` message
reads expired, and a question asked with the expired one reads closed for that reason. Defaults
that count as an answer, and a quorum reached, read as before. The bot's bolt app in this
process, signed Slack requests, real Redis, the Web API stand-in, and the sweep called as the
worker calls it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from slack_forms import is_question, texts

from workers import agent
from workers.interaction import Item, ItemType, Request
from workers.runtime.sweep import sweep
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"


def _decision(reason: str, p: dict[str, Any]) -> Request:
    """An approval with a note, expiring after `expires_in`, with its `on_expiry` and default."""
    items = [
        Item(
            id="decision",
            text="Decision",
            type=ItemType.SELECT,
            options=["Approve", "Reject"],
            default=p.get("default"),
        ),
        Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
    ]
    return Request(
        reason=reason,
        items=items,
        assignees=p["assignees"],
        expires_in=p["expires_in"],
        on_expiry=p.get("on_expiry", "fail"),
    )


@agent("t-expiry-each", description="Asks each person separately, expiring, and goes on at the quorum")
def _each(run: Any, text: str) -> str:
    p, _ = json.JSONDecoder().raw_decode(text)
    got = run.ask_each(_decision("Approve the release?", p), quorum=p["quorum"])
    return "; ".join(f"{user}: {answers['decision']}" for user, answers in sorted(got.items()))


@agent("t-expiry-all", description="Asks several questions at once, each expiring, and goes on with every answer")
def _all(run: Any, text: str) -> str:
    p, _ = json.JSONDecoder().raw_decode(text)
    got = run.ask_all({k: _decision(f"Question {k}?", q) for k, q in p.items()})
    return ", ".join(f"{k} {v['decision']}" for k, v in got.items())


@agent("t-expiry-any", description="Asks several questions at once, each expiring, and goes on with the first")
def _any(run: Any, text: str) -> str:
    p, _ = json.JSONDecoder().raw_decode(text)
    key, got = run.ask_any({k: _decision(f"Question {k}?", q) for k, q in p.items()})
    return f"{key} {got['decision']}"


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def asked(bot: Bot, agent_name: str, params: dict[str, Any], n: int) -> tuple[str, list[PausedRun]]:
    """Start `agent_name` and run it until it parks on its `n` question messages."""
    run, root_ts = bot.started(agent_name, json.dumps(params) + " " + secrets.token_hex(4))
    work(bot.runtime)
    paused = bot.runtime.store.get(run.id)
    assert paused.status is RunStatus.PAUSED, paused
    questions = [m for m in bot.ws.thread(CHANNEL, root_ts) if is_question(m)]
    assert len(questions) == n
    group = bot.runtime.store.groups.group(paused.interrupt)
    assert group is not None
    posted = {str(m.message.get("ts")): m for m in bot.runtime.store.groups.members(group)}
    return run.id, [PausedRun(paused, root_ts, q, posted[q["ts"]], CHANNEL) for q in questions]


def answer(bot: Bot, question: PausedRun, user: str) -> None:
    assert bot.click(question, "parley_submit", user=user, fills={"Decision": "Approve"}).status == 200
    bot.settle()
    work(bot.runtime)  # the job showing the answer, or the resume
    bot.settle()


def expire(bot: Bot, after: float) -> None:
    """Sweep as the worker does `after` seconds from now, then run what it queued."""
    sweep(bot.runtime, now=time.time() + after)
    work(bot.runtime)
    bot.settle()


def shown(bot: Bot, question: PausedRun) -> str:
    return texts(bot.ws.message(CHANNEL, question.question["ts"])["blocks"])


def update_text(bot: Bot, question: PausedRun) -> str:
    """The top-level `text` of the last update of the question's message."""
    return str(bot.calls("chat.update", lambda c: c["args"].get("ts") == question.question["ts"])[-1]["args"]["text"])


def test_an_ask_each_expiring_before_its_quorum_reads_expired_and_not_answered(bot: Bot) -> None:
    params = {"assignees": [ALICE, CAROL, BOB], "quorum": 2, "expires_in": 60}
    run_id, [question] = asked(bot, "t-expiry-each", params, 1)
    answer(bot, question, ALICE)
    expire(bot, 61)

    assert bot.runtime.store.get(run_id).status is RunStatus.EXPIRED
    locked = shown(bot, question)
    assert ":hourglass: Expired: 1 of 3 answered, 2 needed: <@U0ALICE>\nNot answered by <@U0CAROL>, <@U0BOB>" in locked
    assert ":white_check_mark:" not in locked and "No longer needed" not in locked
    assert update_text(bot, question).startswith("Expired: 1 of 3 answered, 2 needed:")


def test_an_ask_each_expiring_unanswered_reads_expired(bot: Bot) -> None:
    params = {"assignees": [ALICE, CAROL, BOB], "quorum": 2, "expires_in": 60}
    run_id, [question] = asked(bot, "t-expiry-each", params, 1)
    expire(bot, 61)

    assert bot.runtime.store.get(run_id).status is RunStatus.EXPIRED
    locked = shown(bot, question)
    assert ":hourglass: Expired: 0 of 3 answered, 2 needed\nNot answered by <@U0ALICE>, <@U0CAROL>, <@U0BOB>" in locked
    assert "Closed without an answer" not in locked and "No longer needed" not in locked


def test_an_ask_each_whose_defaults_make_the_quorum_reads_as_answered(bot: Bot) -> None:
    params = {
        "assignees": [ALICE, CAROL, BOB],
        "quorum": 2,
        "expires_in": 60,
        "on_expiry": "use_defaults",
        "default": "Reject",
    }
    run_id, [question] = asked(bot, "t-expiry-each", params, 1)
    answer(bot, question, ALICE)
    expire(bot, 61)

    assert bot.runtime.store.get(run_id).status is RunStatus.SUCCEEDED
    locked = shown(bot, question)
    assert ":white_check_mark: 1 of 3 answered, 2 needed: <@U0ALICE>" in locked
    assert "Expired" not in locked and "Not answered" not in locked


def test_an_ask_each_reaching_its_quorum_reads_as_answered(bot: Bot) -> None:
    params = {"assignees": [ALICE, CAROL, BOB], "quorum": 2, "expires_in": 60}
    run_id, [question] = asked(bot, "t-expiry-each", params, 1)
    answer(bot, question, ALICE)
    answer(bot, question, BOB)

    assert bot.runtime.store.get(run_id).status is RunStatus.SUCCEEDED
    locked = shown(bot, question)
    assert (
        ":white_check_mark: 2 of 3 answered, 2 needed: <@U0ALICE>, <@U0BOB>\nNo longer needed from <@U0CAROL>" in locked
    )
    assert "Expired" not in locked
    assert update_text(bot, question).startswith("2 of 3 answered, 2 needed:")


def test_an_ask_all_question_asked_with_an_expired_one_reads_closed_by_that_expiry(bot: Bot) -> None:
    params = {
        "a": {"assignees": [ALICE], "expires_in": 60},
        "b": {"assignees": [CAROL], "expires_in": 3600},
        "c": {"assignees": [BOB], "expires_in": 3600},
    }
    run_id, [a, b, c] = asked(bot, "t-expiry-all", params, 3)
    answer(bot, b, CAROL)
    expire(bot, 61)

    assert bot.runtime.store.get(run_id).status is RunStatus.EXPIRED
    assert ":hourglass: Expired without an answer" in shown(bot, a)
    assert "Answered by <@U0CAROL>" in shown(bot, b)
    closed = shown(bot, c)
    assert "Closed\nAnother question of this run expired without an answer." in closed
    assert "No longer needed" not in closed and "went on" not in closed
    assert update_text(bot, c).startswith("Closed: Question c?")


def test_an_ask_any_question_asked_with_an_expired_one_reads_closed_by_that_expiry(bot: Bot) -> None:
    params = {"a": {"assignees": [ALICE], "expires_in": 60}, "b": {"assignees": [CAROL], "expires_in": 3600}}
    run_id, [a, b] = asked(bot, "t-expiry-any", params, 2)
    expire(bot, 61)

    assert bot.runtime.store.get(run_id).status is RunStatus.EXPIRED
    assert ":hourglass: Expired without an answer" in shown(bot, a)
    closed = shown(bot, b)
    assert "Closed\nAnother question of this run expired without an answer." in closed
    assert "No longer needed" not in closed


def test_an_ask_any_question_left_by_an_answer_still_reads_no_longer_needed(bot: Bot) -> None:
    params = {"a": {"assignees": [ALICE], "expires_in": 60}, "b": {"assignees": [CAROL], "expires_in": 3600}}
    run_id, [a, b] = asked(bot, "t-expiry-any", params, 2)
    answer(bot, b, CAROL)

    assert bot.runtime.store.get(run_id).status is RunStatus.SUCCEEDED
    assert "Answered by <@U0CAROL>" in shown(bot, b)
    dropped = shown(bot, a)
    assert "No longer needed\nThe run went on without this question (another one was answered first)." in dropped
    assert "Closed" not in dropped and "expired" not in dropped


def test_an_ask_all_question_whose_defaults_were_used_says_so(bot: Bot) -> None:
    params = {
        "a": {"assignees": [ALICE], "expires_in": 60, "on_expiry": "use_defaults", "default": "Reject"},
        "b": {"assignees": [CAROL], "expires_in": 3600},
    }
    run_id, [a, b] = asked(bot, "t-expiry-all", params, 2)
    expire(bot, 61)
    answer(bot, b, CAROL)

    run = bot.runtime.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "a Reject, b Approve"
    assert ":hourglass: Expired without an answer\nNobody answered in time, so the run went on with the defaults." in (
        shown(bot, a)
    )
