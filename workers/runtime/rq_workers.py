"""The RQ worker classes `parley worker` runs: RQ's own, with its worker bookkeeping in fewer round trips.

RQ's work loop beats the worker's heartbeat three times per job (before the dequeue, after it,
and after the job), each time as three separate commands (`HSET last_heartbeat` and two
`EXPIRE`s), and writes the worker's `idle` state twice, after the job and again before the next
dequeue: eleven round trips per job, a fifth of a full Parley cycle's, only to push back TTLs of
several minutes and write a field that already holds that value. These classes keep every one
of RQ's behaviours and change only that:

- a heartbeat RQ sends on its own (not inside one of its pipelines) goes in one pipeline;
- a default heartbeat within `COALESCE_SECONDS` of the previous default one is skipped: the
  worker key's TTL (`worker_ttl + 60`, minutes) was just pushed back, and RQ's blocking
  dequeue waits at most `worker_ttl - 15` seconds, so the key cannot lapse before the next
  beat. A heartbeat with a TTL of its own (a job's, set inside RQ's pipelines) is always sent,
  and the next default one after it is sent too, so the key never keeps a job's shorter TTL;
- a state this worker wrote last is not written again (only the worker writes its state).

Subclasses rather than a patch: RQ takes custom worker classes (`rq worker -w`), and these
override `heartbeat` and `set_state` alone; RQ's loop, registries and job handling are its own.
"""

from __future__ import annotations

import time
from typing import Any

from rq import SimpleWorker, Worker
from rq.worker.base import BaseWorker

COALESCE_SECONDS = 1.0


class _FewerRoundTrips(BaseWorker):
    """RQ's heartbeat pipelined and coalesced, its state written when it changes (see the module docstring)."""

    _default_beat_at: float | None = None  # monotonic time of the last default heartbeat sent
    _written_state: str | None = None  # the state this worker last wrote to its key

    def register_birth(self) -> None:
        self._written_state = None  # a new key: its state is written afresh
        super().register_birth()

    def set_state(self, state: str, pipeline: Any = None) -> None:
        if pipeline is None and state == self._written_state:
            self._state = state
            return
        super().set_state(state, pipeline=pipeline)
        self._written_state = state

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if timeout is not None:
            self._default_beat_at = None  # the key now holds this TTL: the next default beat must be sent
        if pipeline is not None:
            super().heartbeat(timeout, pipeline=pipeline)
            return
        if timeout is None:
            last = self._default_beat_at
            if last is not None and time.monotonic() - last < COALESCE_SECONDS:
                return
        with self.connection.pipeline(transaction=False) as pipe:
            super().heartbeat(timeout, pipeline=pipe)
            pipe.execute()
        if timeout is None:
            self._default_beat_at = time.monotonic()


class ParleySimpleWorker(_FewerRoundTrips, SimpleWorker):
    """RQ's `SimpleWorker` (jobs in the worker's own process), with fewer heartbeat round trips."""


class ParleyForkWorker(_FewerRoundTrips, Worker):
    """RQ's forking `Worker` (a work horse per job), with fewer heartbeat round trips."""
