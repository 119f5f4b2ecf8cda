"""Closing one of several questions asked at once: an answer, an expiry, a cancel.

The store closes the member. When that completes the group, it queues the run in the same atomic
step. This enqueues the one resume. A member answered before the group completes is shown on its
message by a small worker job (`show`). So the ack path stays free of Web API calls. The
question reads as answered at once. The run stays parked until the last answer its mode needs.

With `PARLEY_REDIS_MIN_REPLICAS`, an answer may come back `UNCONFIRMED`. The master accepted it,
but no replica confirmed it in time. It is kept, so its resume or show is enqueued as for any
accepted answer. The person is asked to submit again. The same answers are the same acceptance
(see `group_scripts.CLOSE_MEMBER`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from workers.interaction import Answer, Interactor, OnExpiry
from workers.logs import Log
from workers.runtime.host import QuestionProgress
from workers.runtime.queues import enqueue_run, enqueue_show
from workers.runtime.wiring import Runtime
from workers.store import ids, job_ids
from workers.store.groups import GroupMode, GroupRecord
from workers.store.question_closes import Closed
from workers.store.records import CloseMode, GroupState, InterruptRecord, InterruptState, RefusalReason, RunRecord
from workers.store.refusal import Refusal
from workers.store.run_writes import history_entry
from workers.store.runs import RunStore

log = Log("parley.group")
REDRAWS = 3
"""Open draws of an `ask_each` message one `show` makes at most; a closed one is always drawn."""


def close_member(
    runtime: Runtime,
    interrupt: InterruptRecord,
    mode: CloseMode,
    actor: str,
    answers: list[Answer] | None = None,
    *,
    token: str = "",
    now: float | None = None,
    resume: bool = True,
    on_done: Callable[[], None] | None = None,
    answered_team: str = "",
) -> Refusal | Closed:
    """Close group member `interrupt` as `mode`.

    Returns `Closed`, or why not, having written nothing. `UNCONFIRMED` is the exception: the master
    accepted the answer, and its resume or show is enqueued. But fewer replicas than asked for
    confirmed it in time (as `RunStore.close`). `resume=False` enqueues no resume for a complete
    group, since the caller executes the run. `on_done` is called when this close completed the
    group, before its resume is queued.
    """
    answers_json = [a.model_dump(exclude_none=True) for a in answers or []]
    bound = {"context_digest": interrupt.context_digest} if interrupt.context_digest else {}
    entry = history_entry(
        CloseMode(mode).event,
        actor,
        interrupt_id=interrupt.id,
        key=interrupt.key,
        attempt=interrupt.attempt,
        answers=answers_json,
        group=interrupt.group,
        **bound,
    )
    counts = mode != CloseMode.EXPIRE or interrupt.request.on_expiry is OnExpiry.USE_DEFAULTS
    closed = runtime.store.groups.close(
        interrupt,
        mode,
        actor,
        entry,
        answers,
        token=token,
        counts=counts,
        now=time.time() if now is None else now,
        answered_team=answered_team,
    )
    refusal = closed.refusal
    unconfirmed = refusal is not None and refusal.reason is RefusalReason.UNCONFIRMED
    if refusal is not None and not unconfirmed:
        return refusal
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt.id, "group": interrupt.group}
    if mode == CloseMode.CANCEL or closed.again:  # a repeat: the first acceptance queued what follows it
        return refusal if refusal is not None else Closed(again=closed.again)
    if closed.done and not unconfirmed and on_done is not None:
        on_done()
    try:
        if resume or not closed.done:
            _go_on(runtime, interrupt, closed.done, ctx, closed.dropped)
    except redis.RedisError:
        if not unconfirmed:
            raise
        # A lost resume is queued again by the sweep (the run is in the accepted index); a lost show
        # leaves the member to be shown when the run resumes.
        log.warning("could not enqueue after an unconfirmed answer", **ctx, exc=True)
    return refusal if refusal is not None else Closed()


def _go_on(runtime: Runtime, interrupt: InterruptRecord, done: bool, ctx: dict[str, str], dropped: list[str]) -> None:
    """After a member closed, resume a complete group's run, else show the member answered."""
    if done:
        enqueue_run(runtime.queue, interrupt.run_id, job_ids.resume(interrupt.run_id, interrupt.group))
        log.info("group complete; run queued", **ctx, closed_as_not_needed=dropped)
    else:
        enqueue_show(runtime.queue, interrupt.run_id, interrupt.id, job_ids.show(interrupt.id))


def show(runtime: Runtime, run_id: str, interrupt_id: str) -> None:
    """Show a member answered while its group is still open.

    It is locked on its own message. For `ask_each`, it is counted in the shared message's progress.
    Once the group is complete, the resumed run shows everything, so this does nothing.
    """
    store = runtime.store
    interrupt = store.interrupt(interrupt_id)
    group = store.groups.group(interrupt.group) if interrupt and interrupt.group else None
    if (
        interrupt is None
        or group is None
        or group.state is not GroupState.OPEN
        or interrupt.state is InterruptState.OPEN
    ):
        return
    run = store.get(run_id)
    host = runtime.hosts.for_run(run)
    if group.mode is GroupMode.EACH:
        _draw_progress(store, host, run, group)
    elif interrupt.message:
        host.question_closed(run, interrupt)
        store.groups.mark_shown(interrupt.id)
    log.info("answer shown while the group waits", **{**run.log_context(), "interrupt_id": interrupt_id})


def _draw_progress(store: RunStore, host: Interactor, run: RunRecord, group: GroupRecord) -> None:
    """Draw an `ask_each` message's progress, and again while it changed under the draw.

    Two draws can cross. This one read the group open, then the group closed, and the resumed
    run locked the message before this update landed. Slack keeps the last update, so the
    controls would come back on a closed question. Reading again after each update puts the
    newer state last: a close after that read is locked by its resume, later still.
    """
    shown = progress_of(group, store.groups.members(group))
    for draws in range(1, REDRAWS + 2):
        host.group_progress(run, group, shown)
        if shown.closed:
            return  # a closed group's look is final
        latest = store.groups.group(group.id)
        if latest is None:
            return
        now = progress_of(latest, store.groups.members(latest))
        if now == shown or (draws >= REDRAWS and not now.closed):
            return  # each later answer's own `show` draws it
        group, shown = latest, now


def progress_of(group: GroupRecord, members: list[InterruptRecord], *, answering: str = "") -> QuestionProgress:
    """How far the `ask_each` group is: who was asked, and who answered.

    What they answered is included if the request shows it.
    """
    person = {iid: user for user, iid in group.people.items()}
    asked = tuple(person.get(m.id, "") for m in members)
    done = [m for m in members if m.state is InterruptState.ANSWERED]
    shows = bool(members) and members[0].request.show_answers
    return QuestionProgress(
        asked=asked,
        answered=tuple(m.answered_by for m in done),
        need=group.need,
        answers=tuple((m.answered_by, m) for m in done) if shows else (),
        answering=answering,
        closed=group.state is not GroupState.OPEN,
    )


def _open_group(runtime: Runtime, run: RunRecord) -> tuple[GroupRecord, list[InterruptRecord]] | None:
    group = runtime.store.groups.group(run.interrupt) if ids.is_group(run.interrupt) else None
    if group is None or group.state is not GroupState.OPEN:
        return None
    return group, runtime.store.groups.members(group)


def cancel_group(runtime: Runtime, run: RunRecord, by: str) -> RunRecord | None:
    """Cancel a run paused on several questions, closing every open one.

    A worker shows it (see `cancel_effects`). None when the run is not paused on an open group. It
    is None too when another close got there first.
    """
    found = _open_group(runtime, run)
    member = next((m for m in found[1] if m.state is InterruptState.OPEN), None) if found else None
    if found is None or member is None or isinstance(close_member(runtime, member, CloseMode.CANCEL, by), Refusal):
        return None
    return runtime.store.get(run.id)


def remind_group(runtime: Runtime, run: RunRecord, by: str) -> list[InterruptRecord]:
    """Remind the people each open question of the run's group waits for."""
    found = _open_group(runtime, run)
    reminded = [m for m in found[1] if m.state is InterruptState.OPEN] if found else []
    host = runtime.hosts.for_run(run)
    for m in reminded:
        host.remind(run, m)
        runtime.store.add_history(run.id, "reminded", by, interrupt_id=m.id)
    return reminded


def forget_expired_in_group(runtime: Runtime, run: RunRecord) -> None:
    """Prepare an admin's retry of a run that expired on one of several questions.

    The expired attempt is dropped from the journal, so the retried run asks it afresh. For
    `ask_each`, that is the group's attempt. The others the expiry closed as no longer needed are
    asked again with it.
    """
    store = runtime.store
    group = store.groups.group(run.interrupt) if ids.is_group(run.interrupt) else None
    if group is None:
        return
    expired = [m for m in store.groups.members(group) if m.state is InterruptState.EXPIRED]
    if group.mode is GroupMode.EACH and expired:
        store.forget_attempt(run.id, group.key, group.id)
        return
    for m in expired:
        store.forget_attempt(run.id, m.key, m.id)
