"""The API's receipt endpoints: a question's signed receipts, and their verifying keys."""

from __future__ import annotations

from typing import Any

from workers.questions.exceptions import QuestionConflict, QuestionNotFound
from workers.questions.models import QuestionStatus, QuestionView
from workers.questions.receipt_views import receipt_body
from workers.questions.service import Caller, QuestionService
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.receipts import ReceiptBook

NO_KEY = "this question has no receipt: receipts are signed where PARLEY_RECEIPT_KEY is set"
UNCONFIRMED = "the receipt is being written: it waits for a Redis replica to hold it; ask again in a moment"


def question_receipt(service: QuestionService, caller: Caller, question_id: str) -> dict[str, Any]:
    """`GET /api/v1/questions/{id}/receipt`, written now if due and signable here.

    The question's visibility is `get`'s. Another token's question reads as no such question.
    """
    view = service.get(caller, question_id)
    if view.status is QuestionStatus.WAITING:
        raise QuestionConflict("no receipt yet: the question is still waiting for an answer")
    book: ReceiptBook = service.runtime.receipts
    try:
        body = receipt_body(book, question_id)
    except ReceiptUnconfirmed:
        conflict = QuestionConflict(UNCONFIRMED)
        conflict.headers["Retry-After"] = "1"
        raise conflict from None
    if body is not None:
        return body
    if book.signing():  # every closed question gets one where a key is set: it is on its way
        conflict = QuestionConflict("the receipt is being written by a worker; ask again in a moment")
        conflict.headers["Retry-After"] = "1"
        raise conflict
    raise QuestionNotFound(NO_KEY)


def published_keys(service: QuestionService) -> dict[str, Any]:
    """`GET /api/v1/receipts/keys`: the public keys this Parley was configured to trust.

    `unconfigured` names keys recorded as signing here that are not among them: a process with
    another key, or a key added to Redis by hand. They are named, never published.
    """
    book: ReceiptBook = service.runtime.receipts
    current = book.signer.keyid if book.signer is not None else None
    ring = book.keyring()
    listed = ring.listing()
    known = {k["keyid"] for k in listed}
    return {"current": current, "keys": listed, "unconfigured": [k for k in book.recorded_keyids() if k not in known]}


def with_view_receipt(service: QuestionService, view: QuestionView) -> QuestionView:
    """A closed question's view with its receipt, for MCP's structured results.

    A waiting question is returned as it is.
    """
    if view.status is QuestionStatus.WAITING or view.receipt is not None:
        return view
    try:
        body = receipt_body(service.runtime.receipts, view.id)
    except ReceiptUnconfirmed:  # not yet on a replica: a later call carries it
        return view
    return view if body is None else view.model_copy(update={"receipt": body})
