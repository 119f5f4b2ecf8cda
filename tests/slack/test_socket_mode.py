"""`parley serve --socket-mode` against a loopback Socket Mode server speaking Slack's protocol.

The stand-in's `apps.connections.open` hands the bot the `ws://` URL of a server run here with the
`websockets` package. It greets the bot with `hello`, then delivers envelopes the way Slack does
(`slash_commands`, `interactive`); the bot must ack each by its `envelope_id`, and the payloads must
reach the same listeners as over HTTP: a run starts in a thread, and its answer is accepted.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest
from slack_payloads import APP_TOKEN, slash_command_fields
from slack_stack import SlackStack
from socket_mode_support import SocketModeServer

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def socket_server() -> Iterator[SocketModeServer]:
    server = SocketModeServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, socket_server: SocketModeServer
) -> Iterator[SlackStack]:
    stack = SlackStack(redis_url, tmp_path_factory.mktemp("socket-mode"), workers=1, socket_mode=True)
    stack.ws.socket_mode_url = socket_server.url
    stack.start()
    try:
        stack.wait_for("the bot to open its Socket Mode connection", socket_server.connected.is_set, timeout=30)
        yield stack
    finally:
        stack.stop()


def test_the_bot_connects_with_its_app_token_through_the_configured_api(
    stack: SlackStack, socket_server: SocketModeServer
) -> None:
    opened = stack.calls("apps.connections.open")
    assert opened and opened[0]["token"] == APP_TOKEN and opened[0]["status"] == 200
    assert socket_server.connections >= 1


def test_help_is_acked_with_its_response_payload(stack: SlackStack, socket_server: SocketModeServer) -> None:
    envelope = socket_server.deliver(
        "slash_commands", slash_command_fields("help", user="U0BOB"), accepts_response_payload=True
    )
    ack = socket_server.ack_for(envelope)
    assert ack["payload"]["response_type"] == "ephemeral"
    assert "*s-form*" in ack["payload"]["text"] and "*ticket*" in ack["payload"]["text"]


def test_a_slash_command_and_a_submit_reach_the_same_handlers_as_over_http(
    stack: SlackStack, socket_server: SocketModeServer
) -> None:
    label = f"socket-{secrets.token_hex(4)}"
    command = socket_server.deliver(
        "slash_commands", slash_command_fields(f"s-form {label}", user="U0BOB"), accepts_response_payload=True
    )
    assert socket_server.ack_for(command) == {"envelope_id": command}  # a bare ack: nothing to say ephemerally

    run = stack.run_for("s-form", label, user="U0BOB", channel="C0GENERAL")
    question = stack.question(run)
    assert question["thread_ts"] == run.root_ts

    payload = stack.submit_payload(run, question, {"Colour": "Blue", "Note": "over the socket"})
    submit = socket_server.deliver("interactive", payload, accepts_response_payload=False)
    assert socket_server.ack_for(submit) == {"envelope_id": submit}
    stack.wait_call("chat.update", lambda c: c["args"].get("ts") == question["ts"] and c["status"] == 200)
    locked = stack.message(run, question["ts"])
    assert all(b["type"] not in ("input", "actions") for b in locked["blocks"])
    assert "Answered by <@U0BOB>" in json.dumps(locked["blocks"])
    final = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the result")
    assert final["text"] == ":white_check_mark: Done: colour Blue, note over the socket"
    stack.settle()
    assert len(socket_server.acks_for(command)) == 1 and len(socket_server.acks_for(submit)) == 1
