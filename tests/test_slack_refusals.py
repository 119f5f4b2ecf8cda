"""Answers Parley must refuse, sent as Slack sends them to a live `parley serve` with workers.

Each refusal is checked twice: the clicker reads why, in an ephemeral message the stand-in
received, and nothing Parley keeps in Redis changed (a DUMP of every `parley:*` key before
and after). Requests that fail Slack's signature check never reach a listener at all.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from slack_bolt.request import BoltRequest
from slack_bolt.request.payload_utils import (
    is_app_home_opened_event,
    is_block_actions,
    is_block_suggestion,
    is_event,
    is_slash_command,
    is_view_submission,
)
from slack_forms import Tampered, button_action, find_element, form_state, home_row_button
from slack_payloads import (
    ADMIN,
    FORM,
    JSON_TYPE,
    SIGNING_SECRET,
    app_home_opened_event,
    block_actions_payload,
    block_suggestion_payload,
    event_callback_body,
    home_actions_payload,
    interaction_body,
    signed_headers,
    slack_signature,
    slash_command_body,
    thread_reply_event,
    view_submission_payload,
)
from slack_sdk.models.views import ViewState
from slack_sdk.signature import SignatureVerifier
from slack_stack import RunRef, SlackStack, snapshot

# ---- the payload builders themselves, checked against Slack's own tooling (no processes) ----------
# The worked example on Slack's "Verifying requests from Slack" page.
DOCS_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOCS_TIMESTAMP = "1531420618"
DOCS_BODY = (
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
DOCS_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

QUESTION = {
    "ts": "1700000000.000200",
    "thread_ts": "1700000000.000100",
    "type": "message",
    "text": "Question: Pick a colour",
    "blocks": [
        {
            "type": "input",
            "block_id": "q|qTOKEN|1|colour",
            "label": {"type": "plain_text", "text": "Colour"},
            "element": {
                "type": "static_select",
                "action_id": "answer",
                "options": [{"text": {"type": "plain_text", "text": "Red"}, "value": "Red"}],
            },
        },
        {
            "type": "input",
            "block_id": "q|qTOKEN|1|when",
            "label": {"type": "plain_text", "text": "When"},
            "element": {"type": "datepicker", "action_id": "answer"},
        },
        {
            "type": "actions",
            "block_id": "qa|qTOKEN|1",
            "elements": [
                {
                    "type": "button",
                    "action_id": "parley_submit",
                    "value": "qTOKEN",
                    "text": {"type": "plain_text", "text": "Submit"},
                }
            ],
        },
    ],
}


def test_requests_are_signed_the_way_slack_signs_them() -> None:
    assert slack_signature(DOCS_BODY, DOCS_TIMESTAMP, DOCS_SECRET) == DOCS_SIGNATURE
    verifier = SignatureVerifier(SIGNING_SECRET)
    block, button = find_element(QUESTION["blocks"], "parley_submit")
    state = form_state(QUESTION["blocks"], {"Colour": "Red", "When": "2026-01-31"})
    clicked = block_actions_payload(
        user="U0BOB", message=QUESTION, channel="C0GENERAL", action=button_action(block, button), state_values=state
    )
    bodies = {
        "slash": (slash_command_body("ticket Login & SSO broken", user="U0BOB"), FORM),
        "block_actions": (interaction_body(clicked), FORM),
        "view_submission": (
            interaction_body(
                view_submission_payload(
                    user="U0BOB",
                    view={"id": "V1", "type": "modal", "callback_id": "parley_form", "blocks": []},
                    state_values=state,
                )
            ),
            FORM,
        ),
        "block_suggestion": (
            interaction_body(
                block_suggestion_payload(
                    user="U0BOB",
                    message=QUESTION,
                    channel="C0GENERAL",
                    block_id="q|qTOKEN|1|colour",
                    action_id="answer",
                    value="re",
                )
            ),
            FORM,
        ),
        "event": (event_callback_body(app_home_opened_event("U0BOB")), JSON_TYPE),
    }
    for name, (body, content_type) in bodies.items():
        headers = signed_headers(body, content_type)
        assert verifier.is_valid_request(body, headers), name
        assert not verifier.is_valid_request(body + " ", headers), name
        assert not verifier.is_valid_request(body, signed_headers(body, content_type, secret="other")), name
        stale = signed_headers(body, content_type, timestamp=int(time.time()) - 6 * 60)
        assert not verifier.is_valid_request(body, stale), name

    # Bolt reads each body as the kind of request it was built to be.
    parsed = {
        name: BoltRequest(body=body, headers=signed_headers(body, ct)).body for name, (body, ct) in bodies.items()
    }
    assert is_slash_command(parsed["slash"]) and parsed["slash"]["text"] == "ticket Login & SSO broken"
    assert is_block_actions(parsed["block_actions"]) and is_view_submission(parsed["view_submission"])
    assert is_block_suggestion(parsed["block_suggestion"])
    assert is_event(parsed["event"]) and is_app_home_opened_event(parsed["event"])
    # state.values has the layout slack_sdk's own model reads.
    values = ViewState(**parsed["block_actions"]["state"]).values
    assert values["q|qTOKEN|1|colour"]["answer"].type == "static_select"
    assert values["q|qTOKEN|1|colour"]["answer"].selected_option["value"] == "Red"
    assert values["q|qTOKEN|1|when"]["answer"].selected_date == "2026-01-31"


def test_untouched_inputs_are_reported_as_slack_reports_them() -> None:
    state = form_state(QUESTION["blocks"], {})
    assert state == {
        "q|qTOKEN|1|colour": {"answer": {"type": "static_select", "selected_option": None}},
        "q|qTOKEN|1|when": {"answer": {"type": "datepicker", "selected_date": None}},
    }
    assert form_state(QUESTION["blocks"], {}, omit_untouched=True) == {}
    tampered = form_state(QUESTION["blocks"], {"Colour": Tampered("Purple")})
    assert tampered["q|qTOKEN|1|colour"]["answer"]["selected_option"]["value"] == "Purple"
    with pytest.raises(LookupError):
        form_state(QUESTION["blocks"], {"Colour": "Purple"})  # a person can only pick what is offered


# ---- refusals through the live stack --------------------------------------------------------------
@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackStack]:
    yield from SlackStack.running(redis_url, tmp_path_factory.mktemp("slack-refusals"))


def tag() -> str:
    return secrets.token_hex(4)


def form_run(stack: SlackStack, user: str = "U0BOB", **params: Any) -> tuple[RunRef, dict[str, Any]]:
    run = stack.start_run("s-form", (json.dumps(params) + " " if params else "") + f"refusal-{tag()}", user=user)
    return run, stack.question(run)


def assert_refused(stack: SlackStack, run: RunRef, send: Callable[[], httpx.Response], user: str, *needles: str) -> str:
    """Send a refused answer: an ephemeral to `user` says why, and no `parley:*` key changes."""
    stack.settle()
    before = snapshot(stack.redis)
    mark = stack.mark()
    resp = send()
    assert resp.status_code == 200
    note = stack.wait_ephemeral(user, lambda t: all(n in t for n in needles), since=mark)
    assert note["args"]["channel"] == run.channel
    stack.settle()
    assert snapshot(stack.redis) == before
    assert stack.calls("chat.update", since=mark) == []
    assert stack.calls("chat.postMessage", lambda c: c["args"].get("thread_ts") == run.root_ts, since=mark) == []
    return str(note["args"]["text"])


def history(stack: SlackStack, run: RunRef) -> list[str]:
    return [json.loads(e)["event"] for e in stack.redis.lrange(f"parley:run:{run.run_id}:history", 0, -1)]


@pytest.mark.system
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
    for item in ("description", "severity", "components"):
        assert f"*{item}*: an answer is required" in text, text
    assert "*affected*" not in text  # its default counts as an answer
    assert stack.status(run.run_id) == "paused"


@pytest.mark.system
def test_an_option_that_was_not_offered_is_refused(stack: SlackStack) -> None:
    run, question = form_run(stack)
    text = assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": Tampered("Purple")})[0],
        "U0BOB",
        "Your answer was not accepted",
    )
    assert "*colour*: 'Purple' is not one of the offered options (Red, Green, Blue)" in text, text


@pytest.mark.system
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


@pytest.mark.system
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


@pytest.mark.system
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


@pytest.mark.system
def test_an_expired_question_is_refused(stack: SlackStack) -> None:
    run, question = form_run(stack, expires_in=1)
    stack.wait_status(run, "expired", timeout=20)
    stack.wait_call("chat.update", lambda c: c["args"].get("ts") == question["ts"])
    assert "Expired without an answer" in json.dumps(stack.message(run, question["ts"])["blocks"])
    assert_refused(
        stack, run, lambda: stack.submit(run, question, {"Colour": "Red"})[0], "U0BOB", "expired before it was answered"
    )


@pytest.mark.system
def test_an_answer_from_another_workspace_is_unknown(stack: SlackStack) -> None:
    run, question = form_run(stack)
    assert_refused(
        stack,
        run,
        lambda: stack.submit(run, question, {"Colour": "Red"}, team="T0ELSEWHERE")[0],
        "U0BOB",
        "This question no longer exists.",
    )
    assert stack.status(run.run_id) == "paused"


@pytest.mark.system
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


@pytest.mark.system
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
@pytest.mark.system
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
