"""`LeanJob`: Parley's guarded RQ job, whose end writes nothing twice or for nothing.

RQ's success transaction sets the job's `status` in an `HSET` of its own, then saves the
whole job, `status` included, in the next command. It then gives the job's dependents and
dependencies keys the result's TTL. A Parley job never has dependencies: each is enqueued
`unique`, which RQ refuses with dependencies, so that key never exists. This class keeps
everything else RQ does and leaves out those two commands, two of a full cycle's four.
Other jobs may still depend on a Parley job, so the dependents key keeps its `EXPIRE`.
"""

from __future__ import annotations

from typing import Any

from rq.job import JobStatus

from workers.runtime.job_guard import ParleyJob


class LeanJob(ParleyJob):
    """`ParleyJob` whose success transaction writes its status once (see the module docstring)."""

    _saved_next: bool = False  # the status being set now goes with RQ's save of the whole job

    def _handle_success(self, result_ttl: Any, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        self._saved_next = True  # RQ sets `finished`, then saves the whole job in the same pipeline
        try:
            super()._handle_success(result_ttl, pipeline, *args, **kwargs)
        finally:
            self._saved_next = False

    def set_status(self, status: JobStatus, pipeline: Any = None) -> None:
        if self._saved_next and pipeline is not None:
            self._saved_next = False
            self._status = status  # written by the save that follows, with the rest of the job
            return
        super().set_status(status, pipeline=pipeline)

    def cleanup(self, ttl: int | None = None, pipeline: Any = None, remove_from_queue: bool = True) -> None:
        if ttl is not None and ttl > 0 and not self._dependency_ids:
            connection = pipeline if pipeline is not None else self.connection
            connection.expire(self.key, ttl)
            connection.expire(self.dependents_key, ttl)  # another job may depend on this one
            return
        super().cleanup(ttl, pipeline=pipeline, remove_from_queue=remove_from_queue)
