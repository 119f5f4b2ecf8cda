"""The one MCP wait (`workers.questions.waiting`): progress, a client that leaves, and the grace period.

Each test serves a tool on the official SDK's low-level `Server` that asks one question through
`QuestionService.waiting`, and calls it with the SDK's `Client`; real Redis, the store's close
notifications, the bolt app and the Web API stand-in post the question.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import redis
import redis.asyncio as aioredis
from inprocess_bot import CHANNEL, Bot, running_bot
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from workers.interaction import Item, ItemType, Request
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionNotFound
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView
from workers.questions.waiting import Patience, listening
from workers.store.closings import Closings

pytestmark = pytest.mark.integration
CALLER = Caller("waiting-tests", via="mcp")


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as b:
        yield b


@pytest.fixture
def service(bot: Bot, redis_url: str) -> QuestionService:
    return QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))


def question() -> QuestionCreate:
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])
    return QuestionCreate(request=Request(reason="Deploy?", items=[item]), channel=CHANNEL)


@contextlib.asynccontextmanager
async def serving(service: QuestionService, patience: Patience, ended: list[QuestionView]) -> AsyncIterator[Client]:
    """A client of a server whose tool `ask` asks `question()` and waits on it as `patience` says."""

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        view, _ = await service.waiting.ask(CALLER, question(), replace(patience, progress=ctx.session.report_progress))
        ended.append(view)
        return types.CallToolResult(content=[types.TextContent(text=view.status.value)])

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="ask", input_schema={"type": "object"})])

    server: Server[Any] = Server("waiting", on_list_tools=list_tools, on_call_tool=call_tool)
    async with listening(service), Client(server) as client:
        yield client


def click(bot: Bot, ts: str, value: str) -> None:
    """A person clicks the option `value` on the question message, signed as Slack sends it."""
    message = bot.ws.message(CHANNEL, ts)
    assert message is not None
    block, _ = find_element(message["blocks"], lambda a: a.startswith("parley_choose"))
    button = next(e for e in block["elements"] if e["value"] == value)
    payload = block_actions_payload(
        user="U0CAROL", message=message, channel=CHANNEL, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200


def asked(service: QuestionService) -> list[QuestionView]:
    return service.list(CALLER).questions


def only_question(service: QuestionService) -> QuestionView:
    [found] = asked(service)
    return found


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_progress_is_reported_while_people_are_asked(service: QuestionService) -> None:
    heard: list[tuple[float, float | None, str | None]] = []
    ended: list[QuestionView] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    patience = Patience(seconds=1.1, every=0.25, total=900.0, saying="waiting for a person", withdraw=True)

    async def scenario() -> types.CallToolResult:
        async with serving(service, patience, ended) as client:
            return await client.call_tool("ask", {}, progress_callback=on_progress)

    result = anyio.run(scenario)
    assert text_of(result) == "cancelled"  # nobody answered within the bound: withdrawn
    assert len(heard) >= 3
    assert [p for p, _, _ in heard[:3]] == [0.25, 0.5, 0.75]
    assert {(t, m) for _, t, m in heard} == {(900.0, "waiting for a person")}


def test_a_client_that_goes_away_cancels_its_question(service: QuestionService, bot: Bot) -> None:
    ended: list[QuestionView] = []

    async def scenario() -> None:
        async with serving(service, Patience.decision(900), ended) as client:
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "ask", {})
                    await anyio.to_thread.run_sync(lambda: bot.wait_for("the question", lambda: asked(service)))
                    tg.cancel_scope.cancel()  # the client gives up on the call
            assert not scope.cancelled_caught

    anyio.run(scenario)
    gone = bot.wait_for(
        "the question to be cancelled",
        lambda: (v := only_question(service)).status is QuestionStatus.CANCELLED and v,
    )
    assert gone.cancelled_by == CALLER.name and ended == []  # cancelled by the asker, not answered


def test_a_client_gone_runs_the_callers_own_ending_and_keeps_the_question(service: QuestionService, bot: Bot) -> None:
    told: list[str] = []

    async def when_gone(question_id: str) -> None:
        await anyio.sleep(0.2)  # shielded: it runs to its end though the call was cancelled
        told.append(question_id)

    async def scenario() -> None:
        patience = replace(Patience.decision(900), when_gone=when_gone)
        async with serving(service, patience, []) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask", {})
            await anyio.to_thread.run_sync(lambda: bot.wait_for("the question", lambda: asked(service)))
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    bot.wait_for("the caller's ending to run", lambda: told)
    assert told == [only_question(service).id] and only_question(service).status is QuestionStatus.WAITING


def test_a_decision_waits_the_grace_period_past_the_expiry_then_withdraws(service: QuestionService) -> None:
    ended: list[QuestionView] = []

    async def scenario() -> tuple[str, float]:
        async with serving(service, Patience.decision(0.5, grace=1.0), ended) as client:
            start = time.monotonic()
            result = await client.call_tool("ask", {})
            return text_of(result), time.monotonic() - start

    status, took = anyio.run(scenario)
    assert status == "cancelled" and took >= 1.5  # the expiry (0.5 s, never recorded here) and the grace
    assert ended[0].cancelled_by == CALLER.name and only_question(service).status is QuestionStatus.CANCELLED


def test_a_bounded_wait_leaves_the_question_open_to_wait_on_again(service: QuestionService) -> None:
    ended: list[QuestionView] = []

    async def scenario() -> str:
        async with serving(service, Patience.within(0.3), ended) as client:
            return text_of(await client.call_tool("ask", {}))

    assert anyio.run(scenario) == "waiting"
    assert ended[0].status is QuestionStatus.WAITING and only_question(service).status is QuestionStatus.WAITING


def test_a_wait_is_woken_when_people_answer(service: QuestionService, bot: Bot) -> None:
    async def scenario() -> QuestionView:
        async with listening(service):
            view, _ = await service.waiting.ask(CALLER, question(), Patience.decision(900))
            return view

    async def answer() -> None:
        posted = lambda: [q for q in asked(service) if q.message_ts]  # noqa: E731
        [found] = await anyio.to_thread.run_sync(lambda: bot.wait_for("the question to be posted", posted))
        await anyio.to_thread.run_sync(lambda: click(bot, str(found.message_ts), "approve"))

    async def both() -> QuestionView:
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            view = await scenario()
        return view

    view = anyio.run(both)
    assert view.status is QuestionStatus.ANSWERED and view.answers == {"d": "approve"}


def test_an_error_while_waiting_is_raised_as_it_is(service: QuestionService) -> None:
    async def ignore(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def scenario() -> None:
        async with listening(service):
            await service.waiting.until(CALLER, "r-no-such-question", Patience(seconds=1, progress=ignore))

    with pytest.raises(QuestionNotFound, match="no question 'r-no-such-question'"):  # never an ExceptionGroup
        anyio.run(scenario)
