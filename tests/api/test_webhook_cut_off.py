"""A webhook whose worker is killed mid-attempt: the next attempt follows, and after the last it is recorded failed.

Real `parley serve` and `parley worker`s, and a receiver that never answers. Each worker is
SIGKILLed while its attempt waits on the receiver, so it records nothing. RQ finds the job
abandoned once its started-registry entry lapses, a minute and a half after the attempt began.
The test runs RQ's own cleanup as of then (`StartedJobRegistry.cleanup(timestamp=…)`) rather
than wait for it.

The integration tests make that state with RQ's own calls on real Redis, and call the sweep's
steps in-process. A job RQ fails hours after its start is still recorded. A step that raises
holds back none after it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from api_support import Token, approval, create_token
from http_servers import BlackHole, black_hole
from redis import Redis
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer
from runtime_helpers import make_runtime
from slack_stack import SlackStack
from stacks import Stacks

from workers.questions.webhook_cut_off import CUT_OFF, fail_cut_off
from workers.questions.webhooks import DELIVER, FAILURE_TTL
from workers.runtime import sweep as sweeping
from workers.runtime.queues import WEBHOOK_QUEUE_NAME
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.records import WebhookState
from workers.store.runs import RunStore

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


@pytest.mark.system
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


def pending_delivery(rt: Runtime, question_id: str) -> Job:
    """A cancelled question's webhook, pending, and its delivery job (no retries left) as `announce` queues it."""
    state = WebhookState(id=f"msg_{question_id}_cancelled", event="cancelled", payload="{}")
    QuestionStore(rt.redis).set_webhook(question_id, state)
    job_id = job_ids.webhook(question_id, "cancelled")
    return rt.webhook_queue.enqueue(DELIVER, question_id, job_id=job_id, failure_ttl=FAILURE_TTL)


@pytest.mark.integration
def test_a_delivery_failed_just_now_is_recorded_though_its_attempt_began_hours_ago(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    job = pending_delivery(rt, "q-lost")
    rt.webhook_queue.remove(job)  # taken by a worker on a machine since lost
    hours_ago = datetime.now(UTC) - timedelta(hours=3)
    with r.pipeline() as pipe:  # started three hours ago, as RQ's worker starts a job
        job.prepare_for_execution("lost-worker", pipe)
        Execution.create(job, ttl=90, pipeline=pipe)
        job.enqueued_at = job.started_at = hours_ago
        job.save(pipeline=pipe)
        pipe.execute()
    rt.webhook_queue.started_job_registry.cleanup(timestamp=time.time() + 120)  # no maintenance ran till now
    failed = Job.fetch(job.id, connection=r, serializer=JSONSerializer)
    assert failed.get_status() == JobStatus.FAILED and failed.ended_at is None  # the abandoned path sets no end
    older = pending_delivery(rt, "q-older")  # a failure two hours ago, past the sweep's lookback
    rt.webhook_queue.failed_job_registry.add(older, ttl=FAILURE_TTL - 2 * 3600)

    assert fail_cut_off(rt, time.time()) == ["q-lost"]
    hook = QuestionStore(r).webhook("q-lost")
    assert hook is not None and (hook.status, hook.attempts, hook.last_error) == ("failed", 1, CUT_OFF)
    assert [e.event for e in RunStore(r).history("q-lost")] == ["webhook failed"]
    assert QuestionStore(r).webhook("q-older").status == "pending"  # type: ignore[union-attr]


@pytest.mark.integration
def test_a_sweep_whose_cut_off_step_raises_still_purges(
    r: Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = make_runtime(r, tmp_path)
    receipts: list[float] = []

    def broken(runtime: Runtime, now: float) -> list[str]:
        raise ConnectionError("Redis went away mid-step")

    def swept(now: float, retention: float) -> int:  # the step after it, noted as it runs
        receipts.append(now)
        return 0

    monkeypatch.setattr(sweeping, "fail_cut_off", broken)
    monkeypatch.setattr(rt.receipts, "sweep", swept)
    now = time.time()  # no time travel: a sweep ahead of the clock would reach other tests' runs in a shared db
    report = sweeping.sweep(rt, now=now)
    assert report.webhooks_failed == [] and receipts == [now]
