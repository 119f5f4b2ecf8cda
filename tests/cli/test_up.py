"""`parley up` against the Web API stand-in and a loopback Socket Mode server, from a fresh directory.

As a newcomer would: `parley slack setup` saves the tokens in `.env`, then `parley up` runs in a
pty with REDIS_URL unset (the embedded Redis), a data directory of its own, and nothing else
configured. A ticket is asked for and answered through the Socket Mode server, the run finishes
in its thread, and after Ctrl-C no process of the run is left.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
import redis
from loopback_slack import LoopbackSlack
from process_support import leftover_processes
from rq import Worker
from slack_forms import button_action, find_element, form_state, is_question
from slack_payloads import block_actions_payload, slash_command_fields
from socket_mode_support import SocketModeServer
from terminal_support import parley_command

from bot.playground import Workspace

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds leftover processes through /proc"),
]

BOT = "xoxb-1111-2222-upBotToken0001"
APP = "xapp-1-A0PARLEY-3333-upAppToken0002"
START_TIMEOUT = 90
REAP_TIMEOUT = 60.0  # a deadline, not a figure: a loaded machine stops processes slowly
TRY = "type `/parley ticket …` in any channel the bot is in (invite it with `/invite @Parley`)"
ANSWERS = {
    "Describe the bug": "The login button does nothing on Safari",
    "Who is affected?": "Some users",
    "Severity": "High",
    "Components": ["Login"],
}


@pytest.fixture
def slack() -> Iterator[LoopbackSlack]:
    with LoopbackSlack.serving(BOT, APP) as slack:
        yield slack


def wait_for(what: str, found: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := found()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def answer(ws: Workspace, server: SocketModeServer, question: dict[str, Any]) -> None:
    """Click Submit on the filled question, again after a moment if the run had not parked on it yet."""
    block, button = find_element(question["blocks"], "parley_submit")
    for _ in range(20):
        mark = len(ws.calls())
        payload = block_actions_payload(
            user="U0BOB", message=question, channel="C0GENERAL", action=button_action(block, button),
            state_values=form_state(question["blocks"], ANSWERS),
        )  # fmt: skip
        server.ack_for(server.deliver("interactive", payload, accepts_response_payload=False))

        def outcome(mark: int = mark) -> str:
            calls = ws.calls()[mark:]
            if any(c["method"] == "chat.update" and c["args"].get("ts") == question["ts"] for c in calls):
                return "accepted"
            return "refused" if any(c["method"] == "chat.postEphemeral" for c in calls) else ""

        if wait_for("the answer to be accepted or refused", outcome) == "accepted":
            return
        time.sleep(0.2)
    raise AssertionError("the question was never open for an answer")


def test_up_answers_a_ticket_through_socket_mode_and_leaves_nothing_after_ctrl_c(
    slack: LoopbackSlack, tmp_path: Path
) -> None:
    ws, socket_server = slack.ws, slack.socket
    home, data_dir = tmp_path / "clone", tmp_path / "data"
    home.mkdir()
    command = parley_command()
    env = slack.command_env(data_dir, PARLEY_LOG_LEVEL="WARNING")
    setup = subprocess.run(
        [*command, "slack", "setup", "--bot-token", BOT, "--app-token", APP],
        cwd=home, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stderr

    up = pexpect.spawn(
        command[0], [*command[1:], "up"], cwd=str(home), env=env, encoding="utf-8", timeout=START_TIMEOUT,
        dimensions=(50, 200),
    )  # fmt: skip
    try:
        up.expect_exact("Parley is up in the Slack workspace Parley Playground as @parley")
        up.expect_exact(f"In Slack, {TRY}. Ctrl-C stops everything.")
        assert socket_server.connected.is_set()
        assert leftover_processes(data_dir), "the children should be running"
        with contextlib.closing(redis.Redis(unix_socket_path=str(data_dir.resolve() / "redis.sock"))) as client:
            wait_for(  # the worker delivers webhooks on threads of their own, apart from the agents' queue
                "the webhook delivery threads",
                lambda: (
                    {"parley", "parley-webhooks"} <= {q for w in Worker.all(connection=client) for q in w.queue_names()}
                ),
            )

        text = "Login fails on Safari"
        command_envelope = socket_server.deliver(
            "slash_commands", slash_command_fields(f"ticket {text}", user="U0BOB"), accepts_response_payload=True
        )
        assert socket_server.ack_for(command_envelope, timeout=30) == {"envelope_id": command_envelope}
        root = wait_for(
            "the run's root message",
            lambda: next((m for m in ws.messages("C0GENERAL") if m["text"].endswith(f"*ticket*: {text}")), None),
        )
        question = wait_for(
            "the question", lambda: next((m for m in ws.thread("C0GENERAL", root["ts"]) if is_question(m)), None)
        )
        answer(ws, socket_server, question)
        final = wait_for(
            "the final answer",
            lambda: next(
                (m for m in ws.thread("C0GENERAL", root["ts"]) if m["text"].startswith(":white_check_mark:")), None
            ),
        )
        assert f"{text}. Severity High, affects Some users, components Login." in final["text"]
        assert {c["token"] for c in ws.calls("apps.connections.open")} == {APP}  # by setup, then by the bot
        assert {c["token"] for c in ws.calls() if c["method"] != "apps.connections.open"} == {BOT}

        up.sendintr()  # Ctrl-C at the terminal
        up.expect_exact("parley up: stopped.")
        up.expect(pexpect.EOF)
        up.close()
        assert up.exitstatus == 0
        deadline = time.monotonic() + REAP_TIMEOUT  # the embedded Redis goes once nobody holds it
        while (left := leftover_processes(data_dir, f"parley-up-{up.pid}")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == []
    finally:
        if up.isalive():
            up.terminate(force=True)


def test_up_without_tokens_or_with_a_wrong_one_refuses_in_one_line(slack: LoopbackSlack, tmp_path: Path) -> None:
    env = slack.command_env(tmp_path / "data")
    for extra, expected in (
        ({}, "parley: SLACK_BOT_TOKEN is not set: run `parley slack setup` first: it saves them in .env"),
        (
            {"SLACK_BOT_TOKEN": "xoxb-1-2-notKnownHere9", "SLACK_APP_TOKEN": APP},
            "parley: Slack refused the token in SLACK_BOT_TOKEN (invalid_auth): it does not know this token; "
            "`parley slack setup` checks and saves a new one",
        ),
    ):
        done = subprocess.run(
            [*parley_command(), "up"], cwd=tmp_path, env={**env, **extra},
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.splitlines() == [expected]
        assert leftover_processes(tmp_path / "data") == []
