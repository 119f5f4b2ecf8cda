"""The RQ worker classes `parley worker` runs: RQ's own, with its worker bookkeeping in fewer round trips.

RQ's work loop beats the worker's heartbeat three times per job (before the dequeue, after it,
and after the job), each time as three separate commands (`HSET last_heartbeat` and two
`EXPIRE`s), writes the worker's `idle` state twice, after the job and again before the next
dequeue, each time on its own, and writes the job's `last_heartbeat` on its own as the job
ends: twelve of a job's twenty round trips (24 of a full Parley cycle's 50), only to push back
TTLs of several minutes and write fields that already hold that value or are written again
moments later. These classes keep every one of RQ's behaviours and change only that:

- a heartbeat RQ sends on its own (not inside one of its pipelines) goes in one pipeline;
- a default heartbeat within `COALESCE_SECONDS` of the previous default one is skipped: the
  worker key's TTL (`worker_ttl + 60`, minutes) was just pushed back, and RQ's blocking
  dequeue waits at most `worker_ttl - 15` seconds, so the key cannot lapse before the next
  beat;
- a heartbeat with a TTL of its own (a job's, set inside RQ's pipelines) is always sent, and
  a default one must follow, so the key never keeps a job's shorter TTL. The first default
  one after it (RQ's, right after the job) waits for the next beat: RQ's loop goes straight on
  to the suspension check, whose pipeline carries a heartbeat; a second default one before
  that is sent. Meanwhile the key holds the job's TTL, a minute at least;
- a state this worker wrote last is not written again (only the worker writes its state), and
  a new one goes with the next heartbeat, which is then sent even within the window: the
  state needs the round trip anyway;
- a job that returned (no `Retry`, no success callback) has its `last_heartbeat` set in memory
  only: the success transaction that follows at once saves the job's whole hash, that field
  included (or deletes the job, with `result_ttl=0`). A failure, a `Retry` or a callback in
  between keeps RQ's own write;
- in `ParleySimpleWorker`, a job's start is one transaction, not two: RQ writes the execution
  (its record, the started registry's entry, the worker's `busy` state) in one, then the job's
  start (heartbeats, `started`, out of the intermediate queue) in the next, with nothing run
  in between when the job runs in the worker's own process. The first one's commands are built
  by RQ as always and sent at the head of the second; should the start not reach Redis,
  neither is written, where RQ would have left the execution written and the job unstarted
  (RQ's failure handling cleans the execution up either way). The forking class keeps both:
  its work horse starts the job.

Subclasses rather than a patch: RQ takes custom worker classes (`rq worker -w`), and these
override `heartbeat`, `set_state`, the hooks around a job's start and end alone; RQ's loop,
registries and job handling are its own. If RQ renames `_finalize_success`, the job's own
write simply stays as RQ makes it.
"""

from __future__ import annotations

import time
from typing import Any

from rq import Queue, SimpleWorker, Worker
from rq.executions import Execution
from rq.job import Job, Retry
from rq.utils import now
from rq.worker.base import BaseWorker, WorkerStatus

COALESCE_SECONDS = 1.0


class _FewerRoundTrips(BaseWorker):
    """RQ's heartbeat pipelined and coalesced, its state written when it changes (see the module docstring)."""

    _default_beat_at: float | None = None  # monotonic time of the last default heartbeat sent
    _owed: bool = False  # a beat with a job's TTL was sent since: a default one must follow
    _put_off: bool = False  # that default one was put off once, to the next beat
    _written_state: str | None = None  # the state this worker last wrote to its key
    _pending_state: str | None = None  # a state set since, written with the next heartbeat
    _ends_in_save: bool = False  # the job ending now is saved whole by RQ's success transaction
    _execution_writes: Any = None  # RQ's execution writes, kept for the job's start (ParleySimpleWorker)
    also_scheduled: tuple[Queue, ...] = ()  # more queues whose due jobs this worker's scheduler enqueues

    def _start_scheduler(self, *args: Any, **kwargs: Any) -> None:
        """RQ's scheduler, for this worker's queues and `also_scheduled` (the webhooks' retries,
        whose own workers run in threads, where RQ's scheduler process cannot be forked from)."""
        own = self.queues
        self.queues = [*own, *self.also_scheduled]
        try:
            super()._start_scheduler(*args, **kwargs)
        finally:
            self.queues = own

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
        if pipeline is not None:
            self._send_execution_with(pipeline)
            self._write_pending_state(pipeline)
            super().heartbeat(timeout, pipeline=pipeline)
            self._beat_sent(timeout)
            return
        if timeout is None and self._owed and not self._put_off:
            self._put_off = True  # to the next beat, with any state set since
            return
        last = self._default_beat_at
        recent = last is not None and time.monotonic() - last < COALESCE_SECONDS
        if timeout is None and not self._owed and recent and self._pending_state is None:
            return
        with self.connection.pipeline(transaction=False) as pipe:
            self._write_pending_state(pipe)
            super().heartbeat(timeout, pipeline=pipe)
            pipe.execute()
        self._beat_sent(timeout)

    def _beat_sent(self, timeout: int | None) -> None:
        self._owed, self._put_off = timeout is not None, False
        self._default_beat_at = time.monotonic() if timeout is None else None

    def _write_pending_state(self, pipeline: Any) -> None:
        if self._pending_state is not None:
            self.set_state(self._pending_state, pipeline=pipeline)

    def _send_execution_with(self, pipeline: Any) -> None:
        """Put the execution's writes, if any are kept, at the head of this beat's pipeline: the
        job's start, the first pipelined beat after `ParleySimpleWorker.prepare_execution`. They
        go with that pipeline whatever becomes of it: a start Redis refused takes them along."""
        writes, self._execution_writes = self._execution_writes, None
        if writes is None:
            return
        # redis-py keeps a pipeline's commands in `command_stack` as (args, options); staged again
        # as they were, so the server gets exactly the commands RQ built.
        for args, options in writes.command_stack:
            pipeline.pipeline_execute_command(*args, **options)
        writes.reset()

    def _finalize_success(self, job: Job, queue: Queue, execution: Execution, return_value: Any) -> None:
        self._ends_in_save = not isinstance(return_value, Retry) and job.success_callback is None
        try:
            super()._finalize_success(job, queue, execution, return_value)
        finally:
            self._ends_in_save = False

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        if not self._ends_in_save:
            super().handle_execution_ended(job, queue, heartbeat_ttl)
            return
        job.ended_at = job.last_heartbeat = now()


class ParleySimpleWorker(_FewerRoundTrips, SimpleWorker):
    """RQ's `SimpleWorker` (jobs in the worker's own process), with fewer bookkeeping round trips."""

    def prepare_execution(self, job: Job) -> Execution:
        # `rq.executions.prepare_execution`, its pipeline kept rather than executed: the job's
        # start, which RQ's `execute_job` runs next, sends its commands.
        pipe = self.connection.pipeline()
        execution = Execution.create(job, self.get_heartbeat_ttl(job), pipeline=pipe, worker_name=self.name)
        self.executions[execution.id] = execution
        self.set_state(WorkerStatus.BUSY, pipeline=pipe)
        self._execution_writes = pipe
        return execution


class ParleyForkWorker(_FewerRoundTrips, Worker):
    """RQ's forking `Worker` (a work horse per job), with fewer bookkeeping round trips."""
