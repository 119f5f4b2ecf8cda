"""A secret answered over Socket Mode, with `parley serve --socket-mode` logging at DEBUG.

slack_sdk's Socket Mode client logs every envelope whole at DEBUG ("on_message invoked: …"): the
form's state values and a reply typed in the thread among them. `parley serve` gives it a logger
of its own held at INFO, so neither the secret typed in the form nor one typed in the thread
reaches a log line, as over HTTP. Real `parley serve` and `parley worker` processes
(`slack_stack.SlackStack`) with `PARLEY_LOG_LEVEL=DEBUG`, a loopback Socket Mode server
(`socket_mode_support`) and the Web API stand-in.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from secret_agents import TOKEN_LABEL
from slack_forms import button_action, find_element, form_state
from slack_payloads import (
    block_actions_payload,
    event_callback_body,
    slash_command_fields,
    thread_reply_event,
    view_submission_payload,
)
from slack_stack import SlackStack
from socket_mode_support import SocketModeServer

pytestmark = pytest.mark.system

KEY = Fernet.generate_key().decode()


@pytest.fixture
def server() -> Iterator[SocketModeServer]:
    server = SocketModeServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stack(redis_url: str, tmp_path: Path, server: SocketModeServer) -> Iterator[SlackStack]:
    env = {
        "PARLEY_LOG_LEVEL": "DEBUG",
        "PARLEY_LOG_FORMAT": "json",
        "PARLEY_SECRET_KEY": KEY,
        "PARLEY_AGENTS": "slack_agents,secret_agents",
    }
    stack = SlackStack(redis_url, tmp_path / "stack", workers=1, socket_mode=True, extra_env=env)
    stack.ws.socket_mode_url = server.url
    stack.start()
    try:
        stack.wait_for("the bot to open its Socket Mode connection", server.connected.is_set, timeout=30)
        yield stack
    finally:
        stack.stop()


def test_a_secret_sent_over_socket_mode_at_debug_is_in_no_log_line(stack: SlackStack, server: SocketModeServer) -> None:
    label = secrets.token_hex(4)
    text = json.dumps({"assignees": ["U0BOB"], "confirm": False}) + " " + label
    command = server.deliver(
        "slash_commands", slash_command_fields(f"s-secret {text}", user="U0BOB"), accepts_response_payload=True
    )
    server.ack_for(command)
    run = stack.run_for("s-secret", text, user="U0BOB", channel="C0GENERAL")
    question = stack.question(run)

    # A secret typed in the thread: refused, and pointed to the form.
    typed = f"typed-{secrets.token_hex(12)}"
    reply = thread_reply_event(
        user="U0BOB", channel=run.channel, text=typed, ts=stack.ws.next_ts(), thread_ts=run.root_ts
    )
    server.ack_for(server.deliver("events_api", json.loads(event_callback_body(reply)), accepts_response_payload=False))
    stack.wait_ephemeral("U0BOB", lambda t: "answered only in its form" in t)

    # The secret typed in the form.
    block, button = find_element(question["blocks"], "parley_open_form")
    click = block_actions_payload(
        user="U0BOB",
        message=question,
        channel=run.channel,
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger("U0BOB"),
    )
    server.ack_for(server.deliver("interactive", click, accepts_response_payload=False))
    stack.wait_call("views.open", lambda c: c["status"] == 200)
    [view] = stack.ws.open_views("U0BOB")
    secret = f"tok-{secrets.token_hex(12)}"
    submitted = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {TOKEN_LABEL: secret})
    )
    envelope = server.deliver("interactive", submitted, accepts_response_payload=True)
    assert server.ack_for(envelope) == {"envelope_id": envelope}  # a bare ack: accepted, the form closes
    stack.wait_for("the run to succeed", lambda: stack.status(run.run_id) == "succeeded")
    stack.settle()

    logs = "\n".join(p.read_text(errors="replace") for p in sorted(stack.data_dir.glob("*.log")))
    assert '"level": "debug"' in logs, "the processes did not log at DEBUG"
    assert "A new session has been established" in logs  # the connection's INFO lines are kept
    assert [line for line in logs.splitlines() if secret in line] == []
    assert [line for line in logs.splitlines() if typed in line] == []
