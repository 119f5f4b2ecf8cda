"""`parley worker` runs only Parley's own job functions: a job planted in its queue naming another fails.

Anyone who can write to Redis can push a job onto Parley's RQ queue. A real `parley worker`
takes it from the real queue and must refuse to import or call what it names, fail it with the
reason, and say so in its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from redis import Redis
from rq import Callback
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from workers.runtime.queues import JOB_FUNCTIONS, WEBHOOK_QUEUE_NAME, queue

pytestmark = pytest.mark.system

PARLEY = Path(sys.executable).with_name("parley")
TESTS = Path(__file__).resolve().parents[1]


def run_worker_burst(redis_url: str, data_dir: Path) -> str:
    """`parley worker --burst`, as an operator starts it, until the queue is empty; its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_"))}
    env.update(
        REDIS_URL=redis_url,
        PARLEY_AGENTS="agents_for_tests",
        PARLEY_DATA_DIR=str(data_dir),
        PARLEY_LOG_LEVEL="INFO",
        PYTHONPATH=os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p),
    )
    done = subprocess.run(
        [str(PARLEY), "worker", "--burst", "--name", f"guard-{os.getpid()}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_planted_job_naming_another_function_is_refused_and_failed(redis_url: str, r: Redis, tmp_path: Path) -> None:
    target = tmp_path / "made-by-a-planted-job"
    planted = queue(r).enqueue("os.makedirs", str(target), job_id="planted-makedirs", failure_ttl=600)
    beside = tmp_path / "made-by-a-job-planted-among-webhooks"  # the delivery threads' queue
    queue(r, WEBHOOK_QUEUE_NAME).enqueue("os.makedirs", str(beside), job_id="planted-webhook", failure_ttl=600)
    callback = queue(r).enqueue(  # a Parley function, but a callback naming another
        "workers.runtime.jobs.show_job",
        "no-such-run",
        "no-such-interrupt",
        job_id="planted-callback",
        on_success=Callback("os.makedirs"),
    )
    output = run_worker_burst(redis_url, tmp_path / "data")
    assert not target.exists() and not beside.exists(), output
    job = Job.fetch(planted.id, connection=r, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.FAILED
    reason = "its function 'os.makedirs' is not one of Parley's job functions"
    assert reason in (job.latest_result().exc_string or "")  # type: ignore[union-attr]
    assert "refused a job that is not Parley's" in output and "planted-makedirs" in output
    assert Job.fetch("planted-webhook", connection=r, serializer=JSONSerializer).get_status() == JobStatus.FAILED
    assert "ignored a callback a job names" in output and callback.id in output  # never imported, never called
    assert Job.fetch(callback.id, connection=r, serializer=JSONSerializer).get_status() == JobStatus.FINISHED


def test_every_function_parley_enqueues_is_on_the_list() -> None:
    import importlib

    for path in JOB_FUNCTIONS:
        module, _, name = path.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), path
