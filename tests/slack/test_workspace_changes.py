"""The workspace changes under a waiting run: its channel archived, Parley removed, the app uninstalled.

Slack then refuses every post and update there, and a retry would fail the same way. An answer
accepted from the still-visible message resumes the run once, an expiry ends it, the sweep goes
on, and each refusal is one log line with the run's fields. A person whose account is gone is
named in the thread. The bot's bolt app in this process, signed Slack requests, real Redis, an
in-process RQ worker, the Web API stand-in told to refuse as Slack does, and the sweep called as
the worker calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from rq.registry import FailedJobRegistry
from runtime_helpers import history_events, work

from workers.runtime.sweep import sweep
from workers.store import job_ids
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration
MANY = 100
"""Calls a fault is kept for: Slack refuses every one once the place is gone."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def _gone(bot: Bot, error: str) -> None:
    """From now on Slack refuses every post and update with `error`."""
    bot.ws.faults.fail_next("chat.update", status=200, error=error, times=MANY)
    bot.ws.faults.fail_next("chat.postMessage", status=200, error=error, times=MANY)


def _not_shown(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, object]]]:
    return [(r.getMessage(), r.ctx) for r in caplog.records if "Slack can no longer reach it" in r.getMessage()]


@pytest.mark.parametrize("error", ["not_in_channel", "is_archived", "channel_not_found"])
def test_an_answer_from_a_channel_parley_lost_resumes_the_run_once(
    bot: Bot, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The message stays visible and is answered; its lock and the result are refused. The run succeeds, once."""
    caplog.set_level(logging.INFO)
    paused = bot.paused("s-form")
    _gone(bot, error)
    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}).status == 200
    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Blue"}).status == 200  # refused
    work(bot.runtime)

    run = bot.runtime.store.get(paused.run.id)
    assert (run.status, run.result, run.failures) == (RunStatus.SUCCEEDED, "colour Red, note -", 0)
    assert len(history_events(bot.runtime, run.id, "answered")) == 1
    assert history_events(bot.runtime, run.id, "retry") == []  # the agent went on once, never again
    assert len(bot.calls("chat.update")) == 1  # the lock, tried once
    iid = paused.interrupt.id
    assert [(m, c["error"], c["run_id"], c["interrupt_id"], c["channel"]) for m, c in _not_shown(caplog)] == [
        ("closed question not shown: Slack can no longer reach it", error, run.id, iid, paused.channel),
        ("result not shown: Slack can no longer reach it", error, run.id, iid, paused.channel),
    ]
    assert FailedJobRegistry(queue=bot.runtime.queue).get_job_ids() == []


def test_a_new_question_in_a_channel_parley_lost_fails_the_run_at_once(bot: Bot) -> None:
    """Nobody could answer it, and no retry would post it: the run fails with Slack's error, not retried."""
    paused = bot.paused("s-twice")
    _gone(bot, "is_archived")
    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}).status == 200
    work(bot.runtime)

    run = bot.runtime.store.get(paused.run.id)
    assert (run.status, run.error) == (RunStatus.FAILED, "Slack refused the question: is_archived")
    assert history_events(bot.runtime, run.id, "retry") == []
    assert FailedJobRegistry(queue=bot.runtime.queue).get_job_ids() == []


@pytest.mark.parametrize("error", ["is_archived", "invalid_auth"])
def test_a_question_in_a_lost_channel_is_reminded_escalated_and_expires_without_a_retry(
    bot: Bot, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The sweep's reminder and escalation are refused and the sweep goes on; the expiry ends the run."""
    caplog.set_level(logging.INFO)
    params = {"assignees": ["U0CAROL"], "expires_in": 60, "escalate_after": 40, "escalate_to": ["U0ALICE"]}
    paused = bot.paused("s-form", params)
    _gone(bot, error)
    asked = paused.interrupt.asked_at

    report = sweep(bot.runtime, now=asked + 41)  # past the reminder (halfway) and the escalation
    assert (report.reminded, report.escalated) == ([paused.interrupt.id], [paused.interrupt.id])
    assert sweep(bot.runtime, now=asked + 61).expired == [paused.interrupt.id]
    work(bot.runtime)

    run = bot.runtime.store.get(paused.run.id)
    assert run.status is RunStatus.EXPIRED and run.error.startswith("expired: "), run.error
    assert history_events(bot.runtime, run.id, "retry") == []
    assert bot.runtime.store.interrupt(paused.interrupt.id).state is InterruptState.EXPIRED  # type: ignore[union-attr]
    assert [m.split(" not shown")[0] for m, _ in _not_shown(caplog)] == [
        "reminder",
        "question shown again",
        "closed question",
        "failure",
    ]
    assert {c["run_id"] for _, c in _not_shown(caplog)} == {run.id}
    assert bot.calls("conversations.open", lambda c: c["args"].get("users") == "U0ALICE") == []  # not pointed to it
    assert FailedJobRegistry(queue=bot.runtime.queue).get_job_ids() == []


def test_app_uninstalled_with_one_bot_token_cancels_the_waiting_run_and_its_lock_fails_nothing(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack revokes the token, then sends the event: the run is cancelled, its worker's job succeeds."""
    caplog.set_level(logging.INFO)
    paused = bot.paused("s-form")
    bot.ws.accepted_tokens = set()  # every call refused with `invalid_auth`
    assert bot.event({"type": "app_uninstalled", "event_ts": "1700000000.000100"}).status == 200
    store = bot.runtime.store
    bot.wait_for("the cancel", lambda: store.get(paused.run.id).status is RunStatus.CANCELLED)
    bot.wait_for("its effects queued", lambda: job_ids.cancelled(paused.run.id) in bot.runtime.queue.job_ids)
    work(bot.runtime)

    assert [h.by for h in history_events(bot.runtime, paused.run.id, "cancelled")] == ["slack:app_uninstalled"]
    assert [(c["error"], c["run_id"]) for _, c in _not_shown(caplog)] == [("invalid_auth", paused.run.id)]
    assert FailedJobRegistry(queue=bot.runtime.queue).get_job_ids() == []


@pytest.mark.parametrize("how", ["deleted", "deactivated"])
def test_a_question_waiting_only_on_someone_gone_says_so_in_the_thread(bot: Bot, how: str) -> None:
    """The DM is refused (`user_not_found`, `user_disabled`): the thread names them and the starter."""
    user = "U0GONE" if how == "deleted" else "U0CAROL"  # the stand-in knows no U0GONE
    if how == "deactivated":
        bot.ws.faults.fail_next("conversations.open", status=200, error="user_disabled")
    paused = bot.paused("s-form", {"assignees": [user], "expires_in": 3600})

    notes = [m for m in bot.ws.thread(paused.channel, paused.root_ts) if ":warning:" in m["text"]]
    assert [n["text"] for n in notes] == [
        f":warning: <@U0BOB>: <@{user}> could not be told of the question above: Slack says their account is"
        " deactivated or gone. Unless a Parley admin reassigns it (Reassign… on the question), it waits until"
        " it expires."
    ]


def test_a_reminder_slack_fails_holds_back_no_other_question_of_the_sweep(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    """A 500 on one run's reminder: logged with its run, and the other run's escalation still goes out."""
    caplog.set_level(logging.INFO)
    first = bot.paused("s-form", {"assignees": ["U0CAROL"], "expires_in": 60})
    second = bot.paused("s-form", {"assignees": ["U0CAROL"], "escalate_after": 40, "escalate_to": ["U0ALICE"]})
    bot.ws.faults.fail_next("chat.postMessage", status=500)  # the first reminder's post

    report = sweep(bot.runtime, now=max(first.interrupt.asked_at, second.interrupt.asked_at) + 41)
    assert (report.reminded, report.escalated) == ([], [second.interrupt.id])
    bot.wait_call("conversations.open", lambda c: c["args"].get("users") == "U0ALICE")
    [line] = [r for r in caplog.records if r.getMessage() == "reminder not sent; the sweep goes on"]
    assert (line.ctx["run_id"], line.ctx["interrupt_id"]) == (first.run.id, first.interrupt.id)
    assert history_events(bot.runtime, first.run.id, "reminded") == []
