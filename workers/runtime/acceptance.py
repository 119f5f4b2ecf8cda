"""Accepting an answer: validate against the stored request, close atomically, resume once."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import redis

from workers import metrics
from workers.exceptions import ParleyError, SecretKeyMissing
from workers.interaction import Answer, AnswerError
from workers.logs import Log
from workers.runtime.group_close import close_member
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import InterruptRecord, InterruptState, RefusalReason
from workers.store.runs import Refusal

log = Log("parley.accept")
UNCONFIRMED_MESSAGE = "no replica confirmed the answer in time; submit it again"


class AcceptRefused(ParleyError):
    """An answer that was not accepted; nothing was written.

    `detail` carries what a host needs to explain the `reason`.
    """

    def __init__(self, reason: RefusalReason, message: str, **detail: Any) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(message)


@dataclass(frozen=True)
class Accepted:
    run_id: str
    interrupt: InterruptRecord
    answers: list[Answer] = field(default_factory=list)
    answered_by: str = ""


@dataclass(frozen=True)
class AnswerOutcome:
    """What became of one person's answer, for the host to show: accepted, or refused and why.

    Every host surface (a button, a form, a typed reply) gets this one type, from
    `AnswerOutcome.accepted` or `AnswerOutcome.refused`, and words it the same way.
    """

    interrupt_id: str
    user: str
    reason: RefusalReason | None = None
    run_id: str = ""
    detail: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def ok(self) -> bool:
        return self.reason is None

    @classmethod
    def accepted(cls, interrupt_id: str, user: str, run_id: str) -> AnswerOutcome:
        return cls(interrupt_id=interrupt_id, user=user, run_id=run_id)

    @classmethod
    def refused(cls, interrupt_id: str, user: str, reason: RefusalReason, **detail: Any) -> AnswerOutcome:
        """A refusal; every host builds its refusals here, so this is where they are counted."""
        metrics.refused(reason.value)
        return cls(interrupt_id=interrupt_id, user=user, reason=reason, detail=MappingProxyType(dict(detail)))


def try_accept(
    runtime: Runtime,
    interrupt: InterruptRecord,
    user: str,
    answers: list[Answer],
    *,
    team: str | None,
    token: str,
    enterprise: str | None = None,
    channel: str | None = None,
    message_ts: str | None = None,
) -> AnswerOutcome:
    """`accept`, with every refusal (and an unreachable Redis) turned into an `AnswerOutcome`."""
    try:
        accepted = accept(
            runtime,
            interrupt,
            user,
            answers,
            team=team,
            enterprise=enterprise,
            channel=channel,
            message_ts=message_ts,
            token=token,
        )
    except AcceptRefused as exc:
        return AnswerOutcome.refused(interrupt.id, user, exc.reason, **exc.detail)
    except redis.RedisError:
        return unavailable(interrupt.id, user, team)
    return AnswerOutcome.accepted(interrupt.id, user, accepted.run_id)


def unavailable(interrupt_id: str, user: str, team: str | None) -> AnswerOutcome:
    """Redis could not be reached: nothing was written, and the person is asked to submit again."""
    log.error("Redis unavailable while accepting", exc=True, interrupt_id=interrupt_id, user=user, team=team)
    return AnswerOutcome.refused(interrupt_id, user, RefusalReason.UNAVAILABLE)


def refusal_error(refusal: Refusal, interrupt: InterruptRecord | None) -> AcceptRefused:
    """Turn a store refusal into a host-neutral, specific error."""
    d, reason = refusal.detail, refusal.reason
    if reason is RefusalReason.ANSWERED:
        return AcceptRefused(reason, f"already answered by {d[0]}", by=d[0], at=float(d[1] or 0))
    if reason is RefusalReason.CANCELLED:
        return AcceptRefused(reason, "this question was cancelled", by=d[0] if d else "")
    if reason is RefusalReason.EXPIRED:
        return AcceptRefused(reason, "this question expired before it was answered")
    if reason is RefusalReason.NOT_ALLOWED:
        assignees = interrupt.assignees if interrupt else []
        return AcceptRefused(reason, f"only {', '.join(assignees)} may answer", assignees=assignees)
    if reason is RefusalReason.NOT_NEEDED:
        return AcceptRefused(reason, "this question is no longer needed: the run went on without it")
    if reason is RefusalReason.NOT_OPEN:
        return AcceptRefused(reason, "this question is not waiting for an answer")
    return AcceptRefused(RefusalReason.UNKNOWN, "no such question")


def accept(
    runtime: Runtime,
    interrupt_id: str | InterruptRecord,
    user: str,
    answers: list[Answer],
    *,
    team: str | None = None,
    enterprise: str | None = None,
    channel: str | None = None,
    message_ts: str | None = None,
    token: str | None = None,
    resume_here: bool = False,
) -> Accepted:
    """Accept `user`'s `answers` to `interrupt_id` exactly once, then enqueue the resume.

    The request comes from Redis, never from the caller: pass the id, or the record a
    host just read by that id (one read per answer). A host with workspaces passes the
    payload's `team` ("" when it had none), `enterprise` and the `channel` the answer was
    given in (None where there is none, as in a modal); `team=None` means the host has no
    workspaces (the terminal) and skips that check (see `_same_workspace` for the rule).
    A click also passes the `message_ts` it was made on: an answer given in another
    conversation, or on another message, than the question's is refused (`_where_asked`).
    Refusals raise `AcceptRefused` and change nothing; the atomic close re-checks
    everything the record says. `resume_here` is for a caller that executes the run itself
    right after (the terminal): no worker job is enqueued, so no worker can take the run
    first; should the caller die before it claims the run, the sweep gives the queued run a job.
    """
    store = runtime.store
    interrupt = store.interrupt(interrupt_id) if isinstance(interrupt_id, str) else interrupt_id
    if interrupt is None:
        raise AcceptRefused(RefusalReason.UNKNOWN, "no such question")
    interrupt_id = interrupt.id
    ctx: dict[str, Any] = {
        "run_id": interrupt.run_id,
        "interrupt_id": interrupt_id,
        "user": user,
        "team": interrupt.team,
    }
    if team is not None and not _same_workspace(interrupt, team, enterprise, channel):
        log.warning("answer from another workspace refused", **ctx, payload_team=team, enterprise=enterprise)
        raise AcceptRefused(
            RefusalReason.WRONG_TEAM,
            "this question was asked in another Slack workspace",
            team=interrupt.team,
            payload_team=team,
        )
    if not _where_asked(interrupt, channel, message_ts):
        log.warning("answer from another place refused", **ctx, channel=channel, message_ts=message_ts)
        raise AcceptRefused(
            RefusalReason.WRONG_PLACE,
            "this answer was not given on the question's own message",
            channel=str(interrupt.message.get("channel", "")),
        )
    # An answered question may be getting its own answer again (the same delivery, or the same
    # person's same answers): the store recognises it, and says so (`Closed.again`).
    maybe_again = bool(token) and interrupt.state is InterruptState.ANSWERED
    if interrupt.state is not InterruptState.OPEN and not maybe_again:
        state_refusal = _state_refusal(interrupt)
        if state_refusal:
            raise state_refusal
    if interrupt.assignees and user not in interrupt.assignees:  # none: anyone who can reach the question
        raise refusal_error(Refusal(RefusalReason.NOT_ALLOWED), interrupt)
    try:
        valid = interrupt.request.validate_answers(answers)
    except AnswerError as exc:
        labels = {item.id: item.text for item in interrupt.request.items}  # what people read, by item id
        raise AcceptRefused(RefusalReason.INVALID, str(exc), errors=exc.errors, labels=labels) from None
    if interrupt.group:  # one of several questions asked at once: the run resumes when its group is complete
        closed = close_member(
            runtime, interrupt, "answer", user, valid, token=token or secrets.token_hex(8), resume=not resume_here
        )
        if isinstance(closed, Refusal) and closed.reason is RefusalReason.UNCONFIRMED:  # kept, queued: as below
            if not _again(closed):
                metrics.answer_accepted(interrupt.asked_at)
            log.warning(
                "answer accepted on the master but not confirmed by a replica", **ctx, replicas=closed.detail[0]
            )
            raise AcceptRefused(RefusalReason.UNCONFIRMED, UNCONFIRMED_MESSAGE)
        if isinstance(closed, Refusal):
            log.info("answer refused", **ctx, reason=closed.reason)
            raise refusal_error(closed, interrupt)
        if not closed.again:
            metrics.answer_accepted(interrupt.asked_at)
        log.info("answer accepted", **ctx, group=interrupt.group, again=closed.again)
        return Accepted(run_id=interrupt.run_id, interrupt=interrupt, answers=valid, answered_by=user)
    try:
        closed = store.close(interrupt, "answer", user, valid, token or secrets.token_hex(8))
    except SecretKeyMissing as exc:  # this process cannot seal it: nothing was written
        log.error("secret answer refused", **ctx, problem=str(exc))
        raise AcceptRefused(RefusalReason.UNAVAILABLE, str(exc)) from None
    if isinstance(closed, Refusal) and closed.reason is RefusalReason.UNCONFIRMED:
        if not _again(closed):  # written on the master; the resubmission it asks for is then a repeat
            metrics.answer_accepted(interrupt.asked_at)
        _resume_unconfirmed(runtime, interrupt, ctx, confirmed=closed.detail[0])
        raise AcceptRefused(RefusalReason.UNCONFIRMED, UNCONFIRMED_MESSAGE)
    if isinstance(closed, Refusal):
        log.info("answer refused", **ctx, reason=closed.reason)
        raise refusal_error(closed, interrupt)
    # A repeat is enqueued again too: the job id makes it one resume, and it re-queues a resume
    # lost with a failed master whose replica had the answer (the sweep would, later).
    if not resume_here:
        enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, interrupt_id))
    if not closed.again:
        metrics.answer_accepted(interrupt.asked_at)
    log.info("answer accepted", **ctx, again=closed.again)
    return Accepted(run_id=interrupt.run_id, interrupt=interrupt, answers=valid, answered_by=user)


def _again(unconfirmed: Refusal) -> bool:
    """Whether an `UNCONFIRMED` close was a repeat of the acceptance the question already held."""
    return unconfirmed.detail[1:] == ("again",)


def _resume_unconfirmed(runtime: Runtime, interrupt: InterruptRecord, ctx: dict[str, str], confirmed: str) -> None:
    """The master holds the answer, so the run resumes there; the person is still asked to submit again.

    Were the master to die before a replica got the answer, the resubmission answers the
    question on the promoted replica; if the replica did get it, the same answers from the
    same person are recognised as this acceptance. If this enqueue is lost with the master,
    the sweep queues the run again (it is in the accepted index).
    """
    log.warning("answer accepted on the master but not confirmed by a replica", **ctx, replicas=confirmed)
    try:
        enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, interrupt.id))
    except redis.RedisError:
        log.warning("could not enqueue the resume of an unconfirmed answer; the sweep will", **ctx, exc=True)


def _same_workspace(interrupt: InterruptRecord, team: str, enterprise: str | None, channel: str | None) -> bool:
    """Whether an answer sent from `team` (or, for an org-wide install, `enterprise`) may answer.

    - A question of a run with no workspace (the terminal's) has no team to match.
    - The run's own team answers from anywhere; so does the run's own enterprise.
    - Another team answers only from inside the question's own conversation: in a shared
      (Slack Connect) channel Slack reports the clicker's own team, and only people in that
      channel can click there. Whether that person may answer is still decided by user id,
      by the assignee check that follows.
    - A payload with no team (`"team": null`, an org-wide install elsewhere) matches
      nothing but the run's own enterprise.
    """
    if not interrupt.team:
        return True
    if team and team == interrupt.team:
        return True
    if enterprise and enterprise == interrupt.enterprise:
        return True
    return bool(team) and bool(channel) and channel == interrupt.message.get("channel")


def _where_asked(interrupt: InterruptRecord, channel: str | None, message_ts: str | None) -> bool:
    """Whether an answer given in `channel`, on message `message_ts`, was given where the question is.

    Either may be None when the surface has none (a typed reply has no message, a terminal
    neither); a question not posted yet has nowhere to compare with.
    """
    posted = interrupt.message
    if channel is not None and posted.get("channel") and channel != posted["channel"]:
        return False
    return message_ts is None or not posted.get("ts") or message_ts == posted["ts"]


def _state_refusal(interrupt: InterruptRecord) -> AcceptRefused | None:
    """The refusal a closed question's record already tells, worded as the store's would be."""
    state = interrupt.state
    if state is InterruptState.POSTING:
        return AcceptRefused(RefusalReason.NOT_OPEN, "this question is still being posted; try again in a moment")
    if state is InterruptState.ANSWERED:
        refusal = Refusal(RefusalReason.ANSWERED, (interrupt.answered_by, repr(interrupt.answered_at or 0.0)))
    elif state is InterruptState.CANCELLED:
        refusal = Refusal(RefusalReason.CANCELLED, (interrupt.closed_by,))
    elif state is InterruptState.EXPIRED:
        refusal = Refusal(RefusalReason.EXPIRED)
    elif state is InterruptState.NOT_NEEDED:
        refusal = Refusal(RefusalReason.NOT_NEEDED)
    else:
        return None
    return refusal_error(refusal, interrupt)
