"""One execution of a run: claim it, replay the agent, and record how it ended.

A claim moves the run from `queued` to `running` and bumps its epoch; the worker
then holds a lease it renews. Every write the execution makes is fenced by that
epoch, so a worker that lost its lease (killed, paused by the OS, partitioned)
cannot write after another worker took the run over.
"""

from __future__ import annotations

import threading
import time
import traceback

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.exceptions import AgentError, StaleEpoch, Suspend, UnknownAgent
from workers.interaction import QuestionExpired
from workers.logs import Log
from workers.runtime.context import Run
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import InterruptState, RunStatus
from workers.store.runs import RunStore

log = Log("parley.execute")


class LeaseKeeper:
    """Renews the worker's lease on a run in the background while the agent runs.

    It survives Redis errors (a restart, a failover) and tries again within a fraction of a
    second: a keeper that gave up, or sat in a client's multi-second backoff, would let the
    lease lapse while the agent runs on, and another worker would repeat the step in progress.
    """

    RETRY = 0.2

    def __init__(self, runtime: Runtime, run_id: str, epoch: int) -> None:
        self._rt = runtime
        self._run_id = run_id
        self._epoch = epoch
        self._store = _lease_store(runtime)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)

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
            until = repr(time.time() + ttl)
            try:
                ok, _, _ = self._store.transition(
                    self._run_id, [RunStatus.RUNNING], RunStatus.RUNNING, epoch=self._epoch, lease=until
                )
            except redis.RedisError as exc:
                log.warning("could not renew the lease; retrying", run_id=self._run_id, error=str(exc))
                delay = min(ttl / 3, self.RETRY)
                continue
            delay = ttl / 3
            if not ok:
                return


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
    pool = client.connection_pool
    kwargs = {
        **pool.connection_kwargs,
        "retry": Retry(NoBackoff(), 1),
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
    }
    return redis.Redis(connection_pool=type(pool)(connection_class=pool.connection_class, max_connections=2, **kwargs))


def execute(runtime: Runtime, run_id: str) -> str:
    """Execute `run_id` if it is queued; returns the status it ends this execution in."""
    lease_until = repr(time.time() + runtime.settings.lease_ttl)
    ok, epoch_or_reason, old = runtime.store.transition(
        run_id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=lease_until, bump_epoch=True
    )
    if not ok:
        log.info("nothing to execute", run_id=run_id, reason=epoch_or_reason, status=old)
        return old or epoch_or_reason
    epoch = int(epoch_or_reason)
    record = runtime.store.get(run_id)
    host = runtime.hosts.for_run(record)
    run = Run(runtime, record, epoch, host)
    run.log.info("executing", epoch=epoch, failures=record.failures)
    with LeaseKeeper(runtime, run_id, epoch):
        try:
            _lock_closed_question(runtime, run)
            spec = runtime.registry.get(record.agent)
            result = spec.fn(run, record.text)
            run.once("final", lambda: host.finished(record, str(result)))
            return _end(runtime, run, RunStatus.SUCCEEDED, result=str(result))
        except Suspend:
            return RunStatus.PAUSED.value
        except StaleEpoch:
            run.log.info("execution lost the run; stopping without writing", epoch=epoch)
            return "stale"
        except QuestionExpired as exc:
            reason = f"expired: {exc}"
            run.once("final", lambda: host.failed(record, reason))
            return _end(runtime, run, RunStatus.EXPIRED, error=reason)
        except (AgentError, UnknownAgent) as exc:
            return _fail(runtime, run, str(exc))
        except Exception as exc:
            return _retry_or_fail(runtime, run, exc)


def _lock_closed_question(runtime: Runtime, run: Run) -> None:
    """Show the answer (or the expiry) on the question that resumed this run, once.

    The worker does it rather than the bot: the ack path stays free of Web API calls,
    and a bot that dies right after accepting cannot leave a question looking open.
    """
    iid = run.record.interrupt
    if not iid:
        return
    closed = run.read_interrupt(iid)
    if closed is None or closed.state not in (InterruptState.ANSWERED, InterruptState.EXPIRED):
        return
    if not closed.message:
        return  # the host never showed it (or shows nothing), so there is nothing to update
    # A failure here (Slack down) propagates: the run is retried, and the retry locks it.
    run.once(f"lock:{iid}", lambda: run.host.question_closed(run.record, closed))


def _end(runtime: Runtime, run: Run, status: RunStatus, **fields: str) -> str:
    ok, reason, _ = runtime.store.transition(
        run.run_id, [RunStatus.RUNNING], status, epoch=run.epoch, lease="clear", **fields
    )
    if ok:
        runtime.store.add_history(run.run_id, status.value, **fields)
        run.log.info("run ended", status=status.value)
    return status.value if ok else reason


def _fail(runtime: Runtime, run: Run, reason: str) -> str:
    run.log.error("run failed", reason=reason)
    run.once("final", lambda: run.host.failed(run.record, reason))
    return _end(runtime, run, RunStatus.FAILED, error=reason)


def _retry_or_fail(runtime: Runtime, run: Run, exc: Exception) -> str:
    reason = f"{type(exc).__name__}: {exc}"
    failures = run.record.failures + 1
    if failures > runtime.settings.max_retries:
        run.log.error("run failed after retries", exc=True, failures=failures)
        return _fail(runtime, run, reason)
    delays = runtime.settings.retry_delays
    delay = delays[min(failures - 1, len(delays) - 1)] if delays else 0.0
    # Named by the epoch, which no other execution shares: the failure count starts
    # over after an admin retry, and a job id used before would not be enqueued again.
    job_id = job_ids.retry(run.run_id, run.epoch)
    ok, _, _ = runtime.store.transition(
        run.run_id,
        [RunStatus.RUNNING],
        RunStatus.QUEUED,
        epoch=run.epoch,
        lease="clear",
        failures=1,
        error=reason,
        job=job_id,
    )
    if not ok:
        return "stale"
    runtime.store.add_history(run.run_id, "retry", error=reason, failures=failures, trace=traceback.format_exc(-3))
    enqueue_run(runtime.queue, run.run_id, job_id, delay=delay)
    run.log.warning("run raised; retrying", error=reason, failures=failures, delay=delay)
    return RunStatus.QUEUED.value
