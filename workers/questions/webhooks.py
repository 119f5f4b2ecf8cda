"""Signed webhooks: how a callback is signed, and delivered as an RQ job.

The delivery runs on a queue of its own. When a question with a `callback_url` closes,
`announce` records the event's body once. Closing means answered, expired or cancelled. It then
enqueues `deliver` on the webhooks' queue, never the agents'. `parley worker` runs deliveries on
threads of their own (`webhook_workers`). One job id is used, with RQ's `Retry`. For an answer,
the accepting process announces sooner (`accepted`). Every attempt sends the same body with the
same `webhook-id`. It is signed as the Standard Webhooks spec says. A non-2xx answer, an error
or the deadline raises. RQ then tries again after the next interval. The last failure is
recorded as `failed` on the question. Each attempt checks the destination again and connects to
the address checked (`destinations.pinned`). A worker killed mid-attempt records nothing. RQ
retries its job once it finds it abandoned. After the last attempt, the sweep records the
delivery failed (`webhook_cut_off`).

An attempt has one deadline for all of it: connecting, sending, the answer (`webhook_timeout`). It
has 2 s to connect. Of the answer only the status counts, and at most `ANSWER_READ` bytes of its
body are read: a receiver is the caller's, and may answer with gigabytes. A token has at most
`webhook_per_token` deliveries queued or running at once. That is RQ's `RateLimit`: the rest wait
in order, off the queue, until one ends. So one token's backlog never stands in front of another's.
At most a few attempts are in flight per host (`InFlight`). A delivery over that cap is put back a
moment without using an attempt. A host that keeps timing out opens its circuit (`Circuits`).
Attempts to it then fail at once until the cooldown ends. The question's `webhook` shows the
circuit's state as its last attempt saw it.

Signing is the spec's three lines of HMAC-SHA256, with stdlib `hmac`. It is not taken from the
`standardwebhooks` package. The tests verify with that package. So they check Parley against an
independent implementation of the spec.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import ssl
import threading
import time
from datetime import UTC, datetime

import httpx
from rq import Retry, get_current_job
from rq.rate_limit import RateLimit

from workers import metrics
from workers.logs import Log
from workers.questions import config as config_mod
from workers.questions import webhook_client
from workers.questions.destinations import DestinationRefused, check_destination, destination, pinned
from workers.questions.exceptions import QuestionError
from workers.questions.models import Event
from workers.questions.receipt_views import with_receipt
from workers.questions.views import build_view
from workers.runtime import queues, wiring
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.records import (
    ApiQuestionRecord,
    ApiTokenRecord,
    InterruptRecord,
    InterruptState,
    RunRecord,
    WebhookState,
)
from workers.store.webhook_limits import Circuit, Circuits, InFlight, open_gate

__all__ = [
    "DELIVER",
    "DestinationRefused",
    "announce",
    "check_destination",
    "deliver",
    "pinned",
    "post",
    "sign",
]

log = Log("parley.webhooks")
DELIVER = queues.DELIVER
EVENTS = {
    InterruptState.ANSWERED: "answered",
    InterruptState.EXPIRED: "expired",
    InterruptState.CANCELLED: "cancelled",
}
DEFERRALS = 3600
"""How many times a delivery may be put back by a full cap (each `webhook_defer` seconds): an hour at 1 s."""
SLOT_MARGIN = 30.0
"""Seconds an in-flight slot outlives its attempt's deadline, should the worker die holding it."""
FAILURE_TTL = 7 * 86400
"""Seconds RQ keeps a delivery's failed job, in its failed registry too."""


class AttemptTimedOut(QuestionError):
    """The receiver did not answer within the attempt's deadline."""


class CircuitOpen(QuestionError):
    """The destination host's circuit is open: the attempt is not made."""


ANSWER_READ = 64 * 1024
"""Bytes of a receiver's answer read at most: enough to keep a connection after a usual answer."""


def post(
    url: str,
    address: str | None,
    *,
    content: str,
    headers: dict[str, str],
    timeout: float,
    connect_timeout: float = 2.0,
) -> httpx.Response:
    """POST `content` to `url` via `address` (see `pinned`), within `timeout` seconds in all.

    Redirects are not followed. A receiver answering slowly, or one byte at a time, is cut off at
    the deadline. httpx's own timeouts apply to each read, not to the whole. The thread's kept
    loop and client send it (`webhook_client`). The answer's body is read raw (never decoded) up
    to `ANSWER_READ` bytes, so a short one keeps the connection; past that it is closed unread.
    The response returned has its status and headers, and no body.
    """
    target, host_header, extensions = pinned(url, address)
    origin = httpx.URL(target)
    tls_name = extensions.get("sni_hostname", "")
    kept = webhook_client.client(f"{origin.scheme}://{origin.netloc.decode()}", tls_name, tls_context())
    limits = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))

    async def attempt() -> httpx.Response:
        async with asyncio.timeout(timeout):
            sent = {**headers, **host_header}
            request = kept.build_request(
                "POST", target, content=content, headers=sent, extensions=extensions, timeout=limits
            )
            resp = await kept.send(request, stream=True)
            try:
                read = 0
                async for chunk in resp.aiter_raw():
                    read += len(chunk)
                    if read > ANSWER_READ:
                        break  # closing the response unread drops its connection
            finally:
                await resp.aclose()
            return resp

    try:
        return webhook_client.run(attempt)
    except TimeoutError:
        raise AttemptTimedOut(f"the receiver did not answer within {timeout:g} s") from None


_contexts: dict[tuple[str, str], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """The TLS settings every attempt verifies receivers with, one per set of authorities.

    httpx makes a fresh context per client, loading every certificate authority again. That is 15-70
    ms of CPU per attempt, most of a delivery's cost. The authorities are httpx's own choice:
    `SSL_CERT_FILE`, `SSL_CERT_DIR`, else certifi. So a change to those is honoured.
    """
    key = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    context = _contexts.get(key)
    if context is None:
        with _contexts_lock:
            context = _contexts.get(key) or httpx.create_ssl_context()
            _contexts[key] = context
    return context


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """The `webhook-signature` header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def announce(
    runtime: Runtime, run: RunRecord, interrupt: InterruptRecord, *, question: ApiQuestionRecord | None = None
) -> bool:
    """Enqueue the webhook for a closed question, once per event.

    False when there is none to send. `question`: its record, when the caller has just read it.
    """
    event = EVENTS.get(interrupt.state)
    store = QuestionStore(runtime.redis)
    question = question or store.get(run.id)
    if event is None or question is None or not question.callback_url:
        return False
    if question.webhook is not None and question.webhook.event == event:
        return False  # announced before (this is a replay)
    view = build_view(question, run, interrupt)
    payload = Event(type=f"question.{event}", data=view).model_dump_json()
    store.set_webhook(run.id, WebhookState(id=f"msg_{run.id}_{event}", event=event, payload=payload))
    cfg = config_mod.current()
    intervals = list(cfg.webhook_retry_intervals)
    runtime.webhook_queue.enqueue(
        DELIVER,
        run.id,
        job_id=job_ids.webhook(run.id, event),
        retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
        rate_limit=RateLimit(f"parley-webhooks:{question.token}", cfg.webhook_per_token),
        job_timeout=int(cfg.webhook_timeout + SLOT_MARGIN),
        result_ttl=3600,
        failure_ttl=FAILURE_TTL,
    )
    log.info("webhook queued", run_id=run.id, interrupt_id=interrupt.id, event=event)
    return True


def deliver(question_id: str) -> str | Retry:
    """One attempt at delivering a question's webhook (RQ's `Retry` makes the next).

    When the token's or host's in-flight cap is full, it raises a `Retry` of its own. That uses no
    attempt.
    """
    runtime = wiring.current()
    cfg = config_mod.current()
    store = QuestionStore(runtime.redis)
    question = store.get(question_id)
    state = question.webhook if question is not None else None
    if question is None or state is None or state.status == "delivered":
        return "nothing to deliver"
    try:
        state = with_receipt(runtime.receipts, store, question_id, state)  # signed here, off Slack's path
    except ReceiptUnconfirmed:  # sent with its receipt once a replica holds it (docs/receipts.md)
        log.info("webhook held back: its receipt is not yet on a replica", run_id=question_id, webhook_id=state.id)
        return Retry(max=DEFERRALS, interval=cfg.webhook_defer)
    job = get_current_job()
    final = job is None or not job.retries_left
    ctx = {"run_id": question_id, "webhook_id": state.id, "attempt": state.attempts + 1}
    try:
        address = check_destination(question.callback_url, cfg.webhook_allow, cfg.webhook_loopback)
    except DestinationRefused as exc:  # no retry would change this
        state = state.model_copy(update={"attempts": state.attempts + 1, "status": "failed", "last_error": str(exc)})
        runtime.store.add_history(question_id, "webhook failed", "parley", **history_detail(state), error=str(exc))
        store.set_webhook(question_id, state)
        metrics.webhook_attempt("refused")
        log.warning("webhook refused", **ctx, error=str(exc))
        return "refused"
    host = destination(question.callback_url)
    asker = question.owner or question.token  # the token itself, not its name (a newer token may share it)
    circuits = Circuits(runtime.redis)
    in_flight = InFlight(runtime.redis, cfg.webhook_per_token, cfg.webhook_per_host)
    slot = (job.id, asker, cfg.webhook_timeout + SLOT_MARGIN) if job is not None else None
    gate = open_gate(circuits, in_flight, host, question.token, slot)  # one round trip
    circuit = gate.circuit
    if circuit.state == "open":
        slot = None  # no attempt is made, so it holds no slot
    elif gate.full is not None:
        metrics.webhook_deferred(gate.full)
        log.info("webhook held back: its cap of deliveries in flight is full", **ctx, cap=gate.full)
        return Retry(max=DEFERRALS, interval=cfg.webhook_defer)
    state = state.model_copy(update={"attempts": state.attempts + 1})
    token = store.token_by_hash(gate.token_hash) if gate.token_hash else None
    try:
        state, circuit, failure = _attempt(
            question.callback_url, address, token, question.token, question.owner, state, circuit, host
        )
    finally:
        if slot is not None:
            in_flight.release(slot[0], asker, host)
    if failure is not None:
        error = f"{type(failure).__name__}: {failure}"[:300]
        if final:  # in the run's history, so admins see it (`parley runs show`, Slack's Inspect)
            runtime.store.add_history(question_id, "webhook failed", "parley", **history_detail(state), error=error)
        update = {"status": "failed" if final else "pending", "last_error": error, **_circuit_fields(circuit)}
        store.set_webhook(question_id, state.model_copy(update=update))
        log.warning("webhook attempt failed", **ctx, error=error, final=final, circuit=circuit.state)
        raise failure
    runtime.store.add_history(question_id, "webhook delivered", "parley", **history_detail(state))
    delivered = {"status": "delivered", "delivered_at": time.time(), "last_error": "", **_circuit_fields(circuit)}
    store.set_webhook(question_id, state.model_copy(update=delivered))
    log.info("webhook delivered", **ctx, status=state.last_status)
    return "delivered"


def _attempt(
    url: str,
    address: str | None,
    token: ApiTokenRecord | None,
    token_name: str,
    owner: str,
    state: WebhookState,
    circuit: Circuit,
    host: str,
) -> tuple[WebhookState, Circuit, Exception | None]:
    """Send one signed attempt unless the host's circuit is open.

    Returns the state and circuit after it, and what went wrong. That is None when the receiver
    answered 2xx.
    """
    cfg = config_mod.current()
    redis = wiring.current().redis
    if circuit.state == "open":
        until = datetime.fromtimestamp(circuit.open_until or 0, tz=UTC).isoformat(timespec="seconds")
        metrics.webhook_attempt("circuit_open")
        return state, circuit, CircuitOpen(f"not sent: {host!r} kept timing out; its circuit is open until {until}")
    if token is not None and owner and token.owner != owner:
        token = None  # a newer token under the asker's name: not the asker, and not its secret
    if token is None:
        metrics.webhook_attempt("error")
        return state, circuit, QuestionError(f"the token {token_name!r} was revoked; there is no secret to sign with")
    now = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": state.id,
        "webhook-timestamp": str(now),
        "webhook-signature": sign(token.webhook_secret, state.id, now, state.payload),
        "user-agent": "Parley-Webhooks/1",
    }
    timeouts = {"timeout": cfg.webhook_timeout, "connect_timeout": cfg.webhook_connect_timeout}
    try:
        resp = post(url, address, content=state.payload, headers=headers, **timeouts)
    except (AttemptTimedOut, httpx.TimeoutException) as exc:  # connecting took 2 s, or the attempt its deadline
        metrics.webhook_attempt("timeout")
        return state, Circuits(redis).timed_out(host), exc
    except httpx.ConnectError as exc:  # refused, unreachable, a certificate refused: quick, so no breaker
        metrics.webhook_attempt("connection_error")
        return state, circuit, exc
    except Exception as exc:  # a malformed answer: the host is not hanging
        metrics.webhook_attempt("error")
        return state, circuit, exc
    circuit = Circuits(redis).answered(host)  # it answered: whatever the status, it is not hanging
    state = state.model_copy(update={"last_status": resp.status_code})
    if not 200 <= resp.status_code < 300:
        metrics.webhook_attempt("http_error")
        return state, circuit, QuestionError(f"the receiver answered HTTP {resp.status_code}")
    metrics.webhook_attempt("delivered")
    return state, circuit, None


def _circuit_fields(circuit: Circuit) -> dict[str, object]:
    return {"circuit": circuit.state, "circuit_open_until": circuit.open_until}


def history_detail(state: WebhookState) -> dict[str, object]:
    """What a history entry of the delivery says: its id, event and attempts."""
    return {"webhook_id": state.id, "webhook_event": state.event, "attempts": state.attempts}
