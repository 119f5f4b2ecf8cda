"""A question's Temporal target: its outcome signalled to the waiting workflow, at once and by a job.

A question asked with a `temporal` target (`workers.integrations.temporal`) tells a workflow,
not a URL, when it ends. The question may close (answered, expired, cancelled), or its run
fail. Then `announce` records the outcome once and queues `deliver` on the webhooks' queue,
in one transaction. The job has one id and RQ's `Retry`. Each attempt signals the workflow
`SIGNAL` with the same outcome. A failure raises, and RQ tries again after the next interval
(`PARLEY_TEMPORAL_RETRY_INTERVALS`).

A process that sends directly (`signal_direct`: `parley serve`, `parley worker`) also signals
the outcome itself, right after that transaction, off the announcing thread. The job then
waits for the direct attempt's lease to lapse, and finds the delivery done. The process that
accepts an answer announces its outcome (`accepted`). So the signal leaves `parley serve` as
the answer is acked, and the run's own call finds it made.

`parley_temporal_signals` counts every attempt. The question's history records the delivery
and how many attempts it took. A workflow that has ended is not signalled again, since nothing
waits any more. Every attempt at one outcome carries the same request id, which Temporal
records once. The wait helper also keeps only its question's first outcome.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from redis.client import Pipeline
from rq import Retry, get_current_job

from workers.logs import Log
from workers.questions import config as config_mod
from workers.questions import signal_attempts, signal_client, signal_direct
from workers.questions.receipt_views import with_signal_receipt
from workers.questions.signal_client import SIGNAL, SignalRefused, request_id
from workers.questions.views import build_view
from workers.runtime import queues, wiring
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.receipts import ReceiptBook
from workers.store.records import ApiQuestionRecord, InterruptRecord, RunRecord, RunStatus, TemporalTarget, WebhookState
from workers.store.signal_leases import SignalLeases

__all__ = ["DELIVER", "SIGNAL", "SignalRefused", "announce", "deliver", "ended", "outcome_payload", "prepare"]

log = Log("parley.temporal")
DELIVER = queues.SIGNAL
ENDED = ("answered", "expired", "cancelled", "failed")
DONE = ("delivered", "failed")
"""A delivery in either state is over: delivered, or refused or failed for good."""
DEFERRALS = 3600
"""How many times the job may find the direct attempt's lease still held (each a second apart)."""
HELD_BACK = 3600
"""How many times a signal waits a second for its receipt to reach a replica: an hour."""
VIA = "job"
prepare = signal_client.prepare


def outcome_payload(view: dict[str, Any], target: TemporalTarget) -> dict[str, Any]:
    """What the workflow is told: question id, awaited key, how it ended."""
    return {
        "key": target.key,
        "question_id": view["id"],
        "status": view["status"],
        "answers": view.get("answers"),
        "answers_by": view.get("answers_by"),
        "by": view.get("answered_by"),
        "answered_at": view.get("answered_at"),
        "decision": view.get("decision"),
        "cancelled_by": view.get("cancelled_by"),
        "error": view.get("error"),
    }


def announce(
    runtime: Runtime,
    run: RunRecord,
    interrupt: InterruptRecord | None,
    error: str = "",
    *,
    question: ApiQuestionRecord | None = None,
) -> bool:
    """Record the outcome of a question that ended and queue its signal, once.

    Where this process sends directly, it then sends the signal too. False without a Temporal
    target, before the end, or when announced before (a replay). `error`: its run is failing, for
    that reason. `question`: its record, when the caller has just read it.
    """
    store = QuestionStore(runtime.redis)
    question = question or store.get(run.id)
    if question is None or question.temporal is None or question.signal is not None:
        return False
    view = build_view(question, run, interrupt).model_dump(mode="json")
    if error and view["status"] == "waiting":
        view.update(status="failed", error=error)
    status = view["status"]
    if status not in ENDED:
        return False
    payload = json.dumps(outcome_payload(view, question.temporal), ensure_ascii=False)
    temporal = config_mod.current().temporal
    direct = signal_direct.reserve(run.id)
    state = WebhookState(id=f"sig_{run.id}", event=status, payload=payload, attempts=1 if direct else 0)
    ttl = signal_direct.lease_ttl(temporal)
    intervals = list(temporal.retry_intervals)
    options: dict[str, Any] = {
        "job_id": job_ids.signal(run.id),
        "retry": Retry(max=len(intervals), interval=intervals) if intervals else None,
        "job_timeout": int(temporal.attempt_timeout + 5),
        "result_ttl": 3600,
        "failure_ttl": 7 * 86400,
    }

    signs_here = runtime.receipts.signer is not None

    def queue_delivery(pipe: Pipeline) -> None:
        if direct is None:
            runtime.webhook_queue.enqueue(DELIVER, run.id, pipeline=pipe, **options)
            return
        # the direct attempt counted above holds the lease; the job is due when the lease lapses
        SignalLeases.take(pipe, run.id, f"direct:{direct.pid}", ttl)
        due = datetime.now(UTC) + timedelta(seconds=ttl)
        runtime.webhook_queue.enqueue_at(due, DELIVER, run.id, pipeline=pipe, **options)
        if not signs_here:  # last: does a worker sign receipts this process cannot put in the outcome?
            ReceiptBook.signed_with_a_key(pipe)

    try:
        replies = store.announce_signal(run.id, state, queue_delivery)
    except BaseException:
        if direct is not None:
            signal_direct.release()
        raise
    ctx = {"run_id": run.id, "workflow_id": question.temporal.workflow_id, "event": status}
    if direct is None:
        log.info("temporal signal queued", **ctx)
        return True
    receipts_elsewhere = not signs_here and bool(replies[-1])
    signal_direct.start(direct, runtime, run.id, state, question.temporal, temporal, receipts_elsewhere)
    log.info("temporal signal sending", **ctx)  # after the start: the line is written as the signal goes
    return True


def deliver(question_id: str) -> str | Retry:
    """One attempt at signalling a question's workflow (RQ's `Retry` makes the next).

    It returns a `Retry` that uses no attempt while a direct attempt holds the question's lease,
    and while the question's receipt is not yet on a replica.
    """
    runtime = wiring.current()
    store = QuestionStore(runtime.redis)
    question = store.get(question_id)
    state = question.signal if question is not None else None
    if question is None or question.temporal is None or state is None or state.status in DONE:
        return "nothing to deliver"
    if SignalLeases(runtime.redis).holder(question_id) is not None:
        return Retry(max=DEFERRALS, interval=1)
    target = question.temporal
    job = get_current_job()
    final = job is None or not job.retries_left
    try:
        state = with_signal_receipt(runtime.receipts, question_id, state)  # signed here, off Slack's path
    except ReceiptUnconfirmed:  # sent with its receipt once a replica holds it (docs/receipts.md)
        log.info("temporal signal held back: its receipt is not yet on a replica", run_id=question_id)
        return Retry(max=HELD_BACK, interval=1)
    state = state.model_copy(update={"attempts": state.attempts + 1})
    store.set_signal(question_id, state)  # counted before it is tried: an attempt cut off by a kill shows
    cfg = config_mod.current().temporal
    client = signal_client.current()
    try:
        client.call(client.signal(cfg, target, json.loads(state.payload), request_id(state)), cfg.attempt_timeout + 1)
    except SignalRefused as exc:  # the workflow ended: nothing waits for this any more
        signal_attempts.refused(runtime, question_id, state, target, str(exc), VIA)
        return "refused"
    except Exception as exc:
        signal_attempts.failed(runtime, question_id, state, target, exc, final=final, via=VIA)
        raise
    signal_attempts.delivered(runtime, question_id, state, target, VIA)
    return "delivered"


def ended(runtime: Runtime, run: RunRecord, result: str, error: str) -> bool:
    """Signal what the question's ending run must, before its final status is written.

    With a quorum, this signals each one's answers (`result`), unless the answer meeting it was
    announced as accepted. A run failing before its question closed signals `failed`. That happens
    when the question could not be posted.
    """
    if error:
        interrupt = runtime.store.interrupt(run.interrupt) if run.interrupt else None
        return announce(runtime, run, interrupt, error=error)
    question = QuestionStore(runtime.redis).get(run.id)
    if question is None or question.quorum is None:  # a single question was announced as it closed
        return False
    ending = run.model_copy(update={"status": RunStatus.SUCCEEDED, "result": result})
    return announce(runtime, ending, None, question=question)
