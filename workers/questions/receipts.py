"""A question's signed receipt(s) as the API serves them, to the callers who may see the question."""

from __future__ import annotations

from typing import Any

from workers.questions.exceptions import QuestionConflict, QuestionNotFound
from workers.questions.models import QuestionStatus
from workers.questions.service import Caller, QuestionService
from workers.store.receipts import Receipt, ReceiptBook

NO_KEY = "this question has no receipt: receipts are signed where PARLEY_RECEIPT_KEY is set"


def body_of(found: list[Receipt], question_id: str, group: bool) -> dict[str, Any]:
    """One receipt as its own line; the receipts of each person's answer (`ask_each`) as a list."""
    if len(found) == 1 and not group:
        return found[0].line()
    return {"question_id": question_id, "receipts": [r.line() for r in found]}


def question_receipt(service: QuestionService, caller: Caller, question_id: str) -> dict[str, Any]:
    """`GET /api/v1/questions/{id}/receipt`: written now if it is due and this process can sign.

    The question's visibility is `get`'s: another token's question reads as no such question.
    """
    view = service.get(caller, question_id)
    if view.status is QuestionStatus.WAITING:
        raise QuestionConflict("no receipt yet: the question is still waiting for an answer")
    book: ReceiptBook = service.runtime.receipts
    found = book.of_run(question_id)
    if found:
        group = len(book.questions_of(question_id)) > 1 or view.answers_by is not None
        return body_of(found, question_id, group)
    if any(book.pending(iid) for iid in book.questions_of(question_id)):
        conflict = QuestionConflict("the receipt is being written by a worker; ask again in a moment")
        conflict.headers["Retry-After"] = "1"
        raise conflict
    raise QuestionNotFound(NO_KEY)


def published_keys(service: QuestionService) -> dict[str, Any]:
    """`GET /api/v1/receipts/keys`: every public key that verifies this Parley's receipts."""
    book: ReceiptBook = service.runtime.receipts
    current = book.signer.keyid if book.signer is not None else None
    return {"current": current, "keys": book.keyring().listing()}
