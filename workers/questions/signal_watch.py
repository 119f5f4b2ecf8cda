"""Close waiting questions whose Temporal workflow has ended, so nobody answers them for nothing.

A workflow terminated, completed, failed or continued as new runs no code to cancel the question
it waits on. Its question would stay open in Slack, and an answer would reach nobody. Each sweep
(`workers.runtime.sweep`) calls `close_ended` once. It asks Temporal about a bounded batch of
waiting questions with a Temporal target, oldest first. It cancels each whose workflow is no longer
running, through the admin cancel (`by` "temporal"). That locks its message as cancelled and
records why. A thread note tells the people asked.

The batch moves on from sweep to sweep (a cursor in Redis), so every waiting question is looked at
in turn. Temporal unreachable, slow or not configured costs one short wait at most: the pass is
skipped, and the check rests a while (`BACK_OFF`) before a sweep tries again. A workflow is
matched by id alone. So a question asked by a run that continued as new stays open while the new
run is running.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from workers.exceptions import AdminError
from workers.logs import Log
from workers.questions import config as config_mod
from workers.questions import signal_client
from workers.runtime import admin
from workers.runtime.wiring import Runtime
from workers.store.questions import QuestionStore
from workers.store.records import ApiQuestionRecord, RunStatus, TemporalTarget
from workers.store.temporal_watch import TemporalWatch

log = Log("parley.temporal")
SCAN_PER_SWEEP = 200
"""Waiting questions read per pass at most, with or without a Temporal target."""
CHECKS_PER_SWEEP = 20
"""Workflows described per pass at most."""
PASS_TIMEOUT = 3.0
"""Seconds one pass waits on Temporal, all of it: a sweep is never held longer."""
BACK_OFF = 30
"""Seconds the check rests after Temporal failed it, so a Temporal that hangs holds no sweep for long."""
BY = "temporal"
RUNNING = "RUNNING"
NOTE = (
    "Closed without an answer: the Temporal workflow that asked this has ended ({status}), "
    "so nobody is waiting for an answer any more."
)


def close_ended(runtime: Runtime) -> list[str]:
    """Cancel the waiting questions of a batch whose workflow has ended; returns their ids.

    It never raises, so the rest of the sweep goes on.
    """
    cfg = config_mod.current().temporal
    if not cfg.address:
        return []
    try:
        if TemporalWatch(runtime.redis).resting():
            return []
        batch = _batch(runtime)
        if not batch:
            return []
        statuses = _statuses(cfg, [q.temporal for q in batch if q.temporal is not None])
    except Exception as exc:  # Temporal or Redis away: the next sweep looks again
        error = f"{type(exc).__name__}: {exc}"[:300]
        log.info("temporal workflows not checked; a later sweep tries again", error=error, rest=BACK_OFF)
        with contextlib.suppress(Exception):
            TemporalWatch(runtime.redis).rest(BACK_OFF)
        return []
    closed: list[str] = []
    for question, status in zip(batch, statuses, strict=True):
        if status == RUNNING or question.temporal is None:
            continue
        try:
            if _close(runtime, question, question.temporal, status):
                closed.append(question.id)
        except Exception:  # one question's failure holds back no other's
            log.error("closing a question whose workflow ended failed", exc=True, run_id=question.id)
    return closed


def _batch(runtime: Runtime) -> list[ApiQuestionRecord]:
    """The next waiting questions with a Temporal target, oldest first, from where the last pass stopped."""
    watch = TemporalWatch(runtime.redis)
    start, ids = watch.waiting(SCAN_PER_SWEEP)
    batch: list[ApiQuestionRecord] = []
    examined = len(ids)
    for record in QuestionStore(runtime.redis).many(ids):
        if isinstance(record, ApiQuestionRecord) and record.temporal is not None:
            batch.append(record)
            if len(batch) == CHECKS_PER_SWEEP:
                examined = ids.index(record.id) + 1
                break
    at_end = examined == len(ids) and len(ids) < SCAN_PER_SWEEP
    watch.move_to(0 if at_end else start + examined)  # at the end: the next pass starts over
    return batch


def _statuses(cfg: config_mod.TemporalConfig, targets: list[TemporalTarget]) -> list[str]:
    """Each target's workflow status, asked at once, within `PASS_TIMEOUT` in all."""
    client = signal_client.current()
    timeout = min(PASS_TIMEOUT, cfg.attempt_timeout)

    async def described() -> list[Any]:
        return await asyncio.gather(*(client.status(cfg, t, timeout) for t in targets), return_exceptions=True)

    found = client.call(described(), PASS_TIMEOUT)
    if found and all(isinstance(s, BaseException) for s in found):  # Temporal away, not one workflow's trouble
        raise found[0]
    return [s if isinstance(s, str) else RUNNING for s in found]  # one that failed is left for the next pass


def _close(runtime: Runtime, question: ApiQuestionRecord, target: TemporalTarget, status: str) -> bool:
    """Cancel `question`, whose workflow is `status`, and say why; False when it closed meanwhile."""
    try:
        run = admin.cancel(runtime, question.id, by=BY, waiting_only=True)
    except AdminError as exc:
        log.info("not cancelled: " + str(exc), run_id=question.id)
        return False
    if run.status is not RunStatus.CANCELLED:
        return False
    where = {"workflow_id": target.workflow_id, "namespace": target.namespace, "workflow_status": status}
    runtime.store.add_history(question.id, "temporal workflow ended", BY, **where)
    log.info("question cancelled: its workflow has ended", run_id=question.id, **where)
    try:
        runtime.hosts.for_run(run).say(run, NOTE.format(status=status.lower().replace("_", " ")))
    except Exception:  # the question is closed; the note is only a courtesy
        log.error("note on the ended workflow not posted", exc=True, run_id=question.id)
    return True
