"""The HTTP API end to end: a live `parley serve`, real `parley worker`s, the Web API stand-in.

Questions are asked over `/api/v1`, answered with Slack's own signed payloads, and read back
with long-polls and signed webhooks (verified with the `standardwebhooks` package).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from api_support import PARLEY, Receiver, Token, approval, create_token, from_address, revoke_token
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, thread_reply_event, view_submission_payload
from slack_stack import SlackStack
from stacks import Stacks
from standardwebhooks.webhooks import Webhook

from parley.client import Parley, ParleyAPIError, QuestionCancelledError, QuestionExpiredError, QuestionTimeoutError
from workers.questions import tokens
from workers.store import keys

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
RATE_LIMIT = 12  # the busy token's own limit; the others have PARLEY_API_RATE_LIMIT
AUTH_FAILURES = 20  # PARLEY_API_AUTH_FAILURES's default


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, hooks: Receiver, stacks: Stacks
) -> Iterator[SlackStack]:
    env = {
        "PARLEY_WEBHOOK_ALLOW": f"127.0.0.1:{urlsplit(hooks.url('x')).port}",  # the receiver's port only
        "PARLEY_WEBHOOK_RETRY_INTERVALS": "1,1",  # three attempts a second apart (the default spans an hour)
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    yield stacks(redis_url=redis_url, extra_env=env)


@pytest.fixture(scope="module")
def ci(stack: SlackStack) -> Token:
    return create_token(stack, "ci-bot")


def post(stack: SlackStack, token: Token, body: dict[str, Any], **headers: str) -> httpx.Response:
    assert stack.http is not None
    return stack.http.post("/api/v1/questions", json=body, headers={**token.auth, **headers})


def get(stack: SlackStack, token: Token, path: str, **params: Any) -> httpx.Response:
    assert stack.http is not None
    return stack.http.get(f"/api/v1/{path}", params=params, headers=token.auth, timeout=70)


def ask(stack: SlackStack, token: Token, reason: str, **fields: Any) -> dict[str, Any]:
    resp = post(stack, token, {"request": approval(reason), "channel": CHANNEL, **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()


def click_submit(
    stack: SlackStack, created: dict[str, Any], choice: str, user: str, message: dict[str, Any] | None = None
) -> httpx.Response:
    """`user` picks `choice` on the question message (as posted, or `message`) and clicks Submit, as Slack sends it."""
    message = message or stack.ws.message(created["channel"], created["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], "parley_submit")
    payload = block_actions_payload(
        user=user,
        message=message,
        channel=created["channel"],
        action=button_action(block, button),
        state_values=form_state(message["blocks"], {"Decision": choice}),
    )
    return stack.interact(payload)


def test_asked_over_the_api_answered_in_slack_and_the_long_poll_returns_at_once(stack: SlackStack, ci: Token) -> None:
    created = ask(stack, ci, "Ship release 7?", metadata={"ticket": "OPS-7"})
    assert created["status"] == "waiting" and created["message_ts"] and created["metadata"] == {"ticket": "OPS-7"}
    posted = stack.ws.message(CHANNEL, created["message_ts"])
    assert posted is not None and "Ship release 7?" in json.dumps(posted["blocks"])
    got: dict[str, Any] = {}

    def long_poll() -> None:
        got["response"] = get(stack, ci, f"questions/{created['id']}", wait=30)
        got["returned"] = time.monotonic()

    waiter = threading.Thread(target=long_poll)
    waiter.start()
    time.sleep(0.5)  # the long-poll is open
    assert "response" not in got
    resp = click_submit(stack, created, "approve", "U0CAROL")  # no assignees: anyone in the channel
    clicked = time.monotonic()
    assert resp.status_code == 200, resp.text
    waiter.join(35)
    body = got["response"].json()
    assert body["status"] == "answered", body
    assert body["answers"] == {"decision": "approve", "note": None} and body["answered_by"] == "U0CAROL"
    assert got["returned"] - clicked < 1.0  # woken by the close, not by the 30 s timeout
    # the worker resumes the run: the question's message is locked with the answer
    stack.wait_for(
        "the question to be locked",
        lambda: "Answered by" in json.dumps(stack.ws.message(CHANNEL, created["message_ts"])),
    )
    out = subprocess.run([str(PARLEY), "runs", "list"], env=stack.env(), capture_output=True, text=True, check=True)
    row = next(line for line in out.stdout.splitlines() if line.startswith(created["id"]))
    assert "question" in row and "ci-bot" in row  # the agent and the token's name as origin


def test_typed_reply_answers_an_api_question_by_ordinal(stack: SlackStack, ci: Token) -> None:
    resp = post(stack, ci, {"request": approval("Rotate the keys?", note=False), "channel": CHANNEL})
    assert resp.status_code == 201, resp.text
    created = resp.json()
    ts = f"{time.time():.6f}"
    event = thread_reply_event(user="U0BOB", channel=CHANNEL, text="2", ts=ts, thread_ts=created["message_ts"])
    assert stack.event(event).status_code == 200
    body = get(stack, ci, f"questions/{created['id']}", wait=20).json()
    assert body["status"] == "answered" and body["answers"] == {"decision": "reject"}


def test_a_dm_question_is_for_that_person_and_shows_in_their_inbox(stack: SlackStack, ci: Token) -> None:
    resp = post(stack, ci, {"request": approval("Approve your own expense?"), "user": "U0BOB"})
    assert resp.status_code == 201, resp.text
    created = resp.json()
    assert created["channel"].startswith("D")
    home = stack.open_home("U0BOB")
    assert "Approve your own expense?" in json.dumps(home)  # "waiting on you"
    admin_home = json.dumps(stack.open_home("U0ALICE"))  # an admin's paused runs
    assert created["id"] in admin_home and "Approve your own expense?" in admin_home
    mark = stack.mark()
    assert click_submit(stack, created, "approve", "U0CAROL").status_code == 200  # not Carol's to answer
    stack.wait_ephemeral("U0CAROL", lambda text: "U0BOB" in text, since=mark)
    assert get(stack, ci, f"questions/{created['id']}").json()["status"] == "waiting"
    assert click_submit(stack, created, "reject", "U0BOB").status_code == 200
    assert get(stack, ci, f"questions/{created['id']}", wait=20).json()["answers"]["decision"] == "reject"


def test_webhook_is_signed_and_retried_with_the_same_id(stack: SlackStack, ci: Token, hooks: Receiver) -> None:
    hooks.scripts["retried"] = [500, 500, 200]
    created = ask(stack, ci, "Merge the hotfix?", callback_url=hooks.url("retried"), metadata={"pr": 42})
    assert click_submit(stack, created, "approve", "U0BOB").status_code == 200
    stack.wait_for("three deliveries", lambda: len(hooks.deliveries("retried")) >= 3, timeout=30)
    deliveries = hooks.deliveries("retried")
    assert len({d["headers"]["webhook-id"] for d in deliveries}) == 1
    for d in deliveries:
        event = Webhook(ci.secret).verify(d["body"], d["headers"])  # raises on a bad signature
        assert event["type"] == "question.answered"
        assert event["data"]["id"] == created["id"] and event["data"]["answers"]["decision"] == "approve"
        assert event["data"]["metadata"] == {"pr": 42}
    with pytest.raises(Exception, match="signature"):
        Webhook(create_token(stack, "other-secret").secret).verify(deliveries[0]["body"], deliveries[0]["headers"])
    hook = stack.wait_for(
        "the delivery to be recorded",
        lambda: (h := get(stack, ci, f"questions/{created['id']}").json()["webhook"])["status"] == "delivered" and h,
    )
    assert hook["attempts"] == 3 and hook["last_status"] == 200
    assert hook["last_error"] is None  # the earlier attempts' 500 is not the delivered webhook's error


def test_a_webhook_failing_every_attempt_is_recorded_failed(stack: SlackStack, ci: Token, hooks: Receiver) -> None:
    hooks.scripts["down"] = [503]
    created = ask(stack, ci, "Page the on-call?", callback_url=hooks.url("down"))
    assert click_submit(stack, created, "reject", "U0BOB").status_code == 200
    hook = stack.wait_for(
        "the delivery to fail",
        lambda: (h := get(stack, ci, f"questions/{created['id']}").json()["webhook"]) and h["status"] == "failed" and h,
        timeout=30,
    )
    assert hook["attempts"] == 3 and "503" in hook["last_error"]
    assert len(hooks.deliveries("down")) == 3
    shown = subprocess.run(
        [str(PARLEY), "runs", "show", created["id"]], env=stack.env(), capture_output=True, text=True, check=True
    )
    assert "webhook failed" in shown.stdout  # in the run's history, as admins see it


def test_cancel_locks_the_message_and_sends_the_cancelled_webhook(
    stack: SlackStack, ci: Token, hooks: Receiver
) -> None:
    created = ask(stack, ci, "Drop the table?", callback_url=hooks.url("cancelled"))
    posted = stack.ws.message(CHANNEL, created["message_ts"])
    assert stack.http is not None
    resp = stack.http.post(f"/api/v1/questions/{created['id']}/cancel", headers=ci.auth)
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    stack.wait_for(  # a worker locks it (`cancel_effects`), as for every cancel
        "the message to be locked", lambda: "Cancelled" in json.dumps(stack.ws.message(CHANNEL, created["message_ts"]))
    )
    again = stack.http.post(f"/api/v1/questions/{created['id']}/cancel", headers=ci.auth)
    assert again.status_code == 409 and again.headers["content-type"] == "application/problem+json"
    stack.wait_for("the cancelled webhook", lambda: hooks.deliveries("cancelled"))
    event = Webhook(ci.secret).verify(
        hooks.deliveries("cancelled")[0]["body"], hooks.deliveries("cancelled")[0]["headers"]
    )
    assert event["type"] == "question.cancelled"
    mark = stack.mark()
    assert click_submit(stack, created, "approve", "U0BOB", posted).status_code == 200  # a click from a stale view
    stack.wait_ephemeral("U0BOB", lambda text: "cancel" in text.lower(), since=mark)


def test_parley_runs_cancel_with_only_redis_locks_the_message_and_sends_the_webhook(
    stack: SlackStack, ci: Token, hooks: Receiver
) -> None:
    created = ask(stack, ci, "Rebuild the index?", callback_url=hooks.url("cli-cancel"))
    ts = created["message_ts"]
    only_redis = {"REDIS_URL": stack.redis_url, "PYTHONPATH": stack.env()["PYTHONPATH"]}  # no Slack token
    done = subprocess.run(
        [str(PARLEY), "runs", "cancel", created["id"]], env=only_redis, capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"run {created['id']} is cancelled"), done.stderr
    update = stack.wait_call("chat.update", lambda c: c["args"].get("ts") == ts and "Cancelled" in str(c["args"]))
    assert update["args"]["channel"] == CHANNEL
    locked = stack.ws.message(CHANNEL, ts)
    assert locked is not None and not [b for b in locked["blocks"] if b["type"] == "actions"]  # no buttons left
    stack.wait_for("the cancelled webhook", lambda: hooks.deliveries("cli-cancel"))
    [delivery] = hooks.deliveries("cli-cancel")
    event = Webhook(ci.secret).verify(delivery["body"], delivery["headers"])
    assert event["type"] == "question.cancelled" and event["data"]["status"] == "cancelled"
    assert stack.wait_for(
        "the webhook recorded delivered",
        lambda: (get(stack, ci, f"questions/{created['id']}").json().get("webhook") or {}).get("status") == "delivered",
    )


def test_idempotency_key(stack: SlackStack, ci: Token) -> None:
    body = {"request": approval("Restart the cache?"), "channel": CHANNEL}
    first = post(stack, ci, body, **{"Idempotency-Key": "restart-1"})
    second = post(stack, ci, body, **{"Idempotency-Key": "restart-1"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert len([m for m in stack.ws.messages(CHANNEL) if "Restart the cache?" in json.dumps(m)]) == 1
    other = post(stack, ci, {**body, "metadata": {"x": 1}}, **{"Idempotency-Key": "restart-1"})
    assert other.status_code == 409 and other.headers["content-type"] == "application/problem+json"


def test_errors_are_problems_with_the_right_status(stack: SlackStack, ci: Token) -> None:
    assert stack.http is not None
    none = stack.http.get("/api/v1/questions")
    assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer"
    wrong = stack.http.get("/api/v1/questions", headers={"Authorization": "Bearer pk_nope"})
    assert wrong.status_code == 401 and wrong.headers["content-type"] == "application/problem+json"
    auditor = create_token(stack, "auditor", "admin")
    forbidden = post(stack, auditor, {"request": approval("Nope?"), "channel": CHANNEL})
    assert forbidden.status_code == 403
    bad = post(
        stack,
        ci,
        {"request": {"reason": "", "items": [{"id": "x", "text": "X", "type": "select"}]}, "channel": CHANNEL},
    )
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    locs = [e["loc"] for e in bad.json()["errors"]]
    assert ["request", "reason"] in locs and ["request", "items", 0] in locs, locs
    both = post(stack, ci, {"request": approval("Where?"), "channel": CHANNEL, "user": "U0BOB"})
    assert both.status_code == 422
    private = post(
        stack, ci, {"request": approval("Call home?"), "channel": CHANNEL, "callback_url": "http://10.1.2.3/hook"}
    )
    assert private.status_code == 422 and "callback_url" in private.text
    ftp = post(stack, ci, {"request": approval("Call home?"), "channel": CHANNEL, "callback_url": "ftp://127.0.0.1/x"})
    assert ftp.status_code == 422
    assert get(stack, ci, "questions/rNoSuchQuestion").status_code == 404
    assert get(stack, ci, "questions/x", wait=61).status_code in (404, 422)


def test_a_token_sees_only_its_own_questions_and_an_admin_sees_all(stack: SlackStack, ci: Token) -> None:
    mine = ask(stack, ci, "Archive the logs?")
    other = create_token(stack, "other-team")
    assert get(stack, other, f"questions/{mine['id']}").status_code == 404
    assert stack.http is not None
    assert stack.http.post(f"/api/v1/questions/{mine['id']}/cancel", headers=other.auth).status_code == 404
    assert mine["id"] not in [q["id"] for q in get(stack, other, "questions").json()["questions"]]
    listed = get(stack, ci, "questions", status="waiting", limit=1).json()
    assert len(listed["questions"]) == 1 and listed["next_cursor"]
    rest = get(stack, ci, "questions", status="waiting", limit=100, cursor=listed["next_cursor"]).json()
    assert listed["questions"][0]["id"] not in [q["id"] for q in rest["questions"]]
    boss = create_token(stack, "boss", "ask", "admin")
    assert get(stack, boss, f"questions/{mine['id']}").json()["origin"] == "ci-bot"
    assert len(get(stack, ci, "questions", status="waiting", limit=0).json()["questions"]) == 1  # kept within 1..100
    assert [get(stack, ci, "questions", limit=bad).status_code for bad in ("-1", "1e3", " 5")] == [422] * 3


def test_confirm_compares_the_facts(stack: SlackStack, ci: Token) -> None:
    facts = {"service": "api", "version": "v1.4.2"}
    created = ask(stack, ci, "Deploy?", context=facts)
    assert "v1.4.2" in json.dumps(stack.ws.message(CHANNEL, created["message_ts"]))
    assert stack.http is not None
    same = stack.http.post(f"/api/v1/questions/{created['id']}/confirm", json={"context": facts}, headers=ci.auth)
    assert same.status_code == 200 and same.json()["unchanged"] is True
    moved = {"service": "api", "version": "v1.4.3"}
    changed = stack.http.post(f"/api/v1/questions/{created['id']}/confirm", json={"context": moved}, headers=ci.auth)
    assert changed.status_code == 409
    assert changed.json()["changes"] == [{"field": "version", "kind": "changed", "old": "v1.4.2", "new": "v1.4.3"}]


def test_over_the_rate_limit_is_429_with_retry_after(stack: SlackStack) -> None:
    busy = create_token(stack, "busy", rate_limit=RATE_LIMIT)
    statuses = [get(stack, busy, "questions").status_code for _ in range(RATE_LIMIT + 1)]
    assert statuses[:RATE_LIMIT] == [200] * RATE_LIMIT and statuses[-1] == 429
    last = get(stack, busy, "questions")
    assert last.status_code == 429 and 1 <= int(last.headers["retry-after"]) <= 60


def test_a_token_with_as_many_questions_open_as_it_may_is_refused_until_one_closes(
    stack: SlackStack, ci: Token
) -> None:
    looping = create_token(stack, "looping", open_questions=3)
    asked = [ask(stack, looping, f"Loop {n}?") for n in range(2)]
    keyed = post(stack, looping, {"request": approval("Loop 2?"), "channel": CHANNEL}, **{"Idempotency-Key": "loop-2"})
    assert keyed.status_code == 201
    posts = len(stack.ws.calls("chat.postMessage"))
    refused = post(stack, looping, {"request": approval("Loop 3?"), "channel": CHANNEL})
    assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["title"] == "Too many open questions" and (problem["open_questions"], problem["limit"]) == (3, 3)
    assert "retry-after" not in refused.headers and "looping has 3 questions open" in problem["detail"]
    assert len(stack.ws.calls("chat.postMessage")) == posts  # nothing was asked
    again = post(stack, looping, {"request": approval("Loop 2?"), "channel": CHANNEL}, **{"Idempotency-Key": "loop-2"})
    assert again.status_code == 200 and again.json()["id"] == keyed.json()["id"]  # a retry gets its question
    assert len(get(stack, looping, "questions").json()["questions"]) == 3
    ask(stack, ci, "Another token asks?")  # the cap is the token's own
    assert stack.http is not None
    cancelled = stack.http.post(f"/api/v1/questions/{asked[0]['id']}/cancel", headers=looping.auth)
    assert cancelled.status_code == 200
    ask(stack, looping, "Loop 3, once one closed?")
    assert post(stack, looping, {"request": approval("Loop 4?"), "channel": CHANNEL}).status_code == 429
    listed = subprocess.run([str(PARLEY), "tokens", "list"], env=stack.env(), capture_output=True, text=True)
    assert "open questions: 3" in next(line for line in listed.stdout.splitlines() if line.startswith("looping "))


def test_openapi_document_is_served(stack: SlackStack) -> None:
    assert stack.http is not None
    doc = stack.http.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.1") and "/questions/{id}" in doc["paths"]


def test_tokens_list_and_revoke(stack: SlackStack, tmp_path: Path) -> None:
    gone = create_token(stack, "short-lived")
    listed = subprocess.run(
        [str(PARLEY), "tokens", "list"], env=stack.env(), capture_output=True, text=True, check=True
    )
    assert "short-lived" in listed.stdout and gone.token not in listed.stdout
    subprocess.run([str(PARLEY), "tokens", "revoke", "short-lived"], env=stack.env(), check=True, capture_output=True)
    assert get(stack, gone, "questions").status_code == 401


def test_python_client_ask_submit_wait(stack: SlackStack, ci: Token) -> None:
    client = Parley(f"http://127.0.0.1:{stack.port}", ci.token)
    got: dict[str, Any] = {}

    def ask_in_background() -> None:
        got["answers"] = client.ask(approval("Use the client?"), channel=CHANNEL, timeout=30)

    asker = threading.Thread(target=ask_in_background)
    asker.start()
    message = stack.wait_for(
        "the client's question",
        lambda: next((m for m in stack.ws.messages(CHANNEL) if "Use the client?" in json.dumps(m)), None),
    )
    created = {"channel": CHANNEL, "message_ts": message["ts"]}
    stack.wait_for("the question to be open", lambda: "Submit" in json.dumps(stack.ws.message(CHANNEL, message["ts"])))
    time.sleep(0.3)
    assert click_submit(stack, created, "approve", "U0BOB").status_code == 200
    asker.join(30)
    assert got["answers"] == {"decision": "approve", "note": None}
    cancelled = client.submit(approval("Cancel via client?"), channel=CHANNEL)
    client.cancel(cancelled)
    with pytest.raises(QuestionCancelledError):
        client.wait(cancelled, timeout=5)
    expiring = client.submit(approval("Expire soon?", expires_in=1), channel=CHANNEL)
    with pytest.raises(QuestionExpiredError):
        client.wait(expiring, timeout=20)
    with pytest.raises(QuestionTimeoutError):
        client.wait(client.submit(approval("Nobody answers?"), channel=CHANNEL), timeout=1)
    with pytest.raises(ParleyAPIError) as refused:
        client.submit({"reason": "no items"}, channel=CHANNEL)
    assert refused.value.status == 422


def test_asked_in_a_thread_it_names(stack: SlackStack, ci: Token) -> None:
    root = stack.ws.post_message(CHANNEL, "release 9 is ready")
    created = ask(stack, ci, "Tag release 9?", thread_ts=root["ts"])
    assert created["thread_ts"] == root["ts"]
    assert any("Tag release 9?" in json.dumps(m) for m in stack.ws.thread(CHANNEL, root["ts"]))
    assert click_submit(stack, created, "approve", "U0BOB").status_code == 200
    assert get(stack, ci, f"questions/{created['id']}", wait=20).json()["status"] == "answered"


def test_answered_in_the_form(stack: SlackStack, ci: Token) -> None:
    created = ask(stack, ci, "Approve in a form?")
    question = stack.ws.message(CHANNEL, created["message_ts"])
    assert question is not None
    block, button = find_element(question["blocks"], "parley_open_form")
    mark = stack.mark()
    trigger = stack.ws.issue_trigger("U0CAROL")
    opener = block_actions_payload(
        user="U0CAROL", message=question, channel=CHANNEL, action=button_action(block, button), trigger=trigger
    )
    assert stack.interact(opener).status_code == 200
    stack.wait_call("views.open", since=mark)
    [view] = stack.ws.open_views("U0CAROL")
    state = form_state(view["blocks"], {"Decision": "reject", "Note": "not today"})
    resp = stack.interact(view_submission_payload(user="U0CAROL", view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == ""
    body = get(stack, ci, f"questions/{created['id']}", wait=20).json()
    assert body["answers"] == {"decision": "reject", "note": "not today"} and body["answered_by"] == "U0CAROL"


def test_a_new_token_under_a_revoked_tokens_name_reads_none_of_its_questions(
    stack: SlackStack, hooks: Receiver
) -> None:
    first = create_token(stack, "reused-name")
    created = ask(stack, first, "Rotate the keys?", callback_url=hooks.url("reused-name"))
    revoke_token(stack, "reused-name")
    second = create_token(stack, "reused-name")  # the same name, another token
    assert get(stack, second, f"questions/{created['id']}").status_code == 404
    assert created["id"] not in [q["id"] for q in get(stack, second, "questions").json()["questions"]]
    with Parley(f"http://127.0.0.1:{stack.port}", second.token) as client, pytest.raises(ParleyAPIError) as caught:
        client.cancel(created["id"])
    assert caught.value.status == 404
    boss = create_token(stack, "reused-name-admin", "ask", "admin")
    assert stack.http is not None
    assert stack.http.post(f"/api/v1/questions/{created['id']}/cancel", headers=boss.auth).status_code == 200
    hook = stack.wait_for(
        "the delivery to fail",
        lambda: (
            (h := get(stack, boss, f"questions/{created['id']}").json()["webhook"]) and h["status"] == "failed" and h
        ),
        timeout=30,
    )
    assert "revoked" in hook["last_error"] and hooks.deliveries("reused-name") == []  # never signed by the new one


def test_more_than_fifty_assignees_is_refused_and_each_person_dmed_counts_as_a_request(stack: SlackStack) -> None:
    fan = create_token(stack, "fan-out", rate_limit=RATE_LIMIT)
    mark = stack.mark()
    people = [f"U{n:04d}X" for n in range(300)]
    many = post(stack, fan, {"request": approval("All of you?", assignees=people), "channel": CHANNEL})
    assert many.status_code == 422 and many.headers["content-type"] == "application/problem+json"
    assert "at most 50 ids" in many.text and many.json()["errors"][0]["loc"] == ["request"]
    assert stack.calls("chat.postMessage", since=mark) == []
    few = people[: RATE_LIMIT - 3]  # with the refused post, this one and the next request: exactly the limit
    assert post(stack, fan, {"request": approval("Nine of you?", assignees=few), "channel": CHANNEL}).status_code == 201
    assert get(stack, fan, "questions").status_code == 200
    over = get(stack, fan, "questions")
    assert over.status_code == 429 and 1 <= int(over.headers["retry-after"]) <= 60


def test_failed_tokens_from_one_address_are_refused_with_429_after_the_limit(stack: SlackStack, ci: Token) -> None:
    base = f"http://127.0.0.1:{stack.port}"
    with from_address("127.0.0.2", base) as guesser:
        guesses = [
            guesser.get("/api/v1/questions", headers={"Authorization": f"Bearer pk_guess-{n}"})
            for n in range(AUTH_FAILURES + 1)
        ]
        assert [r.status_code for r in guesses] == [401] * AUTH_FAILURES + [429]
        refused = guesses[-1]
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["status"] == 429 and "failed authentications" in refused.json()["detail"]
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert guesser.get("/api/v1/questions", headers=ci.auth).status_code == 429  # a right guess is refused too
    assert get(stack, ci, "questions").status_code == 200  # other addresses are not


def test_an_idempotency_key_on_a_long_body(stack: SlackStack, ci: Token) -> None:
    """The body's digest is the body's own, not the 2,000-character context's canonical form."""
    reason = "Ship the long release? " + "x" * 2500
    body = {"request": approval(reason), "channel": CHANNEL, "metadata": {"notes": "y" * 1500}}
    first = post(stack, ci, body, **{"Idempotency-Key": "long-1"})
    second = post(stack, ci, body, **{"Idempotency-Key": "long-1"})
    assert (first.status_code, second.status_code) == (201, 200), first.text
    assert first.json()["id"] == second.json()["id"]


def nested(depth: int) -> str:
    """JSON objects nested `depth` deep, written out (`json.dumps` itself gives up past about 1,000)."""
    return '{"a":' * depth + "{}" + "}" * depth


MALFORMED = [
    ("POST", "questions", '{"request": ' + "[" * 5000 + "]" * 5000 + "}", 400),
    ("POST", "questions", None, 400),  # metadata nested 3,000 deep
    ("POST", "questions", None, 422),  # context nested 300 deep, under the size limit
    *[("POST", "questions", url, 422) for url in ("http://127.0.0.1:99999/h", "http://127.0.0.1:abc/h")],
    *[("POST", "questions", url, 422) for url in ("http://[::1/h", "http://[zz]/h")],
    ("GET", "questions/rNoSuch?wait=²", None, 422),
    ("GET", "questions/rNoSuch?wait=" + "9" * 5000, None, 422),
    ("GET", "questions?cursor=nan", None, 422),
    ("GET", "questions?cursor=inf", None, 422),
]


def test_malformed_input_is_a_problem_and_the_connection_is_kept(stack: SlackStack, ci: Token) -> None:
    """Each answer is 400 or 422 problem+json, and one kept-alive connection carries them all."""
    ask_for = approval("Malformed?")
    start = json.dumps({"request": ask_for, "channel": CHANNEL})[:-1]
    bodies = {1: f'{start}, "metadata": {nested(3000)}}}', 2: f'{start}, "context": {nested(300)}}}'}
    assert len(nested(300)) < 2000  # under the context's size limit: refused for its depth
    ports = set()
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.port}", timeout=30, headers=ci.auth) as http:
        for n, (method, path, given, status) in enumerate(MALFORMED):
            if given is not None and given.startswith("http"):
                content = json.dumps({"request": ask_for, "channel": CHANNEL, "callback_url": given})
            else:
                content = bodies.get(n, given)
            resp = http.request(method, f"/api/v1/{path}", content=content)
            assert resp.status_code == status, (n, resp.status_code, resp.text[:300])
            assert resp.headers["content-type"] == "application/problem+json", (n, resp.text[:300])
            assert resp.json()["status"] == status
            ports.add(resp.extensions["network_stream"].get_extra_info("socket").getsockname()[1])
        assert http.get("/api/v1/questions").status_code == 200
    assert len(ports) == 1  # never dropped: every answer came over the first connection
    assert not [m for m in stack.ws.messages(CHANNEL) if "Malformed?" in json.dumps(m)]


@pytest.mark.parametrize(
    "fields",
    [{"expires_in": 10**12}, {"expires_in": 10**400}, {"expires_in": 90 * 86400 + 1}],
    ids=["1e12", "1e400", "90d+1s"],
)
def test_delays_over_90_days_are_refused(stack: SlackStack, ci: Token, fields: dict[str, int]) -> None:
    reason = f"Wait {len(str(fields['expires_in']))} digits of seconds?"
    resp = post(stack, ci, {"request": approval(reason, **fields), "channel": CHANNEL})
    assert resp.status_code == 422 and resp.headers["content-type"] == "application/problem+json", resp.text
    assert [e["loc"] for e in resp.json()["errors"]] == [["request", "expires_in"]]
    late = approval(reason, escalate_after=90 * 86400 + 1, escalate_to=["U0CAROL"])
    assert post(stack, ci, {"request": late, "channel": CHANNEL}).status_code == 422
    assert not [m for m in stack.ws.messages(CHANNEL) if reason in json.dumps(m)]


def test_a_record_written_without_the_bound_or_unreadable_never_breaks_the_listing(
    stack: SlackStack, ci: Token
) -> None:
    """A question asked before `expires_in` was bounded (year 33715) and one whose record is garbled are
    listed, the one with no expiry time and the other as failed and unreadable; the rest as ever."""
    assert stack.redis is not None
    far, garbled, fine = (ask(stack, ci, reason) for reason in ("Far off?", "Garbled?", "Fine?"))
    iid = stack.redis.hget(keys.run(far["id"]), "interrupt")
    assert iid is not None
    stack.redis.hset(keys.interrupt(iid.decode()), "expires_at", repr(1e12 + 1.7e9))  # as 5eca01c stored it
    stack.redis.hset(keys.api_question(garbled["id"]), "request", '{"reason": ')
    boss = create_token(stack, "lister", "ask", "admin")
    for token in (ci, boss):
        listed = get(stack, token, "questions", limit=100)
        assert listed.status_code == 200, listed.text
        shown = {q["id"]: q for q in listed.json()["questions"]}
        assert shown[far["id"]]["status"] == "waiting" and shown[far["id"]]["expires_at"] is None
        assert shown[garbled["id"]]["status"] == "failed" and "cannot read" in shown[garbled["id"]]["error"]
        assert shown[fine["id"]]["status"] == "waiting"
    one = get(stack, ci, f"questions/{garbled['id']}")
    assert one.status_code == 200 and one.json()["status"] == "failed"


def test_an_unexpected_error_is_a_500_problem_and_the_connection_is_kept(stack: SlackStack) -> None:
    """A token record this version cannot read (its scopes garbled) fails the handler unexpectedly."""
    assert stack.redis is not None
    broken = create_token(stack, "garbled")
    stack.redis.hset(keys.api_token(tokens.token_hash(broken.token)), "scopes", "[")
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.port}", timeout=30) as http:
        failed = http.get("/api/v1/questions", headers=broken.auth)
        assert failed.status_code == 500 and failed.headers["content-type"] == "application/problem+json"
        assert failed.json()["status"] == 500 and "Traceback" not in failed.text
        again = http.post("/api/v1/questions", headers=broken.auth, json={"request": approval("Broken?")})
        assert again.status_code == 500 and again.headers["content-type"] == "application/problem+json"
        ports = {r.extensions["network_stream"].get_extra_info("socket").getsockname()[1] for r in (failed, again)}
        assert len(ports) == 1


def test_typed_items_asked_over_the_api_come_back_typed(stack: SlackStack, ci: Token) -> None:
    """A number and a yes/no asked over the API: refused by label in Slack, then returned as JSON numbers and
    booleans by the long-poll."""
    items = [
        {"id": "replicas", "text": "Replicas", "type": "number", "min": 1, "max": 10, "integer": True},
        {"id": "go", "text": "Go ahead?", "type": "boolean"},
    ]
    resp = post(stack, ci, {"request": {"reason": "Scale checkout?", "items": items}, "channel": CHANNEL})
    assert resp.status_code == 201, resp.text
    created = resp.json()
    message = stack.ws.message(CHANNEL, created["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], "parley_submit")

    def submit(fills: dict[str, Any]) -> None:
        state = form_state(message["blocks"], fills)
        payload = block_actions_payload(
            user="U0CAROL", message=message, channel=CHANNEL, action=button_action(block, button), state_values=state
        )
        assert stack.interact(payload).status_code == 200

    mark = stack.mark()
    submit({"Replicas": "12", "Go ahead?": "Yes"})
    told = stack.wait_call("chat.postEphemeral", since=mark)
    assert "*Replicas*: at most 10" in told["args"]["text"]
    assert get(stack, ci, f"questions/{created['id']}").json()["status"] == "waiting"
    submit({"Replicas": "4", "Go ahead?": "Yes"})
    body = get(stack, ci, f"questions/{created['id']}", wait=20).json()
    assert body["status"] == "answered" and body["answers"] == {"replicas": 4, "go": True}
    assert isinstance(body["answers"]["replicas"], int) and body["answers"]["go"] is True

    bounds = [{"id": "n", "text": "N", "type": "number", "min": 5, "max": 1}]
    bad = post(stack, ci, {"request": {"reason": "Bad?", "items": bounds}, "channel": CHANNEL})
    assert bad.status_code == 422 and "min 5 is greater than max 1" in bad.text
