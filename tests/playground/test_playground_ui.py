"""The playground's page routes against a stub bot: what the bot receives, and how its answers are applied.

The stub stands where `parley serve` stands in `parley dev`: it checks every request's
signature and documented shape, records it, and answers with whatever ack a test queues,
so these tests pin the Slack behaviours the playground reproduces (ephemeral slash
command replies, modal `response_action`s, type-ahead options, `response_url`s).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from payload_shapes import (
    check_app_home_opened,
    check_block_actions,
    check_block_suggestion,
    check_event_callback,
    check_message_event,
    check_slash_command,
    check_view_submission,
)
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack import blocks
from workers.agents.ticket import details_request

pytestmark = pytest.mark.integration

IID = "qUiInterrupt01"
ALICE = "U0ALICE"


@pytest.fixture
def ws() -> Workspace:
    return Workspace()


@pytest.fixture
def stub() -> StubBot:
    return StubBot()


@pytest.fixture
def page(ws: Workspace, stub: StubBot) -> Iterator[httpx.Client]:
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, httpx.Client(base_url=server.url, timeout=10) as client:
            yield client


def question(ws: Workspace, external_threshold: int = blocks.EXTERNAL_SELECT_THRESHOLD) -> dict[str, Any]:
    root = ws.post_message("C0GENERAL", "started")
    request = details_request("Login")
    body = blocks.question_blocks(request, IID, assignees=[ALICE], external_threshold=external_threshold)
    return ws.post_message("C0GENERAL", "Question", body, thread_ts=root["ts"])


def test_the_page_and_its_scripts_are_served(page: httpx.Client) -> None:
    html = page.get("/").text
    assert 'data-testid="composer-input"' in html and "/static/app.js" in html
    for name in ("app.js", "blocks.js", "mrkdwn.js", "pickers.js", "richtext.js", "surfaces.js", "app.css"):
        assert page.get(f"/static/{name}").status_code == 200
    assert page.post("/api/auth.test", headers={"Authorization": "Bearer xoxb-x"}).json()["ok"] is True


def test_slash_command_ack_becomes_an_ephemeral_message(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    stub.replies.append((200, {"response_type": "ephemeral", "text": "*Parley agents*"}))
    result = page.post("/ui/message", json={"user": ALICE, "channel": "C0GENERAL", "text": "/parley help"}).json()
    assert result["ok"] is True
    sent = stub.last()
    assert check_slash_command(sent) == [] and (sent["command"], sent["text"]) == ("/parley", "help")
    assert [e["text"] for e in ws.ephemerals(ALICE, "C0GENERAL")] == ["*Parley agents*"]
    assert ws.messages("C0GENERAL") == []  # an ephemeral reply does not echo the command
    assert ws.claim_trigger(sent["trigger_id"]) == ALICE


def test_a_failed_slash_command_reads_like_slacks_error(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    stub.replies.append((500, ""))
    result = page.post("/ui/message", json={"user": ALICE, "channel": "C0GENERAL", "text": "/parley x"}).json()
    assert (result["ok"], result["status"]) == (False, 500)
    assert ws.ephemerals(ALICE)[0]["text"] == '/parley failed with the error "dispatch_failed"'
    page.post("/ui/message", json={"user": ALICE, "channel": "C0GENERAL", "text": "/deploy now"})
    assert "is not a valid command" in ws.ephemerals(ALICE)[-1]["text"]
    assert len(stub.received) == 1


def test_thread_reply_is_posted_and_sent_as_a_message_event(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    q = question(ws)
    data = {"user": "U0BOB", "channel": "C0GENERAL", "text": "the second one", "thread_ts": q["thread_ts"]}
    result = page.post("/ui/message", json=data).json()
    envelope = stub.last()
    assert check_event_callback(envelope) == [] and check_message_event(envelope["event"], reply=True) == []
    assert envelope["event"]["ts"] == result["ts"] and ws.thread("C0GENERAL", q["thread_ts"])[-1]["user"] == "U0BOB"
    page.post("/ui/message", json={**data, "text": "/parley ticket x"})
    assert ws.ephemerals("U0BOB")[-1]["text"] == "`/parley` is not supported in threads. Sorry!"
    assert len(stub.received) == 1


def test_submit_click_and_response_url(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    q = question(ws)
    answers = {f"q|{IID}|1|description": {"answer": "It broke\ntwice"}, f"q|{IID}|1|severity": {"answer": "sev1"}}
    surface = {"kind": "message", "channel": "C0GENERAL", "ts": q["ts"]}
    data = {"user": ALICE, "surface": surface, "block_id": f"qa|{IID}|1", "action_id": "parley_submit"}
    assert page.post("/ui/action", json={**data, "inputs": answers}).json()["ok"] is True
    payload = stub.last()
    assert check_block_actions(payload) == []
    values = payload["state"]["values"]
    assert values[f"q|{IID}|1|description"]["answer"]["value"] == "It broke\ntwice"
    assert values[f"q|{IID}|1|severity"]["answer"]["selected_option"]["value"] == "sev1"
    hook = payload["response_url"]
    assert httpx.post(hook, json={"replace_original": True, "text": "Locked", "blocks": []}).text == "ok"
    assert ws.message("C0GENERAL", q["ts"])["text"] == "Locked"
    assert httpx.post(hook, json={"text": "only you"}).status_code == 200
    assert ws.ephemerals(ALICE)[-1]["thread_ts"] == q["thread_ts"]
    for _ in range(3):
        httpx.post(hook, json={"text": "again"})
    assert httpx.post(hook, json={"text": "sixth"}).text == "used_url"
    gone = page.post("/ui/action", json={**data, "surface": {**surface, "ts": "1.000001"}})
    assert gone.status_code == 404


def test_type_ahead_returns_the_bots_options(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    q = question(ws, external_threshold=3)
    options = [{"text": {"type": "plain_text", "text": "High"}, "value": "sev2"}]
    stub.replies.append((200, {"options": options}))
    surface = {"kind": "message", "channel": "C0GENERAL", "ts": q["ts"]}
    data = {"user": ALICE, "surface": surface, "block_id": f"q|{IID}|1|severity", "action_id": "answer", "value": "hi"}
    result = page.post("/ui/suggest", json=data).json()
    assert result["options"] == options
    assert check_block_suggestion(stub.last()) == [] and stub.last()["value"] == "hi"


def test_modal_errors_update_and_close(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    view = ws.open_view(ALICE, blocks.modal_view(details_request("Login"), IID))
    field_id = f"f|{IID}|description"
    stub.replies.append((200, {"response_action": "errors", "errors": {field_id: "Too short"}}))
    data = {"user": ALICE, "view_id": view["id"], "inputs": {field_id: {"answer": "x"}}}
    result = page.post("/ui/view/submit", json=data).json()
    assert result["errors"] == {field_id: "Too short"} and ws.view(view["id"]) is not None
    assert check_view_submission(stub.last()) == []
    notice = {"type": "modal", "title": {"type": "plain_text", "text": "Thanks"},
              "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Saved"}}]}  # fmt: skip
    stub.replies.append((200, {"response_action": "update", "view": notice}))
    assert page.post("/ui/view/submit", json=data).json()["ok"] is True
    updated = ws.open_views(ALICE)
    assert [v["title"]["text"] for v in updated] == ["Thanks"] and updated[0]["id"] == view["id"]
    stub.replies.append((200, ""))
    page.post("/ui/view/submit", json=data)
    assert ws.open_views(ALICE) == []
    assert page.post("/ui/view/submit", json=data).status_code == 404


def test_home_opened_and_live_state(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    assert page.post("/ui/home", json={"user": ALICE}).json()["ok"] is True
    assert check_app_home_opened(stub.last()["event"]) == []
    first = page.get("/ui/state", params={"user": ALICE}).json()
    assert [c["name"] for c in first["channels"]] == ["general", "ops"]
    assert any(u["is_admin"] and u["id"] == ALICE for u in first["users"])
    assert first["deliveries"][-1]["kind"] == "app_home_opened"
    timer = threading.Timer(0.3, lambda: ws.post_message("C0OPS", "hello"))
    timer.start()
    later = page.get("/ui/state", params={"user": ALICE, "since": first["events"]}).json()
    timer.join()
    assert later["events"] > first["events"] and later["messages"]["C0OPS"][0]["text"] == "hello"


def test_only_this_machine_may_drive_the_page(page: httpx.Client, ws: Workspace, stub: StubBot) -> None:
    """No cross-site write (a form or text/plain needs no preflight) and no DNS rebinding (a foreign Host)."""
    port = page.base_url.port
    command = {"user": ALICE, "channel": "C0GENERAL", "text": "/parley ticket from elsewhere"}
    as_text = page.post("/ui/message", content=json.dumps(command), headers={"Content-Type": "text/plain"})
    assert as_text.status_code == 415
    as_form = page.post("/ui/message", data={"text": "/parley ticket x"})
    assert as_form.status_code == 415
    foreign = page.post("/ui/message", json=command, headers={"Origin": "http://evil.example.com"})
    assert foreign.status_code == 403
    other_port = page.post("/ui/home", json={"user": ALICE}, headers={"Origin": f"http://127.0.0.1:{port + 1}"})
    assert other_port.status_code == 403
    assert stub.received == [] and ws.ephemerals(ALICE) == [] and ws.messages("C0GENERAL") == []
    rebound = page.get("/ui/state", headers={"Host": f"evil.example.com:{port}"})
    assert rebound.status_code == 400 and "C0GENERAL" not in rebound.text
    for host in ("127.0.0.1", "localhost", "[::1]"):
        assert page.get("/ui/state", headers={"Host": f"{host}:{port}"}).status_code == 200
    stub.replies.append((200, {"response_type": "ephemeral", "text": "ok"}))
    same = page.post(
        "/ui/message", json=command, headers={"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"}
    )
    assert same.json()["ok"] is True and len(stub.received) == 1  # the page's own origin
