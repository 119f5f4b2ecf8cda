"""What the Python clients return with a signed receipt: `Decision` and `Outcome`.

A worker writes a receipt (docs/receipts.md) once the question closes. The clients read it from
`GET /api/v1/questions/{id}/receipt`. They ask again briefly while it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.interaction import Decision as _Decision

RECEIPT_TRIES = 20
"""How many times a client asks for a receipt being written (409) before giving up on it."""
RECEIPT_PAUSE = 0.5
"""Seconds between those tries."""


class Decision(_Decision):
    """An approval's decision, with its signed receipt (None where Parley signs none)."""

    receipt: dict[str, Any] | None = None


@dataclass(frozen=True)
class Outcome:
    """How a question ended, with its receipt: answered, expired, cancelled or failed."""

    question_id: str
    status: str
    answers: dict[str, Any] | None = None
    by: str | None = None
    decision: Decision | None = None
    receipt: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def answered(self) -> bool:
        return self.status == "answered"


def closed(view: dict[str, Any]) -> bool:
    return view.get("status") != "waiting"


def outcome_of(view: dict[str, Any], receipt: dict[str, Any] | None) -> Outcome:
    decided = view.get("decision")
    return Outcome(
        question_id=str(view["id"]),
        status=str(view["status"]),
        answers=view.get("answers"),
        by=view.get("answered_by") or view.get("cancelled_by"),
        decision=Decision.model_validate({**decided, "receipt": receipt}) if decided else None,
        receipt=receipt,
    )
