"""Claiming a question put to many (`Request.claim`), and releasing it.

The store makes each change atomically, so one of many concurrent clicks claims the question.
This module words the refusals for people. It tells the run's host (`Interactor.claimed`), which
shows "Claimed by …" and the Release control.
"""

from __future__ import annotations

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord

log = Log("parley.people")


class ClaimRefused(ParleyError):
    """A claim or release not made, and nothing written.

    The message says why, for people.
    """


_WHY = {
    "answered": "This question was already answered.",
    "cancelled": "This question was cancelled.",
    "expired": "This question expired.",
    "posting": "This question is still being posted; try again in a moment.",
    "unknown": "This question no longer exists.",
    "unclaimed": "Nobody has claimed this question.",
}


def claim(runtime: Runtime, interrupt: InterruptRecord, *, by: str) -> InterruptRecord:
    """Make `by` the only one who may answer `interrupt`.

    Raises `ClaimRefused` when someone was first.
    """
    if not interrupt.request.claim:
        raise ClaimRefused("This question cannot be claimed.")
    change = runtime.store.claims.claim(interrupt.id, interrupt.run_id, by)
    if not change.done:
        now = runtime.store.interrupt(interrupt.id)
        if change.reason == "claimed" and now is not None:
            who = "you" if now.claimed_by == by else f"<@{now.claimed_by}>"
            raise ClaimRefused(f"This question was already claimed by {who}.")
        if change.reason == "not_allowed":
            raise ClaimRefused("Only the people asked can claim this question.")
        raise ClaimRefused(_WHY.get(change.reason, "This question is not waiting for an answer."))
    return _told(runtime, interrupt, by=by, released=False)


def release(runtime: Runtime, interrupt: InterruptRecord, *, by: str, is_admin: bool) -> InterruptRecord:
    """Give a claimed question back to everyone asked, by its claimer or an admin."""
    change = runtime.store.claims.release(interrupt.id, interrupt.run_id, by, admin=is_admin)
    if not change.done:
        if change.reason == "not_allowed":
            raise ClaimRefused("Only the person who claimed this question, or a Parley admin, can release it.")
        raise ClaimRefused(_WHY.get(change.reason, "This question is not waiting for an answer."))
    return _told(runtime, interrupt, by=by, released=True)


def _told(runtime: Runtime, interrupt: InterruptRecord, *, by: str, released: bool) -> InterruptRecord:
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt.id, "user": by, "team": interrupt.team}
    log.info("question released" if released else "question claimed", **ctx)
    now = runtime.store.interrupt(interrupt.id)
    if now is None:
        raise ClaimRefused(_WHY["unknown"])
    if (run := runtime.store.find(interrupt.run_id)) is not None:
        runtime.hosts.for_run(run).claimed(run, now, by=by, released=released)
    return now
