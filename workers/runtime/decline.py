"""Declining a question: an assignee closes it unanswered, as cancelled by them.

A question asked as an MCP elicitation offers "Decline" beside Submit. MCP reads a question
cancelled by a person as `decline` (`bot.mcp.elicitation.elicit_action`). A decline is checked
as an answer is: workspace, message, state and assignees. It closes the question in the same
atomic step an answer would. So whichever comes first wins. A decline after an answer, or a
second decline, changes nothing and is refused.
"""

from __future__ import annotations

import time

import redis

from workers import metrics
from workers.logs import Log
from workers.runtime.acceptance import AnswerOutcome, refusal_error, same_workspace, state_refusal, where_asked
from workers.runtime.wiring import Runtime
from workers.store.question_closes import Closed
from workers.store.records import CloseMode, InterruptRecord, InterruptState, RefusalReason, RunStatus
from workers.store.refusal import Refusal
from workers.store.scripts import DECLINE_TOKEN

log = Log("parley.decline")
GROUP_REFUSED = "a question asked of several people at once cannot be declined"


def _refusal(
    interrupt: InterruptRecord, user: str, team: str | None, enterprise: str | None, channel: str | None, ts: str | None
) -> Refusal | None:
    """Why `user` may not decline `interrupt` from there, as for an answer.

    None when they may.
    """
    if team is not None and not same_workspace(interrupt, team, enterprise, channel):
        return Refusal(RefusalReason.WRONG_TEAM, team=interrupt.team, payload_team=team)
    if not where_asked(interrupt, channel, ts):
        return Refusal(RefusalReason.WRONG_PLACE, channel=str(interrupt.message.get("channel", "")))
    if interrupt.state is not InterruptState.OPEN:
        return state_refusal(interrupt) or Refusal(RefusalReason.NOT_OPEN)
    if interrupt.expires_at and time.time() >= interrupt.expires_at:
        return Refusal(RefusalReason.EXPIRED, at=interrupt.expires_at)
    if interrupt.assignees and user not in interrupt.assignees:  # none: anyone who can reach the question
        return Refusal(RefusalReason.NOT_ALLOWED, assignees=tuple(interrupt.assignees))
    if interrupt.group:
        return Refusal(RefusalReason.INVALID, errors={"form": GROUP_REFUSED})
    return None


def decline(
    runtime: Runtime,
    interrupt: InterruptRecord,
    user: str,
    *,
    team: str | None,
    enterprise: str | None = None,
    channel: str | None = None,
    message_ts: str | None = None,
) -> AnswerOutcome:
    """Close `interrupt` as cancelled by `user`, once.

    Its message is locked, saying who declined it.
    """
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt.id, "user": user, "team": interrupt.team}
    refusal = _refusal(interrupt, user, team, enterprise, channel, message_ts)
    if refusal is not None:
        log.info("decline refused", **ctx, reason=refusal.reason)
        return AnswerOutcome.refused(interrupt.id, user, refusal)
    store = runtime.store
    try:
        closed = store.close(interrupt, CloseMode.CANCEL, user, token=DECLINE_TOKEN)  # its receipt says declined
        if not isinstance(closed, Closed):  # answered, declined or expired meanwhile: that stands
            log.info("decline refused", **ctx, reason=closed.reason)
            return AnswerOutcome.refused(interrupt.id, user, refusal_error(closed, interrupt).refusal)
        run, now = store.get(interrupt.run_id), store.interrupt(interrupt.id)
    except redis.RedisError:
        log.error("Redis unavailable while declining", exc=True, **ctx)
        return AnswerOutcome.refused(interrupt.id, user, Refusal(RefusalReason.UNAVAILABLE))
    metrics.run_ended(run.agent, RunStatus.CANCELLED.value)
    log.info("question declined", **ctx)
    if now is not None:
        runtime.hosts.for_run(run).question_closed(run, now)
    return AnswerOutcome.accepted(interrupt.id, user, interrupt.run_id)
