"""Driving the real `parley` command in a pty, as a person at a terminal would.

Shared by the terminal tests: spawn `parley run ...` against the test Redis, read the
run id it prints, wait for it to exit, and read back what it left in Redis. In-process, a
`ScriptedPrompter` stands where the person at the terminal would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import redis

from workers.interaction import AnswerValue, Item
from workers.store.records import RunRecord, RunStatus
from workers.store.runs import RunStore

TIMEOUT = 30
TESTS = Path(__file__).resolve().parent
UP, DOWN = "\x1b[A", "\x1b[B"
FINISH = "\x1b\r"  # Esc then Enter ends a multiline answer
CLEAR = "\x15"  # Ctrl-U empties the line before the cursor
CTRL_C = "\x03"


def parley_command() -> list[str]:
    script = Path(sys.executable).with_name("parley")
    return [str(script)] if script.exists() else [sys.executable, "-m", "parley.cli"]


def parley_env(redis_url: str, data_dir: Path, *, test_agents: bool = False) -> dict[str, str]:
    """The command's environment; `test_agents` adds the agents of tests/agents_for_tests.py."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_"))}
    env.update(
        REDIS_URL=redis_url,
        PARLEY_DATA_DIR=str(data_dir),
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",  # nobody answers cursor-position requests in a pty
        PYTHONUNBUFFERED="1",
    )
    if test_agents:
        env["PARLEY_AGENTS"] = "agents_for_tests"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return env


def spawn_run(redis_url: str, data_dir: Path, *args: str, test_agents: bool = False) -> pexpect.spawn:
    """`parley run ARGS...` in a pty of 50 rows by 200 columns."""
    command = parley_command()
    return pexpect.spawn(
        command[0],
        [*command[1:], "run", *args],
        env=parley_env(redis_url, data_dir, test_agents=test_agents),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 200),
    )


def started_run(term: pexpect.spawn, agent: str = "ticket") -> str:
    term.expect(rf"Run (r[A-Za-z0-9_-]+): {agent}")
    return str(term.match.group(1))


def finish(term: pexpect.spawn) -> int:
    term.expect(pexpect.EOF)
    term.close()
    return int(term.exitstatus if term.exitstatus is not None else -1)


def stored(redis_url: str, run_id: str) -> RunRecord:
    client = redis.Redis.from_url(redis_url)
    try:
        return RunStore(client).get(run_id)
    finally:
        client.close()


def stored_run(redis_url: str, run_id: str) -> tuple[RunStatus, list[str]]:
    client = redis.Redis.from_url(redis_url)
    try:
        store = RunStore(client)
        return store.get(run_id).status, [h.event for h in store.history(run_id)]
    finally:
        client.close()


class ScriptedPrompter:
    """Answers from a script per item id, recording what was asked and what was refused."""

    def __init__(self, script: dict[str, list[AnswerValue | BaseException]]) -> None:
        self.script = script
        self.asked: list[str] = []
        self.problems: list[tuple[str, str]] = []

    def ask(self, item: Item) -> AnswerValue:
        self.asked.append(item.id)
        value = self.script[item.id].pop(0)
        if isinstance(value, BaseException):
            raise value
        return value

    def problem(self, item: Item, message: str) -> None:
        self.problems.append((item.id, message))
