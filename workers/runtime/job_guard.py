"""`ParleyJob`: an RQ job that runs only if it names one of Parley's job functions.

RQ imports and calls whatever dotted path a job in Redis names. So anyone who can write to the
queue could run any function on every worker, like `os.makedirs` or `subprocess.call`. The
worker resolves a job's function through `Job.func`. There this subclass refuses any function
outside `queues.JOB_FUNCTIONS`. It also refuses any method of a stored instance. RQ then fails
the job with the reason. It never imports a callback or sends an RQ webhook a job names.
Parley's own jobs have none.
"""

from __future__ import annotations

from typing import Any

from rq.job import Job

from workers.exceptions import ParleyError
from workers.logs import Log
from workers.runtime.queues import JOB_FUNCTIONS

log = Log("parley.worker")


class ForeignJob(ParleyError):
    """A job in Parley's queue naming something other than a Parley job function."""


class ParleyJob(Job):
    """RQ's `Job`, refusing all but Parley's job functions (see the module docstring)."""

    @property
    def func(self) -> Any:
        name = self.func_name
        if name not in JOB_FUNCTIONS or self.instance is not None:
            reason = f"refused job {self.id}: its function {name!r} is not one of Parley's job functions"
            log.error("refused a job that is not Parley's", job_id=self.id, func=str(name), queue=self.origin)
            raise ForeignJob(reason)
        return super().func

    @property
    def success_callback(self) -> None:
        return self._no_callback("on_success", self._success_callback_name)

    @property
    def failure_callback(self) -> None:
        return self._no_callback("on_failure", self._failure_callback_name)

    @property
    def stopped_callback(self) -> None:
        return self._no_callback("on_stopped", self._stopped_callback_name)

    def send_webhooks(self, status: Any, *, exc_string: str | None = None) -> None:
        if self.webhooks:
            log.error("ignored the RQ webhooks a job names", job_id=self.id, count=len(self.webhooks))

    def _no_callback(self, kind: str, name: str | None) -> None:
        if name:
            log.error("ignored a callback a job names", job_id=self.id, callback=kind, func=name)
        return None
