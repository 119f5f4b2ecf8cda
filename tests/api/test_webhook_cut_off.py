"""A webhook whose worker is killed mid-attempt: the next attempt follows, and after the last it is recorded failed.

Real `parley serve` and `parley worker`s, and a receiver that never answers. Each worker is
SIGKILLed while its attempt waits on the receiver, so it records nothing. RQ finds the job
abandoned once its started-registry entry lapses, a minute and a half after the attempt began.
The test runs RQ's own cleanup as of then (`StartedJobRegistry.cleanup(timestamp=…)`) rather
than wait for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import Token, approval, create_token
from http_servers import BlackHole, black_hole
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer
from slack_stack import SlackStack
from stacks import Stacks

from workers.runtime.queues import WEBHOOK_QUEUE_NAME
from workers.store import job_ids
from workers.store.runs import RunStore

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"


@pytest.fixture(scope="module")
def hole() -> Iterator[BlackHole]:
    with black_hole() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def stack(redis_url: str, hole: BlackHole, stacks: Stacks) -> SlackStack:
    env = {
        "PARLEY_WEBHOOK_ALLOW": f"127.0.0.1:{hole.port}",
        "PARLEY_WEBHOOK_RETRY_INTERVALS": "1",  # two attempts, a second apart
        "PARLEY_WEBHOOK_TIMEOUT": "30",  # each attempt still waits when its worker is killed
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    return stacks(redis_url=redis_url, workers=0, extra_env=env)


def webhook_of(stack: SlackStack, token: Token, question_id: str) -> dict[str, Any]:
    assert stack.http is not None
    webhook = stack.http.get(f"/api/v1/questions/{question_id}", headers=token.auth).json()["webhook"]
    return dict(webhook) if webhook is not None else {"status": None}


def kill_during_attempt(stack: SlackStack, worker: subprocess.Popen[bytes], hole: BlackHole, attempt: int) -> None:
    """SIGKILL `worker` while attempt number `attempt` waits on the receiver; then let RQ find it abandoned."""
    stack.wait_for(f"attempt {attempt} to reach the receiver", lambda: hole.accepted >= attempt, timeout=30)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(5)
    assert stack.redis is not None
    started = StartedJobRegistry(WEBHOOK_QUEUE_NAME, connection=stack.redis, serializer=JSONSerializer)
    assert started.get_job_ids(cleanup=False), "the delivery was not running"
    started.cleanup(timestamp=time.time() + 120)  # as RQ's next look would, once the entry lapsed


def test_a_worker_killed_mid_attempt_leads_to_the_next_and_after_the_last_to_failed(
    stack: SlackStack, hole: BlackHole
) -> None:
    token = create_token(stack, "cut-off")
    assert stack.http is not None and stack.redis is not None
    first = stack.spawn_worker("first")
    body = {"request": approval("Roll back?"), "channel": CHANNEL, "callback_url": f"http://127.0.0.1:{hole.port}/h"}
    created = stack.http.post("/api/v1/questions", headers=token.auth, json=body)
    assert created.status_code == 201, created.text
    question_id = str(created.json()["id"])
    assert stack.http.post(f"/api/v1/questions/{question_id}/cancel", headers=token.auth).status_code == 200

    kill_during_attempt(stack, first, hole, 1)  # a retry left: RQ schedules the next attempt
    assert webhook_of(stack, token, question_id)["status"] == "pending"
    second = stack.spawn_worker("second")
    kill_during_attempt(stack, second, hole, 2)  # the last: RQ fails the job, and nothing records it
    job = Job.fetch(job_ids.webhook(question_id, "cancelled"), connection=stack.redis, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.FAILED

    stack.spawn_worker("third")  # its sweep records the delivery
    hook = stack.wait_for(
        "the delivery to be recorded failed",
        lambda: (h := webhook_of(stack, token, question_id))["status"] == "failed" and h,
        timeout=20,
    )
    assert hook["attempts"] == 2 == hole.accepted
    assert hook["last_error"] == "the worker delivering it stopped"
    failed = [e for e in RunStore(stack.redis).history(question_id) if e.event == "webhook failed"]
    assert len(failed) == 1, failed
    assert failed[0].detail["attempts"] == 2 and failed[0].detail["error"] == "the worker delivering it stopped"
