"""The question service's secret answers in-process: read once by the asker, whenever that read comes.

Real Redis, the bolt app dispatching Slack's signed payloads (the click that opens the form and
its `view_submission`), the Web API stand-in and RQ's SimpleWorker, which is run by hand here so
the read can come before the question's run has resumed, and after. Retention deletes the copy.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cryptography.fernet import Fernet
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from secret_support import keys_holding
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload

from workers.interaction import SECRET_MASK, Item, ItemType, Request
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionGone, QuestionNotFound, SecretsUnavailable
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView
from workers.runtime.retention import purge_finished
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

KEY = Fernet.generate_key().decode()
ASKER = Caller("deployer")
LABEL = "Deploy token"


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, secret_key=KEY, api_host=True) as b:
        yield b


def ask_secret(service: QuestionService) -> QuestionView:
    request = Request(reason="Deploy?", items=[Item(id="token", text=LABEL, type=ItemType.SECRET)])
    view, _ = service.create(ASKER, QuestionCreate(request=request, channel="C0GENERAL"))
    return view


def answer_in_the_form(bot: Bot, view: QuestionView, secret: str, **more: str) -> None:
    message = bot.ws.message(str(view.channel), str(view.message_ts))
    assert message is not None
    block, button = find_element(message["blocks"], "parley_open_form")
    click = block_actions_payload(
        user="U0BOB",
        message=message,
        channel=str(view.channel),
        action=button_action(block, button),
        trigger=bot.ws.issue_trigger("U0BOB"),
    )
    assert bot.interact(click).status == 200
    bot.wait_call("views.open")
    [form] = bot.ws.open_views("U0BOB")
    fills = {LABEL: secret, **more} if secret else more
    submitted = view_submission_payload(user="U0BOB", view=form, state_values=form_state(form["blocks"], fills))
    resp = bot.interact(submitted)
    assert (resp.status, resp.body) == (200, ""), resp.body


def test_read_before_the_run_resumes_it_is_still_once(bot: Bot, r: redis.Redis) -> None:
    """Answered, the run not yet resumed: the asker reads the run's own sealed copy, and the copy the
    run then keeps for the asker is never made, so a second read is 410 however the two interleave."""
    service = QuestionService(bot.runtime)
    view = ask_secret(service)
    waiting = service.reveal(ASKER, view.id)  # not answered yet: nothing to read, nothing used up
    assert waiting.status is QuestionStatus.WAITING and waiting.answers is None
    secret = f"tok-{secrets.token_hex(12)}"
    answer_in_the_form(bot, view, secret)
    assert bot.runtime.store.get(view.id).status is RunStatus.QUEUED  # its resume waits for a worker

    assert service.reveal(ASKER, view.id).answers == {"token": secret}
    with pytest.raises(QuestionGone):
        service.reveal(ASKER, view.id)
    work(bot.runtime)  # the run resumes with its secret and ends
    assert bot.runtime.store.get(view.id).status is RunStatus.SUCCEEDED
    assert bot.runtime.store.get(view.id).result == f'{{"token": "{SECRET_MASK}"}}'
    with pytest.raises(QuestionGone):
        service.reveal(ASKER, view.id)
    assert keys_holding(r, secret) == []
    assert r.get(f"parley:api:question:{view.id}:secrets") == b"revealed"
    assert not r.exists(f"parley:run:{view.id}:secrets")


def test_only_the_asker_reads_and_retention_deletes_the_copy(bot: Bot, r: redis.Redis) -> None:
    service = QuestionService(bot.runtime)
    view = ask_secret(service)
    secret = f"tok-{secrets.token_hex(12)}"
    answer_in_the_form(bot, view, secret)
    work(bot.runtime)
    copy = f"parley:api:question:{view.id}:secrets"
    assert r.get(copy) not in (None, b"revealed")
    assert 0 < r.ttl(copy) <= bot.runtime.settings.retention  # it lasts no longer than the run is kept
    for stranger in (Caller("other"), Caller("auditor", frozenset({"admin"}))):
        with pytest.raises(QuestionNotFound):
            service.reveal(stranger, view.id)
    assert service.get(Caller("auditor", frozenset({"admin"})), view.id).answers == {"token": SECRET_MASK}

    keyless = QuestionService(type(bot.runtime).build(bot.runtime.redis))  # a process without PARLEY_SECRET_KEY
    with pytest.raises(SecretsUnavailable):
        keyless.reveal(ASKER, view.id)
    assert r.get(copy) not in (None, b"revealed")  # the refusal used nothing up

    assert purge_finished(bot.runtime, 0, now=time.time() + 1) == [view.id]
    assert not r.exists(copy) and keys_holding(r, secret) == []
    with pytest.raises(QuestionNotFound):
        service.reveal(ASKER, view.id)


def test_an_optional_secret_left_empty_has_nothing_to_read(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    items = [
        Item(id="token", text=LABEL, type=ItemType.SECRET, required=False),
        Item(id="env", text="Environment", type=ItemType.FREE_TEXT),
    ]
    view, _ = service.create(ASKER, QuestionCreate(request=Request(reason="Deploy?", items=items), channel="C0GENERAL"))
    answer_in_the_form(bot, view, "", Environment="prod")
    work(bot.runtime)
    for _ in range(2):  # the plain view each time: no secret was given, so none is used up
        assert service.reveal(ASKER, view.id).answers == {"token": None, "env": "prod"}
