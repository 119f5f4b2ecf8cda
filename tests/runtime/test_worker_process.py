"""Real `parley worker` processes: a run pauses twice and finishes; a killed worker's run is taken over,
also when the worker dies between taking the run's job and starting it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from effect_counters import count
from redis import Redis
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from runtime_helpers import make_runtime

from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store.job_ids import resume as resume_job_id
from workers.store.records import RunStatus

pytestmark = pytest.mark.system

TESTS = Path(__file__).resolve().parents[1]
PARLEY = Path(sys.executable).with_name("parley")
TAKEN_OVER_WITHIN = 60.0
"""Seconds a dropped job may take to run again: a 2 s lease plus sweeps. RQ alone takes 600."""


class Workers:
    """Starts `parley worker` processes, each in its own process group, and always kills them."""

    def __init__(self, redis_url: str, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "PARLEY_AGENTS": "agents_for_tests",
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "PARLEY_LEASE_TTL": "2",
            "PARLEY_SWEEP_INTERVAL": "0.5",
            "PARLEY_RETRY_DELAYS": "0",
            "PARLEY_REQUEUE_GRACE": "1",
            "PARLEY_DATA_DIR": str(data_dir),
            "PARLEY_LOG_LEVEL": "INFO",
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        n = len(self.procs)
        log = (self.data_dir / f"worker-{n}.log").open("wb")
        proc = subprocess.Popen(
            [str(PARLEY), "worker", "--name", f"test-worker-{os.getpid()}-{n}"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and every process it started, like a machine that died."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in sorted(self.data_dir.glob("worker-*.log")))

    def close(self) -> None:
        for proc in self.procs:
            self.kill(proc)


@pytest.fixture
def workers(redis_url: str, r: Redis, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(redis_url, tmp_path)
    try:
        yield w
    finally:
        w.close()


def wait_for(what: str, predicate: Callable[[], Any], workers: Workers, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}\n--- worker logs ---\n{workers.logs()}")


def start_run(rt: Runtime, agent_name: str, text: str = "") -> str:
    run = rt.store.create(agent_name, text, "U1", {"host": "log", "team": "T1"})
    enqueue_run(rt.queue, run.id, run.job)
    return run.id


def paused_on(rt: Runtime, run_id: str, previous: str = "") -> Callable[[], str]:
    def check() -> str:
        run = rt.store.get(run_id)
        return run.interrupt if run.status is RunStatus.PAUSED and run.interrupt != previous else ""

    return check


def test_a_run_pauses_twice_in_a_worker_process_and_finishes(r: Redis, tmp_path: Path, workers: Workers) -> None:
    rt = make_runtime(r, tmp_path)
    workers.start()
    run_id = start_run(rt, "t-counter")

    q1 = wait_for("the first question", paused_on(rt, run_id), workers)
    assert rt.store.count(RunStatus.RUNNING) == 0  # parked: no worker holds it
    accept(rt, q1, "U1", [Answer(id="colour", choice="green")])
    q2 = wait_for("the second question", paused_on(rt, run_id, q1), workers)
    accept(rt, q2, "U1", [Answer(id="name", free_text="Ada")])

    wait_for("the run to succeed", lambda: rt.store.get(run_id).status is RunStatus.SUCCEEDED, workers)
    assert rt.store.get(run_id).result == "green Ada 1"
    assert count(tmp_path, run_id, "step") == 1
    assert [h.event for h in rt.store.history(run_id)] == ["started", "answered", "answered", "succeeded"]


def test_a_killed_workers_run_is_taken_over_without_repeating_its_step(
    r: Redis, tmp_path: Path, workers: Workers
) -> None:
    rt = make_runtime(r, tmp_path)
    first = workers.start()
    run_id = start_run(rt, "t-crash", '{"sleep": 60}')

    wait_for("the agent to reach its sleep", lambda: count(tmp_path, run_id, "reached") == 1, workers)
    assert rt.store.journal_get(run_id, "step:bump") == {"v": 1}
    killed_epoch = rt.store.get(run_id).epoch
    workers.kill(first)
    assert rt.store.get(run_id).status is RunStatus.RUNNING  # nobody has noticed yet

    workers.start()
    wait_for("the run to succeed", lambda: rt.store.get(run_id).status is RunStatus.SUCCEEDED, workers, timeout=30)
    run = rt.store.get(run_id)
    assert run.result == "done 1"
    assert count(tmp_path, run_id, "step") == 1
    assert run.epoch > killed_epoch + 1  # re-queued (bumped) and claimed again (bumped)
    lapses = [h for h in rt.store.history(run_id) if h.event == "lease lapsed"]
    assert [h.detail["epoch"] for h in lapses] == [killed_epoch]


def waiting_for_work(r: Redis) -> bool:
    """A worker of this database blocks in RQ's dequeue (BLMOVE): Redis itself hands it the next job."""
    db = str(r.connection_pool.connection_kwargs.get("db", 0))
    return any(c["cmd"] == "blmove" and "b" in c["flags"] and c["db"] == db for c in r.client_list())


def freeze_in_dequeue(r: Redis, proc: subprocess.Popen[bytes], workers: Workers) -> None:
    """SIGSTOP the worker (and its scheduler) while it blocks in its dequeue, trying again if it
    was between two of its sweep jobs: the next job pushed goes to a worker that never starts it."""
    for _ in range(50):
        wait_for("the worker to wait for its next job", lambda: waiting_for_work(r), workers)
        os.killpg(proc.pid, signal.SIGSTOP)
        if waiting_for_work(r):
            return
        os.killpg(proc.pid, signal.SIGCONT)
    pytest.fail("the worker never stopped while blocked in its dequeue")


@pytest.mark.parametrize("after", [0.0, 0.05], ids=["0ms", "50ms"])
def test_a_worker_killed_as_it_takes_an_answers_resume_is_replaced_within_a_lease(
    r: Redis, tmp_path: Path, workers: Workers, after: float
) -> None:
    """The worker is frozen inside its blocking dequeue, so the accepted answer's resume job moves
    into RQ's intermediate queue for a worker that never starts it; it is killed 0 or 50 ms later."""
    workers.env["PARLEY_WEBHOOK_WORKERS"] = "0"  # the run queue's dequeue is the only blocking one
    rt = make_runtime(r, tmp_path)
    first = workers.start()
    run_id = start_run(rt, "t-counter")
    q1 = wait_for("the first question", paused_on(rt, run_id), workers)
    freeze_in_dequeue(r, first, workers)
    accept(rt, q1, "U1", [Answer(id="colour", choice="green")])
    job_id = resume_job_id(run_id, q1)
    wait_for("the worker to take the resume", lambda: job_id in rt.queue.intermediate_queue.get_job_ids(), workers)
    time.sleep(after)
    workers.kill(first)
    killed = time.monotonic()
    job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
    assert job.get_status() is JobStatus.QUEUED and job.started_at is None  # taken, never started

    workers.start()
    q2 = wait_for("the run to resume", paused_on(rt, run_id, q1), workers, timeout=TAKEN_OVER_WITHIN)
    assert time.monotonic() - killed < TAKEN_OVER_WITHIN
    assert count(tmp_path, run_id, "step") == 1
    accept(rt, q2, "U1", [Answer(id="name", free_text="Ada")])
    wait_for("the run to succeed", lambda: rt.store.get(run_id).status is RunStatus.SUCCEEDED, workers)
    assert rt.store.get(run_id).result == "green Ada 1"
    assert count(tmp_path, run_id, "step") == 1
    assert [h.event for h in rt.store.history(run_id)] == ["started", "answered", "answered", "succeeded"]
