"""The peer's side: Prefect flows that wait for the same typed answer Parley's bench agent asks for.

`Answer` is a `RunInput` with the three fields of `bench.agents.three_item_request`
(a choice, a few tags, a line of text). Each flow pushes `time.time()` to Redis on the
first line after the wait returns, like Parley's bench agent after `run.ask`, so the
bench times the answer → code running again on the same clock for both.

- `pause_flow`: `pause_flow_run(wait_for_input=Answer)`, `count` times in one flow run;
  the flow's process stays alive, polling the server every `poll` seconds. It pushes
  its flow run id just before each pause, so the bench knows which run to resume.
- `suspend_flow`: `suspend_flow_run(wait_for_input=Answer)` under `flow.serve()`; the
  process exits, and when the run is resumed the runner starts the flow again from the
  top in a new process, where `suspend_flow_run` returns the answer.

This module imports `prefect`; it only runs in the peer's processes (`bench.peers.prefect_run`).
"""

from __future__ import annotations

import os
import time
from functools import cache

import redis
from prefect import flow
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import RunInput
from prefect.runtime import flow_run

from bench.peers.prefect_server import ready_key, resumed_key


class Answer(RunInput):
    """The answer to the bench's 3-item question: environment, regions, reason."""

    env: str
    regions: list[str]
    why: str = ""


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@flow(name="bench-pause")
def pause_flow(tag: str, count: int, poll: float) -> int:
    resumed = 0
    for _ in range(count):
        _redis().rpush(ready_key(tag), str(flow_run.get_id()))
        answer = pause_flow_run(wait_for_input=Answer, poll_interval=poll, timeout=3600)  # type: ignore[arg-type]
        _redis().rpush(resumed_key(tag), repr(time.time()))
        resumed += 1 if answer.env else 0
    return resumed


@flow(name="bench-suspend")
def suspend_flow(tag: str) -> str:
    answer = suspend_flow_run(wait_for_input=Answer, timeout=3600)
    _redis().rpush(resumed_key(tag), repr(time.time()))
    return answer.env
