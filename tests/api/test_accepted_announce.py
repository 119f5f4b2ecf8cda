"""An API question's webhook or Temporal signal is queued as its answer is accepted, once.

Real Redis, the bolt app dispatching signed Slack clicks, the Web API stand-in, and RQ's
SimpleWorker for the resume. No worker runs between the click and the checks on the
webhooks' queue, so a delivery found there was queued by the acceptance itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.slack.api_host import ApiQuestionHost
from workers.interaction import Item, ItemType, Request
from workers.questions import Caller, QuestionService, accepted, signals
from workers.questions import config as config_mod
from workers.questions.config import QuestionConfig, TemporalConfig
from workers.questions.models import QuestionCreate, QuestionStatus
from workers.questions.webhooks import announce
from workers.store import job_ids
from workers.store.questions import QuestionStore

pytestmark = pytest.mark.integration
WORKFLOWS = Caller("workflows", temporal=("refund-*",))


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    previous = config_mod.current()
    config_mod.install(QuestionConfig(temporal=TemporalConfig(address="127.0.0.1:7233")))  # never reached here
    with running_bot(r, tmp_path) as b:
        rt = b.runtime
        on_closing = lambda run, q: signals.announce(rt, run, q)  # noqa: E731
        host = ApiQuestionHost(b.deps.client, rt.store, lambda run, q: announce(rt, run, q), None, on_closing)
        rt.hosts.register("api", host)
        accepted.install(rt)
        yield b
    config_mod.install(previous)


def request(reason: str) -> Request:
    return Request(reason=reason, items=[Item(id="d", text="Decision", type=ItemType.SELECT, options=["yes", "no"])])


def click(bot: Bot, channel: str, ts: str, value: str, user: str) -> int:
    message = bot.ws.message(channel, ts)
    assert message is not None
    block, _ = find_element(message["blocks"], lambda a: a.startswith("parley_choose"))
    button = next(e for e in block["elements"] if e["value"] == value)
    payload = block_actions_payload(user=user, message=message, channel=channel, action=button_action(block, button))
    return bot.interact(payload).status


def test_the_signal_is_queued_by_the_acceptance_and_the_resume_queues_no_other(bot: Bot) -> None:
    service = QuestionService(bot.runtime, config_mod.current())
    target = {"workflow_id": "refund-7", "namespace": "default", "key": "tw-1"}
    create = QuestionCreate.model_validate(
        {"request": request("Refund it?").model_dump(mode="json"), "channel": "C0GENERAL", "temporal": target}
    )
    view, _ = service.create(WORKFLOWS, create)
    queue = bot.runtime.webhook_queue
    assert queue.count == 0

    assert click(bot, "C0GENERAL", str(view.message_ts), "yes", "U0CAROL") == 200
    assert queue.job_ids == [job_ids.signal(view.id)]  # queued before any worker resumed the run
    signal = QuestionStore(bot.runtime.redis).get(view.id).signal  # type: ignore[union-attr]
    assert signal is not None and signal.event == "answered" and '"d": "yes"' in signal.payload

    work(bot.runtime)  # the resume locks the question and ends the run
    assert bot.runtime.store.get(view.id).status.value == "succeeded"
    assert queue.job_ids == [job_ids.signal(view.id)]  # the resume's announcement found it made
    assert QuestionStore(bot.runtime.redis).get(view.id).signal == signal  # type: ignore[union-attr]
    assert service.get(WORKFLOWS, view.id).status is QuestionStatus.ANSWERED


def test_an_answer_to_a_question_with_nowhere_to_deliver_queues_nothing(bot: Bot) -> None:
    service = QuestionService(bot.runtime, config_mod.current())
    view, _ = service.create(WORKFLOWS, QuestionCreate(request=request("Ship it?"), channel="C0GENERAL"))
    assert click(bot, "C0GENERAL", str(view.message_ts), "no", "U0CAROL") == 200
    assert bot.runtime.webhook_queue.count == 0
    assert accepted.announce_accepted(bot.runtime, view.id, "q-not-the-question") is False
