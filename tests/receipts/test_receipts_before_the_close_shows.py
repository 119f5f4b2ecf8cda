"""With the key on `parley serve`, the API shows no close before its receipt exists.

No worker runs here, so nothing else writes receipts: not the resume, not the sweep.
A close the API reports must already have its signed receipt in Redis.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from api_support import Token, create_token
from receipt_support import key_files
from receipt_surfaces import api_client, message_with, press
from slack_stack import SlackStack
from stacks import Stacks

from workers.receipts import Signer
from workers.store.receipts import ReceiptBook

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
USER = "U0CAROL"


def request(reason: str) -> dict[str, object]:
    return {"reason": reason, "items": [{"id": "ok", "text": "Go ahead?", "type": "boolean"}]}


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory, stacks: Stacks) -> SlackStack:
    signer_files: tuple[Signer, Path, Path] = key_files(tmp_path_factory.mktemp("receipt-keys"))
    env = {
        "PARLEY_RECEIPT_KEY": str(signer_files[1]),
        "PARLEY_SECRET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    return stacks(redis_url=redis_url, workers=0, extra_env=env)


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "receipts-first")


def written(stack: SlackStack, run_id: str) -> list[str]:
    """The ids of the question's receipts in Redis, read without writing any."""
    assert stack.redis is not None
    book = ReceiptBook(stack.redis, None, 0.0)
    return [iid for iid in book.questions_of(run_id) if book.get(iid) is not None]


def test_an_answer_the_api_reports_has_its_receipt_already(stack: SlackStack, token: Token) -> None:
    with api_client(stack, token) as client:
        qid = client.post("/questions", json={"request": request("Ship it?"), "channel": CHANNEL}).json()["id"]
        press(stack, message_with(stack, "Ship it?", "parley_submit"), "parley_submit", USER, {"Go ahead?": "Yes"})
        shown = client.get(f"/questions/{qid}", params={"wait": 20}).json()
    assert shown["status"] == "answered"
    assert written(stack, qid), "the API reported the answer before its receipt was written"


def test_a_cancel_the_api_answers_has_its_receipt_already(stack: SlackStack, token: Token) -> None:
    with api_client(stack, token) as client:
        qid = client.post("/questions", json={"request": request("Roll back?"), "channel": CHANNEL}).json()["id"]
        message_with(stack, "Roll back?", "parley_submit")
        cancelled = client.post(f"/questions/{qid}/cancel").json()
    assert cancelled["status"] == "cancelled"
    assert written(stack, qid), "the API reported the cancel before its receipt was written"
