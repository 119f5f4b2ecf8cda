"""A question as the API shows it, from its run, interrupt and API record."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from workers.interaction import answers_to_values
from workers.interaction.approval import approved_args, decision_of
from workers.questions.models import QuestionStatus, QuestionView, TemporalView, WebhookView
from workers.store.questions import UnreadableQuestion
from workers.store.records import ApiQuestionRecord, InterruptRecord, InterruptState, RunRecord, RunStatus

_BY_STATE = {
    InterruptState.POSTING: QuestionStatus.WAITING,
    InterruptState.OPEN: QuestionStatus.WAITING,
    InterruptState.ANSWERED: QuestionStatus.ANSWERED,
    InterruptState.EXPIRED: QuestionStatus.EXPIRED,
    InterruptState.CANCELLED: QuestionStatus.CANCELLED,
}


_WAITING = QuestionStatus.WAITING


def when(ts: float | None) -> datetime | None:
    """`ts` as a UTC datetime, or None.

    None also for a value no datetime can hold. That is year 33715, written by a version that did
    not bound `expires_in`.
    """
    if not ts:
        return None
    try:
        return datetime.fromtimestamp(ts, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def status_of(run: RunRecord | None, interrupt: InterruptRecord | None) -> QuestionStatus:
    """The question's status: its interrupt's once closed, else its run's.

    A run can end before its question was open, e.g. when Slack refused to post it. That ends the
    question too.
    """
    if interrupt is not None and (run is None or not run.status.is_final or _BY_STATE[interrupt.state] != _WAITING):
        return _BY_STATE[interrupt.state]
    if run is not None and run.status is RunStatus.SUCCEEDED:  # a quorum's group: the run ends when answered
        return QuestionStatus.ANSWERED
    if run is not None and run.status is RunStatus.EXPIRED:
        return QuestionStatus.EXPIRED
    if run is None or run.status is RunStatus.FAILED:
        return QuestionStatus.FAILED
    if run.status is RunStatus.CANCELLED:
        return QuestionStatus.CANCELLED
    return QuestionStatus.WAITING


def build_view(
    question: ApiQuestionRecord,
    run: RunRecord | None,
    interrupt: InterruptRecord | None,
    shared: dict[str, Any] | None = None,
) -> QuestionView:
    """The question as the API shows it.

    `shared`: the one message a quorum's people share. No interrupt is the question's own then.
    """
    status = status_of(run, interrupt)
    answers = None
    if interrupt is not None and status is QuestionStatus.ANSWERED:
        answers = answers_to_values(interrupt.request, interrupt.answers)
    elif interrupt is not None and status is QuestionStatus.EXPIRED and interrupt.answers:
        answers = answers_to_values(interrupt.request, interrupt.answers)  # on_expiry=use_defaults
    answers_by = None
    if question.quorum is not None and status is QuestionStatus.ANSWERED and run is not None and run.result:
        answers_by = json.loads(run.result)
    message = interrupt.message if interrupt is not None else shared or {}
    hook = question.webhook
    approval = question.request.approval is not None
    decision = None
    if approval and interrupt is not None and answers is not None and status is QuestionStatus.ANSWERED:
        decision = decision_of(interrupt.request, answers, interrupt.answered_by)
        if question.whole_args is not None:  # values shown in part go back whole, as asked
            decision = decision.model_copy(update={"args": approved_args(decision, question.whole_args)})
    return QuestionView(
        id=question.id,
        kind="approval" if approval else "question",
        status=status,
        answers=answers,
        answers_by=answers_by,
        decision=decision,
        answered_by=(interrupt.answered_by or None) if interrupt is not None else None,
        answered_at=when(interrupt.answered_at) if interrupt is not None else None,
        metadata=question.metadata,
        channel=message.get("channel") or question.channel or None,
        message_ts=message.get("ts") or None,
        thread_ts=(run.conversation.get("thread_ts") if run else None) or question.thread_ts or None,
        expires_at=when(interrupt.expires_at) if interrupt is not None else None,
        created_at=when(question.created_at) or datetime.now(tz=UTC),
        origin=question.token,
        reason=question.request.reason,
        context=question.context,
        cancelled_by=(interrupt.closed_by or None)
        if interrupt is not None and status is QuestionStatus.CANCELLED
        else None,
        declined=interrupt is not None and status is QuestionStatus.CANCELLED and interrupt.declined,
        error=(run.error or None) if run is not None and status is QuestionStatus.FAILED else None,
        webhook=WebhookView(
            id=hook.id,
            event=hook.event,
            status=hook.status,
            attempts=hook.attempts,
            last_error=hook.last_error or None,
            last_status=hook.last_status,
            delivered_at=when(hook.delivered_at),
            circuit=hook.circuit,
            circuit_open_until=when(hook.circuit_open_until),
        )
        if hook is not None
        else None,
        temporal=_temporal_view(question, status),
    )


def _temporal_view(question: ApiQuestionRecord, status: QuestionStatus) -> TemporalView | None:
    target, signal = question.temporal, question.signal
    if target is None:
        return None
    return TemporalView(
        workflow_id=target.workflow_id,
        namespace=target.namespace,
        key=target.key,
        status=signal.status if signal is not None else "waiting" if status is QuestionStatus.WAITING else "pending",
        attempts=signal.attempts if signal is not None else 0,
        last_error=(signal.last_error or None) if signal is not None else None,
        delivered_at=when(signal.delivered_at) if signal is not None else None,
    )


def unreadable_view(question: UnreadableQuestion) -> QuestionView:
    """An unreadable question as a listing shows it: failed, saying why."""
    return QuestionView(
        id=question.id,
        status=QuestionStatus.FAILED,
        created_at=when(question.created_at) or datetime.now(tz=UTC),
        origin=question.token,
        reason="(unreadable)",
        error=f"Parley cannot read this question's record: {question.error}",
    )
