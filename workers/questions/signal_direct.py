"""A question's outcome signalled at once by the process that announced it.

Its delivery job is the fallback. A process that sends directly (`enable`, from `parley
serve`'s and `parley worker`'s composition roots) signals each outcome it announces. It does
so right after the announcing transaction commits. That transaction records the outcome and
counts this attempt. It also takes the question's lease (`SignalLeases`). And it schedules the
delivery job for when the lease lapses.

The send runs on the process's Temporal client (`signal_client`), off the announcing thread.
So Slack's ack and the API's response never wait for it. At most `AT_ONCE` sends run at once,
each within the attempt's deadline. An outcome announced beyond that goes to its job at once.
So a stuck Temporal never delays a run or an ack.

When the attempt ends, the lease ends. Delivered or refused, the job finds it done and sends
nothing. Failed, the job is queued now and retries with its intervals. Should the process die
during the attempt, the job runs once the lease lapses. Both senders give the same request
id, so Temporal records the signal once either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading

from rq.exceptions import InvalidJobOperation, NoSuchJobError

from workers.logs import Log
from workers.questions import signal_attempts, signal_client
from workers.questions.config import TemporalConfig
from workers.questions.receipt_views import with_signal_receipt
from workers.questions.signal_client import SignalClient, SignalRefused, request_id
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.records import TemporalTarget, WebhookState
from workers.store.signal_leases import SignalLeases

log = Log("parley.temporal")
AT_ONCE = 64
"""Direct sends in flight at once in one process; an outcome beyond them goes to a delivery job."""
LEASE_MARGIN = 5.0
"""Seconds the lease outlives the attempt's deadline, so the job never sends during the attempt."""
VIA = "direct"

_enabled_in: int | None = None
_receipts_elsewhere = False  # another process signs receipts this one cannot: its jobs send every signal
_in_flight = 0
_lock = threading.Lock()


def enable() -> None:
    """Signal each outcome this process announces, at once.

    A forked child does not, since it may exit during the send.
    """
    global _enabled_in
    signal_client.prepare()
    _enabled_in = os.getpid()


def disable() -> None:
    """Leave every signal this process announces to a delivery job (and forget what `enable` learnt)."""
    global _enabled_in, _receipts_elsewhere
    _enabled_in = None
    _receipts_elsewhere = False


def lease_ttl(cfg: TemporalConfig) -> float:
    """How long the direct attempt holds the question's lease (and the job waits)."""
    return cfg.attempt_timeout + LEASE_MARGIN


def reserve(question_id: str) -> SignalClient | None:
    """Take a place for `question_id`'s direct send, and return the client to send it with.

    None when this process leaves the signal to its job.
    """
    global _in_flight
    if _enabled_in != os.getpid() or _receipts_elsewhere:
        return None
    with _lock:
        if _in_flight >= AT_ONCE:
            log.warning("direct signals at their cap; a delivery job sends this one", run_id=question_id, cap=AT_ONCE)
            return None
        _in_flight += 1
    return signal_client.current()


def release() -> None:
    """Give back a place `reserve` took."""
    global _in_flight
    with _lock:
        _in_flight -= 1


def start(
    client: SignalClient,
    runtime: Runtime,
    question_id: str,
    state: WebhookState,
    target: TemporalTarget,
    cfg: TemporalConfig,
    receipts_elsewhere: bool = False,
) -> None:
    """Send the signal recorded as `state` on `client`'s loop, without waiting.

    It runs in the place `reserve` took. `receipts_elsewhere`: another process signs receipts and
    this one cannot, so the job sends it.
    """
    client.start(_send(client, runtime, question_id, state, target, cfg, receipts_elsewhere))


async def _send(
    client: SignalClient,
    runtime: Runtime,
    question_id: str,
    state: WebhookState,
    target: TemporalTarget,
    cfg: TemporalConfig,
    receipts_elsewhere: bool,
) -> None:
    try:
        if runtime.receipts.signer is not None:  # signed here, off the ack, on a thread: it may wait on replicas
            try:
                state = await asyncio.to_thread(with_signal_receipt, runtime.receipts, question_id, state)
            except ReceiptUnconfirmed:
                _not_sent(runtime, question_id, state, "its receipt is not yet on a replica")
                return
        elif receipts_elsewhere:
            _leave_to_job(runtime, question_id, state)
            return
        try:
            await client.signal(cfg, target, json.loads(state.payload), request_id(state))
        except SignalRefused as exc:
            # on a thread: it may post a note in Slack, which would hold up every other signal
            await asyncio.to_thread(signal_attempts.refused, runtime, question_id, state, target, str(exc), VIA)
        except Exception as exc:
            signal_attempts.failed(runtime, question_id, state, target, exc, final=False, via=VIA)
            _hand_back(runtime, question_id)
            return
        else:
            signal_attempts.delivered(runtime, question_id, state, target, VIA)
        SignalLeases(runtime.redis).end(question_id)
    except Exception:  # Redis away: the lease lapses and the job delivers, under the same request id
        log.warning("could not finish the direct signal; its delivery job will", run_id=question_id, exc=True)
    finally:
        release()


def _leave_to_job(runtime: Runtime, question_id: str, state: WebhookState) -> None:
    """Leave the signal to its job, which a worker signing receipts runs.

    This process cannot sign the outcome's receipt. The job sends it now, with its receipt. Every
    later outcome of this process goes to its job alone.
    """
    global _receipts_elsewhere
    _receipts_elsewhere = True
    _not_sent(runtime, question_id, state, "a worker adds its receipt")


def _not_sent(runtime: Runtime, question_id: str, state: WebhookState, why: str) -> None:
    """Hand the signal to its job without an attempt made: the attempt counted is taken back."""
    log.info("temporal signal left to its job", run_id=question_id, why=why)
    QuestionStore(runtime.redis).set_signal(question_id, state.model_copy(update={"attempts": state.attempts - 1}))
    _hand_back(runtime, question_id)


def _hand_back(runtime: Runtime, question_id: str) -> None:
    """End the lease and queue the delivery job now, to retry under its intervals."""
    SignalLeases(runtime.redis).end(question_id)
    with contextlib.suppress(InvalidJobOperation, NoSuchJobError):  # queued or running already
        runtime.webhook_queue.scheduled_job_registry.requeue(job_ids.signal(question_id))
