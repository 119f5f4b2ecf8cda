"""The functions RQ runs.

Arguments are ids only. The runtime comes from the process wiring.
"""

from __future__ import annotations

from workers.runtime import wiring
from workers.runtime.cancel_effects import show_cancelled
from workers.runtime.execute import execute
from workers.runtime.group_close import show
from workers.runtime.sweep import schedule_next, sweep


def execute_run(run_id: str) -> str:
    """Execute or replay one run, where pauses and failures finish the job."""
    return execute(wiring.current(), run_id)


def sweep_job() -> dict[str, list[str]]:
    """Run one sweep and schedule the next one."""
    runtime = wiring.current()
    try:
        return sweep(runtime).__dict__
    finally:
        schedule_next(runtime)


def show_job(run_id: str, interrupt_id: str) -> None:
    """Show one answered question of a group on its message, before the resume."""
    show(wiring.current(), run_id, interrupt_id)


def cancelled_job(run_id: str) -> None:
    """Show an admin's cancel on the run's messages, and tell its webhook or workflow."""
    show_cancelled(wiring.current(), run_id)
