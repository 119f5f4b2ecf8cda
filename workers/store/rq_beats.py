"""The few commands Parley's RQ worker classes stage on RQ's own keys, kept with the store.

`workers.runtime.rq_workers` sends RQ's heartbeat and suspension check its own way: the
heartbeat carries the worker's state in the same `HSET`, and the check is a plain pipeline.
The commands themselves are RQ's, on RQ's keys; only how they are grouped is Parley's.
"""

from __future__ import annotations

from typing import Any


def stage_beat(pipeline: Any, worker_key: str, executions_key: str, fields: dict[str, str], ttl: int) -> None:
    """A worker's heartbeat as RQ writes it (`fields` and both keys' TTL), staged on `pipeline`."""
    pipeline.hset(worker_key, mapping=fields)
    pipeline.expire(worker_key, ttl)
    pipeline.expire(executions_key, ttl)


def stage_exists(pipeline: Any, key: str) -> None:
    """Whether `key` exists (RQ's `rq:suspended`), staged on `pipeline`."""
    pipeline.exists(key)


def stage_stats(pipeline: Any, worker_key: str, jobs: int, seconds: float) -> None:
    """Add `jobs` successes and `seconds` of work to a worker's counters, as RQ counts them."""
    if jobs:
        pipeline.hincrby(worker_key, "successful_job_count", jobs)
    if seconds:
        pipeline.hincrbyfloat(worker_key, "total_working_time", seconds)
