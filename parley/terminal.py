"""`parley run`: the composition root that runs one agent inline, answering its questions here.

The run is an ordinary durable run in Redis (so `parley runs show` sees it), but
this process executes it itself with a `TerminalHost`, which asks synchronously:
nothing parks and no worker is involved. A retryable failure is retried here
after the usual delay. Quitting mid-question leaves the run `running`; its lease
lapses and, where workers run, the sweep takes it over.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import time

from rq.exceptions import NoSuchJobError
from rq.job import Job

from bot.terminal import Aborted, TerminalHost
from parley.bootstrap import build_runtime, connect_redis
from parley.settings import Settings
from workers.registry import load_agents
from workers.runtime.execute import execute
from workers.runtime.host import HostRouter
from workers.runtime.wiring import Runtime
from workers.store.records import RunRecord, RunStatus


def terminal_user() -> str:
    """The OS user name, shaped as a Parley user id (it becomes the question's assignee)."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        name = f"uid{os.getuid()}"
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)[:64] or "terminal"


def _retry_delay(runtime: Runtime, failures: int) -> float:
    """The delay `execute` chose for the retry after `failures` failures."""
    delays = runtime.settings.retry_delays
    return delays[min(failures - 1, len(delays) - 1)] if delays and failures > 0 else 0.0


def _drop_job(runtime: Runtime, job_id: str) -> None:
    """Withdraw the worker job a retry enqueued: this process runs the retry itself.

    Should this process die before retrying, the sweep gives the queued run a new job.
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
            _drop_job(runtime, record.job)
        delay = _retry_delay(runtime, record.failures)
        host.notice(f"The run failed ({record.error}); retrying in {delay:g}s (attempt {record.failures + 1}).")
        time.sleep(delay)
    return runtime.store.get(run_id)


def _stopped(runtime: Runtime, host: TerminalHost, run_id: str) -> None:
    status = runtime.store.get(run_id).status
    if status is RunStatus.RUNNING:
        state = f"stays running until its lease lapses (about {runtime.settings.lease_ttl:g}s)"
    else:
        state = f"is {status.value}"
    host.notice(f"\nStopped. Run {run_id} {state}; see it with: parley runs show {run_id}")


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


def run_in_terminal(settings: Settings, agent_name: str, text: str) -> int:
    """Run `agent_name` on `text` in this terminal; 0 on success, 1 on failure, 130 when stopped."""
    spec = load_agents(settings.parley_agents).get(agent_name)  # UnknownAgent lists them; checked before Redis
    host = TerminalHost()
    runtime = build_runtime(settings, connect_redis(settings), HostRouter({"terminal": host}))
    record = runtime.store.create(spec.name, text, terminal_user(), {"host": "terminal"})
    host.notice(f"Run {record.id}: {spec.name} {text}".rstrip())
    try:
        final = execute_inline(runtime, host, record.id)
    except (Aborted, KeyboardInterrupt):
        _stopped(runtime, host, record.id)
        return 130
    return conclude(runtime, host, final)
