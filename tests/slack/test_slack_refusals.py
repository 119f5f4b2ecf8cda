"""Answers Parley must refuse, sent as Slack sends them to a live `parley serve` with workers.

Each refusal is checked twice: the clicker reads why, in an ephemeral message the stand-in
received, and nothing Parley keeps in Redis changed (a DUMP of every `parley:*` key before
and after). Requests that fail Slack's signature check never reach a listener at all.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from slack_forms import Tampered, button_action, home_row_button
from slack_payloads import (
    ADMIN,
    FORM,
    JSON_TYPE,
    event_callback_body,
    home_actions_payload,
    interaction_body,
    signed_headers,
    slack_signature,
    slash_command_body,
    thread_reply_event,
)
from slack_stack import RunRef, SlackStack, snapshot

from workers.store.runs import RunStore

pytestmark = [pytest.mark.system, pytest.mark.stack()]


def tag() -> str:
    return secrets.token_hex(4)


def form_run(stack: SlackStack, user: str = "U0BOB", **params: Any) -> tuple[RunRef, dict[str, Any]]:
    run = stack.start_run("s-form", (json.dumps(params) + " " if params else "") + f"refusal-{tag()}", user=user)
    return run, stack.question(run)


def assert_refused(
    stack: SlackStack,
    run: RunRef,
    send: Callable[[], httpx.Response],
    user: str,
    *needles: str,
    told_in: str | None = None,
) -> str:
    """Send a refused answer: an ephemeral to `user` (in `told_in`, by default the run's channel)
    says why, and no `parley:*` key changes."""
    stack.settle()
    before = snapshot(stack.redis)
    mark = stack.mark()
    resp = send()
    assert resp.status_code == 200
    note = stack.wait_ephemeral(user, lambda t: all(n in t for n in needles), since=mark)
    assert note["args"]["channel"] == (told_in or run.channel)
    stack.settle()
    assert snapshot(stack.redis) == before
    assert stack.calls("chat.update", since=mark) == []
    assert stack.calls("chat.postMessage", lambda c: c["args"].get("thread_ts") == run.root_ts, since=mark) == []
    return str(note["args"]["text"])


def history(stack: SlackStack, run: RunRef) -> list[str]:
    assert stack.redis is not None
    return [h.event for h in RunStore(stack.redis).history(run.run_id)]


def test_missing_required_answers_are_each_named(stack: SlackStack) -> None:
    run = stack.start_run("ticket", f"Printer on fire {tag()}")
    question = stack.question(run)
    text = assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Due date": "2026-03-01"})[0],
        "U0BOB",
        "Your answer was not accepted",
    )
    for label in ("Describe the bug", "Severity", "Components"):  # the labels people read, not item ids
        assert f"*{label}*: an answer is required" in text, text
    assert "*Who is affected?*" not in text  # its default counts as an answer
    assert stack.status(run.run_id) == "paused"


def test_an_option_that_was_not_offered_is_refused(stack: SlackStack) -> None:
    run, question = form_run(stack)
    text = assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": Tampered("Purple")})[0],
        "U0BOB",
        "Your answer was not accepted",
    )
    assert "*Colour*: 'Purple' is not one of the offered options (Red, Green, Blue)" in text, text


def test_an_answer_from_someone_not_asked_names_who_is(stack: SlackStack) -> None:
    run, question = form_run(stack, assignees=["U0BOB"])
    assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": "Red"}, user="U0CAROL")[0],
        "U0CAROL",
        "not yours to answer",
        "<@U0BOB>",
    )


def test_an_answered_question_names_who_answered(stack: SlackStack) -> None:
    run, question = form_run(stack)
    resp, _ = stack.submit(run, question, {"Colour": "Green"})
    assert resp.status_code == 200
    stack.wait_status(run, "succeeded")
    assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": "Blue"})[0],
        "U0BOB",
        "already answered by <@U0BOB>",
    )
    assert stack.redis.hget(f"parley:run:{run.run_id}", "result") == b"colour Green, note -"


def test_a_question_cancelled_from_the_home_tab_is_refused(stack: SlackStack) -> None:
    run, question = form_run(stack)
    mark = stack.mark()
    home = stack.open_home(ADMIN)
    block, cancel = home_row_button(home, run.run_id, "parley_admin_cancel")
    assert cancel.get("confirm")  # Slack asks "Cancel this run?" before sending the click
    resp = stack.interact(home_actions_payload(user=ADMIN, view=home, action=button_action(block, cancel)))
    assert resp.status_code == 200
    stack.wait_status(run, "cancelled")
    stack.wait_call("chat.update", lambda c: c["args"].get("ts") == question["ts"], since=mark)
    assert "Cancelled by <@U0ALICE>" in json.dumps(stack.message(run, question["ts"])["blocks"])

    assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": "Red"})[0],
        "U0BOB",
        "cancelled by <@U0ALICE>",
    )


def test_an_expired_question_is_refused(stack: SlackStack) -> None:
    run, question = form_run(stack, expires_in=1)
    stack.wait_status(run, "expired", timeout=20)
    stack.wait_call("chat.update", lambda c: c["args"].get("ts") == question["ts"])
    assert "Expired without an answer" in json.dumps(stack.message(run, question["ts"])["blocks"])
    assert_refused(
        stack, run, lambda: stack.submit(run, question, {"Colour": "Red"})[0], "U0BOB", "expired before it was answered"
    )


def test_an_answer_from_another_workspace_is_refused_as_such(stack: SlackStack) -> None:
    """Another team answers only in the question's own (shared) channel; from a channel of its own, never."""
    run, question = form_run(stack)
    assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": "Red"}, team="T0ELSEWHERE", channel="C0OPS")[0],
        "U0BOB",
        "This question was asked in another Slack workspace, so it can't be answered from here.",
        told_in="C0OPS",
    )
    assert stack.status(run.run_id) == "paused"


def test_a_redelivered_submit_is_accepted_once_and_resumes_once(stack: SlackStack) -> None:
    run, question = form_run(stack)
    payload = stack.submit_payload(run, question, {"Colour": "Blue", "Note": "twice"})
    mark = stack.mark()
    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda _: stack.interact(payload), range(2)))
    assert [r.status_code for r in responses] == [200, 200]
    stack.wait_status(run, "succeeded")
    resp = stack.interact(payload)  # and once more, after the run finished
    assert resp.status_code == 200
    stack.settle()
    assert history(stack, run) == ["started", "answered", "succeeded"]
    finals = stack.replies(run, lambda m: m["text"].startswith(":white_check_mark:"))
    assert [m["text"] for m in finals] == [":white_check_mark: Done: colour Blue, note twice"]
    assert stack.calls("chat.postEphemeral", since=mark) == []  # the same click is not "already answered"
    assert stack.redis.hget(f"parley:run:{run.run_id}", "epoch") == b"2"  # executed, then resumed: once each


def test_two_people_clicking_at_once_only_one_is_accepted(stack: SlackStack) -> None:
    run, question = form_run(stack, assignees=["U0BOB", "U0CAROL"])
    picks = {"U0BOB": "Red", "U0CAROL": "Green"}
    payloads = [stack.submit_payload(run, question, {"Colour": c}, user=u) for u, c in picks.items()]
    mark = stack.mark()
    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(stack.interact, payloads))
    assert [r.status_code for r in responses] == [200, 200]
    stack.wait_status(run, "succeeded")
    iid = stack.redis.hget(f"parley:run:{run.run_id}", "interrupt").decode()
    winner = stack.redis.hget(f"parley:interrupt:{iid}", "answered_by").decode()
    loser = next(u for u in picks if u != winner)
    note = stack.wait_ephemeral(loser, lambda t: "already answered" in t, since=mark)
    assert f"<@{winner}>" in note["args"]["text"]
    assert history(stack, run) == ["started", "answered", "succeeded"]
    result = stack.redis.hget(f"parley:run:{run.run_id}", "result").decode()
    assert result == f"colour {picks[winner]}, note -"
    assert stack.calls("chat.postEphemeral", lambda c: c["args"].get("user") == winner, since=mark) == []


# ---- requests Slack did not sign ------------------------------------------------------------------
@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda body: signed_headers(body, FORM, secret="not-the-signing-secret"), id="wrong-secret"),
        pytest.param(lambda body: signed_headers(body, FORM, timestamp=int(time.time()) - 6 * 60), id="stale"),
        pytest.param(
            lambda body: {**signed_headers(body, FORM), "X-Slack-Signature": slack_signature(body + "&x=1", "0")},
            id="signature-of-other-body",
        ),
        pytest.param(lambda body: {"Content-Type": FORM}, id="unsigned"),
    ],
)
def test_unsigned_or_replayed_requests_are_rejected(stack: SlackStack, forge: Callable[[str], dict]) -> None:
    run, question = form_run(stack)
    body = interaction_body(stack.submit_payload(run, question, {"Colour": "Red"}))
    reply = stack.ws.post_message(run.channel, "1", user="U0BOB", thread_ts=run.root_ts)
    event = event_callback_body(
        thread_reply_event(user="U0BOB", channel=run.channel, text="Red", ts=reply["ts"], thread_ts=run.root_ts)
    )
    command = slash_command_body(f"s-form forged-{tag()}", user="U0BOB")
    stack.settle()
    before = snapshot(stack.redis)
    mark = stack.mark()
    for raw in (body, command):
        resp = stack.send(raw, FORM, headers=forge(raw))
        assert resp.status_code == 401, resp.text
    resp = stack.send(event, JSON_TYPE, headers={**forge(event), "Content-Type": JSON_TYPE})
    assert resp.status_code == 401
    stack.settle()
    assert snapshot(stack.redis) == before
    assert stack.calls(since=mark) == []
    # The very same body, signed properly, is accepted: only the signature was wrong.
    assert stack.send(body, FORM).status_code == 200
    stack.wait_status(run, "succeeded")
