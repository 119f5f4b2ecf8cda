"""Receipts on Temporal, end to end: a real `temporal server start-dev`, the tests' Temporal worker,
a live `parley serve` and `parley worker`s signing with PARLEY_RECEIPT_KEY, and Slack's own payloads.

A workflow's `ask` and `approve` return the signed receipt in their result. Each is checked with
`parley receipts verify` and with the plain-Python snippet of docs/receipts.md, and each workflow's
history is replayed on today's code, so carrying the receipt keeps the workflow deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_support import Token, create_token
from receipt_support import cli, key_files, ring, run_snippet, write
from slack_stack import SlackStack
from stacks import Stacks
from temporal_steps import click, click_submit, modal, questions_of, replayed, result, start, submit_modal
from temporal_support import SHIP_REQUEST, TemporalDev, TemporalWorker, stack_env

from workers.receipts import Signer
from workers.receipts.canonical import digest
from workers.receipts.verify import verify_text

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
CAROL, DAVE = "U0CAROL", "U0DAVE"
ARGS = {"order": "A-21", "amount": 120}
Keys = tuple[Signer, Path, Path]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return key_files(tmp_path_factory.mktemp("receipt-keys"))


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDev]:
    yield from TemporalDev.running(tmp_path_factory.mktemp("temporal"))


@pytest.fixture(scope="module")
def stack(redis_url: str, temporal: TemporalDev, keys: Keys, stacks: Stacks) -> SlackStack:
    return stacks(redis_url=redis_url, extra_env={**stack_env(temporal), "PARLEY_RECEIPT_KEY": str(keys[1])})


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "workflows", temporal=("*Workflow-*",))


@pytest.fixture(scope="module")
def worker(stack: SlackStack, temporal: TemporalDev, token: Token) -> Iterator[TemporalWorker]:
    yield from TemporalWorker.for_stack(temporal, stack, token.token)


def verified(receipt: dict[str, Any], keys: Keys, tmp_path: Path) -> dict[str, Any]:
    """Check `receipt` with `parley receipts verify` and the documented snippet; its predicate."""
    path = write(tmp_path / f"{receipt['question_id']}.json", receipt)
    done = cli("receipts", "verify", str(path), "--keys", str(keys[2]))
    assert done.returncode == 0 and done.stdout.startswith("ok: "), (done.stdout, done.stderr)
    snippet = run_snippet(path, keys[2])
    assert snippet.returncode == 0, snippet.stderr
    predicate = verify_text(json.dumps(receipt), ring(keys[0])).predicate
    assert snippet.stdout.strip() == f"verified: {predicate['outcome']} by {predicate['who']['user']}"
    return predicate


def from_api(stack: SlackStack, token: Token, question_id: str) -> dict[str, Any]:
    """The question's receipt as `GET /api/v1/questions/{id}/receipt` gives it."""
    assert stack.http is not None
    resp = stack.http.get(f"/api/v1/questions/{question_id}/receipt", headers=token.auth)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_an_answered_ask_returns_its_signed_receipt_in_the_workflows_outcome(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker, keys: Keys, tmp_path: Path
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "assignees": [CAROL]})
    [question] = questions_of(stack, token, wid)
    assert click_submit(stack, question, {"Ship": "yes", "How many": "12"}, CAROL).status_code == 200
    got = result(temporal, wid)
    assert (got["status"], got["answers"]) == ("answered", {"ship": "yes", "count": 12})
    receipt = got["receipt"]
    assert receipt is not None and receipt == from_api(stack, token, question["id"])
    p = verified(receipt, keys, tmp_path)
    assert (p["outcome"], p["who"]["user"], p["approval"]) == ("answered", CAROL, None)
    assert p["question"]["origin"] == "temporal"
    assert (p["question"]["id"], p["question"]["run_id"]) == (receipt["question_id"], question["id"])
    assert p["answers"] == [{"item": "ship", "value": "yes"}, {"item": "count", "value": 12}]
    replayed(temporal, wid)


@pytest.mark.parametrize(
    ("how", "outcome", "decided", "approved_args"),
    [
        ("approve", "approved", "approve", ARGS),
        ("edit", "edited", "approve", {**ARGS, "amount": 80}),
        ("reject", "rejected", "reject", ARGS),
        ("expire", "expired", None, ARGS),
    ],
)
def test_each_way_an_approval_ends_returns_the_decision_with_its_signed_receipt(
    stack: SlackStack,
    temporal: TemporalDev,
    token: Token,
    worker: TemporalWorker,
    keys: Keys,
    tmp_path: Path,
    how: str,
    outcome: str,
    decided: str | None,
    approved_args: dict[str, Any],
) -> None:
    action = f"Refund {ARGS['order']} ({how})"
    arg = {"action": action, "args": ARGS, "channel": CHANNEL, "expires_in": 1 if how == "expire" else None}
    wid = start(temporal, "ApproveWorkflow", arg)
    if how != "expire":
        [question] = questions_of(stack, token, wid)
    if how == "approve":
        click(stack, question, "parley_approve", DAVE)
    elif how == "edit":
        submit_modal(stack, modal(stack, question, "parley_open_form", DAVE), DAVE, "amount", "80")
    elif how == "reject":
        submit_modal(stack, modal(stack, question, "parley_reject", DAVE), DAVE, "_reason", "over the limit")
    got = result(temporal, wid)
    assert (got["approved"], got["args"]) == (decided == "approve", approved_args)
    receipt = got["receipt"]
    assert receipt is not None, got  # the Decision carries the receipt the outcome's signal brought
    assert receipt == from_api(stack, token, receipt["run_id"])
    p = verified(receipt, keys, tmp_path)
    assert (p["outcome"], p["question"]["origin"], p["question"]["id"]) == (outcome, "temporal", receipt["question_id"])
    assert p["who"]["user"] == ("parley" if how == "expire" else DAVE)
    assert p["approval"] == {
        "action": action,
        "arguments_digest": digest(approved_args),
        "proposed_digest": digest(ARGS),
        "decision": decided,
    }
    replayed(temporal, wid)
