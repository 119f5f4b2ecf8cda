"""Admin operations on runs: list, show, cancel, retry, remind, via `RunService`.

A cancel is written here, and a worker does what follows (`cancel_effects`). So the asking
process needs no Slack token for it: the CLI, the bot or the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from workers import metrics
from workers.exceptions import AdminError
from workers.logs import Log
from workers.runtime import cancel_effects
from workers.runtime.group_close import cancel_group, forget_expired_in_group, remind_group
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import ids, job_ids
from workers.store import journal_names as names
from workers.store.question_closes import Closed
from workers.store.records import (
    CloseMode,
    GroupState,
    HistoryEntry,
    InterruptRecord,
    InterruptState,
    RunRecord,
    RunStatus,
)
from workers.store.run_writes import history_entry

log = Log("parley.admin")
UNREADABLE = (ValueError, KeyError, TypeError)
"""What reading a record written by another version raises (pydantic's ValidationError is a ValueError)."""


@dataclass
class RunPage:
    runs: list[RunRecord]
    page: int
    has_next: bool


@dataclass(frozen=True)
class RunSummary:
    """One run as a listing shows it: what, by whom, how far.

    Listings are the Slack Home tab and `/parley runs`. Only `RunSummary.of` builds it, so every
    listing reads the same fields. `status` is a `RunStatus` value. `assignees` are who the run's
    open question waits on.
    """

    run_id: str
    agent: str
    status: str
    text: str
    started_by: str
    updated_at: float
    assignees: tuple[str, ...] = ()
    questions: tuple[QuestionSummary, ...] = ()
    """For a run paused on several questions at once: each one's progress (one per person for `ask_each`)."""

    @classmethod
    def of(
        cls, run: RunRecord, interrupt: InterruptRecord | None = None, members: list[InterruptRecord] | None = None
    ) -> RunSummary:
        """`run` with the assignees of the question it is paused on.

        That is `interrupt` when given, else the open `members` of its group.
        """
        members = members or []
        waiting = [a for m in members if m.state is InterruptState.OPEN for a in m.assignees]
        return cls(
            run_id=run.id,
            agent=run.agent,
            status=run.status.value,
            text=run.text,
            started_by=run.started_by,
            updated_at=run.updated_at,
            assignees=tuple(interrupt.assignees) if interrupt else tuple(dict.fromkeys(waiting)),
            questions=tuple(QuestionSummary.of(m) for m in members),
        )


@dataclass(frozen=True)
class QuestionSummary:
    """One of several questions a run waits on: key, state, assignees, answerers."""

    key: str
    state: str
    assignees: tuple[str, ...]
    answered_by: str = ""

    @classmethod
    def of(cls, interrupt: InterruptRecord) -> QuestionSummary:
        return cls(interrupt.key, interrupt.state.value, tuple(interrupt.assignees), interrupt.answered_by)


def summarize(runtime: Runtime, run: RunRecord) -> RunSummary:
    """`run` as listings show it, with each question it is paused on."""
    store = runtime.store
    if not run.interrupt:
        return RunSummary.of(run)
    try:
        group = store.groups.group(run.interrupt) if ids.is_group(run.interrupt) else None
        if group is not None:
            return RunSummary.of(run, members=store.groups.members(group))
        return RunSummary.of(run, store.interrupt(run.interrupt))
    except UNREADABLE as exc:  # its question was written by another version: the run is still listed
        log.error("the run's question cannot be read", **run.log_context(), error=repr(exc))
        return RunSummary.of(run)


@dataclass
class RunDetail:
    """Everything an admin may see of a run: `parley runs show` and Slack's Inspect."""

    run: RunRecord
    interrupt: InterruptRecord | None
    history: list[HistoryEntry] = field(default_factory=list)
    steps: dict[str, object] = field(default_factory=dict)
    """The results of the steps recorded so far, by step key."""
    questions: list[InterruptRecord] = field(default_factory=list)
    """The questions of the group the run is paused on, when it asked several at once."""
    receipts: dict[str, str] = field(default_factory=dict)
    """The sha256 of each closed question's signed receipt, by question id (docs/receipts.md)."""


RunFilter = Callable[[RunRecord], bool]
"""Which runs a listing shows (with many workspaces: the runs of the asker's workspace)."""
SCAN_CHUNK = 200
OPEN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED)


def list_runs(
    runtime: Runtime,
    status: RunStatus | None = None,
    *,
    page: int = 0,
    per_page: int = 20,
    where: RunFilter | None = None,
) -> RunPage:
    """One page of runs, newest first, only those `where` keeps.

    It reads through the status index.
    """
    if where is None:
        ids = runtime.store.list_ids(status, offset=page * per_page, limit=per_page + 1)
        runs = runtime.store.runs(ids[:per_page])
        return RunPage(runs=runs, page=page, has_next=len(ids) > per_page)
    kept = [r for r in _scan(runtime, status, where, stop_after=(page + 1) * per_page + 1)]
    start = page * per_page
    return RunPage(runs=kept[start : start + per_page], page=page, has_next=len(kept) > start + per_page)


def _scan(
    runtime: Runtime, status: RunStatus | None, where: RunFilter, stop_after: int | None = None
) -> list[RunRecord]:
    """The runs in `status`'s index that `where` keeps, newest first, chunk by chunk.

    The indexes are not kept per workspace. So a filtered listing reads past other workspaces' runs.
    It stops once it has `stop_after` runs.
    """
    kept: list[RunRecord] = []
    offset = 0
    while stop_after is None or len(kept) < stop_after:
        ids = runtime.store.list_ids(status, offset=offset, limit=SCAN_CHUNK)
        kept.extend(r for r in runtime.store.runs(ids) if where(r))
        if len(ids) < SCAN_CHUNK:
            break
        offset += SCAN_CHUNK
    return kept if stop_after is None else kept[:stop_after]


def count_runs(runtime: Runtime, where: RunFilter | None = None) -> dict[str, int]:
    """Runs by status (every status's count), or only those `where` keeps."""
    if where is None:
        return runtime.store.counts()
    return {s.value: len(_scan(runtime, s, where)) for s in RunStatus}


def cancel_where(runtime: Runtime, where: RunFilter, by: str) -> list[RunRecord]:
    """Cancel every queued, running or paused run `where` keeps, with a history entry.

    This serves an uninstalled workspace. A run that finished meanwhile is left as it is. One run's
    failure is logged and never stops the others' cancellation.
    """
    cancelled: list[RunRecord] = []
    for status in OPEN_STATUSES:
        for run in _scan(runtime, status, where):
            try:
                cancelled.append(cancel(runtime, run.id, by=by))
            except AdminError as exc:
                log.info("not cancelled: " + str(exc), **run.log_context())
            except Exception:  # any other failure: the next runs are cancelled all the same
                log.error("cancelling the run failed; going on with the others", exc=True, **run.log_context())
    return cancelled


def show(runtime: Runtime, run_id: str) -> RunDetail:
    """The run and all about it.

    A question this version cannot read is left out and logged.
    """
    run = runtime.store.get(run_id)
    journal = runtime.store.journal(run_id)
    steps = names.steps(journal)
    interrupt, questions = None, []
    try:
        interrupt = runtime.store.interrupt(run.interrupt) if run.interrupt else None
        group = runtime.store.groups.group(run.interrupt) if interrupt is None and run.interrupt else None
        questions = runtime.store.groups.members(group) if group else []
    except UNREADABLE as exc:
        log.error("the run's question cannot be read", **run.log_context(), error=repr(exc))
    history = runtime.store.history(run_id)
    asked = [str(h.detail["interrupt_id"]) for h in history if h.detail.get("interrupt_id")]
    return RunDetail(
        run=run,
        interrupt=interrupt,
        history=history,
        steps=steps,
        questions=questions,
        receipts=runtime.receipts.digests(asked),
    )


def cancel(runtime: Runtime, run_id: str, by: str, *, waiting_only: bool = False) -> RunRecord:
    """Cancel a live run, closing a paused run's question so nobody answers it.

    The cancel is one atomic write. A worker then shows it on the run's messages and tells its
    webhook or workflow. That job is queued here (`cancel_effects`). With `waiting_only` (the
    API's cancel of a question) a run whose question has closed is left alone.
    """
    store = runtime.store
    run = store.get(run_id)
    if run.status is RunStatus.PAUSED and (in_group := cancel_group(runtime, run, by)) is not None:
        log.info("cancelled", **run.log_context(), user=by)
        cancel_effects.enqueue(runtime, in_group)
        return in_group
    if run.status is RunStatus.PAUSED and run.interrupt:
        interrupt = store.interrupt(run.interrupt)
        if interrupt is not None and isinstance(store.close(interrupt, CloseMode.CANCEL, by), Closed):
            cancelled = store.get(run_id)
            metrics.run_ended(run.agent, RunStatus.CANCELLED.value)
            log.info("cancelled", **run.log_context(), user=by)
            cancel_effects.enqueue(runtime, cancelled)
            return cancelled
        run = store.get(run_id)
    if waiting_only and run.status is not RunStatus.PAUSED and _closed(runtime, run.interrupt):
        raise AdminError(f"run {run_id}'s question has closed; only a waiting question can be cancelled")
    ok, reason, old = store.transition(
        run_id,
        [RunStatus.QUEUED, RunStatus.RUNNING],
        RunStatus.CANCELLED,
        epoch=run.epoch if waiting_only else None,  # not past a worker that has since asked
        lease="clear",
        bump_epoch=True,
        history=history_entry("cancelled", by),
    )
    if not ok:
        raise AdminError(f"run {run_id} is {old or reason}; only queued, running or paused runs can be cancelled")
    metrics.run_ended(run.agent, RunStatus.CANCELLED.value)
    log.info("cancelled", **run.log_context(), user=by)
    cancelled = store.get(run_id)
    cancel_effects.enqueue(runtime, cancelled)  # an answer accepted before the cancel is shown
    return cancelled


def _closed(runtime: Runtime, asked: str) -> bool:
    """Whether the question (or group) a run asked has closed; one still being posted has not."""
    if not asked:
        return False
    if ids.is_group(asked):
        group = runtime.store.groups.group(asked)
        return group is not None and group.state is not GroupState.OPEN
    question = runtime.store.interrupt(asked)
    return question is not None and question.state not in (InterruptState.OPEN, InterruptState.POSTING)


def retry(runtime: Runtime, run_id: str, by: str) -> RunRecord:
    """Queue a failed or expired run again, keeping its steps so none repeats.

    An expired run asks the expired question again, as a fresh attempt.
    """
    store = runtime.store
    run = store.get(run_id)
    job_id = job_ids.admin_retry(run_id, run.epoch)
    ok, reason, old = store.transition(
        run_id,
        [RunStatus.FAILED, RunStatus.EXPIRED],
        RunStatus.QUEUED,
        bump_epoch=True,
        failures=-run.failures,
        history=history_entry("retried", by),
        error="",
        job=job_id,
    )
    if not ok:
        raise AdminError(f"run {run_id} is {old or reason}; only failed or expired runs can be retried")
    store.forget_final(run_id)
    if old == RunStatus.EXPIRED.value:
        _forget_expired_attempt(runtime, run)
    enqueue_run(runtime.queue, run_id, job_id)
    log.info("retried", **run.log_context(), user=by)
    return store.get(run_id)


def _forget_expired_attempt(runtime: Runtime, run: RunRecord) -> None:
    """Drop the expired question from the replay journal, so the retry asks again.

    Left in place, the replay would meet the expired attempt and expire at once.
    """
    interrupt = runtime.store.interrupt(run.interrupt) if run.interrupt else None
    if interrupt is None and run.interrupt:
        forget_expired_in_group(runtime, run)
    if interrupt is None or interrupt.state is not InterruptState.EXPIRED:
        return
    runtime.store.forget_attempt(run.id, interrupt.key, interrupt.id)


def remind(runtime: Runtime, run_id: str, by: str) -> InterruptRecord:
    """Mention the assignees of a paused run's question again."""
    run = runtime.store.get(run_id)
    interrupt = runtime.store.interrupt(run.interrupt) if run.interrupt else None
    if run.status is RunStatus.PAUSED and interrupt is None and (reminded := remind_group(runtime, run, by)):
        return reminded[0]
    if run.status is not RunStatus.PAUSED or interrupt is None:
        raise AdminError(f"run {run_id} is {run.status.value}; only paused runs have someone to remind")
    runtime.hosts.for_run(run).remind(run, interrupt)
    runtime.store.add_history(run_id, "reminded", by, interrupt_id=interrupt.id)
    return interrupt
