"""Receipts end to end: a live `parley serve`, a real `parley worker`, the Web API stand-in and Slack's payloads.

Each outcome is read through the API (`GET /questions/{id}/receipt`), the webhook's `data.receipt`
and the Python client, and verified with `parley receipts verify` and with the snippet of
docs/receipts.md. A secret answer is then looked for in every receipt, by value and by digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import Receiver, Token, create_token
from receipt_support import cli, key_files, run_snippet, write
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import SlackStack

from parley.client import Decision, Parley
from workers.receipts import Signer
from workers.receipts.canonical import blocks_digest, digest
from workers.receipts.verify import verify_envelope, verify_text

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
USER = "U0CAROL"
ARGS = {"service": "api", "note": "nightly", "replicas": 3}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Signer, Path, Path]:
    return key_files(tmp_path_factory.mktemp("receipt-keys"))


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, keys: tuple[Signer, Path, Path], hooks: Receiver
) -> Iterator[SlackStack]:
    env = {
        "PARLEY_RECEIPT_KEY": str(keys[1]),
        "PARLEY_SECRET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "PARLEY_WEBHOOK_ALLOW": "127.0.0.1:*",
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    yield from SlackStack.running(redis_url, tmp_path_factory.mktemp("receipts"), workers=1, extra_env=env)


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "receipts")


def api(stack: SlackStack, token: Token) -> httpx.Client:
    assert stack.http is not None
    return httpx.Client(base_url=str(stack.http.base_url) + "/api/v1", headers=token.auth, timeout=40)


def click(stack: SlackStack, created: dict[str, Any], action_id: str) -> None:
    message = stack.ws.message(created["channel"], created["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], action_id)
    payload = block_actions_payload(
        user=USER,
        message=message,
        channel=created["channel"],
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(USER),
    )
    assert stack.interact(payload).status_code == 200


def form(stack: SlackStack, created: dict[str, Any], action_id: str, fills: dict[str, str]) -> None:
    """Click `action_id` on the question's message, then submit the modal it opens with `fills`."""
    mark = stack.mark()
    click(stack, created, action_id)
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    view = stack.ws.open_views(USER)[-1]
    state = form_state(view["blocks"], fills)
    resp = stack.interact(view_submission_payload(user=USER, view=view, state_values=state))
    assert resp.status_code == 200 and not resp.content, resp.text


def receipt_of(client: httpx.Client, qid: str, stack: SlackStack) -> dict[str, Any]:
    def closed() -> bool:  # a long-poll wakes on each close, and a quorum's question closes with its run
        return client.get(f"/questions/{qid}", params={"wait": 5}).json()["status"] != "waiting"

    stack.wait_for("the question to close", closed, timeout=30)
    got = stack.wait_for("the receipt", lambda: (r := client.get(f"/questions/{qid}/receipt")).status_code == 200 and r)
    body: dict[str, Any] = got.json()
    return body


def hooked(stack: SlackStack, hooks: Receiver, name: str) -> dict[str, Any]:
    [delivery] = stack.wait_for("the webhook", lambda: hooks.deliveries(name))
    receipt: dict[str, Any] = json.loads(delivery["body"])["data"]["receipt"]
    return receipt


def verified_everywhere(receipt: dict[str, Any], keys: tuple[Signer, Path, Path], tmp_path: Path) -> dict[str, Any]:
    """Check `receipt` with the CLI and the documented snippet; its predicate."""
    path = write(tmp_path / f"{receipt['question_id']}-{receipt['sequence']}.json", receipt)
    done = cli("receipts", "verify", str(path), "--keys", str(keys[2]))
    assert done.returncode == 0 and done.stdout.startswith("ok: "), (done.stdout, done.stderr)
    snippet = run_snippet(path, keys[2])
    assert snippet.returncode == 0 and snippet.stdout.startswith("verified: "), snippet.stderr
    return verify_text(json.dumps(receipt), ring_of(keys)).predicate


def posted_blocks(stack: SlackStack, iid: str) -> list[dict[str, Any]]:
    """The blocks of the chat.postMessage that posted question `iid`, as the stand-in received them."""
    for call in stack.calls("chat.postMessage"):
        found = call["args"].get("blocks") or []
        found = json.loads(found) if isinstance(found, str) else found
        if any(iid in str(b.get("block_id", "")) for b in found):
            return list(found)
    raise AssertionError(f"question {iid} was never posted")


def ring_of(keys: tuple[Signer, Path, Path]) -> Any:
    from workers.receipts import KeyRing

    return KeyRing([keys[0].public])


@pytest.mark.parametrize(
    ("how", "outcome", "approved_args"),
    [
        ("approve", "approved", ARGS),
        ("edit", "edited", {**ARGS, "note": "weekly"}),
        ("reject", "rejected", ARGS),
    ],
)
def test_each_approval_outcome_has_one_receipt_through_the_api_the_webhook_and_the_client(
    stack: SlackStack,
    token: Token,
    hooks: Receiver,
    keys: tuple[Signer, Path, Path],
    tmp_path: Path,
    how: str,
    outcome: str,
    approved_args: dict[str, Any],
) -> None:
    body = {
        "channel": CHANNEL,
        "action": "Deploy api",
        "args": ARGS,
        "editable": ["note"],
        "assignees": [USER],
        "callback_url": hooks.url(f"approval-{how}"),
    }
    with api(stack, token) as client:
        created = client.post("/approvals", json=body).json()
        if how == "approve":
            click(stack, created, "parley_approve")
        elif how == "edit":
            form(stack, created, "parley_open_form", {"Note": "weekly"})
        else:
            form(stack, created, "parley_reject", {"Reason": "not during the freeze"})
        from_api = receipt_of(client, created["id"], stack)
    from_hook = hooked(stack, hooks, f"approval-{how}")
    with Parley(str(stack.http.base_url), token.token) as python:  # type: ignore[union-attr]
        ended = python.outcome(created["id"], timeout=20)
    assert from_api == from_hook == ended.receipt  # one receipt, whichever way it is read
    assert from_api["run_id"] == created["id"]
    shown = posted_blocks(stack, from_api["question_id"])  # what the Web API received, as Slack would
    assert from_api and verify_text(json.dumps(from_api), ring_of(keys)).predicate["question"]["shown_digest"] == {
        "sha256": blocks_digest(shown)
    }
    assert ended.decision is not None and ended.decision.receipt == from_api
    p = verified_everywhere(from_api, keys, tmp_path)
    assert p["outcome"] == outcome and p["who"]["user"] == USER and p["question"]["origin"] == "api"
    assert p["approval"]["action"] == "Deploy api"
    assert p["approval"]["arguments_digest"] == digest(approved_args)
    assert p["approval"]["proposed_digest"] == digest(ARGS)


def test_the_python_clients_approve_returns_the_decision_with_its_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path]
) -> None:
    decisions: list[Decision] = []
    with Parley(str(stack.http.base_url), token.token) as python:  # type: ignore[union-attr]
        asking = threading.Thread(
            target=lambda: decisions.append(
                python.approve("Restart api", {"service": "api"}, channel=CHANNEL, assignees=[USER], timeout=30)
            )
        )
        asking.start()

        def posted() -> dict[str, Any] | None:
            for m in stack.ws.messages(CHANNEL):
                if "Restart api" in json.dumps(m.get("blocks")) and find_element(m["blocks"], "parley_approve"):
                    return {"channel": CHANNEL, "message_ts": m["ts"]}
            return None

        click(stack, stack.wait_for("the approval to be posted", posted), "parley_approve")
        asking.join(timeout=40)
    [decision] = decisions
    assert decision.approved and decision.receipt is not None
    verified = verify_envelope(decision.receipt["envelope"], ring_of(keys), decision.receipt["digest"]["sha256"])
    assert verified.predicate["approval"]["arguments_digest"] == digest({"service": "api"})


def test_a_cancelled_and_an_expired_question_each_have_a_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    request = {"reason": "Ship it?", "items": [{"id": "ok", "text": "OK", "type": "boolean"}]}
    with api(stack, token) as client:
        cancelled = client.post("/questions", json={"request": request, "channel": CHANNEL}).json()
        assert client.get(f"/questions/{cancelled['id']}/receipt").status_code == 409  # still waiting
        assert client.post(f"/questions/{cancelled['id']}/cancel").status_code == 200
        expiring = client.post("/questions", json={"request": {**request, "expires_in": 1}, "channel": CHANNEL}).json()
        gone = receipt_of(client, cancelled["id"], stack)
        lapsed = receipt_of(client, expiring["id"], stack)
    p = verified_everywhere(gone, keys, tmp_path)
    assert (p["outcome"], p["answers"], p["who"]["user"], p["who"]["token"]) == ("cancelled", [], "receipts", True)
    assert "API token" in p["who"]["attests"]
    q = verified_everywhere(lapsed, keys, tmp_path)
    assert (q["outcome"], q["who"]["user"]) == ("expired", "parley")


def test_a_secret_answer_leaves_no_trace_in_any_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    secret = "hunter2-" + base64.b16encode(b"receipts").decode()
    items = [
        {"id": "token", "text": "Deploy token", "type": "secret"},
        {"id": "env", "text": "Environment", "type": "free_text"},
    ]
    with api(stack, token) as client:
        created = client.post("/questions", json={"request": {"reason": "Token?", "items": items}, "channel": CHANNEL})
        question = created.json()
        form(stack, question, "parley_open_form", {"Deploy token": secret, "Environment": "prod"})
        found = receipt_of(client, question["id"], stack)
    p = verified_everywhere(found, keys, tmp_path)
    assert p["answers"] == [
        {"item": "token", "secret": True, "answered": True},
        {"item": "env", "value": "prod"},
    ]
    raw = secret.encode()
    traces = {
        secret,
        hashlib.sha256(raw).hexdigest(),
        hashlib.sha512(raw).hexdigest(),
        hashlib.sha1(raw).hexdigest(),
        hashlib.md5(raw).hexdigest(),
        base64.b64encode(hashlib.sha256(raw).digest()).decode(),
        base64.b64encode(raw).decode(),
        digest(secret)["sha256"],
    }
    whole = json.dumps(found) + base64.b64decode(found["envelope"]["payload"]).decode()
    assert [t for t in traces if t in whole] == []
    audit = cli("audit", "export", env={"REDIS_URL": stack.redis_url})
    assert audit.returncode == 0 and not [t for t in traces if t in audit.stdout]
    for line in audit.stdout.splitlines():
        payload = base64.b64decode(json.loads(line)["envelope"]["payload"]).decode()
        assert not [t for t in traces if t in payload]


def test_the_keys_endpoint_publishes_the_signing_key_and_others_see_no_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path]
) -> None:
    other = create_token(stack, "someone-else")
    request = {"reason": "Ok?", "items": [{"id": "ok", "text": "OK", "type": "boolean"}]}
    with api(stack, token) as client:
        published = client.get("/receipts/keys").json()
        created = client.post("/questions", json={"request": request, "channel": CHANNEL}).json()
        client.post(f"/questions/{created['id']}/cancel")
        receipt_of(client, created["id"], stack)
    assert published["current"] == keys[0].keyid
    assert [k["keyid"] for k in published["keys"]] == [keys[0].keyid]
    with api(stack, other) as client:
        assert client.get(f"/questions/{created['id']}/receipt").status_code == 404


def test_each_persons_answer_to_a_quorum_question_has_its_own_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    people = [USER, "U0DAVE"]
    request = {
        "reason": "Sign off the release?",
        "items": [
            {"id": "ship", "text": "Ship", "type": "select", "options": ["yes", "no"]},
            {"id": "count", "text": "How many", "type": "number", "integer": True},
        ],
        "assignees": people,
    }
    with api(stack, token) as client:
        created = client.post("/questions", json={"request": request, "channel": CHANNEL, "quorum": 2}).json()
        message = stack.ws.message(created["channel"], created["message_ts"])
        assert message is not None
        block, button = find_element(message["blocks"], "parley_submit")
        for user in people:
            payload = block_actions_payload(
                user=user,
                message=message,
                channel=CHANNEL,
                action=button_action(block, button),
                state_values=form_state(message["blocks"], {"Ship": "yes", "How many": "3"}),
            )
            assert stack.interact(payload).status_code == 200
        body = receipt_of(client, created["id"], stack)
    assert body["question_id"] == created["id"] and len(body["receipts"]) == 2
    said = {}
    for line in body["receipts"]:
        p = verified_everywhere(line, keys, tmp_path)
        said[p["who"]["user"]] = (p["outcome"], p["answers"], p["question"]["group"] is not None)
    stated = [{"item": "ship", "value": "yes"}, {"item": "count", "value": 3}]
    assert said == {u: ("answered", stated, True) for u in people}
    both = write(tmp_path / "both.json", body)
    done = cli("receipts", "verify", str(both), "--keys", str(keys[2]))
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
