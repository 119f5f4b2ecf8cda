"""A worker's hold on a run: its renewed lease, and writes riding out short outages.

The lease is what the sweep trusts: until it lapses, nobody else executes the run. So while it
holds, a write that records an effect waits for Redis to come back. Such writes are a step's
result, a `once` intent or done, and the run's ending transition. Giving up would let the run be
replayed, and the unrecorded effect repeat. Once the lease has lapsed, the execution stops
without writing (`StaleEpoch`). The run is another worker's by then. Only an outage longer than
the lease repeats a step.
"""

from __future__ import annotations

import os
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
    """A worker's lease on one run, renewed in the background while the agent runs.

    Renewals survive Redis errors, like a restart or a failover. They are tried again within a
    fraction of a second. A keeper that gave up, or sat in a client's multi-second backoff, would
    let the lease lapse. The agent would run on, and another worker would repeat the step in
    progress. One thread per process renews every lease held there (`_Renewer`). A thread per
    execution would cost about a Redis round trip to start and join.
    """

    RETRY = 0.2
    BACKOFF_CAP = 1.0

    def __init__(self, runtime: Runtime, run_id: str, epoch: int, held_until: float) -> None:
        self._rt = runtime
        self.run_id = run_id
        self._epoch = epoch
        self._store = _lease_store(runtime)
        self.held_until = held_until  # the lease_until Redis last accepted from this worker
        self.lost = False  # a renewal found the run in other hands

    def __enter__(self) -> LeaseKeeper:
        _renewer().hold(self, self._rt.settings.lease_ttl / 3)
        return self

    def __exit__(self, *exc: object) -> None:
        _renewer().release(self)

    def renew(self) -> float | None:
        """Renew the lease once, returning seconds until the next renewal.

        None once the run is lost.
        """
        ttl = self._rt.settings.lease_ttl
        until = time.time() + ttl
        try:
            ok, _, _ = self._store.transition(
                self.run_id, [RunStatus.RUNNING], RunStatus.RUNNING, epoch=self._epoch, lease=repr(until)
            )
        except redis.RedisError as exc:
            log.warning("could not renew the lease; retrying", run_id=self.run_id, error=str(exc))
            return min(ttl / 3, self.RETRY)
        if not ok:
            self.lost = True
            return None
        self.held_until = until
        return ttl / 3

    def durable(self, write: Callable[[], T], what: str) -> T:
        """Run `write`, retrying through a Redis outage while the lease surely holds.

        Every write passed here is idempotent: a fenced journal write, or an atomic transition
        re-checked on retry. So a write that landed before its reply was lost may repeat.
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
                        run_id=self.run_id,
                        write=what,
                        waited_s=round(time.monotonic() - started, 1),
                        error=str(exc),
                    )
                    raise StaleEpoch(self.run_id, self._epoch) from exc
                log.warning("Redis unreachable; retrying while the lease holds", run_id=self.run_id, write=what)
                time.sleep(delay)
                delay = min(delay * 2, self.BACKOFF_CAP)


class _Renewer:
    """The thread renewing every lease held in this process, each when due."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[LeaseKeeper, float] = {}  # monotonic time each lease is next renewed
        self._renewing: LeaseKeeper | None = None
        self._thread = threading.Thread(target=self._loop, name="parley-leases", daemon=True)
        self._thread.start()

    def hold(self, keeper: LeaseKeeper, first_in: float) -> None:
        with self._cond:
            self._due[keeper] = time.monotonic() + first_in
            self._cond.notify()

    def release(self, keeper: LeaseKeeper) -> None:
        """Stop renewing `keeper`, returning once no renewal of it is under way.

        So none lands after.
        """
        with self._cond:
            self._due.pop(keeper, None)
            while self._renewing is keeper:
                self._cond.wait()

    def _loop(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                keeper = min(self._due, key=self._due.__getitem__, default=None)
                if keeper is None or self._due[keeper] > now:
                    self._cond.wait(None if keeper is None else self._due[keeper] - now)
                    continue
                self._renewing = keeper
            try:
                delay = keeper.renew()
            except Exception:  # never let one lease's surprise stop the renewals of every other
                log.error("lease renewal raised; retrying", exc=True, run_id=keeper.run_id)
                delay = keeper.RETRY
            finally:
                with self._cond:
                    self._renewing = None
                    if keeper in self._due:
                        if delay is None:
                            del self._due[keeper]
                        else:
                            self._due[keeper] = time.monotonic() + delay
                    self._cond.notify_all()


_RENEWERS: dict[int, _Renewer] = {}  # by process id: a forked child starts its own (threads do not fork)
_RENEWERS_LOCK = threading.Lock()


def _renewer() -> _Renewer:
    pid = os.getpid()
    with _RENEWERS_LOCK:
        if pid not in _RENEWERS:
            _RENEWERS.clear()
            _RENEWERS[pid] = _Renewer()
        return _RENEWERS[pid]


_LEASE_STORES: dict[int, RunStore] = {}


def _lease_store(runtime: Runtime) -> RunStore:
    """One quick-failing store per process for all lease renewals, not a pool per execution."""
    key = id(runtime.redis)
    if key not in _LEASE_STORES:
        timeout = min(runtime.settings.lease_ttl / 3, 2.0)
        _LEASE_STORES[key] = RunStore(_prompt_client(runtime.redis, timeout=timeout))
    return _LEASE_STORES[key]


def _prompt_client(client: redis.Redis, timeout: float) -> redis.Redis:
    """A client of the same server whose commands fail within `timeout`, not backing off."""
    return connection.sibling(
        client, max_connections=2, retry=Retry(NoBackoff(), 1), socket_timeout=timeout, socket_connect_timeout=timeout
    )
