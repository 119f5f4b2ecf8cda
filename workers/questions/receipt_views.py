"""A question's receipts as the API and webhook show them, and the webhook payload."""

from __future__ import annotations

import json
from typing import Any

from workers.receipts.upstream import call_meta
from workers.store.questions import QuestionStore
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.receipts import Receipt, ReceiptBook
from workers.store.records import WebhookState


def body_of(found: list[Receipt], question_id: str, group: bool) -> dict[str, Any]:
    """One receipt as its own line, `ask_each` receipts as a list.

    An `ask_each` question has one receipt per person's answer.
    """
    if len(found) == 1 and not group:
        return found[0].line()
    return {"question_id": question_id, "receipts": [r.line() for r in found]}


def receipt_body(book: ReceiptBook, question_id: str) -> dict[str, Any] | None:
    """The question's receipts, or None without any.

    Due receipts are written now if this process can sign. `ReceiptUnconfirmed` while fewer
    replicas than asked for hold them. None is handed out until then.
    """
    found = book.issued(question_id)
    return body_of(found, question_id, len(book.questions_of(question_id)) > 1) if found else None


def with_receipt(book: ReceiptBook, store: QuestionStore, question_id: str, state: WebhookState) -> WebhookState:
    """The webhook's payload with the question's receipt in `data.receipt`.

    It is written before the first attempt. The webhook worker signs it here when still due. So a
    delivery never waits on a sweep. A payload that has its receipt already is sent as it is. So is
    one for a question without a receipt. `ReceiptUnconfirmed` while no replica holds the receipt
    yet, and the delivery waits for it.
    """
    try:
        payload = json.loads(state.payload)
    except ValueError:
        return state
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, dict) or data.get("receipt") is not None:
        return state
    body = receipt_body(book, question_id)
    if body is None:
        return state
    data["receipt"] = body
    updated = state.model_copy(update={"payload": json.dumps(payload, separators=(",", ":"))})
    store.set_webhook(question_id, updated)
    return updated


def receipt_meta(book: ReceiptBook, question_id: str) -> dict[str, Any] | None:
    """The `_meta` an approved call is forwarded with: receipt and digest.

    None without a receipt. None too while no replica holds it. A failover could lose it, and the
    upstream would keep a receipt the chain no longer has.
    """
    try:
        found = book.issued(question_id)
    except ReceiptUnconfirmed:
        return None
    return call_meta(found[0].line()) if len(found) == 1 else None


def with_signal_receipt(book: ReceiptBook, question_id: str, state: WebhookState) -> WebhookState:
    """A Temporal signal's payload with the question's receipt (`Outcome.receipt`).

    It is added before the first attempt. `ReceiptUnconfirmed` while no replica holds the receipt
    yet, and the signal waits for it.
    """
    try:
        payload = json.loads(state.payload)
    except ValueError:
        return state
    if not isinstance(payload, dict) or payload.get("receipt") is not None or payload.get("status") == "failed":
        return state
    body = receipt_body(book, question_id)
    if body is None:
        return state
    return state.model_copy(update={"payload": json.dumps({**payload, "receipt": body}, ensure_ascii=False)})
