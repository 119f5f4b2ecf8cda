"""`parley run`: the composition root running one agent inline, answering its questions here.

The run is an ordinary durable run in Redis, so `parley runs show` sees it. But this process
executes it itself with a `TerminalHost`, which asks synchronously. While the person answers,
nothing parks and no worker is involved. A retryable failure is retried here after the usual
delay.

Stopping (Ctrl-C) leaves the run where anyone can carry it on, and says which:

- At a question, the run is paused on it, the question open. `parley run --resume RUN_ID` asks
  it again here, pre-filling the items answered before. An answer given elsewhere resumes it on
  any worker.
- Anywhere else (inside a step), the run is handed back, queued with a job. A `parley worker` or
  `parley run --resume` carries it on. The step it was in runs again, but recorded steps do not.
"""

from __future__ import annotations

import sys

from bot.terminal import TerminalHost
from parley.bootstrap import terminal_runs
from parley.identity import os_user
from parley.settings import Settings
from workers.exceptions import ParleyError
from workers.registry import TRY_AGAIN, load_agents
from workers.runs import RunRecord, RunService, RunStatus, StartRefused


class CannotRun(ParleyError):
    """`parley run` refused before changing anything, and says why in one line."""


def require_terminal() -> None:
    """Refuse to go on without a person at a terminal to answer."""
    if not sys.stdin.isatty():
        raise CannotRun("parley run asks its questions in a terminal, and standard input is not one")


def execute_inline(runs: RunService, host: TerminalHost, run_id: str) -> RunRecord:
    """Execute the run here until it leaves `queued`.

    A retryable failure is retried inline.
    """
    return runs.execute_inline(run_id, host.notice)


def stopped(runs: RunService, host: TerminalHost, run_id: str) -> int:
    """Say the stopped run's state as `parley runs show` will, with exit status 130."""
    status = runs.run(run_id).status
    resume = f"parley run --resume {run_id}"
    if status is RunStatus.PAUSED:
        state = f"is paused on its question; answer it here with: {resume}"
    elif status is RunStatus.QUEUED:
        state = f"is queued: a parley worker will carry it on, or carry it on here with: {resume}"
    else:
        state = f"is {status.value}"
    host.notice(f"\nStopped. Run {run_id} {state} (see it with: parley runs show {run_id})")
    return 130


def conclude(host: TerminalHost, record: RunRecord) -> int:
    """Print how the run ended unless the host did, returning 0 on success."""
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


def drive(runs: RunService, host: TerminalHost, run_id: str) -> int:
    """Execute the run here to its end, or to where the person stopped it.

    Returns the command's exit status.
    """
    try:
        final = execute_inline(runs, host, run_id)
    except KeyboardInterrupt:
        runs.hand_back(run_id, os_user())
        return stopped(runs, host, run_id)
    if run_id in host.stopped:
        return stopped(runs, host, run_id)
    return conclude(host, final)


def run_in_terminal(settings: Settings, agent_name: str, text: str) -> int:
    """Run `agent_name` on `text` in this terminal.

    Returns 0 on success, 1 on failure, 130 when stopped.
    """
    spec = load_agents(settings.parley_agents, restart=TRY_AGAIN).startable(agent_name)  # lists them; before Redis
    if spec.usage and not text.strip():  # as `/parley NAME` in Slack: what it needs, then what it does
        described = f"\n{spec.description}" if spec.description else ""
        raise CannotRun(f"{spec.name} needs its text: parley run {spec.name} {spec.usage}{described}")
    require_terminal()
    host = TerminalHost()
    runs = terminal_runs(settings, host)
    record = runs.create(spec.name, text, os_user(), {"host": "terminal"})
    if isinstance(record, StartRefused):  # no limits are given, so none refuses; said plainly all the same
        raise CannotRun(f"a start limit refused the run ({record.admission.refused})")
    host.notice(f"Run {record.id}: {spec.name} {text}".rstrip())
    return drive(runs, host, record.id)
