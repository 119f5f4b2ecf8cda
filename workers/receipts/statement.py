"""The in-toto Statement a receipt signs: what was asked and decided, by whom, when.

The predicate is built only from what Redis holds about the closed question and its run. A
secret item's answer appears only as answered. Neither its value nor any digest of it appears.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from workers.interaction import Request
from workers.interaction.approval import APPROVE, APPROVE_STANDING, DECISION_ID, REJECT, decision_of
from workers.interaction.exceptions import ParleyError
from workers.receipts.canonical import digest
from workers.store.records import InterruptRecord, InterruptState

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://parley.dev/receipt/v1"
PARLEY = "parley"  # who closes a question nobody answered: an expiry, a sweep

ATTESTS = {
    "slack": "Slack's signed request attests that this Slack user of this workspace clicked. "
    "It is not a signature of the person's own.",
    "api": "The asker's API token was presented. It attests the holder of the token, not a person's own signature.",
    "terminal": "The answer was typed at the terminal the run was started from. Nothing more is attested.",
    PARLEY: "No person acted: Parley closed the question itself.",
}


def iso(at: float | None) -> str | None:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z") if at else None


def origin_of(conversation: dict[str, Any]) -> str:
    """Where the question came from: slack, api, mcp, temporal, terminal."""
    if conversation.get("temporal"):
        return "temporal"
    host = str(conversation.get("host", ""))
    if host == "api":
        return str(conversation.get("via") or "api")
    return host or "unknown"


def outcome_of(question: InterruptRecord, values: dict[str, Any]) -> str:
    """answered, approved, edited, rejected, declined, expired or cancelled."""
    match question.state:
        case InterruptState.EXPIRED:
            return "expired"
        case InterruptState.CANCELLED:
            return "declined" if question.declined else "cancelled"
    if question.request.approval is not None and DECISION_ID in values:
        decision = decision_of(question.request, values)
        if not decision.approved:
            return "rejected"
        return "edited" if decision.edited else "approved"
    return "answered"


def _answers(request: Request, question: InterruptRecord) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The answers as the receipt states them, and plain values by item id.

    Secrets are left out.
    """
    secret = {item.id for item in request.items if item.is_secret}
    stated: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for answer in question.answers:
        if answer.id in secret:
            stated.append({"item": answer.id, "secret": True, "answered": True})
            continue
        values[answer.id] = answer.value
        stated.append({"item": answer.id, "value": answer.value})
    return stated, values


def _approval(request: Request, values: dict[str, Any]) -> dict[str, Any] | None:
    """What an approval approved: the action, and digests of approved and proposed arguments."""
    approval = request.approval
    if approval is None:
        return None
    args = approval.args
    if DECISION_ID in values:
        try:
            args = decision_of(request, values).args
        except ParleyError:
            args = approval.args
    decided = values.get(DECISION_ID)
    return {
        "action": approval.action,
        "arguments_digest": digest(args),
        "proposed_digest": digest(approval.args),
        "decision": decided if decided in (APPROVE, APPROVE_STANDING, REJECT) else None,
    }


def _who(question: InterruptRecord, origin: str, conversation: dict[str, Any], outcome: str) -> dict[str, Any]:
    person = question.answered_by or question.closed_by
    if outcome == "expired" or person in ("", PARLEY):
        return {"user": PARLEY, "attests": ATTESTS[PARLEY]}
    if origin == "terminal":
        return {"user": person, "attests": ATTESTS["terminal"]}
    if origin != "slack" and outcome == "cancelled" and person == conversation.get("origin"):
        return {"user": person, "token": True, "attests": ATTESTS["api"]}  # cancelled by the asker's own token
    team = question.answered_team if outcome != "cancelled" and question.answered_team else question.team
    who: dict[str, Any] = {"user": person, "team": team or None, "attests": ATTESTS["slack"]}
    if question.enterprise:
        who["enterprise"] = question.enterprise
    return who


def statement(
    question: InterruptRecord,
    conversation: dict[str, Any],
    *,
    sequence: int,
    previous: str | None,
    closed_at: float | None = None,
) -> dict[str, Any]:
    """The in-toto Statement v1 of a closed question.

    It is chained after the receipt `previous`, by its digest.
    """
    request = question.request
    request_json = request.model_dump(mode="json", exclude_none=True)
    stated, values = _answers(request, question)
    origin = origin_of(conversation)
    outcome = outcome_of(question, values)
    shown = question.message.get("blocks_digest")
    predicate: dict[str, Any] = {
        "outcome": outcome,
        "question": {
            "id": question.id,
            "run_id": question.run_id,
            "key": question.key,
            "attempt": question.attempt,
            "group": question.group or None,
            "origin": origin,
            "asker": conversation.get("origin"),
            "request_digest": digest(request_json),
            "shown_digest": {"sha256": shown} if shown else None,
        },
        "context_digest": {"sha256": question.context_digest} if question.context_digest else None,
        "approval": _approval(request, values),
        "answers": stated if question.state is not InterruptState.CANCELLED else [],
        "who": _who(question, origin, conversation, outcome),
        "when": {"asked": iso(question.asked_at), "closed": iso(closed_at or question.answered_at)},
        "workspace": question.team or question.enterprise or "",
        "sequence": sequence,
        "previous": {"sha256": previous} if previous else None,
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"parley:question:{question.id}", "digest": digest(request_json)}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }
