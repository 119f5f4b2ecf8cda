"""`Runtime`: the parts a process wires together once, at its entry point.

RQ calls job functions by dotted path with ids only. So the job function finds the process's
runtime here. The composition root calls `install`: the `parley` CLI, or a test. Nothing is
created at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from redis import Redis
from rq import Queue

from workers.receipts.keys import KeyRing, Signer
from workers.registry import REGISTRY, AgentRegistry
from workers.runtime.host import InteractorRouter
from workers.runtime.queues import WEBHOOK_QUEUE_NAME, queue
from workers.store.receipts import DEFAULT_RETENTION as DEFAULT_RECEIPT_RETENTION
from workers.store.receipts import ReceiptBook
from workers.store.records import InterruptRecord
from workers.store.replication import WAIT_TIMEOUT_MS, Replication
from workers.store.runs import RunStore
from workers.store.sealed import SecretBox


@dataclass(frozen=True)
class RuntimeSettings:
    """Timings of the durable-run machinery, in seconds."""

    lease_ttl: float = 30.0
    sweep_interval: float = 5.0
    retry_delays: tuple[float, ...] = (1.0, 5.0, 15.0)
    max_retries: int = 3
    max_asks_per_key: int = 3
    requeue_grace: float = 10.0
    retention: float = 30 * 86400.0  # finished runs are deleted this long after they ended; 0 keeps them
    run_timeout: float = 3600.0  # PARLEY_RUN_TIMEOUT: one execution's longest run; 0: no bound
    data_dir: Path = Path(".parley")
    secret_key: str | None = field(default=None, repr=False)  # PARLEY_SECRET_KEY: seals secret answers
    min_replicas: int = 0  # replicas that must hold an accepted answer before it is acked (workers.store.replication)
    replica_wait_ms: int = WAIT_TIMEOUT_MS  # how long an ack waits for those replicas
    receipt_key: bytes | None = field(default=None, repr=False)  # PARLEY_RECEIPT_KEY's PEM: signs receipts
    receipt_retention: float = DEFAULT_RECEIPT_RETENTION  # PARLEY_RECEIPT_RETENTION; 0 keeps receipts forever
    receipt_trusted: bytes | None = None  # PARLEY_RECEIPT_KEYS' PEM: public keys of rotated signers

    def replication(self) -> Replication:
        """How accepted answers wait for replicas, from these settings."""
        return Replication(self.min_replicas, self.replica_wait_ms)


@dataclass
class Runtime:
    redis: Redis
    store: RunStore
    queue: Queue
    hosts: InteractorRouter
    registry: AgentRegistry = field(default_factory=lambda: REGISTRY)
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    webhook_queue: Queue = field(init=False)  # webhook deliveries, apart from the runs' `queue`
    receipts: ReceiptBook = field(init=False)  # closed questions' signed receipts (`workers.receipts`)
    on_accepted: list[Callable[[InterruptRecord], None]] = field(default_factory=list)
    """Called with the question (as read before the answer) once an answer closed it, before the resume is queued."""

    def __post_init__(self) -> None:
        self.webhook_queue = queue(self.redis, WEBHOOK_QUEUE_NAME)
        key = self.settings.receipt_key
        signer = Signer.from_pem(key) if key else None
        trusted = KeyRing.from_pem_text(self.settings.receipt_trusted) if self.settings.receipt_trusted else None
        replication = self.settings.replication()  # a receipt is handed out once replicas hold it
        self.receipts = ReceiptBook(self.redis, signer, self.settings.receipt_retention, trusted, replication)

    @classmethod
    def build(
        cls,
        redis: Redis,
        hosts: InteractorRouter | None = None,
        settings: RuntimeSettings | None = None,
        registry: AgentRegistry | None = None,
    ) -> Runtime:
        settings = settings or RuntimeSettings()
        box = SecretBox(settings.secret_key) if settings.secret_key else None
        return cls(
            redis=redis,
            store=RunStore(redis, box, settings.replication()),
            queue=queue(redis, timeout=settings.run_timeout),
            hosts=hosts or InteractorRouter(),
            registry=registry or REGISTRY,
            settings=settings,
        )


_current: Runtime | None = None


def install(runtime: Runtime) -> Runtime:
    """Make `runtime` the one this process's job functions use."""
    global _current
    _current = runtime
    return runtime


def current() -> Runtime:
    if _current is None:
        raise RuntimeError("no Parley runtime installed in this process; call workers.runtime.wiring.install()")
    return _current
