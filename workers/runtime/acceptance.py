"""Accepting an answer: validate against the stored request, close atomically, resume once."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from workers.exceptions import ParleyError
from workers.interaction import Answer, AnswerError
from workers.logs import Log
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, InterruptState
from workers.store.runs import Refusal, resume_job_id

log = Log("parley.accept")


class AcceptRefused(ParleyError):
    """An answer that was not accepted; nothing was written.

    `reason` is one of: unknown, answered, cancelled, expired, not_open,
    not_allowed, invalid. `detail` carries what a host needs to explain it.
    """

    def __init__(self, reason: str, message: str, **detail: Any) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(message)


@dataclass(frozen=True)
class Accepted:
    run_id: str
    interrupt: InterruptRecord
    answers: list[Answer] = field(default_factory=list)
    answered_by: str = ""


def refusal_error(refusal: Refusal, interrupt: InterruptRecord | None) -> AcceptRefused:
    """Turn a store refusal into a host-neutral, specific error."""
    d = refusal.detail
    if refusal.reason == "answered":
        return AcceptRefused("answered", f"already answered by {d[0]}", by=d[0], at=float(d[1] or 0))
    if refusal.reason == "cancelled":
        return AcceptRefused("cancelled", "this question was cancelled", by=d[0] if d else "")
    if refusal.reason == "expired":
        return AcceptRefused("expired", "this question expired before it was answered")
    if refusal.reason == "not_allowed":
        assignees = interrupt.assignees if interrupt else []
        return AcceptRefused("not_allowed", f"only {', '.join(assignees)} may answer", assignees=assignees)
    if refusal.reason == "not_open":
        return AcceptRefused("not_open", "this question is not waiting for an answer")
    return AcceptRefused("unknown", "no such question")


def accept(
    runtime: Runtime,
    interrupt_id: str | InterruptRecord,
    user: str,
    answers: list[Answer],
    *,
    team: str | None = None,
    token: str | None = None,
) -> Accepted:
    """Accept `user`'s `answers` to `interrupt_id` exactly once, then enqueue the resume.

    The request comes from Redis, never from the caller: pass the id, or the record a
    host just read by that id (one read per answer). Refusals raise `AcceptRefused`
    and change nothing; the atomic close re-checks everything the record says.
    """
    store = runtime.store
    interrupt = store.interrupt(interrupt_id) if isinstance(interrupt_id, str) else interrupt_id
    if interrupt is None:
        raise AcceptRefused("unknown", "no such question")
    interrupt_id = interrupt.id
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt_id, "user": user, "team": interrupt.team}
    if team and interrupt.team and interrupt.team != team:
        log.warning("answer from another team refused", **ctx, payload_team=team)
        raise AcceptRefused("unknown", "no such question")
    # A redelivery of an accepted answer carries its token; the store recognises it.
    redelivery = bool(token) and interrupt.state is InterruptState.ANSWERED
    if interrupt.state is not InterruptState.OPEN and not redelivery:
        state_refusal = _state_refusal(interrupt)
        if state_refusal:
            raise state_refusal
    if user not in interrupt.assignees:
        raise refusal_error(Refusal("not_allowed"), interrupt)
    try:
        valid = interrupt.request.validate_answers(answers)
    except AnswerError as exc:
        raise AcceptRefused("invalid", str(exc), errors=exc.errors) from None
    refusal = store.close(interrupt, "answer", user, valid, token or secrets.token_hex(8))
    if refusal:
        log.info("answer refused", **ctx, reason=refusal.reason)
        raise refusal_error(refusal, interrupt)
    enqueue_run(runtime.queue, interrupt.run_id, resume_job_id(interrupt.run_id, interrupt_id))
    log.info("answer accepted", **ctx)
    return Accepted(run_id=interrupt.run_id, interrupt=interrupt, answers=valid, answered_by=user)


def _state_refusal(interrupt: InterruptRecord) -> AcceptRefused | None:
    """The refusal a closed question's record already tells, worded as the store's would be."""
    state = interrupt.state
    if state is InterruptState.POSTING:
        return AcceptRefused("not_open", "this question is still being posted; try again in a moment")
    if state is InterruptState.ANSWERED:
        refusal = Refusal("answered", (interrupt.answered_by, repr(interrupt.answered_at or 0.0)))
    elif state is InterruptState.CANCELLED:
        refusal = Refusal("cancelled", (interrupt.closed_by,))
    elif state is InterruptState.EXPIRED:
        refusal = Refusal("expired")
    else:
        return None
    return refusal_error(refusal, interrupt)
