"""A worker's hold on a run: the lease it renews, and writes that ride out a short Redis outage.

The lease is what the sweep trusts: until it lapses, nobody else executes the run. So
while it holds, a write that records an effect (a step's result, a `once` intent or
done, the transition that ends the run) waits for Redis to come back instead of giving
up; giving up would let the run be replayed and the recorded-nowhere effect repeat.
Once the lease has lapsed the execution stops without writing (`StaleEpoch`): the run is
another worker's by then, and only an outage longer than the lease repeats a step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.exceptions import StaleEpoch
from workers.logs import Log
from workers.runtime.wiring import Runtime
from workers.store import connection
from workers.store.records import RunStatus
from workers.store.runs import RunStore

T = TypeVar("T")
log = Log("parley.lease")
OUTAGE_ERRORS = (redis.ConnectionError, redis.TimeoutError)


class LeaseKeeper:
    """Renews the worker's lease on a run in the background while the agent runs.

    It survives Redis errors (a restart, a failover) and tries again within a fraction of a
    second: a keeper that gave up, or sat in a client's multi-second backoff, would let the
    lease lapse while the agent runs on, and another worker would repeat the step in progress.
    """

    RETRY = 0.2
    BACKOFF_CAP = 1.0

    def __init__(self, runtime: Runtime, run_id: str, epoch: int, held_until: float) -> None:
        self._rt = runtime
        self._run_id = run_id
        self._epoch = epoch
        self._store = _lease_store(runtime)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)
        self.held_until = held_until  # the lease_until Redis last accepted from this worker
        self.lost = False  # a renewal found the run in other hands

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        ttl = self._rt.settings.lease_ttl
        delay = ttl / 3
        while not self._stop.wait(delay):
            until = time.time() + ttl
            try:
                ok, _, _ = self._store.transition(
                    self._run_id, [RunStatus.RUNNING], RunStatus.RUNNING, epoch=self._epoch, lease=repr(until)
                )
            except redis.RedisError as exc:
                log.warning("could not renew the lease; retrying", run_id=self._run_id, error=str(exc))
                delay = min(ttl / 3, self.RETRY)
                continue
            delay = ttl / 3
            if not ok:
                self.lost = True
                return
            self.held_until = until

    def durable(self, write: Callable[[], T], what: str) -> T:
        """Run `write`, retrying through a Redis outage for as long as the lease surely holds.

        Every write passed here is idempotent (a fenced journal write, an atomic transition
        re-checked on retry), so a write that landed before its reply was lost may repeat.
        """
        margin = min(1.0, self._rt.settings.lease_ttl / 10)
        delay, started = 0.05, time.monotonic()
        while True:
            try:
                return write()
            except OUTAGE_ERRORS as exc:
                if self.lost or time.time() + delay > self.held_until - margin:
                    log.error(
                        "Redis unreachable until the lease lapsed; stopping without writing",
                        run_id=self._run_id,
                        write=what,
                        waited_s=round(time.monotonic() - started, 1),
                        error=str(exc),
                    )
                    raise StaleEpoch(self._run_id, self._epoch) from exc
                log.warning("Redis unreachable; retrying while the lease holds", run_id=self._run_id, write=what)
                time.sleep(delay)
                delay = min(delay * 2, self.BACKOFF_CAP)


_LEASE_STORES: dict[int, RunStore] = {}


def _lease_store(runtime: Runtime) -> RunStore:
    """One quick-failing store per process for every lease renewal (not a pool per execution)."""
    key = id(runtime.redis)
    if key not in _LEASE_STORES:
        timeout = min(runtime.settings.lease_ttl / 3, 2.0)
        _LEASE_STORES[key] = RunStore(_prompt_client(runtime.redis, timeout=timeout))
    return _LEASE_STORES[key]


def _prompt_client(client: redis.Redis, timeout: float) -> redis.Redis:
    """A client of the same server whose commands fail within `timeout` instead of backing off."""
    return connection.sibling(
        client, max_connections=2, retry=Retry(NoBackoff(), 1), socket_timeout=timeout, socket_connect_timeout=timeout
    )
