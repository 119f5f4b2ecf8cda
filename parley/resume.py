"""`parley run --resume RUN_ID`: carry on, in this terminal, a run stopped in one.

A paused run's open question is asked again here. The answer goes through the same acceptance as
any other (`accept`). That means the stored request, the assignees, and exactly once. Then the
run executes inline, replaying what it recorded, so no step runs twice. A queued run, handed
back from inside a step, executes inline at once. Every refusal comes before anything is
written, as one line.
"""

from __future__ import annotations

from bot.terminal import TerminalHost
from parley.bootstrap import terminal_runs
from parley.identity import os_user
from parley.settings import Settings
from parley.terminal import CannotRun, drive, require_terminal, stopped
from workers.interaction import Answer, AnswerError
from workers.runs import AcceptRefused, InterruptRecord, InterruptState, RefusalReason, RunRecord, RunService, RunStatus


def _open_question(runs: RunService, run: RunRecord, user: str) -> InterruptRecord:
    """The question a paused run waits on, when `user` may answer it."""
    interrupt = runs.interrupt(run.interrupt)
    if interrupt is None or interrupt.state is not InterruptState.OPEN:
        raise CannotRun(f"run {run.id} has no open question to answer; see it with: parley runs show {run.id}")
    if user not in interrupt.assignees:
        raise CannotRun(f"run {run.id} is waiting on {', '.join(interrupt.assignees)}; only they can answer it")
    return interrupt


def resumable(runs: RunService, run_id: str, user: str) -> RunRecord:
    """The run, if `user` started it with `parley run` and it is paused or queued.

    Otherwise `CannotRun`.
    """
    run = runs.run(run_id)
    if run.conversation.get("host") != "terminal":
        raise CannotRun(f"run {run_id} was not started with parley run; answer it where it was started")
    if run.started_by != user:
        raise CannotRun(f"run {run_id} was started by {run.started_by}; only they can resume it")
    if run.status not in (RunStatus.PAUSED, RunStatus.QUEUED):
        raise CannotRun(f"run {run_id} is {run.status.value}; only a paused or queued run can be resumed")
    runs.registry.get(run.agent)  # an agent this process cannot run is refused now, not as a failed run
    return run


def answer_here(runs: RunService, host: TerminalHost, interrupt: InterruptRecord, user: str) -> None:
    """Ask the open question again until an answer is accepted.

    Quitting raises KeyboardInterrupt or EOFError.
    """

    def check(answers: list[Answer]) -> list[Answer]:
        try:  # no worker job: this process executes the run next, so no worker can take it first
            return runs.answer_here(interrupt, user, answers)
        except AcceptRefused as exc:
            if exc.reason is RefusalReason.INVALID:
                raise AnswerError(dict(exc.refusal.errors)) from None
            raise CannotRun(f"run {interrupt.run_id}: {exc}") from None

    host.collect(
        interrupt.request,
        check,
        context=interrupt.context,
        changes=interrupt.context_changes,
        draft=(interrupt.id, interrupt.expires_at),
    )


def resume_in_terminal(settings: Settings, run_id: str) -> int:
    """Carry on `run_id` here, exiting as `parley run` does, or 2 when refused."""
    host = TerminalHost()
    runs = terminal_runs(settings, host)
    user = os_user()
    run = resumable(runs, run_id, user)
    interrupt = _open_question(runs, run, user) if run.status is RunStatus.PAUSED else None
    require_terminal()
    return carry_on(runs, host, run, interrupt, user)


def carry_on(runs: RunService, host: TerminalHost, run: RunRecord, interrupt: InterruptRecord | None, user: str) -> int:
    """Answer any open question here, then execute the run to its end or next stop.

    The run stays this process's until then. The answer enqueues no worker job (`resume_here`).
    """
    host.notice(f"Run {run.id}: {run.agent} {run.text}".rstrip() + " (resumed)")
    if interrupt is None:
        if run.job:
            runs.drop_job(run.job)
    else:
        try:
            answer_here(runs, host, interrupt, user)
        except (KeyboardInterrupt, EOFError):
            return stopped(runs, host, run.id)
    return drive(runs, host, run.id)
