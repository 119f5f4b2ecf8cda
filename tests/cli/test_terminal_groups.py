"""Several questions at once at the terminal: `parley run`'s inline execution asks them in sequence.

The terminal host answers synchronously, so `ask_all` asks every question in turn, `ask_any`
the first (the rest are no longer needed), and `ask_each` each person's question in turn
until the quorum; quitting midway parks the run on the questions still open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from terminal_support import ScriptedPrompter

from bot.terminal import TerminalHost
from parley.terminal import execute_inline
from workers.interaction import Item, ItemType, Request
from workers.registry import AgentFn, AgentRegistry, AgentSpec
from workers.runs import RunService
from workers.runtime.host import InteractorRouter
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration


def ask(item_id: str, who: list[str] | None = None) -> Request:
    return Request(
        reason=f"About {item_id}?", items=[Item(id=item_id, text=item_id, type=ItemType.FREE_TEXT)], assignees=who or []
    )


def inline(
    r: redis.Redis, tmp_path: Path, agent: AgentFn, script: dict[str, list[Any]]
) -> tuple[Runtime, TerminalHost, ScriptedPrompter]:
    registry = AgentRegistry()
    registry.add(AgentSpec(name="probe", description="", fn=agent))
    prompter = ScriptedPrompter(script)
    host = TerminalHost(prompter)
    settings = RuntimeSettings(retry_delays=(0.5,), data_dir=tmp_path)
    return (
        Runtime.build(r, hosts=InteractorRouter({"terminal": host}), settings=settings, registry=registry),
        host,
        prompter,
    )


def test_ask_all_asks_each_question_in_turn(r: redis.Redis, tmp_path: Path) -> None:
    def agent(run: Any, text: str) -> str:
        got = run.ask_all({"a": ask("x"), "b": ask("y")})
        return f"{got['a']['x']} {got['b']['y']}"

    runtime, host, prompter = inline(r, tmp_path, agent, {"x": ["one"], "y": ["two"]})
    run_id = runtime.store.create("probe", "", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert (final.status, final.result, final.error) == (RunStatus.SUCCEEDED, "one two", "")
    assert prompter.asked == ["x", "y"]


def test_ask_any_takes_the_first_and_drops_the_rest(r: redis.Redis, tmp_path: Path) -> None:
    def agent(run: Any, text: str) -> str:
        key, got = run.ask_any({"a": ask("x"), "b": ask("y")})
        return f"{key} {got}"

    runtime, host, prompter = inline(r, tmp_path, agent, {"x": ["one"], "y": []})
    run_id = runtime.store.create("probe", "", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert (final.status, final.result) == (RunStatus.SUCCEEDED, "a {'x': 'one'}")
    assert prompter.asked == ["x"]
    dropped = runtime.store.journal(run_id)["ask:b"][0]
    assert runtime.store.interrupt(dropped).state is InterruptState.NOT_NEEDED


def test_ask_each_asks_each_person_in_turn_until_the_quorum(r: redis.Redis, tmp_path: Path) -> None:
    def agent(run: Any, text: str) -> str:
        got = run.ask_each(ask("x", ["UA", "UB", "UC"]), quorum=2)
        return str(sorted(got.items()))

    runtime, host, prompter = inline(r, tmp_path, agent, {"x": ["first", "second"]})
    run_id = runtime.store.create("probe", "", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert final.result == "[('UA', {'x': 'first'}), ('UB', {'x': 'second'})]"
    assert prompter.asked == ["x", "x"]


def test_quitting_midway_parks_the_run_on_the_questions_still_open(r: redis.Redis, tmp_path: Path) -> None:
    def agent(run: Any, text: str) -> str:
        got = run.ask_all({"a": ask("x"), "b": ask("y")})
        return f"{got['a']['x']} {got['b']['y']}"

    runtime, host, _ = inline(r, tmp_path, agent, {"x": ["one"], "y": [KeyboardInterrupt()]})
    run_id = runtime.store.create("probe", "", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert final.status is RunStatus.PAUSED
    group = runtime.store.groups.group(final.interrupt)
    assert group is not None
    states = [m.state for m in runtime.store.groups.members(group)]
    assert states == [InterruptState.ANSWERED, InterruptState.OPEN]
