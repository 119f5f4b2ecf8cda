"""Parley's Prometheus metrics: every definition in one place, and how a process exposes them.

The metrics are module-level `prometheus_client` objects, so importing this module connects to
nothing. The one figure read from Redis is paused runs. It is a collector the composition root
binds to its `RunStore` in `scrape_registry`. Label values come from closed sets only, never a
user, run or question id. The sets are agent names registered in code, `RunStatus` and
`RefusalReason`. They also include the Web API methods Parley calls, and fixed outcome words.

Several processes may share one endpoint through prometheus_client's multiprocess mode. Examples
are `parley serve --workers N` and `parley worker --worker-class fork`.
`PROMETHEUS_MULTIPROC_DIR` must be set before this module is first imported.
`parley.metrics_setup` does it at the entry point.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from workers.logs import Log
from workers.store.records import RefusalReason, RunStatus
from workers.store.runs import RunStore
from workers.store.starts import StartLimit
from workers.store.webhook_limits import Circuits

log = Log("parley.metrics")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
WAITING = (5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800)
"""Asked → answered runs from seconds to a week."""
SLACK_OUTCOMES = ("ok", "error", "rate_limited", "server_error", "http_error", "connection_error")
REQUEUE_CAUSES = ("lease_lapsed", "no_job", "retry")
WEBHOOK_OUTCOMES = ("delivered", "http_error", "timeout", "connection_error", "circuit_open", "refused", "error")
WEBHOOK_CAPS = ("token", "host")

RUNS_STARTED = Counter("parley_runs_started", "Runs created, by agent", ["agent"])
RUNS_ENDED = Counter("parley_runs_ended", "Runs that reached a final status, by agent and status", ["agent", "status"])
QUESTIONS_ASKED = Counter("parley_questions_asked", "Questions opened by runs (every attempt)")
QUESTIONS_ANSWERED = Counter(
    "parley_questions_answered", "Answers accepted (a redelivery, or the same answers from the same person, count once)"
)
QUESTIONS_EXPIRED = Counter("parley_questions_expired", "Questions the sweep closed as expired")
ANSWER_WAIT = Histogram(
    "parley_question_answer_seconds", "From a question being asked to its answer being accepted", buckets=WAITING
)
SUBMIT_ACK = Histogram(
    "parley_submit_ack_seconds",
    "From bolt dispatching a verified answer (Submit, one-click choice, form) to its ack",
    ["surface"],
    buckets=LATENCY,
)
RESUME = Histogram(
    "parley_resume_seconds", "From an answer being accepted to its run running again on a worker", buckets=LATENCY
)
REFUSALS = Counter("parley_answer_refusals", "Answers refused, by reason", ["reason"])
SLACK_CALLS = Counter(
    "parley_slack_api_calls",
    "Slack Web API attempts (each retry counts), by method and outcome; 429s are rate_limited",
    ["method", "outcome"],
)
RECEIPT_REWINDS = Counter(
    "parley_receipt_chain_rewinds", "Receipt chains found gone back: Redis lost a receipt a process wrote (a failover)"
)
LEASE_LAPSES = Counter("parley_lease_lapses", "Runs whose worker's lease lapsed, by what the sweep did", ["outcome"])
REQUEUES = Counter("parley_runs_requeued", "Runs queued again without an answer, by cause", ["cause"])
STARTS_REFUSED = Counter(
    "parley_run_starts_refused", "Runs not started from Slack because a start limit refused them, by limit", ["limit"]
)
WEBHOOK_ATTEMPTS = Counter(
    "parley_webhook_attempts",
    "Webhook delivery attempts, by outcome (circuit_open: not sent, the host's circuit is open)",
    ["outcome"],
)
WEBHOOK_DEFERRALS = Counter(
    "parley_webhook_deferrals",
    "Webhook deliveries held back because a token's or a host's in-flight cap was full",
    ["cap"],
)
TEMPORAL_SIGNALS = Counter(
    "parley_temporal_signals",
    "Attempts at signalling a Temporal workflow with a question's outcome, by outcome "
    "(refused: the workflow has ended)",
    ["outcome"],
)
TEMPORAL_OUTCOMES = ("delivered", "error", "refused")

for _reason in RefusalReason:
    REFUSALS.labels(reason=_reason.value)
for _cause in REQUEUE_CAUSES:
    REQUEUES.labels(cause=_cause)
for _outcome in ("requeued", "failed"):
    LEASE_LAPSES.labels(outcome=_outcome)
for _limit in StartLimit:
    STARTS_REFUSED.labels(limit=_limit.value)
for _outcome in WEBHOOK_OUTCOMES:
    WEBHOOK_ATTEMPTS.labels(outcome=_outcome)
for _cap in WEBHOOK_CAPS:
    WEBHOOK_DEFERRALS.labels(cap=_cap)
for _outcome in TEMPORAL_OUTCOMES:
    TEMPORAL_SIGNALS.labels(outcome=_outcome)


def run_started(agent: str) -> None:
    RUNS_STARTED.labels(agent=agent).inc()


def start_refused(limit: str) -> None:
    STARTS_REFUSED.labels(limit=limit).inc()


def run_ended(agent: str, status: str) -> None:
    RUNS_ENDED.labels(agent=agent, status=status).inc()


def answer_accepted(asked_at: float, now: float | None = None) -> None:
    QUESTIONS_ANSWERED.inc()
    ANSWER_WAIT.observe(max(0.0, (time.time() if now is None else now) - asked_at))


def resumed(answered_at: float, now: float | None = None) -> None:
    """Count that the run of an answer accepted at `answered_at` runs again.

    `answered_at` is by another host's clock.
    """
    RESUME.observe(max(0.0, (time.time() if now is None else now) - answered_at))


def refused(reason: str) -> None:
    REFUSALS.labels(reason=reason).inc()


def slack_call(method: str, outcome: str) -> None:
    SLACK_CALLS.labels(method=method, outcome=outcome).inc()


def webhook_attempt(outcome: str) -> None:
    WEBHOOK_ATTEMPTS.labels(outcome=outcome).inc()


def webhook_deferred(cap: str) -> None:
    WEBHOOK_DEFERRALS.labels(cap=cap).inc()


def temporal_signal(outcome: str) -> None:
    TEMPORAL_SIGNALS.labels(outcome=outcome).inc()


class PausedRuns(Collector):
    """`parley_runs_paused`, read from Redis's status index at scrape time.

    Every process reports the same figure, so aggregate it with `max`, not `sum`.
    """

    def __init__(self, store: RunStore) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily("parley_runs_paused", "Runs paused on a question now (read from Redis)")
        try:
            gauge.add_metric([], float(self._store.count(RunStatus.PAUSED)))
        except Exception:  # Redis away: leave the gauge out of this scrape rather than fail it
            log.warning("could not count paused runs for a scrape", exc=True)
            return
        yield gauge


class OpenCircuits(Collector):
    """`parley_webhook_circuits_open`: hosts whose webhook circuit breaker is open.

    Like `parley_runs_paused`, it is read from Redis at scrape time. Aggregate it with `max`.
    """

    def __init__(self, store: RunStore) -> None:
        self._circuits = Circuits(store.redis)

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(
            "parley_webhook_circuits_open", "Webhook destination hosts whose circuit breaker is open (read from Redis)"
        )
        try:
            gauge.add_metric([], float(self._circuits.open_count()))
        except Exception:  # Redis away: leave the gauge out of this scrape rather than fail it
            log.warning("could not count open webhook circuits for a scrape", exc=True)
            return
        yield gauge


class _Process(Collector):
    """This process's own metrics (the default registry), forwarded into a scrape registry."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def multiprocess() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def scrape_registry(store: RunStore) -> CollectorRegistry:
    """What a `/metrics` scrape returns: metrics, plus the paused-runs gauge from Redis.

    The metrics are this process's, or all processes' in multiprocess mode.
    """
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess():
        MultiProcessCollector(registry)
    else:
        registry.register(_Process())
    registry.register(PausedRuns(store))
    registry.register(OpenCircuits(store))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The text format Prometheus scrapes."""
    return generate_latest(registry)
