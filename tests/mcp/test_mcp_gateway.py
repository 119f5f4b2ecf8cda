"""The approval gateway end to end in one process: the official SDK's client, the gateway's server, a real
upstream MCP server (`mcp_upstream.py`, a subprocess), Redis, and the approver's clicks as Slack sends them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from gateway_support import APPROVER, SECRET, Gateway, rules
from inprocess_bot import Bot, running_bot
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult
from mcp_upstream import LOOKALIKE

from workers.runtime.sweep import sweep
from workers.store.gateway import CLIENT_GONE, FORWARDED, GatewayStore

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def writes(files: Path) -> list[str]:
    log = files / ".writes"
    return log.read_text().splitlines() if log.exists() else []


def history(bot: Bot, run_id: str) -> list[dict[str, Any]]:
    return [entry.model_dump() for entry in bot.runtime.store.history(run_id)]


def run_of(bot: Bot, message: dict[str, Any]) -> str:
    """The run of the approval `message` asks."""
    block = next(b for b in message["blocks"] if b.get("block_id", "").startswith("qa|"))
    interrupt = bot.runtime.store.interrupt(block["block_id"].split("|")[1])
    assert interrupt is not None
    return interrupt.run_id


def test_tools_are_listed_prefixed_with_the_upstreams_schemas(gateway: Gateway, files: Path) -> None:
    async def scenario() -> tuple[list[Any], list[Any]]:
        async with gateway.open(rules(files)) as client:
            prefixed = (await client.list_tools()).tools
        async with gateway.open(rules(files), flat=True) as client:
            flat = (await client.list_tools()).tools
        return prefixed, flat

    prefixed, flat = anyio.run(scenario)
    by_name = {t.name: t for t in prefixed}
    listed = {"write_file", "read_file", "ask_person", "open_link", "ask_nested", "ask_code", "ask_plainly"}
    listed |= {"ask_many", "hang", "crash", "pay", "redefine", "sign_in", "Delete_file", LOOKALIKE}
    assert set(by_name) == {f"files.{name}" for name in listed}
    write = by_name["files.write_file"]
    assert write.description == "Write text to a file under the directory."
    assert set(write.input_schema["properties"]) == {"path", "text", "token"}
    assert write.input_schema["required"] == ["path", "text"]
    assert write.annotations is not None and write.annotations.destructive_hint is True
    assert write.output_schema is not None and "result" in write.output_schema["properties"]
    assert {t.name for t in flat} == listed
    assert [t.input_schema for t in flat if t.name == "write_file"] == [write.input_schema]


def test_allow_forwards_and_deny_errors_with_the_reason(gateway: Gateway, bot: Bot, files: Path) -> None:
    """A name the gateway lists no tool under is JSON-RPC invalid params, as on `/mcp`, never a tool result."""
    (files / "notes.txt").write_text("kept")

    async def scenario() -> tuple[CallToolResult, CallToolResult, list[MCPError], str | None]:
        async with gateway.open(rules(files)) as client:
            read = await client.call_tool("files.read_file", {"path": "notes.txt"})
            denied = await client.call_tool("files.ask_person", {})
            unknown = []
            for name in ("tickets.create", "write_file", "files.no_such_tool"):
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(name, {"path": "x", "text": "y"})
                unknown.append(caught.value)
            served = client.server_info.version if client.server_info else None
            return read, denied, unknown, served

    read, denied, unknown, served = anyio.run(scenario)
    assert not read.is_error and read.structured_content == {"result": "kept"}
    assert denied.is_error and text_of(denied) == "files.ask_person is denied: nobody is asked from here"
    assert [e.error.code for e in unknown] == [INVALID_PARAMS] * 3
    upstream, bare, tool = (e.error.message for e in unknown)
    assert "unknown upstream 'tickets'" in upstream and "files" in upstream
    assert "'<upstream>.<tool>'" in bare and "no tool 'no_such_tool'" in tool
    assert served == version("parley-slack") != ""
    assert bot.ws.calls("chat.postMessage") == []  # nothing was asked
    assert writes(files) == []


def test_an_unreachable_upstream_is_a_clear_error_and_the_others_still_work(gateway: Gateway, files: Path) -> None:
    broken = '  broken: {command: ["/nonexistent/mcp-server"]}'
    config = rules(files, extra=broken)

    async def scenario() -> tuple[list[str], CallToolResult, CallToolResult]:
        async with gateway.open(config) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            dead = await client.call_tool("broken.anything", {})
            (files / "a.txt").write_text("a")
            alive = await client.call_tool("files.read_file", {"path": "a.txt"})
            return names, dead, alive

    names, dead, alive = anyio.run(scenario)
    assert all(n.startswith("files.") for n in names)
    assert dead.is_error and text_of(dead).startswith("upstream 'broken' is unreachable:")
    assert not alive.is_error


def call_and_then(
    gateway: Gateway, config: Any, arguments: dict[str, Any], approver: Any, **open_args: Any
) -> tuple[CallToolResult, list[float]]:
    """Call `files.write_file` through the gateway while `approver(message)` acts on its approval in Slack."""
    progress: list[float] = []

    async def scenario() -> CallToolResult:
        async with gateway.open(config, **open_args) as client:
            got: dict[str, CallToolResult] = {}

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            async def call() -> None:
                got["result"] = await client.call_tool("files.write_file", arguments, progress_callback=on_progress)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(lambda: approver(gateway.approval()))
            return got["result"]

    return anyio.run(scenario), progress


def test_approve_forwards_once_with_the_redacted_token_restored_and_never_sent_to_slack(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    shown: dict[str, Any] = {}

    def approve(message: dict[str, Any]) -> None:
        shown["message"] = message
        time.sleep(0.5)  # a few progress intervals pass while it waits
        gateway.click(message, "parley_approve")

    arguments = {"path": "out/report.txt", "text": "quarterly numbers", "token": SECRET}
    result, progress = call_and_then(gateway, rules(files), arguments, approve, progress_every=0.1)

    assert not result.is_error, text_of(result)
    assert result.structured_content == {"result": "wrote 17 characters to out/report.txt"}
    assert (files / "out/report.txt").read_text() == "quarterly numbers"
    assert writes(files) == [f"out/report.txt\t{SECRET}"]  # forwarded once, with the real token
    assert len(progress) >= 2 and progress == sorted(progress)  # progress while it waited
    text = json.dumps(shown["message"], ensure_ascii=False)
    assert "files.write_file" in text and "Write text to a file under the directory." in text
    assert "••••" in text and "quarterly numbers" in text
    assert all(SECRET not in json.dumps(call) for call in bot.ws.calls())  # in no Web API body
    [run] = [r for r in bot.runtime.store.runs(bot.runtime.store.list_ids(None, limit=5)) if r.agent == "question"]
    events = {e["event"]: e for e in history(bot, run.id)}
    assert events["forwarded"]["by"] == APPROVER
    assert SECRET not in json.dumps(history(bot, run.id))
    assert GatewayStore(bot.runtime.redis).claim(run.id, FORWARDED) == FORWARDED  # taken: never again


def test_edit_forwards_the_edited_arguments_and_the_redacted_one_is_not_editable(gateway: Gateway, files: Path) -> None:
    fields: dict[str, list[str]] = {}

    def edit(message: dict[str, Any]) -> None:
        view = gateway.modal(message, "parley_open_form")
        fields["inputs"] = [b["label"]["text"] for b in view["blocks"] if b["type"] == "input"]
        gateway.submit(view, {"Text": "edited by a person"})

    arguments = {"path": "e.txt", "text": "as proposed", "token": SECRET}
    result, _ = call_and_then(gateway, rules(files), arguments, edit)
    assert not result.is_error, text_of(result)
    assert (files / "e.txt").read_text() == "edited by a person"
    assert writes(files) == [f"e.txt\t{SECRET}"]
    assert "Token" not in fields["inputs"] and "Text" in fields["inputs"]


def test_reject_is_a_tool_error_with_the_reason(gateway: Gateway, files: Path) -> None:
    def reject(message: dict[str, Any]) -> None:
        gateway.submit(gateway.modal(message, "parley_reject"), {"Reason": "not in that folder"})

    result, _ = call_and_then(gateway, rules(files), {"path": "r.txt", "text": "no"}, reject)
    assert result.is_error
    assert text_of(result) == f"files.write_file was rejected by {APPROVER}: not in that folder"
    assert writes(files) == []


def test_a_standing_approval_forwards_the_next_calls_of_that_session_without_asking(
    gateway: Gateway, bot: Bot, files: Path
) -> None:
    config = rules(files)

    async def scenario() -> tuple[CallToolResult, CallToolResult, int]:
        async with gateway.open(config, session="desk-1") as client:
            got: dict[str, CallToolResult] = {}

            async def first() -> None:
                got["first"] = await client.call_tool("files.write_file", {"path": "1.txt", "text": "one"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                message = await anyio.to_thread.run_sync(gateway.approval)
                await anyio.to_thread.run_sync(lambda: gateway.click(message, "parley_approve_standing"))
            posted = len(bot.ws.calls("chat.postMessage"))
            with anyio.fail_after(20):
                second = await client.call_tool("files.write_file", {"path": "2.txt", "text": "two"})
            return got["first"], second, len(bot.ws.calls("chat.postMessage")) - posted

    first, second, asked_again = anyio.run(scenario)
    assert not first.is_error and not second.is_error, (text_of(first), text_of(second))
    assert asked_again == 0
    assert [line.split("\t")[0] for line in writes(files)] == ["1.txt", "2.txt"]
    [run] = [r for r in bot.runtime.store.runs(bot.runtime.store.list_ids(None, limit=5)) if r.agent == "question"]
    events = [e["event"] for e in history(bot, run.id)]
    assert "standing approval granted" in events and "approved by the standing rule" in events
    assert events.count("forwarded") == 2

    async def other_session() -> CallToolResult:  # another session is asked, and it expires unanswered here
        async with gateway.open(config.model_copy(update={"expires_in": 60}), session="desk-2") as client:
            async with anyio.create_task_group() as tg:
                got: dict[str, CallToolResult] = {}

                async def call() -> None:
                    got["r"] = await client.call_tool("files.write_file", {"path": "3.txt", "text": "three"})

                tg.start_soon(call)
                await anyio.to_thread.run_sync(gateway.approval)
                await anyio.to_thread.run_sync(lambda: sweep(bot.runtime, now=time.time() + 120))
            return got["r"]

    expired = anyio.run(other_session)
    assert expired.is_error and text_of(expired) == "files.write_file was not approved within 1 minute"
    assert "3.txt" not in "".join(writes(files))


def test_expiry_is_a_tool_error_saying_how_long(gateway: Gateway, bot: Bot, files: Path) -> None:
    def let_it_expire(message: dict[str, Any]) -> None:
        sweep(bot.runtime, now=time.time() + 1000)

    result, _ = call_and_then(gateway, rules(files), {"path": "late.txt", "text": "x"}, let_it_expire)
    assert result.is_error and text_of(result) == "files.write_file was not approved within 15 minutes"
    assert writes(files) == []


def test_a_call_whose_client_went_away_is_recorded_and_not_forwarded(gateway: Gateway, bot: Bot, files: Path) -> None:
    async def scenario() -> str:
        async with gateway.open(rules(files)) as client:
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        await client.call_tool("files.write_file", {"path": "gone.txt", "text": "x"})

                    tg.start_soon(call)
                    message = await anyio.to_thread.run_sync(gateway.approval)
                    tg.cancel_scope.cancel()  # the client gives up on the call
            assert not scope.cancelled_caught
            run_id = run_of(bot, message)
            await anyio.to_thread.run_sync(
                lambda: bot.wait_for(
                    "the gateway to record the client leaving",
                    lambda: GatewayStore(bot.runtime.redis).claimed(run_id) == CLIENT_GONE,
                )
            )
            await anyio.to_thread.run_sync(lambda: gateway.click(message, "parley_approve"))
            await anyio.to_thread.run_sync(
                lambda: bot.wait_for(
                    "the late decision to be recorded",
                    lambda: any(e["event"] == "not forwarded" for e in history(bot, run_id)),
                )
            )
            return run_id

    run_id = anyio.run(scenario)
    assert writes(files) == []
    [late] = [e for e in history(bot, run_id) if e["event"] == "not forwarded"]
    assert late["by"] == APPROVER and late["detail"]["decision"] == "approved"


def test_approve_forwards_an_empty_argument_exactly_as_proposed(gateway: Gateway, bot: Bot, files: Path) -> None:
    def approve(message: dict[str, Any]) -> None:
        gateway.click(message, "parley_approve")
        bot.wait_for("the call to be forwarded", lambda: writes(files))

    result, _ = call_and_then(gateway, rules(files), {"path": ".env", "text": ""}, approve)
    assert not result.is_error, text_of(result)
    assert (files / ".env").read_text() == "" and writes(files) == [".env\t"]
    assert bot.ws.calls("chat.postEphemeral") == []  # nobody was told "an answer is required"
