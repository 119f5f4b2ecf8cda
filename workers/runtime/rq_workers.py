"""The RQ worker classes `parley worker` runs: RQ's own, with fewer bookkeeping round trips.

RQ's work loop spends twelve of a job's twenty round trips on bookkeeping. That is 24 of a full
Parley cycle's 50. It beats the worker's heartbeat three times per job: before the dequeue,
after it, and after the job. Each beat is three separate commands: `HSET last_heartbeat` and two
`EXPIRE`s. It writes the worker's `idle` state twice, each time alone: after the job and before
the next dequeue. It writes the job's `last_heartbeat` alone as the job ends. All this only
pushes back TTLs of several minutes. Or it writes fields that already hold that value, or are
written again moments later. These classes keep every one of RQ's behaviours and change only
that:

- A heartbeat RQ sends on its own, not inside one of its pipelines, goes in one pipeline.
- A default heartbeat within `COALESCE_SECONDS` of the previous default one is skipped. The
  worker key's TTL (`worker_ttl + 60`, minutes) was just pushed back. RQ's blocking dequeue
  waits at most `worker_ttl - 15` seconds. So the key cannot lapse before the next beat.
- A heartbeat with a TTL of its own is always sent. Those are a job's, set inside RQ's
  pipelines. A default one must follow, so the key never keeps a job's shorter TTL. The first
  default one after it is RQ's, right after the job. It waits for the next beat. RQ's loop goes
  straight on to the suspension check, whose pipeline carries a heartbeat. A second default one
  before that is sent. Meanwhile the key holds the job's TTL, a minute at least.
- A state this worker wrote last is not written again, since only the worker writes its state. A
  new state goes with the next heartbeat, in the same `HSET`. That beat is then sent even within
  the window, as the state needs the round trip anyway. A job's `busy` goes so too.
- A job that returned has its `last_heartbeat` set in memory only. That means no `Retry` and no
  success callback. The success transaction that follows at once saves the job's whole hash,
  that field included. Or it deletes the job, with `result_ttl=0`. A failure, a `Retry` or a
  callback in between keeps RQ's own write.
- The suspension check before each dequeue is a heartbeat and `EXISTS rq:suspended`. It goes as
  a plain pipeline, not in MULTI/EXEC, since neither write needs the other. A suspended worker
  is then left to RQ's own check, which waits as RQ does.
- In `ParleySimpleWorker`, a success's counters are summed in memory once its transaction is
  sent. They are `successful_job_count` and `total_working_time`, two commands of every job's
  end. A heartbeat writes them at most once per `STATS_SECONDS`, and the worker's stop does too.
  A worker killed outright leaves out its last second's counts. A failure or a `Retry` still
  writes its own at once. The forking class keeps RQ's writes: its work horse counts the success.
- In `ParleySimpleWorker`, a job's start is one transaction, not two. RQ writes the execution in
  one: its record, the started registry's entry, the worker's `busy` state. It writes the job's
  start in the next: heartbeats, `started`, out of the intermediate queue. Nothing runs in
  between when the job runs in the worker's own process. RQ builds the first one's commands as
  always, and they are sent at the head of the second. If the start does not reach Redis,
  neither is written. RQ would have left the execution written and the job unstarted. RQ's
  failure handling cleans the execution up either way. The forking class keeps both, since its
  work horse starts the job.
- A job's start leaves out two writes its own transaction makes again. One is the job's lone
  `last_heartbeat`, which `prepare_for_execution` writes with the start. The other is the
  executions key's first `EXPIRE`, which the start's heartbeat sets.

These are subclasses rather than a patch, as RQ takes custom worker classes (`rq worker -w`).
They override `heartbeat`, `set_state`, and the hooks around a job's start and end alone. RQ's
loop, registries and job handling are its own. If RQ renames `_finalize_success`, the job's own
write simply stays as RQ makes it.
"""

from __future__ import annotations

import time
from typing import Any

from rq import Queue, SimpleWorker, Worker
from rq.executions import Execution
from rq.job import Job, Retry
from rq.suspension import WORKERS_SUSPENDED
from rq.utils import now, utcformat
from rq.worker.base import BaseWorker, WorkerStatus

from workers.runtime.parent_death import forks_die_with_parent
from workers.store.rq_beats import stage_beat, stage_exists, stage_stats

COALESCE_SECONDS = 1.0
STATS_SECONDS = 1.0
"""At most how often a `ParleySimpleWorker` writes the success counters it summed since."""


class _FewerRoundTrips(BaseWorker):
    """RQ's heartbeat pipelined and coalesced, and its state written on change.

    See the module docstring.
    """

    _default_beat_at: float | None = None  # monotonic time of the last default heartbeat sent
    _owed: bool = False  # a beat with a job's TTL was sent since: a default one must follow
    _put_off: bool = False  # that default one was put off once, to the next beat
    _written_state: str | None = None  # the state this worker last wrote to its key
    _pending_state: str | None = None  # a state set since, written with the next heartbeat
    _ends_in_save: bool = False  # the job ending now is saved whole by RQ's success transaction
    _execution_writes: Any = None  # RQ's execution writes, kept for the job's start (ParleySimpleWorker)
    also_scheduled: tuple[Queue, ...] = ()  # more queues whose due jobs this worker's scheduler enqueues
    _sums_stats: bool = False  # successes' counters summed in memory (ParleySimpleWorker)
    _in_success: bool = False  # RQ's success transaction is being built: its counters are held
    _held: tuple[int, float] = (0, 0.0)  # this success's counters, until its transaction is sent
    _unsent: tuple[int, float] = (0, 0.0)  # successes and seconds counted since the last write
    _stats_sent_at: float = 0.0  # monotonic time the counters were last written

    def _start_scheduler(self, *args: Any, **kwargs: Any) -> None:
        """RQ's scheduler for this worker's queues and `also_scheduled`.

        `also_scheduled` holds the webhooks' retries. Their own workers run in threads, from which RQ's
        scheduler process cannot be forked. The scheduler process ends with this worker's.
        """
        own = self.queues
        self.queues = [*own, *self.also_scheduled]
        try:
            with forks_die_with_parent():  # RQ's scheduler process would outlive a killed worker
                super()._start_scheduler(*args, **kwargs)
        finally:
            self.queues = own

    def run_maintenance_tasks(self) -> None:
        """RQ's upkeep, which starts the scheduler process too once this worker takes its lock."""
        with forks_die_with_parent():
            super().run_maintenance_tasks()

    def register_birth(self) -> None:
        self._written_state = self._pending_state = None  # a new key: its state is written afresh
        self._stats_sent_at = time.monotonic()
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
            self._beat(timeout, pipeline)
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
            self._beat(timeout, pipe)
            pipe.execute()
        self._beat_sent(timeout)

    def _beat(self, timeout: int | None, pipeline: Any) -> None:
        """RQ's heartbeat (`BaseWorker.heartbeat`), a state set since written in the same `HSET`."""
        self.last_heartbeat = now()
        fields = {"last_heartbeat": utcformat(self.last_heartbeat)}
        if self._pending_state is not None:
            fields["state"] = self._pending_state
            self._written_state, self._pending_state = self._pending_state, None
        stage_beat(pipeline, self.key, self.executions_key, fields, timeout or self.worker_ttl + 60)
        if self._unsent != (0, 0.0) and time.monotonic() - self._stats_sent_at >= STATS_SECONDS:
            self._send_stats(pipeline)

    def _send_stats(self, pipeline: Any) -> None:
        stage_stats(pipeline, self.key, *self._unsent)
        self._unsent, self._stats_sent_at = (0, 0.0), time.monotonic()

    def increment_successful_job_count(self, pipeline: Any = None) -> None:
        if not self._in_success:
            super().increment_successful_job_count(pipeline=pipeline)
            return
        self._held = (1, self._held[1])  # set, not added: RQ builds the transaction again after a WATCH

    def increment_total_working_time(self, job_execution_time: Any, pipeline: Any) -> None:
        if not self._in_success:
            super().increment_total_working_time(job_execution_time, pipeline)
            return
        self._held = (self._held[0], job_execution_time.total_seconds())

    def register_death(self) -> None:
        if self._unsent != (0, 0.0):
            with self.connection.pipeline(transaction=False) as pipe:
                self._send_stats(pipe)
                pipe.execute()
        super().register_death()

    def prepare_job_execution(self, job: Job, remove_from_intermediate_queue: bool = False) -> None:
        """RQ's job start, less the job's own `HSET last_heartbeat`.

        `prepare_for_execution` writes that field again, in the same transaction.
        """
        with self.connection.pipeline() as pipeline:
            self.heartbeat(self.get_heartbeat_ttl(job), pipeline=pipeline)
            job.prepare_for_execution(self.name, pipeline=pipeline)
            pipeline.persist(job.key)
            if remove_from_intermediate_queue:
                pipeline.lrem(Queue(job.origin, connection=self.connection).intermediate_queue_key, 1, job.id)
            pipeline.execute()
        self.procline(f"Processing {job.func_name} from {job.origin} since {time.time()}")

    def check_for_suspension(self, burst: bool) -> None:
        """RQ's check for `rq suspend`, in a plain pipeline while not suspended (see the module docstring)."""
        if self._execution_writes is None and not self._stop_requested and not self._suspended():
            return
        super().check_for_suspension(burst)

    def _suspended(self) -> bool:
        """RQ's `is_suspended`, its heartbeat and read in one round trip without MULTI/EXEC."""
        with self.connection.pipeline(transaction=False) as pipe:
            self.heartbeat(pipeline=pipe)
            stage_exists(pipe, WORKERS_SUSPENDED)
            return bool(pipe.execute()[-1])

    def _beat_sent(self, timeout: int | None) -> None:
        self._owed, self._put_off = timeout is not None, False
        self._default_beat_at = time.monotonic() if timeout is None else None

    def _send_execution_with(self, pipeline: Any) -> None:
        """Put any kept execution writes at the head of this beat's pipeline.

        This is the job's start, the first pipelined beat after `ParleySimpleWorker.prepare_execution`.
        The writes go with that pipeline whatever becomes of it. A start Redis refused takes them along.
        """
        writes, self._execution_writes = self._execution_writes, None
        if writes is None:
            return
        # redis-py keeps a pipeline's commands in `command_stack` as (args, options); staged again
        # as they were, so the server gets exactly the commands RQ built.
        # The executions key's EXPIRE is left out: the beat that follows in the same pipeline sets it.
        for args, options in writes.command_stack:
            if tuple(args[:2]) != ("EXPIRE", self.executions_key):
                pipeline.pipeline_execute_command(*args, **options)
        writes.reset()

    def _finalize_success(self, job: Job, queue: Queue, execution: Execution, return_value: Any) -> None:
        self._ends_in_save = not isinstance(return_value, Retry) and job.success_callback is None
        self._in_success, self._held = self._sums_stats and not isinstance(return_value, Retry), (0, 0.0)
        try:
            super()._finalize_success(job, queue, execution, return_value)
        finally:
            self._ends_in_save = self._in_success = False
        # The success transaction was sent: its counters are the worker's now.
        self._unsent = (self._unsent[0] + self._held[0], self._unsent[1] + self._held[1])

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        if not self._ends_in_save:
            super().handle_execution_ended(job, queue, heartbeat_ttl)
            return
        job.ended_at = job.last_heartbeat = now()


class ParleySimpleWorker(_FewerRoundTrips, SimpleWorker):
    """RQ's `SimpleWorker`, running jobs in-process, with fewer bookkeeping round trips."""

    _sums_stats = True

    def prepare_execution(self, job: Job) -> Execution:
        # `rq.executions.prepare_execution`, its pipeline kept rather than executed: the job's
        # start, which RQ's `execute_job` runs next, sends its commands.
        pipe = self.connection.pipeline()
        execution = Execution.create(job, self.get_heartbeat_ttl(job), pipeline=pipe, worker_name=self.name)
        self.executions[execution.id] = execution
        self.set_state(WorkerStatus.BUSY)  # written by the start's beat, in its HSET
        self._execution_writes = pipe
        return execution


class ParleyForkWorker(_FewerRoundTrips, Worker):
    """RQ's forking `Worker`, a work horse per job, with fewer bookkeeping round trips."""
