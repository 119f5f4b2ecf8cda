"""Accepting an answer: validate against the stored request, close atomically, resume once."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from workers import metrics
from workers.exceptions import ParleyError, SecretKeyMissing
from workers.interaction import Answer, AnswerError
from workers.logs import Log
from workers.runtime.arg_schema import edit_problems
from workers.runtime.group_close import close_member
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import CloseMode, InterruptRecord, InterruptState, RefusalReason
from workers.store.refusal import POSTING, Refusal

log = Log("parley.accept")
UNCONFIRMED_MESSAGE = "no replica confirmed the answer in time; submit it again"


class AcceptRefused(ParleyError):
    """An answer that was not accepted, and nothing was written.

    `refusal` says why, for a host to word.
    """

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        super().__init__(plain_text(refusal))

    @property
    def reason(self) -> RefusalReason:
        return self.refusal.reason


def plain_text(refusal: Refusal) -> str:
    """A refusal in plain words, for the terminal and the command line.

    Slack's wording is in `bot/slack/refusals.py`.
    """
    match refusal.reason:
        case RefusalReason.ANSWERED:
            return f"already answered by {refusal.by}"
        case RefusalReason.CANCELLED:
            return "this question was cancelled"
        case RefusalReason.EXPIRED:
            return "this question expired before it was answered"
        case RefusalReason.NOT_ALLOWED:
            return f"only {', '.join(refusal.assignees)} may answer"
        case RefusalReason.NOT_NEEDED:
            return "this question is no longer needed: the run went on without it"
        case RefusalReason.NOT_OPEN if refusal.status == POSTING:
            return "this question is still being posted; try again in a moment"
        case RefusalReason.NOT_OPEN:
            return "this question is not waiting for an answer"
        case RefusalReason.WRONG_TEAM:
            return "this question was asked in another Slack workspace"
        case RefusalReason.WRONG_PLACE:
            return "this answer was not given on the question's own message"
        case RefusalReason.INVALID:
            return "invalid answers: " + "; ".join(f"{k}: {v}" for k, v in refusal.errors.items())
        case RefusalReason.UNCONFIRMED:
            return UNCONFIRMED_MESSAGE
        case RefusalReason.UNAVAILABLE | RefusalReason.AMBIGUOUS:
            return refusal.message or "Redis could not be reached; submit again"
        case RefusalReason.FORM_ONLY:
            return "this question asks for a secret, so it is answered only in its form"
        case RefusalReason.SEVERAL_FIELDS:
            return "this question has several fields, so a typed reply cannot answer it"
        case _:  # UNKNOWN, NOT_DUE
            return "no such question"


@dataclass(frozen=True)
class Accepted:
    run_id: str
    interrupt: InterruptRecord
    answers: list[Answer] = field(default_factory=list)
    answered_by: str = ""


@dataclass(frozen=True)
class AnswerOutcome:
    """What became of one person's answer, for the host to show.

    It is accepted, or refused and why. Every host surface gets this one type: a button, a form, a
    typed reply. It comes from `AnswerOutcome.accepted` or `AnswerOutcome.refused`. Every surface
    words it the same way.
    """

    interrupt_id: str
    user: str
    refusal: Refusal | None = None
    run_id: str = ""

    @property
    def ok(self) -> bool:
        return self.refusal is None

    @property
    def reason(self) -> RefusalReason | None:
        return self.refusal.reason if self.refusal else None

    @classmethod
    def accepted(cls, interrupt_id: str, user: str, run_id: str) -> AnswerOutcome:
        return cls(interrupt_id=interrupt_id, user=user, run_id=run_id)

    @classmethod
    def refused(cls, interrupt_id: str, user: str, refusal: Refusal) -> AnswerOutcome:
        """A refusal, counted here since every host builds its refusals here."""
        metrics.refused(refusal.reason.value)
        return cls(interrupt_id=interrupt_id, user=user, refusal=refusal)


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
        return AnswerOutcome.refused(interrupt.id, user, exc.refusal)
    except redis.RedisError:
        return unavailable(interrupt.id, user, team)
    return AnswerOutcome.accepted(interrupt.id, user, accepted.run_id)


def unavailable(interrupt_id: str, user: str, team: str | None) -> AnswerOutcome:
    """Redis was unreachable: nothing was written, and the person should submit again."""
    log.error("Redis unavailable while accepting", exc=True, interrupt_id=interrupt_id, user=user, team=team)
    return AnswerOutcome.refused(interrupt_id, user, Refusal(RefusalReason.UNAVAILABLE))


_SHOWN = {  # the store's refusals an answer is shown; any other (NOT_DUE) reads as no such question
    RefusalReason.ANSWERED,
    RefusalReason.CANCELLED,
    RefusalReason.EXPIRED,
    RefusalReason.NOT_ALLOWED,
    RefusalReason.NOT_NEEDED,
    RefusalReason.NOT_OPEN,
}


def refusal_error(refusal: Refusal, interrupt: InterruptRecord) -> AcceptRefused:
    """A store refusal as acceptance's error, with the question's current assignees."""
    if refusal.reason not in _SHOWN:
        return AcceptRefused(Refusal(RefusalReason.UNKNOWN))
    if refusal.reason is RefusalReason.NOT_ALLOWED:
        return AcceptRefused(replace(refusal, assignees=tuple(interrupt.assignees)))
    return AcceptRefused(refusal)


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

    The request comes from Redis, never from the caller. Pass the id, or the record a host just read
    by it. That makes one read per answer.

    A host with workspaces passes the payload's `team` ("" when it had none) and `enterprise`. It
    also passes the answer's `channel`, or None where there is none, as in a modal. `team=None`
    means a host without workspaces (the terminal), which skips that check. `same_workspace` holds
    the rule.

    A click also passes the `message_ts` it was made on. An answer from another conversation or
    message than the question's is refused (`where_asked`).

    Refusals raise `AcceptRefused` and change nothing. The atomic close re-checks everything the
    record says.

    `resume_here` is for a caller that executes the run itself right after (the terminal). No worker
    job is enqueued, so no worker can take the run first. If the caller dies before claiming the
    run, the sweep gives the queued run a job.
    """
    store = runtime.store
    interrupt = store.interrupt(interrupt_id) if isinstance(interrupt_id, str) else interrupt_id
    if interrupt is None:
        raise AcceptRefused(Refusal(RefusalReason.UNKNOWN))
    interrupt_id = interrupt.id
    ctx: dict[str, Any] = {
        "run_id": interrupt.run_id,
        "interrupt_id": interrupt_id,
        "user": user,
        "team": interrupt.team,
    }
    if team is not None and not same_workspace(interrupt, team, enterprise, channel):
        log.warning("answer from another workspace refused", **ctx, payload_team=team, enterprise=enterprise)
        raise AcceptRefused(Refusal(RefusalReason.WRONG_TEAM, team=interrupt.team, payload_team=team))
    if not where_asked(interrupt, channel, message_ts):
        log.warning("answer from another place refused", **ctx, channel=channel, message_ts=message_ts)
        raise AcceptRefused(Refusal(RefusalReason.WRONG_PLACE, channel=str(interrupt.message.get("channel", ""))))
    # An answered question may be getting its own answer again (the same delivery, or the same
    # person's same answers): the store recognises it, and says so (`Closed.again`).
    maybe_again = bool(token) and interrupt.state is InterruptState.ANSWERED
    if interrupt.state is not InterruptState.OPEN and not maybe_again:
        refusal = state_refusal(interrupt)
        if refusal:
            raise AcceptRefused(refusal)
    if interrupt.assignees and user not in interrupt.assignees:  # none: anyone who can reach the question
        raise AcceptRefused(Refusal(RefusalReason.NOT_ALLOWED, assignees=tuple(interrupt.assignees)))
    try:
        valid = interrupt.request.validate_answers(answers)
    except AnswerError as exc:
        labels = {item.id: item.text for item in interrupt.request.items}  # what people read, by item id
        raise AcceptRefused(Refusal(RefusalReason.INVALID, errors=exc.errors, labels=labels)) from None
    broken = edit_problems(interrupt.request, valid)
    if broken:  # an edit the action's own schema refuses: the person fixes the field it names
        labels = {item.id: item.text for item in interrupt.request.items}
        raise AcceptRefused(Refusal(RefusalReason.INVALID, errors=broken, labels=labels))
    answered_team = team if team and interrupt.team and team != interrupt.team else ""  # a shared channel's
    if interrupt.group:  # one of several questions asked at once: the run resumes when its group is complete
        closed = close_member(
            runtime,
            interrupt,
            CloseMode.ANSWER,
            user,
            valid,
            token=token or secrets.token_hex(8),
            resume=not resume_here,
            on_done=lambda: _tell_accepted(runtime, interrupt, ctx),  # its outcome is known, as a single one's
            answered_team=answered_team,
        )
        if isinstance(closed, Refusal) and closed.reason is RefusalReason.UNCONFIRMED:  # kept, queued: as below
            if not closed.again:
                metrics.answer_accepted(interrupt.asked_at)
            log.warning("answer accepted on the master but not confirmed by a replica", **ctx, replicas=closed.replicas)
            raise AcceptRefused(Refusal(RefusalReason.UNCONFIRMED))
        if isinstance(closed, Refusal):
            log.info("answer refused", **ctx, reason=closed.reason)
            raise refusal_error(closed, interrupt)
        if not closed.again:
            metrics.answer_accepted(interrupt.asked_at)
        log.info("answer accepted", **ctx, group=interrupt.group, again=closed.again)
        return Accepted(run_id=interrupt.run_id, interrupt=interrupt, answers=valid, answered_by=user)
    try:
        token = token or secrets.token_hex(8)
        closed = store.close(interrupt, CloseMode.ANSWER, user, valid, token, answered_team=answered_team)
    except SecretKeyMissing as exc:  # this process cannot seal it: nothing was written
        log.error("secret answer refused", **ctx, problem=str(exc))
        raise AcceptRefused(Refusal(RefusalReason.UNAVAILABLE, message=str(exc))) from None
    if isinstance(closed, Refusal) and closed.reason is RefusalReason.UNCONFIRMED:
        if not closed.again:  # written on the master; the resubmission it asks for is then a repeat
            metrics.answer_accepted(interrupt.asked_at)
        _resume_unconfirmed(runtime, interrupt, ctx, confirmed=closed.replicas)
        raise AcceptRefused(Refusal(RefusalReason.UNCONFIRMED))
    if isinstance(closed, Refusal):
        log.info("answer refused", **ctx, reason=closed.reason)
        raise refusal_error(closed, interrupt)
    if not closed.again:
        _tell_accepted(runtime, interrupt, ctx)
    # A repeat is enqueued again too: the job id makes it one resume, and it re-queues a resume
    # lost with a failed master whose replica had the answer (the sweep would, later).
    if not resume_here:
        enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, interrupt_id))
    if not closed.again:
        metrics.answer_accepted(interrupt.asked_at)
    log.info("answer accepted", **ctx, again=closed.again)
    return Accepted(run_id=interrupt.run_id, interrupt=interrupt, answers=valid, answered_by=user)


def _tell_accepted(runtime: Runtime, interrupt: InterruptRecord, ctx: dict[str, Any]) -> None:
    """Run the process's `on_accepted` hooks, sending an API question's webhook or signal.

    A hook that fails changes nothing here. The resume announces the outcome as it locks the
    question.
    """
    for hook in runtime.on_accepted:
        try:
            hook(interrupt)
        except Exception:
            log.warning("could not announce the accepted answer; its resume will", **ctx, exc=True)


def _resume_unconfirmed(runtime: Runtime, interrupt: InterruptRecord, ctx: dict[str, str], confirmed: int) -> None:
    """Resume on the master, which holds the answer, yet ask for a resubmit.

    The master might die before a replica got the answer. The resubmission then answers the question
    on the promoted replica. If the replica did get it, the same answers from the same person count
    as this acceptance. If this enqueue is lost with the master, the sweep queues the run again. It
    is in the accepted index.
    """
    log.warning("answer accepted on the master but not confirmed by a replica", **ctx, replicas=confirmed)
    try:
        enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, interrupt.id))
    except redis.RedisError:
        log.warning("could not enqueue the resume of an unconfirmed answer; the sweep will", **ctx, exc=True)


def same_workspace(interrupt: InterruptRecord, team: str, enterprise: str | None, channel: str | None) -> bool:
    """Whether an answer sent from `team` may answer.

    For an org-wide install, `enterprise` is what counts.
    - A run with no workspace (the terminal's) has no team to match.
    - The run's own team answers from anywhere, and so does its own enterprise.
    - Another team answers only inside the question's own conversation. In a shared (Slack Connect)
      channel, Slack reports the clicker's own team. Only people in that channel can click there.
      The assignee check that follows still decides by user id whether they may answer.
    - A payload with no team (`"team": null`, an org-wide install elsewhere) matches only the run's
      own enterprise.
    """
    if not interrupt.team:
        return True
    if team and team == interrupt.team:
        return True
    if enterprise and enterprise == interrupt.enterprise:
        return True
    return bool(team) and bool(channel) and channel == interrupt.message.get("channel")


def where_asked(interrupt: InterruptRecord, channel: str | None, message_ts: str | None) -> bool:
    """Whether an answer in `channel`, on `message_ts`, was given where the question is.

    Either may be None when the surface has none. A typed reply has no message, and a terminal
    neither. A question not posted yet has nowhere to compare with.
    """
    posted = interrupt.message
    if channel is not None and posted.get("channel") and channel != posted["channel"]:
        return False
    return message_ts is None or not posted.get("ts") or message_ts == posted["ts"]


def state_refusal(interrupt: InterruptRecord) -> Refusal | None:
    """The refusal a closed question's record already tells, as the store gives it."""
    match interrupt.state:
        case InterruptState.POSTING:
            return Refusal(RefusalReason.NOT_OPEN, status=POSTING)
        case InterruptState.ANSWERED:
            return Refusal(RefusalReason.ANSWERED, by=interrupt.answered_by, at=interrupt.answered_at or None)
        case InterruptState.CANCELLED:
            return Refusal(RefusalReason.CANCELLED, by=interrupt.closed_by)
        case InterruptState.EXPIRED:
            return Refusal(RefusalReason.EXPIRED, at=interrupt.expires_at)
        case InterruptState.NOT_NEEDED:
            return Refusal(RefusalReason.NOT_NEEDED)
    return None
