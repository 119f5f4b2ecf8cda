"""The accepting process signals the workflow itself; when it cannot, the delivery job does, at once.

Real Redis, the bolt app dispatching signed Slack clicks, the Web API stand-in. Temporal's
address is a closed port on this machine, so every direct attempt fails the way an
unreachable Temporal does. No worker runs: what the webhooks' queue holds, and when, shows
which sender has the delivery. The signal reaching a real workflow is
`tests/integrations/test_temporal_system.py`'s.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from rq import Retry
from test_accepted_announce import WORKFLOWS, click, request

from bot.slack.api_host import ApiQuestionHost
from workers.questions import QuestionService, accepted, signal_direct, signals
from workers.questions import config as config_mod
from workers.questions.config import QuestionConfig, TemporalConfig
from workers.questions.models import QuestionCreate, QuestionView
from workers.questions.webhooks import announce
from workers.store import job_ids, keys
from workers.store.questions import QuestionStore
from workers.store.records import WebhookState
from workers.store.signal_leases import SignalLeases

pytestmark = pytest.mark.integration


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    previous = config_mod.current()
    config_mod.install(QuestionConfig(temporal=TemporalConfig(address=f"127.0.0.1:{closed_port()}")))
    with running_bot(r, tmp_path) as b:
        rt = b.runtime
        on_closing = lambda run, q: signals.announce(rt, run, q)  # noqa: E731
        host = ApiQuestionHost(b.deps.client, rt.store, lambda run, q: announce(rt, run, q), None, on_closing)
        rt.hosts.register("api", host)
        accepted.install(rt)
        signal_direct.enable()
        try:
            yield b
        finally:
            signal_direct.disable()
    config_mod.install(previous)


def ask(bot: Bot, workflow_id: str) -> QuestionView:
    service = QuestionService(bot.runtime, config_mod.current())
    target = {"workflow_id": workflow_id, "namespace": "default", "key": "tw-1"}
    body = {"request": request("Refund it?").model_dump(mode="json"), "channel": "C0GENERAL", "temporal": target}
    view, _ = service.create(WORKFLOWS, QuestionCreate.model_validate(body))
    return view


def signal_of(bot: Bot, question_id: str) -> WebhookState:
    question = QuestionStore(bot.runtime.redis).get(question_id)
    assert question is not None and question.signal is not None
    return question.signal


def test_a_failed_direct_attempt_hands_its_job_the_delivery_at_once(bot: Bot) -> None:
    view = ask(bot, "refund-1")
    queue = bot.runtime.webhook_queue
    assert click(bot, "C0GENERAL", str(view.message_ts), "yes", "U0CAROL") == 200
    job = job_ids.signal(view.id)
    bot.wait_for("the failed attempt to hand the job the delivery", lambda: queue.job_ids == [job])
    state = signal_of(bot, view.id)
    assert (state.status, state.attempts, state.event) == ("pending", 1, "answered")  # the direct attempt
    assert "Connect" in state.last_error or "connect" in state.last_error, state.last_error
    assert SignalLeases(bot.runtime.redis).holder(view.id) is None
    assert queue.scheduled_job_registry.get_job_ids() == []


def test_while_the_direct_attempt_runs_it_holds_the_lease_and_the_job_sends_nothing(bot: Bot) -> None:
    queue = bot.runtime.webhook_queue
    with socket.socket() as listener:  # takes connections and never answers: the attempt hangs
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        hanging = TemporalConfig(address=f"127.0.0.1:{listener.getsockname()[1]}", attempt_timeout=30)
        config_mod.install(QuestionConfig(temporal=hanging))
        view = ask(bot, "refund-2")
        assert click(bot, "C0GENERAL", str(view.message_ts), "no", "U0DAVE") == 200  # acked, the attempt hanging
        holder = SignalLeases(bot.runtime.redis).holder(view.id)
        assert holder is not None and holder.startswith("direct:")
        assert int(bot.runtime.redis.pttl(keys.signal_sending(view.id))) > 30_000  # its deadline and a margin
        assert queue.job_ids == [] and queue.scheduled_job_registry.get_job_ids() == [job_ids.signal(view.id)]
        assert isinstance(signals.deliver(view.id), Retry)  # the job, run now, waits: no second attempt
        assert (signal_of(bot, view.id).attempts, signal_of(bot, view.id).status) == (1, "pending")
    # the listener closed: the attempt fails, and the job has the delivery
    bot.wait_for("the attempt to end", lambda: queue.job_ids == [job_ids.signal(view.id)])
    assert SignalLeases(bot.runtime.redis).holder(view.id) is None


def test_beyond_its_cap_of_direct_sends_the_process_queues_the_job_at_once(
    bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signal_direct, "AT_ONCE", 0)
    view = ask(bot, "refund-3")
    assert click(bot, "C0GENERAL", str(view.message_ts), "yes", "U0CAROL") == 200
    assert bot.runtime.webhook_queue.job_ids == [job_ids.signal(view.id)]  # queued in the accepting transaction
    assert signal_of(bot, view.id).attempts == 0
    assert SignalLeases(bot.runtime.redis).holder(view.id) is None


def test_a_process_that_cannot_sign_receipts_a_worker_signs_leaves_the_signal_to_the_job(bot: Bot) -> None:
    assert bot.runtime.receipts.signer is None
    bot.runtime.redis.hset(keys.receipt_keys(), "kid", "a worker's public key")  # a worker has signed receipts
    queue = bot.runtime.webhook_queue
    first = ask(bot, "refund-4")
    assert click(bot, "C0GENERAL", str(first.message_ts), "yes", "U0CAROL") == 200
    bot.wait_for("the job to have the delivery", lambda: queue.job_ids == [job_ids.signal(first.id)])
    assert signal_of(bot, first.id).attempts == 0  # no attempt made here: the job's carries the receipt
    second = ask(bot, "refund-5")
    assert click(bot, "C0GENERAL", str(second.message_ts), "no", "U0DAVE") == 200
    assert queue.job_ids == [job_ids.signal(first.id), job_ids.signal(second.id)]  # queued at once
    assert signal_of(bot, second.id).attempts == 0
