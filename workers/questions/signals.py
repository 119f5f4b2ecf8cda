"""A question's Temporal target: its outcome signalled to the waiting workflow, as an RQ job.

A question asked with a `temporal` target (`workers.integrations.temporal`) has a workflow,
not a URL, to tell when it ends. The path is the webhook's (`webhooks`): when the question
closes (answered, expired, cancelled) or its run fails, `announce` records the outcome once
and enqueues `deliver` on the webhooks' queue under one job id with RQ's `Retry`; each
attempt signals the workflow `SIGNAL` with the same outcome; a failure raises and RQ tries
again after the next interval (`PARLEY_TEMPORAL_RETRY_INTERVALS`). An answer's outcome is
announced sooner, by the process that accepts it (`accepted`); the run's own call then finds
it made. The outcome and its job are written in one transaction. Every attempt is counted in
`parley_temporal_signals`, and the question's history records the delivery and how many
attempts it took. A workflow that has ended is not signalled again: nothing waits any more.

Temporal does not deduplicate signals, so a delivery retried after its signal was accepted
(the worker died before recording it) sends it twice; the wait helper keeps the first
outcome for a question and ignores any other, so the workflow sees it once.

The connection to Temporal is kept per delivery thread, on a loop of its own, and made again
after any failure. `temporalio` is imported only here, when a delivery runs (the `temporal` extra).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import timedelta
from typing import Any

from rq import Retry, get_current_job

from workers import metrics
from workers.logs import Log
from workers.questions import config as config_mod
from workers.questions.config import TemporalConfig
from workers.questions.exceptions import QuestionError
from workers.questions.receipt_views import with_signal_receipt
from workers.questions.views import build_view
from workers.runtime import queues, wiring
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.records import ApiQuestionRecord, InterruptRecord, RunRecord, RunStatus, TemporalTarget, WebhookState

log = Log("parley.temporal")
DELIVER = queues.SIGNAL
SIGNAL = "parley_outcome"
"""The signal a waiting workflow is sent, with one argument: the outcome (`outcome_payload`)."""
ENDED = ("answered", "expired", "cancelled", "failed")


class SignalRefused(QuestionError):
    """Temporal refused the signal for good: the workflow has ended, or the namespace is not there."""


def outcome_payload(view: dict[str, Any], target: TemporalTarget) -> dict[str, Any]:
    """What the workflow is told: the question's id, the key it waits on, and how the question ended."""
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
    """Enqueue the signal for a question that ended, once; False when it has no Temporal target or
    has not ended (or was announced before: a replay). `error`: its run is failing, for that reason.
    `question`: its record, when the caller has just read it."""
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
    state = WebhookState(id=f"sig_{run.id}", event=status, payload=payload)
    temporal = config_mod.current().temporal
    intervals = list(temporal.retry_intervals)
    store.announce_signal(
        run.id,
        state,
        lambda pipe: runtime.webhook_queue.enqueue(
            DELIVER,
            run.id,
            job_id=job_ids.signal(run.id),
            retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
            job_timeout=int(temporal.attempt_timeout + 5),
            result_ttl=3600,
            failure_ttl=7 * 86400,
            pipeline=pipe,
        ),
    )
    log.info("temporal signal queued", run_id=run.id, workflow_id=question.temporal.workflow_id, event=status)
    return True


def deliver(question_id: str) -> str:
    """One attempt at signalling a question's workflow (RQ's `Retry` makes the next)."""
    runtime = wiring.current()
    store = QuestionStore(runtime.redis)
    question = store.get(question_id)
    state = question.signal if question is not None else None
    if question is None or question.temporal is None or state is None or state.status == "delivered":
        return "nothing to deliver"
    target = question.temporal
    job = get_current_job()
    final = job is None or not job.retries_left
    state = with_signal_receipt(runtime.receipts, question_id, state)  # signed here, off Slack's path
    state = state.model_copy(update={"attempts": state.attempts + 1})
    store.set_signal(question_id, state)  # counted before it is tried: an attempt cut off by a kill shows
    where = {"workflow_id": target.workflow_id, "namespace": target.namespace}
    ctx = {"run_id": question_id, "attempt": state.attempts, **where}
    try:
        _signal(config_mod.current().temporal, target, json.loads(state.payload))
    except SignalRefused as exc:  # the workflow ended: nothing waits for this any more
        error = str(exc)[:300]
        store.set_signal(question_id, state.model_copy(update={"status": "failed", "last_error": error}))
        runtime.store.add_history(question_id, "temporal signal refused", "parley", **where, **_detail(state))
        metrics.temporal_signal("refused")
        log.warning("temporal signal refused", **ctx, error=error)
        return "refused"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        update = {"status": "failed" if final else "pending", "last_error": error}
        store.set_signal(question_id, state.model_copy(update=update))
        if final:
            detail = {**where, **_detail(state), "error": error}
            runtime.store.add_history(question_id, "temporal signal failed", "parley", **detail)
        metrics.temporal_signal("error")
        log.warning("temporal signal attempt failed", **ctx, error=error, final=final)
        raise
    delivered = {"status": "delivered", "delivered_at": time.time(), "last_error": ""}
    store.set_signal(question_id, state.model_copy(update=delivered))
    runtime.store.add_history(question_id, "temporal signal delivered", "parley", **where, **_detail(state))
    metrics.temporal_signal("delivered")
    log.info("temporal signal delivered", **ctx)
    return "delivered"


def _detail(state: WebhookState) -> dict[str, object]:
    return {"outcome": state.event, "attempts": state.attempts}


def prepare() -> None:
    """Import the Temporal client now, in a worker that signals workflows: the import takes about half a
    second, which the first delivery would otherwise wait."""
    import temporalio.client  # noqa: F401


class _Connection:
    """One delivery thread's event loop and Temporal client, made again after a failure."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.config: TemporalConfig | None = None


_local = threading.local()


def _signal(cfg: TemporalConfig, target: TemporalTarget, payload: dict[str, Any]) -> None:
    conn: _Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = _Connection()
    try:
        conn.loop.run_until_complete(asyncio.wait_for(_send(conn, cfg, target, payload), cfg.attempt_timeout))
    except SignalRefused:
        raise
    except BaseException:
        conn.client = None  # connect again next time
        raise


async def _send(conn: _Connection, cfg: TemporalConfig, target: TemporalTarget, payload: dict[str, Any]) -> None:
    from temporalio.client import Client, TLSConfig
    from temporalio.service import RPCError, RPCStatusCode

    if not cfg.address:
        raise QuestionError("PARLEY_TEMPORAL_ADDRESS is not set in this worker: it cannot signal the workflow")
    if conn.client is None or conn.config != cfg:
        tls = TLSConfig(client_cert=cfg.tls_cert, client_private_key=cfg.tls_key) if cfg.tls_cert else False
        conn.client = await Client.connect(cfg.address, namespace=cfg.namespace, tls=tls)
        conn.config = cfg
    handle = conn.client.get_workflow_handle(target.workflow_id)
    try:
        await handle.signal(SIGNAL, payload, rpc_timeout=timedelta(seconds=cfg.attempt_timeout))
    except RPCError as exc:
        if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
            raise SignalRefused(f"Temporal refused the signal: {exc.message}") from None
        raise


def ended(runtime: Runtime, run: RunRecord, result: str, error: str) -> bool:
    """The question's run is ending (its final status not written yet): with a quorum, signal each one's
    answers (`result`); failing before its question closed (it could not be posted), signal `failed`."""
    if error:
        interrupt = runtime.store.interrupt(run.interrupt) if run.interrupt else None
        return announce(runtime, run, interrupt, error=error)
    question = QuestionStore(runtime.redis).get(run.id)
    if question is None or question.quorum is None:  # a single question was announced as it closed
        return False
    ending = run.model_copy(update={"status": RunStatus.SUCCEEDED, "result": result})
    return announce(runtime, ending, None)
