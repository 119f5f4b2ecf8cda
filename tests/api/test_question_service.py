"""The question service in-process, without HTTP: what the API and an MCP server build on.

Real Redis, the bolt app dispatching signed Slack payloads, the Web API stand-in, RQ's
SimpleWorker, and the store's pub/sub close notifications waking `wait`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from bot.playground.directory import User, UserGroup
from bot.playground.workspace import TEAM_ID
from workers.interaction import Item, ItemType, Request
from workers.questions import Caller, QuestionService, tokens
from workers.questions.config import QuestionConfig
from workers.questions.exceptions import (
    QuestionConflict,
    QuestionError,
    QuestionInvalid,
    QuestionNotFound,
    QuestionRateLimited,
    TooManyOpenQuestions,
)
from workers.questions.models import MAX_ASSIGNEES, QuestionCreate, QuestionStatus
from workers.questions.waiting import listening
from workers.runtime.retention import purge_finished
from workers.runtime.sweep import sweep
from workers.store import keys
from workers.store.closings import Closings
from workers.store.questions import QuestionStore

pytestmark = pytest.mark.integration
MCP = Caller("mcp")


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as b:
        yield b


def request(reason: str, **fields: object) -> Request:
    options = ["approve", "reject"]
    return Request(
        reason=reason, items=[Item(id="d", text="Decision", type=ItemType.SELECT, options=options)], **fields
    )


def click(bot: Bot, channel: str, ts: str, value: str, user: str) -> int:
    """`user` clicks the option button `value` on the question message, signed as Slack sends it."""
    message = bot.ws.message(channel, ts)
    assert message is not None
    block, button = find_element(message["blocks"], lambda a: a.startswith("parley_choose"))
    button = next(e for e in block["elements"] if e["value"] == value)
    payload = block_actions_payload(user=user, message=message, channel=channel, action=button_action(block, button))
    return bot.interact(payload).status


def test_create_posts_then_wait_is_woken_by_the_answer(bot: Bot, redis_url: str) -> None:
    service = QuestionService(bot.runtime)
    view, created = service.create(MCP, QuestionCreate(request=request("Ship it?"), channel="C0GENERAL"))
    assert created and view.status is QuestionStatus.WAITING and view.origin == "mcp" and view.message_ts

    clicked_at: list[float] = []
    statuses: list[int] = []

    def answer() -> None:
        time.sleep(0.3)
        clicked_at.append(time.monotonic())  # before the click: its acceptance may wake the waiter before it returns
        statuses.append(click(bot, "C0GENERAL", str(view.message_ts), "approve", "U0CAROL"))

    async def scenario() -> tuple[float, object]:
        service.closings = Closings(aioredis.Redis.from_url(redis_url))
        async with listening(service):
            clicker = threading.Thread(target=answer)
            clicker.start()
            got = await service.wait(MCP, view.id, 30)
            woken = time.monotonic()
            clicker.join(10)
            return woken - clicked_at[0], got

    lag, got = asyncio.run(scenario())
    assert statuses == [200]
    assert got.status is QuestionStatus.ANSWERED and got.answers == {"d": "approve"}  # type: ignore[attr-defined]
    assert lag < 5.0  # woken by the close notification, long before the 30 s timeout (slack for a loaded machine)
    work(bot.runtime)  # the run resumes: the question is locked, the run succeeds
    assert bot.runtime.store.get(view.id).status.value == "succeeded"
    assert "Answered by" in str(bot.ws.message("C0GENERAL", str(view.message_ts)))


def test_a_wait_on_a_quorum_question_returns_its_answers_once_its_run_has_them(bot: Bot, redis_url: str) -> None:
    """The group's close wakes the wait, which follows the run to its result, long before the timeout."""
    service = QuestionService(bot.runtime)
    req = request("Each of you?", assignees=["U0CAROL", "U0DAVE"])
    view, _ = service.create(MCP, QuestionCreate(request=req, channel="C0GENERAL", quorum=2))
    got: list[object] = []

    async def scenario() -> None:
        service.closings = Closings(aioredis.Redis.from_url(redis_url))
        async with listening(service):
            got.append(await service.wait(MCP, view.id, 30))
            got.append(time.monotonic())

    waiter = threading.Thread(target=lambda: asyncio.run(scenario()))
    waiter.start()
    time.sleep(0.3)
    assert click(bot, "C0GENERAL", str(view.message_ts), "approve", "U0CAROL") == 200
    assert click(bot, "C0GENERAL", str(view.message_ts), "reject", "U0DAVE") == 200
    work(bot.runtime)  # the run's last step: its result holds each one's answers
    finished = time.monotonic()
    waiter.join(35)

    answered, returned = got
    assert answered.status is QuestionStatus.ANSWERED  # type: ignore[attr-defined]
    assert answered.answers_by == {"U0CAROL": {"d": "approve"}, "U0DAVE": {"d": "reject"}}  # type: ignore[attr-defined]
    assert returned - finished < 5.0  # type: ignore[operator]  # not the 30 s timeout (slack for a loaded machine)


def test_wait_times_out_waiting(bot: Bot, redis_url: str) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Wait for me?"), channel="C0GENERAL"))

    async def scenario() -> object:
        service.closings = Closings(aioredis.Redis.from_url(redis_url))
        async with listening(service):
            return await service.wait(MCP, view.id, 0.5)

    assert asyncio.run(scenario()).status is QuestionStatus.WAITING  # type: ignore[attr-defined]


def test_expiry_with_defaults_is_expired_with_the_defaults(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"], default="reject")
    req = Request(reason="Quiet hours?", items=[item], expires_in=60, on_expiry="use_defaults")
    view, _ = service.create(MCP, QuestionCreate(request=req, channel="C0GENERAL"))
    assert view.expires_at is not None
    assert view.id not in sweep(bot.runtime, now=time.time()).expired
    sweep(bot.runtime, now=time.time() + 61)
    got = service.get(MCP, view.id)
    assert got.status is QuestionStatus.EXPIRED and got.answers == {"d": "reject"}
    work(bot.runtime)
    assert "Expired" in str(bot.ws.message("C0GENERAL", str(view.message_ts)))


def test_cancel_closes_once_and_others_see_nothing(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Cancel me?"), user="U0BOB"))
    with pytest.raises(QuestionNotFound):
        service.get(Caller("someone-else"), view.id)
    with pytest.raises(QuestionNotFound):
        service.cancel(Caller("someone-else"), view.id)
    assert service.cancel(MCP, view.id).status is QuestionStatus.CANCELLED
    with pytest.raises(QuestionConflict):
        service.cancel(MCP, view.id)
    assert service.get(Caller("auditor", frozenset({"admin"})), view.id).status is QuestionStatus.CANCELLED


def test_a_question_answered_before_its_run_resumed_cannot_be_cancelled(bot: Bot) -> None:
    """The answer is in and the run queued to resume: a cancel is 409 and the answer stands."""
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Ship it?"), channel="C0GENERAL"))
    assert click(bot, "C0GENERAL", str(view.message_ts), "approve", "U0CAROL") == 200

    with pytest.raises(QuestionConflict, match="the question is answered; only a waiting question can be cancelled"):
        service.cancel(MCP, view.id)

    assert bot.runtime.store.get(view.id).status.value == "queued"
    work(bot.runtime)
    assert bot.runtime.store.get(view.id).status.value == "succeeded"
    got = service.get(MCP, view.id)
    assert got.status is QuestionStatus.ANSWERED and got.answers == {"d": "approve"}


def test_a_question_whose_post_slack_failed_can_be_cancelled_while_it_is_retried(bot: Bot) -> None:
    bot.ws.faults.fail_next("chat.postMessage", status=500, times=10)  # the post is queued for a retry
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Ship it?"), channel="C0GENERAL"))
    assert view.status is QuestionStatus.WAITING and bot.runtime.store.get(view.id).status.value == "queued"

    assert service.cancel(MCP, view.id).status is QuestionStatus.CANCELLED
    assert bot.runtime.store.get(view.id).status.value == "cancelled"


def test_a_question_slack_refuses_to_post_fails_at_once(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    with pytest.raises(QuestionInvalid, match="channel_not_found"):
        service.create(MCP, QuestionCreate(request=request("Anyone?"), channel="C0NOSUCH"))
    assert service.list(MCP, QuestionStatus.FAILED).questions[0].error


def test_the_question_agent_is_not_offered_to_people(bot: Bot) -> None:
    assert "question" not in bot.runtime.registry.names()
    assert bot.runtime.registry.get("question").listed is False


def test_a_reminder_goes_to_the_question_thread(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Remind us?", expires_in=600), channel="C0GENERAL"))
    iid = bot.runtime.store.get(view.id).interrupt
    assert sweep(bot.runtime, now=time.time() + 301).reminded == [iid]
    [reminder] = [m for m in bot.ws.thread("C0GENERAL", str(view.message_ts))[1:] if "Reminder" in m["text"]]
    assert "anyone here" in reminder["text"]
    assert "Remind us?" in str(bot.runtime.store.history(view.id))  # started with the question's reason
    assert any(h.event == "reminded" for h in bot.runtime.store.history(view.id))


def test_retention_deletes_the_api_record_with_the_run(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(MCP, QuestionCreate(request=request("Forget me?"), channel="C0GENERAL"))
    service.cancel(MCP, view.id)
    assert purge_finished(bot.runtime, 0, now=time.time() + 1) == [view.id]
    with pytest.raises(QuestionNotFound):
        service.get(MCP, view.id)
    assert service.list(MCP).questions == []
    assert not [k for k in bot.runtime.redis.scan_iter(match=f"*{view.id}*")]  # nothing of it is left


def test_people_asked_in_a_channel_get_a_dm_with_a_link(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    view, _ = service.create(
        MCP, QuestionCreate(request=request("Sign off, Carol?", assignees=["U0CAROL"]), channel="C0GENERAL")
    )
    question = bot.ws.message("C0GENERAL", str(view.message_ts))
    assert question is not None and "<@U0CAROL>" in str(question["blocks"])  # "Asked of" names her
    told = bot.wait_for("Carol's DM", lambda: bot.ws.messages("D0CAROL"))
    assert "asking you a question" in told[-1]["text"]


def test_a_tokens_workspace_is_its_questions_and_an_admin_token_sees_only_its_own(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    asker = Caller("ci", team=TEAM_ID)
    view, _ = service.create(asker, QuestionCreate(request=request("Ship it?"), channel="C0GENERAL"))
    assert bot.runtime.store.get(view.id).conversation["team"] == TEAM_ID  # posted with that workspace's token
    same = Caller("ops", frozenset({"admin"}), team=TEAM_ID)
    other = Caller("ops-b", frozenset({"admin"}), team="T0OTHER")
    everywhere = Caller("root", frozenset({"admin"}))
    assert service.get(same, view.id).id == view.id
    assert service.get(everywhere, view.id).id == view.id
    with pytest.raises(QuestionNotFound):
        service.get(other, view.id)
    assert [q.id for q in service.list(other).questions] == []
    assert [q.id for q in service.list(same).questions] == [view.id]
    with pytest.raises(QuestionNotFound):
        service.cancel(other, view.id)
    assert service.get(asker, view.id).status is QuestionStatus.WAITING


def test_a_token_names_its_workspace_by_id(r: redis.Redis) -> None:
    store = QuestionStore(r)
    made = tokens.create(store, "ci-a", ["ask"], team="T0ALPHA")
    assert store.tokens()[0].team == "T0ALPHA" and Caller.of(made.record).team == "T0ALPHA"
    with pytest.raises(QuestionError, match="--team"):
        tokens.create(store, "ci-b", ["ask"], team="general")
    assert [t.name for t in store.tokens()] == ["ci-a"]


def test_a_question_belongs_to_its_token_not_to_the_tokens_name(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    store = service.store
    first = Caller.of(tokens.create(store, "ci", ["ask"]).record)
    body = QuestionCreate(request=request("Whose is this?"), channel="C0GENERAL")
    view, _ = service.create(first, body, "key-1")
    tokens.revoke(store, "ci")
    second = Caller.of(tokens.create(store, "ci", ["ask"]).record)  # the same name, another token
    assert second.name == first.name and second.owner != first.owner
    for caller in (second, Caller("ci")):  # nor does a local MCP server whose origin is that name
        with pytest.raises(QuestionNotFound):
            service.get(caller, view.id)
        with pytest.raises(QuestionNotFound):
            service.cancel(caller, view.id)
        assert service.list(caller).questions == []
    again, created = service.create(second, body, "key-1")  # its Idempotency-Keys are its own too
    assert created and again.id != view.id
    assert service.get(first, view.id).status is QuestionStatus.WAITING
    assert [q.id for q in service.list(first).questions] == [view.id]
    assert view.origin == again.origin == "ci"  # the name is still what is shown


def test_a_local_mcp_origin_and_a_token_of_the_same_name_are_two_askers(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    token = Caller.of(tokens.create(service.store, "mcp", ["ask"]).record)
    view, _ = service.create(MCP, QuestionCreate(request=request("Local?"), channel="C0GENERAL"))
    assert MCP.owner == "mcp:mcp" and token.owner.startswith("token:")
    with pytest.raises(QuestionNotFound):
        service.cancel(token, view.id)
    assert service.list(token).questions == []
    assert service.cancel(MCP, view.id).status is QuestionStatus.CANCELLED


def test_questions_asked_before_owners_stay_with_the_token_that_had_the_name(bot: Bot) -> None:
    """A question stored before questions had owners (no `owner`, indexed by name) is read by the token of
    that name that existed when it was asked, and by no token created under the name afterwards."""
    service = QuestionService(bot.runtime)
    r = bot.runtime.redis
    old = Caller.of(tokens.create(service.store, "legacy", ["ask"]).record)
    view, _ = service.create(old, QuestionCreate(request=request("From before?"), channel="C0GENERAL"))
    r.hdel(f"parley:api:question:{view.id}", "owner")  # as a question of the earlier layout is stored
    r.zrem(f"parley:api:owned:{old.owner}", view.id)
    r.zadd("parley:api:questions:legacy", {view.id: service.store.get(view.id).created_at})  # type: ignore[union-attr]
    assert service.get(old, view.id).id == view.id
    assert [q.id for q in service.list(old).questions] == [view.id]
    tokens.revoke(service.store, "legacy")
    new = Caller.of(tokens.create(service.store, "legacy", ["ask"]).record)
    with pytest.raises(QuestionNotFound):
        service.get(new, view.id)
    assert service.list(new).questions == []
    assert service.cancel(old, view.id).status is QuestionStatus.CANCELLED
    assert purge_finished(bot.runtime, 0, now=time.time() + 1) == [view.id]
    assert not r.exists("parley:api:questions:legacy")  # retention forgets it from the name's index


def test_each_person_a_question_dms_counts_against_the_tokens_rate(bot: Bot) -> None:
    service = QuestionService(bot.runtime)
    caller = Caller.of(tokens.create(service.store, "fan-out", ["ask"], rate_limit=5).record)
    people = ["U0ALICE", "U0BOB", "U0CAROL", "U0DAVE", "U0ERIN"]
    service.create(caller, QuestionCreate(request=request("Five of you?", assignees=people), channel="C0GENERAL"))
    posts = len(bot.ws.calls("chat.postMessage"))
    with pytest.raises(QuestionRateLimited) as caught:
        service.create(caller, QuestionCreate(request=request("One more?"), user="U0BOB"))  # a DM: one more person
    assert caught.value.status == 429 and 1 <= int(caught.value.headers["Retry-After"]) <= 60
    assert len(bot.ws.calls("chat.postMessage")) == posts  # nothing was asked
    assert len(service.list(caller).questions) == 1
    service.create(MCP, QuestionCreate(request=request("Local?", assignees=people), channel="C0GENERAL"))  # no limit


def test_an_origin_past_its_open_questions_is_refused_and_closed_ones_leave_the_count(bot: Bot, r: redis.Redis) -> None:
    service = QuestionService(bot.runtime, QuestionConfig(open_questions=2))
    first, _ = service.create(MCP, QuestionCreate(request=request("One?"), channel="C0GENERAL"))
    second, _ = service.create(MCP, QuestionCreate(request=request("Two?"), channel="C0GENERAL"))
    open_set = keys.api_open(MCP.owner)
    posts = len(bot.ws.calls("chat.postMessage"))
    with pytest.raises(TooManyOpenQuestions) as caught:
        service.create(MCP, QuestionCreate(request=request("Three?"), channel="C0GENERAL"))
    assert caught.value.status == 429 and caught.value.extra == {"open_questions": 2, "limit": 2}
    assert len(bot.ws.calls("chat.postMessage")) == posts and len(service.list(MCP).questions) == 2
    other = Caller.of(tokens.create(service.store, "other", ["ask"]).record)
    service.create(other, QuestionCreate(request=request("Not yours?"), channel="C0GENERAL"))  # its own count
    assert click(bot, "C0GENERAL", str(first.message_ts), "approve", "U0CAROL") == 200
    work(bot.runtime)
    assert r.scard(open_set) == 2  # an answered question stays in the set until the cap is reached
    third, _ = service.create(MCP, QuestionCreate(request=request("Three, now?"), channel="C0GENERAL"))
    assert {m.decode() for m in r.smembers(open_set)} == {second.id, third.id}  # the answered one pruned
    service.cancel(MCP, second.id)
    assert second.id in purge_finished(bot.runtime, 0, now=time.time() + 1)
    assert {m.decode() for m in r.smembers(open_set)} == {third.id}  # retention forgets it here too


def test_a_user_group_in_an_api_question_is_dmed_to_fifty_of_its_members_at_most(bot: Bot) -> None:
    members = tuple(f"U{n:04d}M" for n in range(60))
    later = tuple(f"U{n:04d}L" for n in range(60))
    for member in (*members, *later):
        bot.ws.add_user(User(member, member.lower()))
    bot.ws.add_usergroup(UserGroup("S0EVERYONE", "everyone", members))
    bot.ws.add_usergroup(UserGroup("S0LATER", "later", later))
    service = QuestionService(bot.runtime)
    caller = Caller.of(tokens.create(service.store, "all-hands", ["ask"]).record)
    asked = request("Everyone?", assignees=["S0EVERYONE"], escalate_after=60, escalate_to=["S0LATER"])
    view, _ = service.create(caller, QuestionCreate(request=asked, channel="C0GENERAL"))
    assert len(bot.runtime.store.interrupt(bot.runtime.store.get(view.id).interrupt).assignees) == 60  # all may answer

    def told(people: tuple[str, ...]) -> set[str]:
        return {c["args"]["users"] for c in bot.ws.calls("conversations.open")} & set(people)

    assert len(told(members)) == MAX_ASSIGNEES
    assert sweep(bot.runtime, now=time.time() + 61).escalated
    work(bot.runtime)
    assert len(told(later)) == MAX_ASSIGNEES
