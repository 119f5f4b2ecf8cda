"""What an API question keeps in Redis: small keys, and keys in the layout before still honoured."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from workers.interaction import Item, ItemType, Request
from workers.interaction.context import canonical, digest
from workers.questions import Caller, QuestionService
from workers.questions.admission import body_digest as _body_digest
from workers.questions.exceptions import QuestionConflict
from workers.questions.models import QuestionCreate
from workers.runtime.retention import purge_finished
from workers.store import keys
from workers.store.idempotency import Binding
from workers.store.questions import QuestionStore
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
MCP = Caller("mcp")


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as b:
        yield b


def body(reason: str) -> QuestionCreate:
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])
    return QuestionCreate(request=Request(reason=reason, items=[item]), channel="C0GENERAL")


def binding(key: str, create: QuestionCreate) -> Binding:
    return Binding(MCP.owner, hashlib.sha256(key.encode()).hexdigest(), _body_digest(create))


def test_an_idempotency_key_is_one_short_string(bot: Bot, r: redis.Redis) -> None:
    service, create = QuestionService(bot.runtime), body("Ship it?")
    view, created = service.create(MCP, create, idempotency_key="ship-1")
    bound = binding("ship-1", create)
    assert created and r.get(bound.name) == bound.value(view.id).encode()
    assert len(bound.name) < 70 and len(bound.value(view.id)) <= 44  # 44: what Redis keeps in one allocation
    assert 0 < r.ttl(bound.name) <= 86400 and not r.exists(bound.names[1])
    again, created = service.create(MCP, create, idempotency_key="ship-1")
    assert again.id == view.id and not created
    with pytest.raises(QuestionConflict):
        service.create(MCP, body("Ship it now?"), idempotency_key="ship-1")


def test_a_key_bound_in_the_layout_before_is_still_honoured(bot: Bot, r: redis.Redis) -> None:
    service, create = QuestionService(bot.runtime), body("Roll back?")
    earlier, _ = service.create(MCP, create)
    bound = binding("roll-1", create)
    old = {"question_id": earlier.id, "body": bound.body_digest}  # as the version before wrote it
    r.set(keys.api_idempotency(MCP.owner, bound.key_digest), json.dumps(old), ex=86400)
    again, created = service.create(MCP, create, idempotency_key="roll-1")
    assert again.id == earlier.id and not created
    with pytest.raises(QuestionConflict):
        service.create(MCP, body("Roll forward?"), idempotency_key="roll-1")
    assert not r.exists(bound.name)  # nothing bound anew


def asked(reason: str, **fields: object) -> QuestionCreate:
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])
    context = {"service": "api", "version": "v1.4.2"}
    return QuestionCreate(request=Request(reason=reason, items=[item]), channel="C0GENERAL", context=context, **fields)


def click(bot: Bot, ts: str, value: str) -> int:
    """U0CAROL clicks the option button `value` on the question, signed as Slack sends it."""
    message = bot.ws.message("C0GENERAL", ts)
    assert message is not None
    block, _ = find_element(message["blocks"], lambda a: a.startswith("parley_choose"))
    button = next(e for e in block["elements"] if e["value"] == value)
    payload = block_actions_payload(
        user="U0CAROL", message=message, channel="C0GENERAL", action=button_action(block, button)
    )
    return bot.interact(payload).status


def fields(r: redis.Redis, question_id: str) -> set[str]:
    return {k.decode() for k in r.hkeys(keys.api_question(question_id))}


def test_a_posted_question_keeps_its_request_and_context_once(bot: Bot, r: redis.Redis) -> None:
    service, create = QuestionService(bot.runtime), asked("Ship it?", metadata={"pipeline": 8812})
    view, _ = service.create(MCP, create)
    iid = bot.runtime.store.get(view.id).interrupt
    assert fields(r, view.id) & {"request", "request#0", "context", "context#0"} == set()
    assert r.hget(keys.api_question(view.id), "asked") == iid.encode()
    record = QuestionStore(r).get(view.id)
    assert record is not None and (record.request, record.context) == (create.request, create.context)
    assert record.metadata == {"pipeline": 8812} and record.asked == iid
    assert (view.reason, view.context) == ("Ship it?", create.context)
    question = bot.runtime.store.interrupt(iid)
    assert question is not None and not r.hexists(keys.interrupt(iid), "context_digest")  # read from the context
    assert question.context_digest == digest(canonical(create.context))
    r.hset(keys.interrupt(iid), "context_digest", "kept-by-the-version-before")
    kept = bot.runtime.store.interrupt(iid)
    assert kept is not None and kept.context_digest == "kept-by-the-version-before"
    r.hset(keys.interrupt(iid), "context_digest", question.context_digest)
    assert [q.id for q in service.list(MCP).questions] == [view.id]

    assert click(bot, str(view.message_ts), "approve") == 200
    work(bot.runtime)  # the question's run replays its ask from the record, which reads whole
    assert bot.runtime.store.get(view.id).status is RunStatus.SUCCEEDED
    assert service.get(MCP, view.id).answers == {"d": "approve"}


def test_a_record_holding_its_own_request_reads_as_before(bot: Bot, r: redis.Redis) -> None:
    service, create = QuestionService(bot.runtime), asked("Roll back?")
    view, _ = service.create(MCP, create)
    key = keys.api_question(view.id)
    record = QuestionStore(r).get(view.id)
    assert record is not None
    r.hdel(key, "asked")  # as the version before wrote it: the request and context in the record
    own = {name: value for name, value in record.to_hash().items() if name.split("#")[0] in ("request", "context")}
    r.hset(key, mapping=own)
    assert QuestionStore(r).get(view.id) == record.model_copy(update={"asked": ""})
    assert click(bot, str(view.message_ts), "reject") == 200
    work(bot.runtime)
    assert service.get(MCP, view.id).answers == {"d": "reject"}


def test_a_quorum_s_record_keeps_its_own_request(bot: Bot, r: redis.Redis) -> None:
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])
    request = Request(reason="Each of you?", items=[item], assignees=["U0CAROL", "U0DAVE"])
    view, _ = QuestionService(bot.runtime).create(MCP, QuestionCreate(request=request, channel="C0GENERAL", quorum=2))
    assert "asked" not in fields(r, view.id) and "request#0" in fields(r, view.id)


def test_retention_purges_a_referring_question_and_its_interrupt(bot: Bot, r: redis.Redis) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, asked("Forget me?"), idempotency_key="forget-1")
    iid = bot.runtime.store.get(view.id).interrupt
    service.cancel(MCP, view.id)
    assert purge_finished(bot.runtime, 0, now=time.time() + 1) == [view.id]
    left = {k.decode() for k in r.scan_iter(match="parley:*")} & {
        keys.api_question(view.id),
        keys.interrupt(iid),
        keys.run(view.id),
        keys.journal(view.id),
        keys.history(view.id),
    }
    assert left == set()
    indexes = [keys.api_all_questions(), keys.api_owned(MCP.owner), keys.all_runs_index(), keys.expiry_index()]
    assert [r.zscore(index, view.id) for index in indexes] == [None] * 4
