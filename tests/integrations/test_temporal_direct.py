"""The process that accepts an answer signals the workflow itself, its delivery job the fallback.

A real `temporal server start-dev`, a Temporal worker process running `temporal_workflows`, a live
`parley serve`, real `parley worker`s and the Slack Web API stand-in, as in
`test_temporal_system.py`. These tests stop workers and kill `parley serve`, so they run on a
stack of their own.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import Token, create_token
from slack_stack import SlackStack, stop_process_group
from stacks import Stacks
from temporal_steps import (
    click_submit,
    interact_at,
    questions_of,
    result,
    signals_received,
    start,
    submit_payload,
    unreachable_serve,
)
from temporal_support import SHIP_REQUEST, TemporalDev, TemporalWorker, stack_env

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
CAROL, DAVE, ERIN = "U0CAROL", "U0DAVE", "U0ERIN"


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDev]:
    yield from TemporalDev.running(tmp_path_factory.mktemp("temporal"))


@pytest.fixture(scope="module")
def stack(redis_url: str, temporal: TemporalDev, stacks: Stacks) -> SlackStack:
    return stacks(redis_url=redis_url, extra_env=stack_env(temporal))


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "workflows", temporal=("*Workflow-*",))


@pytest.fixture(scope="module")
def worker(stack: SlackStack, temporal: TemporalDev, token: Token) -> Iterator[TemporalWorker]:
    yield from TemporalWorker.for_stack(temporal, stack, token.token)


@pytest.fixture(scope="module")
def unreachable(stack: SlackStack) -> int:
    """The port of a second `parley serve`, one that cannot reach Temporal."""
    return unreachable_serve(stack)


def deliveries(stack: SlackStack, question_id: str) -> list[tuple[str, int]]:
    """The question's recorded deliveries: each entry's event and its count of attempts."""
    assert stack.redis is not None
    raw = stack.redis.lrange(f"parley:run:{question_id}:history", 0, -1)
    entries = [json.loads(entry) for entry in raw]
    return [(e["event"], e["detail"]["attempts"]) for e in entries if str(e["event"]).startswith("temporal signal")]


def attempts(stack: SlackStack, token: Token, question_id: str) -> dict[str, Any]:
    assert stack.http is not None
    return dict(stack.http.get(f"/api/v1/questions/{question_id}", headers=token.auth).json()["temporal"])


def parley_workers(stack: SlackStack) -> list[Any]:
    return [p for p in stack.procs if "worker" in " ".join(map(str, p.args))]


def test_parley_serve_signals_the_workflow_itself_with_no_parley_worker_running(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """With every `parley worker` stopped, nothing reads the webhooks' queue, yet the workflow resumes."""
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "linger": 2})
    [question] = questions_of(stack, token, wid)
    stopped = parley_workers(stack)
    for proc in stopped:
        stop_process_group(proc)
        stack.procs.remove(proc)
    try:
        assert click_submit(stack, question, {"Ship": "yes", "How many": "7"}, ERIN).status_code == 200
        got = result(temporal, wid, timeout=20)
        assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "yes", "count": 7}, ERIN)
        assert got["ignored"] == 0 and signals_received(temporal, wid) == 1
        delivered = [("temporal signal delivered", 1)]
        stack.wait_for("the delivery to be recorded", lambda: deliveries(stack, question["id"]) == delivered)
    finally:
        for n in range(len(stopped)):
            stack.spawn_worker(f"worker-back-{n}")
    assert stack.wait_for("the run to resume and end", lambda: stack.status(question["id"]) == "succeeded")


def test_when_the_direct_signal_fails_the_delivery_job_sends_it_once(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker, unreachable: int
) -> None:
    """Clicked at a `parley serve` that cannot reach Temporal, the job signals, once.

    That serve's own attempt fails and hands the delivery to the job at once.
    """
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "linger": 2})
    [question] = questions_of(stack, token, wid)
    resp = interact_at(unreachable, submit_payload(stack, question, {"Ship": "no", "How many": "8"}, CAROL))
    assert resp.status_code == 200, resp.text
    got = result(temporal, wid)
    assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "no", "count": 8}, CAROL)
    assert got["ignored"] == 0 and signals_received(temporal, wid) == 1
    delivered = [("temporal signal delivered", 2)]  # the direct attempt, then the job's
    stack.wait_for("the delivery to be recorded", lambda: deliveries(stack, question["id"]) == delivered)
    lines = (stack.data_dir / "serve-unreachable.log").read_text().splitlines()
    failed = [json.loads(line) for line in lines if question["id"] in line and "signal attempt failed" in line]
    assert [(f["via"], f["attempt"], f["final"]) for f in failed] == [("direct", 1, False)]


def test_parley_serve_killed_while_it_signals_the_workflow_sees_the_outcome_once(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """`parley serve` killed -9 mid-attempt leaves the signal to the job, and Temporal keeps one.

    Temporal is frozen (SIGSTOP), so the direct attempt hangs, and `parley serve` is killed in
    it. The delivery job, due when the attempt's lease lapses, signals from a worker under the
    same request id. The workflow lingers, so a second signal would reach it.
    """
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "linger": 20})
    [question] = questions_of(stack, token, wid)
    assert temporal.proc is not None
    os.killpg(temporal.proc.pid, signal.SIGSTOP)
    try:
        click_submit(stack, question, {"Ship": "yes", "How many": "11"}, DAVE)
        pending = {"attempts": 1, "status": "pending"}
        stack.wait_for(
            "the direct attempt to start",
            lambda: {k: attempts(stack, token, question["id"])[k] for k in pending} == pending,
        )
        time.sleep(0.5)  # inside the attempt: signalling the frozen server
        [serve] = [p for p in stack.procs if str(stack.port) in map(str, p.args)]
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait(10)
        stack.procs.remove(serve)
    finally:
        os.killpg(temporal.proc.pid, signal.SIGCONT)
    stack.spawn_serve("serve-after-kill", stack.port)
    stack.wait_for("parley serve to answer again", stack._healthy, timeout=30)
    got = result(temporal, wid, timeout=120)
    assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "yes", "count": 11}, DAVE)
    assert got["ignored"] == 0 and signals_received(temporal, wid) == 1
    delivered = [("temporal signal delivered", 2)]
    stack.wait_for("the delivery to be recorded", lambda: deliveries(stack, question["id"]) == delivered)
