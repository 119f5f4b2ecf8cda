"""How an attempt at signalling a workflow ended, recorded the same way by both senders.

The direct send (`signal_direct`) and the delivery job (`signals.deliver`) count an attempt
before they make it. So one cut off by a kill still shows. Then they record its end here. That
is the question's delivery state, its history, the metric and the log line. An answer refused
because its workflow had ended gets a note in the question's thread saying so.
"""

from __future__ import annotations

import time

from workers import metrics
from workers.logs import Log
from workers.runtime.wiring import Runtime
from workers.store.questions import QuestionStore
from workers.store.records import TemporalTarget, WebhookState

log = Log("parley.temporal")
NOBODY_WAITED = (
    "This answer reached nobody: the Temporal workflow that asked the question had ended before it "
    "was answered, so nothing will act on it."
)


def _where(target: TemporalTarget) -> dict[str, str]:
    return {"workflow_id": target.workflow_id, "namespace": target.namespace}


def _detail(state: WebhookState) -> dict[str, object]:
    return {"outcome": state.event, "attempts": state.attempts}


def delivered(runtime: Runtime, question_id: str, state: WebhookState, target: TemporalTarget, via: str) -> None:
    """Temporal took the signal: the delivery is done, and nothing sends it again."""
    done = {"status": "delivered", "delivered_at": time.time(), "last_error": ""}
    QuestionStore(runtime.redis).set_signal(question_id, state.model_copy(update=done))
    runtime.store.add_history(question_id, "temporal signal delivered", "parley", **_where(target), **_detail(state))
    metrics.temporal_signal("delivered")
    log.info("temporal signal delivered", run_id=question_id, attempt=state.attempts, via=via, **_where(target))


def refused(
    runtime: Runtime, question_id: str, state: WebhookState, target: TemporalTarget, error: str, via: str
) -> None:
    """Temporal refused the signal for good (the workflow ended): nothing waits for it any more."""
    error = error[:300]
    QuestionStore(runtime.redis).set_signal(
        question_id, state.model_copy(update={"status": "failed", "last_error": error})
    )
    runtime.store.add_history(question_id, "temporal signal refused", "parley", **_where(target), **_detail(state))
    metrics.temporal_signal("refused")
    ctx = {"run_id": question_id, "attempt": state.attempts, "via": via, **_where(target)}
    log.warning("temporal signal refused", **ctx, error=error)
    if state.event == "answered":
        _tell_nobody_waited(runtime, question_id)


def _tell_nobody_waited(runtime: Runtime, question_id: str) -> None:
    """Say in the question's thread that its answer reached nobody, so whoever answered knows.

    The message already reads "Answered by …", as if the answer were used.
    """
    run = runtime.store.find(question_id)
    if run is None:
        return
    try:
        runtime.hosts.for_run(run).say(run, NOBODY_WAITED)
    except Exception:  # the refusal is recorded; the note is only a courtesy
        log.error("note on the refused signal not posted", exc=True, run_id=question_id)
        return
    runtime.store.add_history(question_id, "told nobody waited", "parley")


def failed(
    runtime: Runtime,
    question_id: str,
    state: WebhookState,
    target: TemporalTarget,
    exc: BaseException,
    *,
    final: bool,
    via: str,
) -> None:
    """The attempt failed. `final`: it was the last, so the delivery has failed for good."""
    error = f"{type(exc).__name__}: {exc}"[:300]
    update = {"status": "failed" if final else "pending", "last_error": error}
    QuestionStore(runtime.redis).set_signal(question_id, state.model_copy(update=update))
    if final:
        detail = {**_where(target), **_detail(state), "error": error}
        runtime.store.add_history(question_id, "temporal signal failed", "parley", **detail)
    metrics.temporal_signal("error")
    ctx = {"run_id": question_id, "attempt": state.attempts, "via": via, **_where(target)}
    log.warning("temporal signal attempt failed", **ctx, error=error, final=final)
