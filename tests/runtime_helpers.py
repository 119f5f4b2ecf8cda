"""Helpers for runtime tests: a runtime on the test Redis, a recording host, an in-process worker.

Runs are started on the `test` host as U1 in team T1; `parked` starts one and works the queue
until it waits on its question, the step most runtime tests begin with.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents_for_tests import GATES, REACHED
from redis import Redis
from rq import SimpleWorker
from rq.serializers import JSONSerializer

from workers.interaction import ContextChange, Outcome, Request
from workers.runtime.execute import execute
from workers.runtime.host import InteractorRouter, PausingRun, QuestionProgress
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime, RuntimeSettings, install
from workers.store.groups import GroupRecord
from workers.store.records import HistoryEntry, InterruptRecord, RunRecord, RunStatus


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
        self.last_calls: list[tuple[str, str]] = []
        self.claims: list[tuple[str, str, bool]] = []
        self.escalations: list[tuple[str, str, list[str]]] = []  # (run_id, interrupt_id, people added)
        self.reassignments: list[tuple[str, str, str, str]] = []  # (run_id, interrupt_id, by, to)
        self.facts: dict[str, tuple[dict[str, Any] | None, list[ContextChange]]] = {}  # interrupt id -> shown
        self.superseded: list[tuple[str, str, list[str]]] = []  # (run_id, interrupt_id, fields changed)
        self.progress: list[tuple[str, str]] = []  # (run_id, summary) of questions put to each person
        self.groups: dict[str, list[str]] = {}  # user group id -> members, for `people`

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        with self.lock:
            if not run.question_message:
                self.questions.append((run.run_id, run.interrupt_id or ""))
                self.facts[run.interrupt_id or ""] = (run.question_context, run.context_changes)
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

    def question_superseded(self, run: RunRecord, interrupt: InterruptRecord, changes: list[ContextChange]) -> None:
        with self.lock:
            self.superseded.append((run.id, interrupt.id, [c.field for c in changes]))

    def remind(self, run: RunRecord, interrupt: InterruptRecord, *, last_call: bool = False) -> None:
        with self.lock:
            self.reminders.append((run.id, interrupt.id))
            if last_call:
                self.last_calls.append((run.id, interrupt.id))

    def claimed(self, run: RunRecord, interrupt: InterruptRecord, *, by: str, released: bool) -> None:
        with self.lock:
            self.claims.append((interrupt.id, by, released))

    def group_progress(self, run: RunRecord, group: GroupRecord, progress: QuestionProgress) -> None:
        with self.lock:
            self.progress.append((run.id, progress.summary + (" closed" if progress.closed else "")))

    def escalated(self, run: RunRecord, interrupt: InterruptRecord, added: list[str]) -> None:
        with self.lock:
            self.escalations.append((run.id, interrupt.id, added))

    def reassigned(self, run: RunRecord, interrupt: InterruptRecord, *, by: str, to: str) -> None:
        with self.lock:
            self.reassignments.append((run.id, interrupt.id, by, to))

    def people(self, run: RunRecord, ids: list[str]) -> list[str]:
        """User groups from `self.groups` (a test's own directory), members in order, once each."""
        found: list[str] = []
        for i in ids:
            found += [m for m in self.groups.get(i, [i]) if m not in found]
        return found


def make_runtime(r: Redis, data_dir: Path, host: Any = None, **settings: Any) -> Runtime:
    base = {"lease_ttl": 5.0, "sweep_interval": 1.0, "retry_delays": (0.0,), "requeue_grace": 0.0, "data_dir": data_dir}
    base.update(settings)
    hosts = InteractorRouter({"test": host or RecordingHost()})
    return install(Runtime.build(r, hosts=hosts, settings=RuntimeSettings(**base)))


def work(runtime: Runtime) -> None:
    """Drain the queue with an in-process SimpleWorker (burst mode)."""
    SimpleWorker([runtime.queue], connection=runtime.redis, serializer=JSONSerializer).work(burst=True)


def runtime_and_host(r: Redis, data_dir: Path, **settings: Any) -> tuple[Runtime, RecordingHost]:
    """A runtime whose `test` host is a fresh `RecordingHost`, and that host, for tests that read what it showed."""
    host = RecordingHost()
    return make_runtime(r, data_dir, host, **settings), host


def start(rt: Runtime, agent_name: str, params: dict[str, Any] | str | None = None, *, user: str = "U1") -> str:
    """Create a run of `agent_name` by `user` and queue its first execution; returns the run id.

    `params` become the run's text as JSON (the test agents read them from there); a string is
    taken as the text itself.
    """
    text = params if isinstance(params, str) else json.dumps(params or {})
    run = rt.store.create(agent_name, text, user, {"host": "test", "team": "T1"})
    enqueue_run(rt.queue, run.id, run.job)
    return run.id


def paused(rt: Runtime, run_id: str) -> str:
    """The id of the question `run_id` waits on; fails the test unless the run is paused."""
    record = rt.store.get(run_id)
    assert record.status is RunStatus.PAUSED, (record.status, record.error)
    return record.interrupt


def parked(rt: Runtime, agent_name: str, params: dict[str, Any] | str | None = None) -> tuple[str, str]:
    """Start a run, work the queue until it waits on its question, and return (run id, question id)."""
    run_id = start(rt, agent_name, params)
    work(rt)
    return run_id, paused(rt, run_id)


def history_events(rt: Runtime, run_id: str, event: str) -> list[HistoryEntry]:
    """The entries of the run's history with this `event` name, oldest first."""
    return [h for h in rt.store.history(run_id) if h.event == event]


def dump_database(r: Redis) -> dict[bytes, Any]:
    """Every key of the database (Parley's and RQ's), dumped: equal dumps mean nothing was written."""
    return {k: r.dump(k) for k in sorted(r.scan_iter("*"))}


@contextmanager
def held_at_gate(rt: Runtime, run_id: str) -> Iterator[list[str]]:
    """Execute the `t-gate` run `run_id` in a thread that waits at its gate while the body runs.

    The body sees the execution after its first recorded step and before its next write. On
    exit the gate opens and the thread ends; the yielded list then holds what `execute`
    returned ("succeeded", or "stale" for an execution that lost the run meanwhile).
    """
    gate = GATES[run_id] = threading.Event()
    reached = REACHED[run_id] = threading.Event()
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(execute(rt, run_id)))
    thread.start()
    try:
        assert reached.wait(10), f"run {run_id} never reached its gate"
        yield outcome
    finally:
        gate.set()
        thread.join(10)


def said(host: RecordingHost, run_id: str) -> list[str]:
    """What `run_id` said through `host`, in order."""
    return [text for rid, text in host.said if rid == run_id]
