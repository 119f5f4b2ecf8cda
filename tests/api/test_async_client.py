"""`parley.AsyncParley` against `/api/v1` on a loopback HTTP server, answered in Slack.

Every method of `Parley` has its async twin run here; the two must keep one surface.
Many waits share one event loop and no thread each; a cancelled wait frees its connection.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio as aioredis
from api_support import approval
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

import parley
from bot.api.app import create_api
from bot.playground import LoopbackServer
from parley.client import (
    AsyncParley,
    Parley,
    ParleyAPIError,
    QuestionCancelledError,
    QuestionExpiredError,
    QuestionTimeoutError,
)
from workers.interaction import Decision
from workers.questions import QuestionService, tokens
from workers.runtime.sweep import sweep
from workers.store.closings import Closings

pytestmark = pytest.mark.integration

USER = "U0CAROL"


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


@pytest.fixture
def server(bot: Bot, redis_url: str) -> Iterator[tuple[str, str, Closings]]:
    """The server's base URL (`/api/v1` under it), an `ask` token, and its long-polls' waiters."""
    closings = Closings(aioredis.Redis.from_url(redis_url))
    service = QuestionService(bot.runtime, closings=closings)
    token = tokens.create(service.store, "async-client", ["ask"], rate_limit=100_000).token
    api = create_api(service)
    starting: list[asyncio.Future[None]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        """`/api/v1`, its close subscription started on the server's loop (it runs no lifespan)."""
        if not starting:
            starting.append(asyncio.ensure_future(closings.start()))
        await starting[0]
        await Starlette(routes=[Mount("/api/v1", api)])(scope, receive, send)

    running = LoopbackServer(app).start()
    try:
        yield running.url, token, closings
    finally:
        running.stop()


def posted(bot: Bot, reason: str) -> dict[str, Any]:
    """The message of the question asking `reason`, once it is open for answers."""
    return bot.wait_for(
        f"{reason!r} to be posted",
        lambda: next(
            (m for m in bot.ws.messages(CHANNEL) if reason in json.dumps(m) and find_blocks(m, "parley_submit")),
            None,
        ),
    )


def find_blocks(message: dict[str, Any], action_id: str) -> bool:
    try:
        find_element(message["blocks"], action_id)
    except (StopIteration, LookupError, AssertionError):
        return False
    return True


def click(bot: Bot, message: dict[str, Any], action_id: str, choice: str | None = None) -> None:
    """`USER` clicks `action_id` on `message` (with `choice` picked in the form), as Slack sends it."""
    block, button = find_element(message["blocks"], action_id)
    state = form_state(message["blocks"], {"Decision": choice}) if choice else {}
    payload = block_actions_payload(
        user=USER, message=message, channel=CHANNEL, action=button_action(block, button), state_values=state
    )
    assert bot.interact(payload).status == 200


def test_the_two_clients_have_one_surface() -> None:
    """Same public methods, same parameters and defaults; each async one is a coroutine."""
    twins = {"close": "aclose", "__enter__": "__aenter__", "__exit__": "__aexit__"}
    sync = {n: f for n, f in vars(Parley).items() if callable(f) and (not n.startswith("_") or n in twins)}
    for name, fn in sync.items():
        twin = getattr(AsyncParley, twins.get(name, name))
        assert inspect.iscoroutinefunction(twin), name
        assert list(inspect.signature(twin).parameters.values()) == list(inspect.signature(fn).parameters.values()), (
            name
        )
    public = {n for n in vars(AsyncParley) if not n.startswith("_")}
    assert public == {twins.get(n, n) for n in sync if not n.startswith("_")}
    assert parley.AsyncParley is AsyncParley and parley.Parley is Parley


def test_every_method_answers_and_raises_as_the_sync_client(bot: Bot, server: tuple[str, str, Closings]) -> None:
    url, token, _ = server

    async def scenario() -> None:
        async with AsyncParley(url, token) as client:
            asking = asyncio.create_task(client.ask(approval("Use the async client?"), channel=CHANNEL, timeout=30))
            message = await asyncio.to_thread(posted, bot, "Use the async client?")
            click(bot, message, "parley_submit", "approve")
            assert await asking == {"decision": "approve", "note": None}

            facts = {"service": "api", "version": "v1"}
            qid = await client.submit(approval("Deploy v1?"), channel=CHANNEL, context=facts, idempotency_key="k1")
            assert (
                await client.submit(approval("Deploy v1?"), channel=CHANNEL, context=facts, idempotency_key="k1") == qid
            )
            assert (await client.get(qid))["status"] == "waiting"
            assert (await client.confirm(qid, facts))["unchanged"] is True
            with pytest.raises(ParleyAPIError) as moved:
                await client.confirm(qid, {**facts, "version": "v2"})
            assert moved.value.status == 409 and moved.value.problem["changes"]
            with pytest.raises(QuestionTimeoutError) as late:
                await client.wait(qid, timeout=1)
            assert late.value.status == 408
            assert (await client.cancel(qid))["status"] == "cancelled"
            with pytest.raises(QuestionCancelledError):
                await client.wait(qid, timeout=5)
            with pytest.raises(ParleyAPIError) as refused:
                await client.submit({"reason": "no items"}, channel=CHANNEL)
            assert refused.value.status == 422 and not isinstance(refused.value, QuestionTimeoutError)
            with pytest.raises(ParleyAPIError) as missing:
                await client.get("rNoSuchQuestion")
            assert missing.value.status == 404

    asyncio.run(scenario())


def test_an_expired_question_raises_question_expired(bot: Bot, server: tuple[str, str, Closings]) -> None:
    url, token, _ = server

    async def scenario() -> None:
        async with AsyncParley(url, token) as client:
            qid = await client.submit(approval("Expire soon?", expires_in=1), channel=CHANNEL)
            waiting = asyncio.create_task(client.wait(qid, timeout=20))
            await asyncio.sleep(1.5)
            assert sweep(bot.runtime).expired  # the sweep's periodic job, run here
            work(bot.runtime)
            with pytest.raises(QuestionExpiredError) as expired:
                await waiting
            assert expired.value.status == 410

    asyncio.run(scenario())


def test_approve_and_submit_approval_return_the_decision(bot: Bot, server: tuple[str, str, Closings]) -> None:
    url, token, _ = server
    args = {"service": "api", "replicas": 3}

    async def scenario() -> Decision:
        async with AsyncParley(url, token) as client:
            qid = await client.submit_approval({"channel": CHANNEL, "action": "Scale api", "args": args})
            assert (await client.get(qid))["kind"] == "approval"
            deciding = asyncio.create_task(client.approve("Deploy api", args, channel=CHANNEL, timeout=30))
            message = await asyncio.to_thread(
                bot.wait_for,
                "the approval",
                lambda: next((m for m in bot.ws.messages(CHANNEL) if "Deploy api" in json.dumps(m)), None),
            )
            click(bot, message, "parley_approve")
            work(bot.runtime)
            return await deciding

    decision = asyncio.run(scenario())
    assert (decision.approved, decision.args, decision.by) == (True, args, USER)


def test_two_hundred_waits_share_one_loop_and_no_thread_each(bot: Bot, server: tuple[str, str, Closings]) -> None:
    url, token, closings = server
    waits, questions = 200, 4

    async def scenario() -> list[dict[str, Any]]:
        async with AsyncParley(url, token) as client:  # its own pool: more waits than httpx's default 100
            ids = [await client.submit(approval(f"Wave {i}?"), channel=CHANNEL) for i in range(questions)]
            before = threading.active_count()
            tasks = [asyncio.create_task(client.wait(ids[i % questions], timeout=60)) for i in range(waits)]
            await asyncio.to_thread(bot.wait_for, "every long-poll open", lambda: closings.waiting == waits, 60)
            assert not any(t.done() for t in tasks)
            grew = threading.active_count() - before
            assert grew < waits // 4, f"{grew} threads for {waits} waits"
            for i in range(questions):
                click(bot, await asyncio.to_thread(posted, bot, f"Wave {i}?"), "parley_submit", "reject")
            return list(await asyncio.wait_for(asyncio.gather(*tasks), 30))

    got = asyncio.run(scenario())
    assert got == [{"decision": "reject", "note": None}] * waits


def test_a_cancelled_wait_frees_its_connection(bot: Bot, server: tuple[str, str, Closings]) -> None:
    """With a pool of two, two cancelled waits must leave room for the next request."""
    url, token, _ = server

    async def scenario() -> None:
        limits = httpx.Limits(max_connections=2)
        http = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(10.0, read=75, pool=3.0), limits=limits)
        async with AsyncParley(url, token, http=http) as client:
            qid = await client.submit(approval("Wait, then give up?"), channel=CHANNEL)
            tasks = [asyncio.create_task(client.wait(qid)) for _ in range(2)]
            await asyncio.sleep(0.5)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            assert all(t.cancelled() for t in tasks)
            assert (await client.get(qid))["status"] == "waiting"  # a PoolTimeout if they leaked

    asyncio.run(scenario())
