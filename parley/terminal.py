"""`parley run`: the composition root that runs one agent inline, answering its questions here.

The run is an ordinary durable run in Redis (so `parley runs show` sees it), but this
process executes it itself with a `TerminalHost`, which asks synchronously: while the
person answers, nothing parks and no worker is involved. A retryable failure is
retried here after the usual delay.

Stopping (Ctrl-C) leaves the run where anyone can carry it on, and says which:

- at a question, the run is paused on it, the question open: `parley run --resume RUN_ID`
  asks it again here (the items answered before stopping pre-filled), and an answer given
  elsewhere resumes it on any worker;
- anywhere else (inside a step), the run is handed back, queued with a job, for a
  `parley worker` or `parley run --resume`; the step it was in runs again, recorded
  steps do not.
"""

from __future__ import annotations

import contextlib
import sys
import time

from rq.exceptions import NoSuchJobError
from rq.job import Job

from bot.terminal import TerminalHost
from parley.bootstrap import build_runtime, connect_redis
from parley.identity import os_user
from parley.settings import Settings
from workers.exceptions import ParleyError
from workers.registry import load_agents
from workers.runtime.execute import execute
from workers.runtime.host import InteractorRouter
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.drafts import Drafts
from workers.store.records import RunRecord, RunStatus
from workers.store.runs import history_entry


class CannotRun(ParleyError):
    """`parley run` refused before it changed anything; the message says why, in one line."""


def require_terminal() -> None:
    """Refuse to go on without a person at a terminal to answer the questions."""
    if not sys.stdin.isatty():
        raise CannotRun("parley run asks its questions in a terminal, and standard input is not one")


def _retry_delay(runtime: Runtime, failures: int) -> float:
    """The delay `execute` chose for the retry after `failures` failures."""
    delays = runtime.settings.retry_delays
    return delays[min(failures - 1, len(delays) - 1)] if delays and failures > 0 else 0.0


def drop_job(runtime: Runtime, job_id: str) -> None:
    """Withdraw a worker job for the run: this process executes the run itself.

    Should this process die before executing it, the sweep gives the queued run a new job.
    """
    with contextlib.suppress(NoSuchJobError):
        Job.fetch(job_id, connection=runtime.redis, serializer=runtime.queue.serializer).delete()


def execute_inline(runtime: Runtime, host: TerminalHost, run_id: str) -> RunRecord:
    """Execute the run here, retrying inline after a retryable failure, until it leaves `queued`."""
    while execute(runtime, run_id) == RunStatus.QUEUED.value:
        record = runtime.store.get(run_id)
        if record.status is not RunStatus.QUEUED:
            break
        if record.job:
            drop_job(runtime, record.job)
        delay = _retry_delay(runtime, record.failures)
        host.notice(f"The run failed ({record.error}); retrying in {delay:g}s (attempt {record.failures + 1}).")
        time.sleep(delay)
    return runtime.store.get(run_id)


def hand_back(runtime: Runtime, run_id: str) -> None:
    """Let go of a run stopped outside a question: queued again, with a job any worker takes.

    A running run gets a new epoch, which fences off anything this process might still
    write, and its lease is cleared, so nobody waits for it to lapse.
    """
    store = runtime.store
    run = store.get(run_id)
    if run.status is RunStatus.RUNNING:
        job_id = job_ids.hand_back(run_id, run.epoch)
        ok, _, _ = store.transition(
            run_id,
            [RunStatus.RUNNING],
            RunStatus.QUEUED,
            epoch=run.epoch,
            lease="clear",
            bump_epoch=True,
            history=history_entry("handed back", os_user(), epoch=run.epoch),
            job=job_id,
        )
        if not ok:
            return
    elif run.status is RunStatus.QUEUED:
        job_id = run.job or job_ids.first(run_id)  # stopped before its execution, or while waiting to retry
    else:
        return
    enqueue_run(runtime.queue, run_id, job_id)


def stopped(runtime: Runtime, host: TerminalHost, run_id: str) -> int:
    """Say what state the stopped run is in, as `parley runs show` will show it; exit status 130."""
    status = runtime.store.get(run_id).status
    resume = f"parley run --resume {run_id}"
    if status is RunStatus.PAUSED:
        state = f"is paused on its question; answer it here with: {resume}"
    elif status is RunStatus.QUEUED:
        state = f"is queued: a parley worker will carry it on, or carry it on here with: {resume}"
    else:
        state = f"is {status.value}"
    host.notice(f"\nStopped. Run {run_id} {state} (see it with: parley runs show {run_id})")
    return 130


def conclude(runtime: Runtime, host: TerminalHost, record: RunRecord) -> int:
    """Print how the run ended unless the host already did; 0 when it succeeded."""
    if record.status is RunStatus.SUCCEEDED:
        if record.id not in host.reported:
            host.finished(record, record.result)
        return 0
    if record.status.is_final:
        if record.id not in host.reported:
            host.failed(record, record.error or f"the run was {record.status.value}")
        return 1
    host.notice(f"Run {record.id} is {record.status.value} elsewhere; follow it with: parley runs show {record.id}")
    return 1


def drive(runtime: Runtime, host: TerminalHost, run_id: str) -> int:
    """Execute the run here to its end, or to where the person stopped it; the command's exit status."""
    try:
        final = execute_inline(runtime, host, run_id)
    except KeyboardInterrupt:
        hand_back(runtime, run_id)
        return stopped(runtime, host, run_id)
    if run_id in host.stopped:
        return stopped(runtime, host, run_id)
    return conclude(runtime, host, final)


def terminal_runtime(settings: Settings, host: TerminalHost) -> Runtime:
    """The runtime of a `parley run` process; its host keeps drafts of half-answered questions in Redis."""
    client = connect_redis(settings)
    host.drafts = host.drafts or Drafts(client)
    return build_runtime(settings, client, InteractorRouter({"terminal": host}))


def run_in_terminal(settings: Settings, agent_name: str, text: str) -> int:
    """Run `agent_name` on `text` in this terminal; 0 on success, 1 on failure, 130 when stopped."""
    spec = load_agents(settings.parley_agents).startable(agent_name)  # UnknownAgent lists them; before Redis
    if spec.usage and not text.strip():
        raise CannotRun(f"{spec.name} needs its text: parley run {spec.name} {spec.usage}")
    require_terminal()
    host = TerminalHost()
    runtime = terminal_runtime(settings, host)
    record = runtime.store.create(spec.name, text, os_user(), {"host": "terminal"})
    host.notice(f"Run {record.id}: {spec.name} {text}".rstrip())
    return drive(runtime, host, record.id)
