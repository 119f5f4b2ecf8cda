"""One token's stuck webhooks never hold up an agent run (real `parley serve` and `parley worker`s).

A receiver on loopback accepts every connection and never answers. Twelve API questions with
that `callback_url` are cancelled, so twelve deliveries wait on it. A run started from Slack
right then must still reach its question at once: deliveries have their own queue and
threads. At most two attempts reach the host at a time (the per-host cap), and after three
attempts in a row that time out, the host's circuit opens: the question's `webhook` and the
metrics show it, and the remaining attempts are not sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from api_support import Receiver, Token, approval, create_token
from http_servers import BlackHole, black_hole
from rq import Queue, Worker
from slack_stack import SlackStack, stop_process_group
from stacks import Stacks

from workers.runtime.queues import QUEUE_NAME, WEBHOOK_QUEUE_NAME

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
STUCK = 12


@pytest.fixture(scope="module")
def hole() -> Iterator[BlackHole]:
    with black_hole() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, hole: BlackHole, hooks: Receiver, stacks: Stacks
) -> Iterator[SlackStack]:
    env = {
        "PARLEY_WEBHOOK_ALLOW": f"127.0.0.1:{hole.port},127.0.0.1:{urlsplit(hooks.url('x')).port}",
        "PARLEY_WEBHOOK_RETRY_INTERVALS": "1",  # two attempts each
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    yield stacks(redis_url=redis_url, extra_env=env)


def ask_and_cancel(stack: SlackStack, token: Token, callback_url: str, n: int) -> str:
    assert stack.http is not None
    body = {"request": approval(f"Question {n}?"), "channel": CHANNEL, "callback_url": callback_url}
    created = stack.http.post("/api/v1/questions", json=body, headers=token.auth)
    assert created.status_code == 201, created.text
    question_id = str(created.json()["id"])
    cancelled = stack.http.post(f"/api/v1/questions/{question_id}/cancel", headers=token.auth)
    assert cancelled.status_code == 200, cancelled.text
    return question_id


def webhook_of(stack: SlackStack, token: Token, question_id: str) -> dict[str, Any]:
    """The question's `webhook`; `status` is None until the worker carrying out the cancel records it."""
    assert stack.http is not None
    webhook = stack.http.get(f"/api/v1/questions/{question_id}", headers=token.auth).json()["webhook"]
    return dict(webhook) if webhook is not None else {"status": None}


def test_a_run_reaches_its_question_while_webhooks_are_stuck(
    stack: SlackStack, hole: BlackHole, hooks: Receiver
) -> None:
    flooder = create_token(stack, "flooder")
    ids = [ask_and_cancel(stack, flooder, f"http://127.0.0.1:{hole.port}/{n}", n) for n in range(STUCK)]
    stack.wait_for("deliveries stuck on the receiver", lambda: hole.open >= 2)

    started = time.monotonic()
    run = stack.start_run("s-pick", "{} while webhooks are stuck")
    stack.question(run, timeout=30)
    took = time.monotonic() - started
    assert took < 2.0, f"the run reached its question after {took:.1f} s\n{stack.logs()}"

    assert stack.redis is not None
    agents = Queue(QUEUE_NAME, connection=stack.redis)
    assert not [j for j in agents.get_job_ids() if j.startswith("webhook-")]  # none waits on the agents' queue
    assert len(Queue(WEBHOOK_QUEUE_NAME, connection=stack.redis)) + hole.open <= STUCK
    assert hole.peak <= 2, f"{hole.peak} attempts reached the host at once"  # PARLEY_WEBHOOK_PER_HOST

    # Another token's webhook, to another receiver, goes at once: it waits behind none of the flooder's.
    other = create_token(stack, "other")
    delivered = ask_and_cancel(stack, other, hooks.url("other"), STUCK)
    stack.wait_for("the other token's webhook", lambda: webhook_of(stack, other, delivered)["status"] == "delivered")
    assert hole.open >= 1  # while the flooder's attempts still hang

    # The host keeps timing out: its circuit opens, and what is left fails without being sent.
    def all_failed() -> list[dict[str, Any]] | None:
        hooks = [webhook_of(stack, flooder, q) for q in ids]
        return hooks if all(h["status"] == "failed" for h in hooks) else None

    failed = stack.wait_for("every delivery to fail", all_failed, timeout=60)
    assert all(h["attempts"] == 2 for h in failed)
    assert any(h["circuit"] == "open" and h["circuit_open_until"] for h in failed)
    assert any("circuit is open" in h["last_error"] for h in failed)
    assert hole.accepted < 2 * STUCK  # attempts the breaker stopped were never sent
    assert stack.http is not None
    metrics = stack.http.get("/metrics").text
    assert "parley_webhook_circuits_open 1.0" in metrics


def test_a_stopped_worker_leaves_no_delivery_thread_registered(stack: SlackStack) -> None:
    assert stack.redis is not None
    client = stack.redis

    def ours() -> list[str]:
        return [w.name for w in Worker.all(connection=client) if "-extra-" in w.name]

    proc = stack.spawn_worker("extra")
    stack.wait_for("its delivery threads", lambda: sum("-webhooks-" in name for name in ours()) == 4)
    stop_process_group(proc, timeout=60)  # SIGTERM, as a service manager stops it; a delivery may finish first
    assert proc.returncode == 0, f"the worker did not exit on SIGTERM within 60 s (exit {proc.returncode})"
    assert ours() == []
