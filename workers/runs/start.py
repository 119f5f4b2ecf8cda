"""Starting a run: the one way every host creates a run and sets it going.

Slack's `/parley`, `parley run` and the question service each start runs. They differ in who is
counted, as with Slack's start limits. They also differ in who executes the run first: a worker,
or the asking process. Both are parameters here, so nothing else is written twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workers.logs import Log
from workers.runtime.execute import execute
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import ids, job_ids
from workers.store.records import RunRecord
from workers.store.runs import new_id
from workers.store.starts import Admission, StartLimits

log = Log("parley.runs")


@dataclass(frozen=True)
class StartRefused:
    """A start limit refused the run: nothing was created. `admission` says which limit and when."""

    admission: Admission
    limits: StartLimits


def create_run(
    runtime: Runtime,
    agent: str,
    text: str,
    user: str,
    conversation: dict[str, Any],
    *,
    limits: StartLimits | None = None,
) -> RunRecord | StartRefused:
    """Create a queued run of `agent` on `text`, by `user` in `conversation`.

    With `limits`, the start limits are checked and taken in one step first. These limit runs per
    person, per channel and open at once. Over one, nothing is created and `StartRefused` says
    which.
    """
    run_id = new_id(ids.RUN)
    if limits is not None:
        admission = runtime.store.starts.admit(
            limits,
            team=str(conversation.get("team", "")),
            channel=str(conversation.get("channel", "")),
            user=user,
            run_id=run_id,
        )
        if admission.refused:
            return StartRefused(admission, limits)
    return runtime.store.create(agent, text, user, conversation, run_id)


def begin(runtime: Runtime, run_id: str, *, inline: bool = False) -> str | None:
    """Set a created run going: queued for a worker, or executed here.

    With `inline`, it executes here until it parks and returns the status `execute` left. When
    queued it returns None.
    """
    if inline:
        return execute(runtime, run_id)
    run = runtime.store.get(run_id)
    enqueue_run(runtime.queue, run_id, run.job or job_ids.first(run_id))
    return None


def start_run(
    runtime: Runtime,
    agent: str,
    text: str,
    user: str,
    conversation: dict[str, Any],
    *,
    limits: StartLimits | None = None,
    before: Callable[[RunRecord], None] | None = None,
) -> RunRecord | StartRefused:
    """Create the run and queue it for a worker.

    `before` runs in between, e.g. to post a thread's root message.
    """
    run = create_run(runtime, agent, text, user, conversation, limits=limits)
    if isinstance(run, StartRefused):
        return run
    if before is not None:
        try:
            before(run)
        except Exception:  # the worker posts what `before` could not
            log.error("could not prepare the run; the worker will", exc=True, **run.log_context())
    begin(runtime, run.id)
    return runtime.store.get(run.id)
