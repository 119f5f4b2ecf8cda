"""The RQ worker classes `parley worker` runs: RQ's own, with its worker bookkeeping in fewer round trips.

RQ's work loop beats the worker's heartbeat three times per job (before the dequeue, after it,
and after the job), each time as three separate commands (`HSET last_heartbeat` and two
`EXPIRE`s), and writes the worker's `idle` state twice, after the job and again before the next
dequeue, each time on its own: eleven of a job's twenty round trips (22 of a full Parley cycle's
50), only to push back TTLs of several minutes and write a field that already holds that value.
These classes keep every one of RQ's behaviours and change only that:

- a heartbeat RQ sends on its own (not inside one of its pipelines) goes in one pipeline;
- a default heartbeat within `COALESCE_SECONDS` of the previous default one is skipped: the
  worker key's TTL (`worker_ttl + 60`, minutes) was just pushed back, and RQ's blocking
  dequeue waits at most `worker_ttl - 15` seconds, so the key cannot lapse before the next
  beat. A heartbeat with a TTL of its own (a job's, set inside RQ's pipelines) is always sent,
  and the next default one after it is sent too, so the key never keeps a job's shorter TTL;
- a state this worker wrote last is not written again (only the worker writes its state), and
  a new one goes with the heartbeat that follows it in RQ's loop (every `set_state` there is
  followed by one, or by the suspension check's pipeline, which carries a heartbeat too).

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
    _pending_state: str | None = None  # a state set since, written with the next heartbeat

    def register_birth(self) -> None:
        self._written_state = self._pending_state = None  # a new key: its state is written afresh
        super().register_birth()

    def set_state(self, state: str, pipeline: Any = None) -> None:
        if pipeline is not None:
            super().set_state(state, pipeline=pipeline)
            self._written_state, self._pending_state = state, None
            return
        self._state = state
        self._pending_state = None if state == self._written_state else state

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if timeout is not None:
            self._default_beat_at = None  # the key now holds this TTL: the next default beat must be sent
        if pipeline is not None:
            self._write_pending_state(pipeline)
            super().heartbeat(timeout, pipeline=pipeline)
            return
        last = self._default_beat_at
        beat = timeout is not None or last is None or time.monotonic() - last >= COALESCE_SECONDS
        if not beat and self._pending_state is None:
            return
        with self.connection.pipeline(transaction=False) as pipe:
            self._write_pending_state(pipe)
            if beat:
                super().heartbeat(timeout, pipeline=pipe)
            pipe.execute()
        if beat and timeout is None:
            self._default_beat_at = time.monotonic()

    def _write_pending_state(self, pipeline: Any) -> None:
        if self._pending_state is not None:
            self.set_state(self._pending_state, pipeline=pipeline)


class ParleySimpleWorker(_FewerRoundTrips, SimpleWorker):
    """RQ's `SimpleWorker` (jobs in the worker's own process), with fewer bookkeeping round trips."""


class ParleyForkWorker(_FewerRoundTrips, Worker):
    """RQ's forking `Worker` (a work horse per job), with fewer bookkeeping round trips."""
