"""One execution of a run: claim it, replay the agent, record how it ended.

A claim moves the run from `queued` to `running` and bumps its epoch. The worker then holds a
lease it renews. That epoch fences every write the execution makes. A worker may lose its lease:
killed, paused by the OS, or partitioned. It then cannot write after another worker took the run
over.
"""

from __future__ import annotations

import contextvars
import time
import traceback

from rq.timeouts import JobTimeoutException

from workers import metrics
from workers.exceptions import AgentError, StaleEpoch, Suspend, UnknownAgent
from workers.interaction import SECRET_MASK, ContextError, FormError, QuestionExpired
from workers.logs import Log
from workers.runtime.arg_schema import SchemaUnusable
from workers.runtime.ask_group import show_closed_group
from workers.runtime.execution import Execution
from workers.runtime.lease import LeaseKeeper
from workers.runtime.queues import enqueue_run
from workers.runtime.run import Run, opened_secrets
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store import journal_names as names
from workers.store.records import InterruptState, RunStatus
from workers.store.run_writes import history_entry

log = Log("parley.execute")


def execute(runtime: Runtime, run_id: str) -> str:
    """Execute `run_id` if queued, returning the status this execution ends in."""
    runtime.receipts.write_for_run(run_id)  # signed before the run goes on from its answer (docs/receipts.md)
    lease_until = time.time() + runtime.settings.lease_ttl
    claim = runtime.store.claim(run_id, lease_until)
    if claim.record is None or claim.journal is None:
        log.info("nothing to execute", run_id=run_id, reason=claim.refused, status=claim.old)
        return claim.old or claim.refused
    epoch, record = claim.epoch, claim.record
    keeper = LeaseKeeper(runtime, run_id, epoch, held_until=lease_until)
    with keeper:
        host = runtime.hosts.for_run(record)
        parked_on = {record.interrupt: claim.interrupt} if record.interrupt else {}
        run = Execution(runtime, record, epoch, host, keeper, journal=claim.journal, interrupts=parked_on)
        run.log.info("executing", epoch=epoch, failures=record.failures)
        try:
            return _replay(runtime, run)
        except StaleEpoch:  # lost while ending the run (a lease lapsed during an outage)
            return "stale"


def _replay(runtime: Runtime, run: Execution) -> str:
    """Replay the agent from the start and record how this execution ended."""
    record, host = run.record, run.host
    author = Run(run)
    try:
        _lock_closed_question(runtime, run)
        show_closed_group(run, record)
        spec = runtime.registry.get(record.agent)
        # In a context of its own: branches it opened (`tally`) end with this execution.
        result = masked(author, str(contextvars.copy_context().run(spec.fn, author, record.text)))
        run.once(names.FINAL, lambda: host.finished(record, result), ends_run=True)
        return _end(runtime, run, RunStatus.SUCCEEDED, result=result)
    except Suspend:
        return RunStatus.PAUSED.value
    except StaleEpoch:
        run.log.info("execution lost the run; stopping without writing", epoch=run.epoch)
        return "stale"
    except QuestionExpired as exc:
        reason = masked(author, f"expired: {exc}")
        run.once(names.FINAL, lambda: host.failed(record, reason), ends_run=True)
        return _end(runtime, run, RunStatus.EXPIRED, error=reason)
    except (AgentError, UnknownAgent, ContextError, FormError, SchemaUnusable) as exc:  # no retry would fix these
        return _fail(runtime, run, clipped(masked(author, str(exc))))
    except JobTimeoutException:  # a retry would run its unrecorded step again, from the start
        bound = runtime.settings.run_timeout
        return _fail(runtime, run, f"the execution ran past PARLEY_RUN_TIMEOUT ({bound:g} s) and was stopped")
    except Exception as exc:
        return _retry_or_fail(runtime, run, exc, author)


def _lock_closed_question(runtime: Runtime, run: Execution) -> None:
    """Show the answer or expiry on the question that resumed this run, once.

    The worker does it rather than the bot, keeping the ack path free of Web API calls. And a bot
    that dies right after accepting cannot leave a question looking open.
    """
    iid = run.record.interrupt
    if not iid:
        return
    closed = run.read_interrupt(iid)
    if closed is None or closed.state not in (InterruptState.ANSWERED, InterruptState.EXPIRED):
        return
    if not closed.message:
        return  # the host never showed it (or shows nothing), so there is nothing to update

    def lock() -> None:
        if closed.state is InterruptState.ANSWERED and closed.answered_at:
            metrics.resumed(closed.answered_at)  # once per answer, as the lock is
        run.host.question_closed(run.record, closed)

    # A failure here (Slack down) propagates: the run is retried, and the retry locks it. The
    # lock replaces the message with the same content each time, so its "done" goes with the
    # execution's next write: a crash before that repeats one `chat.update` and nothing else.
    run.once(names.lock(iid), lock, repeatable=True)


def _end(runtime: Runtime, run: Execution, status: RunStatus, **fields: str) -> str:
    def end() -> tuple[bool, str, str]:
        return runtime.store.transition(
            run.run_id,
            [RunStatus.RUNNING],
            status,
            epoch=run.epoch,
            lease="clear",
            history=history_entry(status.value, **fields),
            journal=run.ending_journal(),
            **fields,
        )

    ok, reason, old = run.durable(end, f"end {status.value}", carries_pending=True)
    # A retry after an outage may find its own first attempt applied (the reply was lost).
    ok = ok or (run.retried_writes > 0 and old == status.value)
    if ok:
        metrics.run_ended(run.record.agent, status.value)
        run.log.info("run ended", status=status.value)
    return status.value if ok else reason


def _fail(runtime: Runtime, run: Execution, reason: str) -> str:
    run.log.error("run failed", reason=reason)
    run.once(names.FINAL, lambda: run.host.failed(run.record, reason), ends_run=True)
    return _end(runtime, run, RunStatus.FAILED, error=reason)


REASON_MAX = 4000
"""Characters of an exception kept as a run's error, and of its trace: it is stored several times."""


def clipped(text: str, limit: int = REASON_MAX) -> str:
    """`text` cut to `limit` characters, saying how much more there was."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def masked(author: Run, text: str) -> str:
    """`text` with each secret value `author`'s execution opened replaced by `SECRET_MASK`.

    A result, or an exception's message (`int(token)` quotes the token), may hold one. Its repr's
    escaped form is masked too. Longer values go first, so one holding another is masked whole.
    Mask before clipping: a clip could cut a value, leaving its start unmasked.
    """
    for value in sorted(opened_secrets(author), key=len, reverse=True):
        if value:
            text = text.replace(value, SECRET_MASK).replace(repr(value)[1:-1], SECRET_MASK)
    return text


def _retry_or_fail(runtime: Runtime, run: Execution, exc: Exception, author: Run) -> str:
    reason = clipped(masked(author, f"{type(exc).__name__}: {exc}"))
    trace = clipped(masked(author, traceback.format_exc(-3)))
    # Failures are counted while no progress is made: a step recorded by this execution
    # (or an answer accepted since the last one) started the count afresh.
    failures = (0 if run.progressed else run.record.failures) + 1
    if failures > runtime.settings.max_retries:
        if opened_secrets(author):  # the exception's own text may quote a secret: log its masked trace
            run.log.error("run failed after retries", failures=failures, trace=masked(author, traceback.format_exc()))
        else:
            run.log.error("run failed after retries", exc=True, failures=failures)
        return _fail(runtime, run, reason)
    delays = runtime.settings.retry_delays
    delay = delays[min(failures - 1, len(delays) - 1)] if delays else 0.0
    # Named by the epoch, which no other execution shares: the failure count starts
    # over after an admin retry, and a job id used before would not be enqueued again.
    job_id = job_ids.retry(run.run_id, run.epoch)
    entry = history_entry("retry", error=reason, failures=failures, trace=trace)

    def requeue() -> tuple[bool, str, str]:
        return runtime.store.transition(
            run.run_id,
            [RunStatus.RUNNING],
            RunStatus.QUEUED,
            epoch=run.epoch,
            lease="clear",
            failures=1,
            history=entry,
            journal=run.ending_journal(),  # a final post made before the failure stays made
            error=reason,
            job=job_id,
        )

    ok, _, old = run.durable(requeue, "queue a retry")
    if not ok and not (run.retried_writes and old == RunStatus.QUEUED.value):
        return "stale"
    enqueue_run(runtime.queue, run.run_id, job_id, delay=delay)
    metrics.REQUEUES.labels(cause="retry").inc()
    run.log.warning("run raised; retrying", error=reason, failures=failures, delay=delay)
    return RunStatus.QUEUED.value
