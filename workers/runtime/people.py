"""Changing who may answer an open question: escalation (by the sweep) and reassignment.

Both act on one question (an interrupt), so they apply to each question a run has open. The
store makes each change atomically, with its history entry. This module decides who may ask for
it. It tells the run's host (`Interactor.escalated`, `Interactor.reassigned`). The host notifies
the people added and shows the change on the question.
"""

from __future__ import annotations

import time

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, InterruptState

log = Log("parley.people")


class ReassignRefused(ParleyError):
    """A reassignment not made, and nothing written.

    The message says why, for people.
    """


_CLOSED = {
    "answered": "This question was already answered, so it can't be reassigned.",
    "cancelled": "This question was cancelled, so it can't be reassigned.",
    "expired": "This question expired, so it can't be reassigned.",
    "posting": "This question is still being posted; try again in a moment.",
    "unknown": "This question no longer exists.",
}


def escalate_due(runtime: Runtime, now: float | None = None) -> list[str]:
    """Escalate every open question past its `escalate_after`, returning their ids.

    The store adds the escalation people once, so a second sweep finds it done. The run's host then
    tells them and shows the escalation on the question. A question answered meanwhile is left to
    its answer, and nobody is told.
    """
    now = time.time() if now is None else now
    store = runtime.store
    done: list[str] = []
    for iid in store.people.due_escalations(now):
        interrupt = store.interrupt(iid)
        run_id = interrupt.run_id if interrupt else ""
        to = list(interrupt.escalate_to) if interrupt is not None else []
        who = store.away.stand_ins(interrupt.team, to, now).people if interrupt is not None and to else None
        change = store.people.escalate(iid, run_id, now=now, who=who)  # someone away: their delegate
        if not change.done or interrupt is None:
            continue
        escalated = store.interrupt(iid)
        run = store.find(run_id)
        if escalated is None or run is None or escalated.state is not InterruptState.OPEN:
            continue
        about = {**run.log_context(), "interrupt_id": iid}
        log.info("question escalated", **about, added=list(change.people))
        done.append(iid)
        try:
            runtime.hosts.for_run(run).escalated(run, escalated, list(change.people))
        except Exception:  # recorded already; one failing Slack call holds back no other question
            log.error("escalation not shown; the sweep goes on", exc=True, **about)
    return done


def reassign(
    runtime: Runtime, interrupt: InterruptRecord, *, by: str, to: str, is_admin: bool, to_is_bot: bool
) -> InterruptRecord:
    """Hand `interrupt` from `by` to `to`, returning the question as it now is.

    A refusal raises `ReassignRefused`. An assignee hands over their own place. An admin who is not
    an assignee hands over the whole question, every assignee's place. Nobody hands a question to
    themselves, or to someone already asked. Nor to a bot (`to_is_bot`, as the host's directory
    says). Nor to someone away, whose delegate is named instead. The run's host, whichever it is,
    then tells `to` and shows the change. A question answered meanwhile comes back closed, and
    `to` is not told.
    """
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt.id, "user": by, "team": interrupt.team}
    if to == by:
        raise ReassignRefused("You can't reassign a question to yourself; pick someone else.")
    if to_is_bot:
        raise ReassignRefused("That's a bot; questions can only be reassigned to people.")
    if interrupt.state is not InterruptState.OPEN and interrupt.state.value in _CLOSED:
        raise ReassignRefused(_CLOSED[interrupt.state.value])
    own = by in interrupt.assignees
    if not own and not is_admin:
        raise ReassignRefused("Only the people asked, or a Parley admin, can reassign this question.")
    if (delegate := runtime.store.away.stand_ins(interrupt.team, [to]).people[0]) != to:
        if delegate == by or delegate in interrupt.assignees:
            raise ReassignRefused(f"<@{to}> is away, and <@{delegate}>, who answers for them, is already asked.")
        raise ReassignRefused(f"<@{to}> is away; reassign it to <@{delegate}>, who answers for them.")
    change = runtime.store.people.reassign(interrupt.id, interrupt.run_id, by, to, whole=not own)
    if not change.done:
        log.info("reassignment refused", **ctx, to=to, reason=change.reason)
        if change.reason == "already":
            raise ReassignRefused("That person is already asked this question.")
        if change.reason == "not_allowed":
            raise ReassignRefused("Only the people asked, or a Parley admin, can reassign this question.")
        if change.reason == "self":
            raise ReassignRefused("You can't reassign a question to yourself; pick someone else.")
        raise ReassignRefused(_CLOSED.get(change.reason, "This question is not waiting for an answer."))
    log.info("question reassigned", **ctx, to=to, removed=list(change.people))
    now = runtime.store.interrupt(interrupt.id)
    if now is None:
        raise ReassignRefused(_CLOSED["unknown"])
    if now.state is not InterruptState.OPEN:  # answered meanwhile: its answer stands, nobody is pointed to it
        return now
    if (run := runtime.store.find(interrupt.run_id)) is not None:
        runtime.hosts.for_run(run).reassigned(run, now, by=by, to=to)
        now = runtime.store.interrupt(interrupt.id) or now  # as the host left it: closed if answered meanwhile
    return now
