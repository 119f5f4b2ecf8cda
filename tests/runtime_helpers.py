"""Helpers for runtime tests: a runtime on the test Redis, a recording host, an in-process worker."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from redis import Redis
from rq import SimpleWorker
from rq.serializers import JSONSerializer

from workers.interaction import Outcome, Request
from workers.runtime.host import HostRouter, PausingRun
from workers.runtime.wiring import Runtime, RuntimeSettings, install
from workers.store.records import InterruptRecord, RunRecord


class RecordingHost:
    """A pause/resume host that records what it was asked to show, for assertions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.questions: list[tuple[str, str]] = []  # (run_id, interrupt_id)
        self.said: list[tuple[str, str]] = []
        self.finals: list[tuple[str, str]] = []
        self.failures: list[tuple[str, str]] = []
        self.closed: list[tuple[str, str]] = []
        self.reminders: list[tuple[str, str]] = []

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        with self.lock:
            if not run.question_message:
                self.questions.append((run.run_id, run.interrupt_id or ""))
                run.record_question_message({"posted": len(self.questions)})
        return Outcome(paused=True)

    def say(self, run: RunRecord, text: str) -> None:
        with self.lock:
            self.said.append((run.id, text))

    def finished(self, run: RunRecord, result: str) -> None:
        with self.lock:
            self.finals.append((run.id, result))

    def failed(self, run: RunRecord, reason: str) -> None:
        with self.lock:
            self.failures.append((run.id, reason))

    def question_closed(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        with self.lock:
            self.closed.append((run.id, interrupt.state.value))

    def remind(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        with self.lock:
            self.reminders.append((run.id, interrupt.id))


def make_runtime(r: Redis, data_dir: Path, host: Any = None, **settings: Any) -> Runtime:
    base = {"lease_ttl": 5.0, "sweep_interval": 1.0, "retry_delays": (0.0,), "requeue_grace": 0.0, "data_dir": data_dir}
    base.update(settings)
    hosts = HostRouter({"test": host or RecordingHost()})
    return install(Runtime.build(r, hosts=hosts, settings=RuntimeSettings(**base)))


def work(runtime: Runtime) -> None:
    """Drain the queue with an in-process SimpleWorker (burst mode)."""
    SimpleWorker([runtime.queue], connection=runtime.redis, serializer=JSONSerializer).work(burst=True)
