"""The Slack Web API stand-in, driven over real HTTP by slack_sdk's WebClient.

These tests pin the wire format the bot and workers rely on when they run
against the playground instead of slack.com: response shapes, Slack's error
codes, Block Kit limits, and the fault injection the resilience tests use.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry import RateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator

from bot.playground import LoopbackServer, Workspace, make_webapi_app, validate_blocks
from bot.playground.workspace import CALL_LOG_LIMIT

pytestmark = pytest.mark.integration


@pytest.fixture
def ws() -> Workspace:
    return Workspace()


@pytest.fixture
def server(ws: Workspace) -> Iterator[LoopbackServer]:
    with LoopbackServer(make_webapi_app(ws)) as srv:
        yield srv


@pytest.fixture
def client(server: LoopbackServer) -> WebClient:
    return WebClient(token="xoxb-test", base_url=server.url + "/api/", timeout=5)


def section(text: str, block_id: str | None = None) -> dict:
    block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    if block_id:
        block["block_id"] = block_id
    return block


def slack_error(call) -> SlackApiError:
    with pytest.raises(SlackApiError) as info:
        call()
    return info.value


def test_auth_test_identifies_the_bot_and_logs_the_call(client: WebClient, ws: Workspace) -> None:
    resp = client.auth_test()
    assert resp["ok"] is True
    assert (resp["team_id"], resp["user_id"], resp["bot_id"]) == ("T0PARLEY", "U0PARLEYBOT", "B0PARLEYBOT")
    assert resp.headers["x-slack-req-id"]
    [call] = ws.calls("auth.test")
    assert call["token"] == "xoxb-test" and call["status"] == 200 and call["at"] > 0


def test_post_message_shape_and_thread(client: WebClient, ws: Workspace) -> None:
    root = client.chat_postMessage(channel="C0GENERAL", text="job started", blocks=[section("*job 1*")])
    assert root["ok"] and root["channel"] == "C0GENERAL"
    assert root["message"]["ts"] == root["ts"] and root["message"]["bot_id"] == "B0PARLEYBOT"
    assert root["message"]["blocks"] == [section("*job 1*")]

    reply = client.chat_postMessage(channel="C0GENERAL", thread_ts=root["ts"], text="question?")
    assert reply["message"]["thread_ts"] == root["ts"]
    assert float(reply["ts"]) > float(root["ts"])
    thread = ws.thread("C0GENERAL", root["ts"])
    assert [m["text"] for m in thread] == ["job started", "question?"]
    assert thread[0]["reply_count"] == 1
    assert len(ws.messages("C0GENERAL")) == 2
    assert ws.calls("chat.postMessage")[0]["args"]["blocks"] == [section("*job 1*")]


def test_form_encoded_blocks_are_json_decoded(client: WebClient, ws: Workspace) -> None:
    params = {"channel": "C0OPS", "text": "fallback", "blocks": json.dumps([section("form")])}
    resp = client.api_call("chat.postMessage", params=params)
    assert resp["message"]["blocks"] == [section("form")]
    assert ws.messages("C0OPS")[0]["blocks"] == [section("form")]


def test_chat_update_shape_and_missing_message(client: WebClient, ws: Workspace) -> None:
    ts = client.chat_postMessage(channel="C0OPS", text="v1", blocks=[section("v1")])["ts"]
    resp = client.chat_update(channel="C0OPS", ts=ts, text="v2")
    assert (resp["ok"], resp["channel"], resp["ts"], resp["text"]) == (True, "C0OPS", ts, "v2")
    assert resp["message"]["blocks"] == [section("v1")]  # blocks omitted: kept, as on Slack
    assert ws.messages("C0OPS")[0]["text"] == "v2"

    err = slack_error(lambda: client.chat_update(channel="C0OPS", ts="1.000001", text="nope"))
    assert err.response.status_code == 200 and err.response["error"] == "message_not_found"


def test_post_ephemeral_and_permalink(client: WebClient, ws: Workspace) -> None:
    resp = client.chat_postEphemeral(channel="C0GENERAL", user="U0BOB", text="only you")
    assert resp["ok"] and resp["message_ts"]
    assert [m["text"] for m in ws.ephemerals("U0BOB")] == ["only you"]
    assert ws.ephemerals("U0ALICE") == [] and ws.messages("C0GENERAL") == []

    root = client.chat_postMessage(channel="C0GENERAL", text="root")["ts"]
    reply = client.chat_postMessage(channel="C0GENERAL", text="reply", thread_ts=root)["ts"]
    link = client.chat_getPermalink(channel="C0GENERAL", message_ts=root)
    assert link["channel"] == "C0GENERAL"
    assert link["permalink"].endswith(f"/archives/C0GENERAL/p{root.replace('.', '')}")
    thread_link = client.chat_getPermalink(channel="C0GENERAL", message_ts=reply)["permalink"]
    assert f"p{reply.replace('.', '')}?thread_ts={root}" in thread_link


def test_views_open_update_and_publish(client: WebClient, ws: Workspace) -> None:
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Answer"}, "blocks": [section("Q")]}
    trigger = ws.issue_trigger("U0CAROL")
    opened = client.views_open(trigger_id=trigger, view=modal)["view"]
    assert opened["id"].startswith("V") and opened["type"] == "modal" and opened["state"] == {"values": {}}
    assert [v["id"] for v in ws.open_views("U0CAROL")] == [opened["id"]]
    assert slack_error(lambda: client.views_open(trigger_id=trigger, view=modal)).response["error"] == (
        "trigger_exchanged"
    )

    updated = client.views_update(view_id=opened["id"], view={**modal, "blocks": [section("Q2")]})["view"]
    assert updated["id"] == opened["id"] and updated["blocks"] == [section("Q2")]
    assert ws.open_views("U0CAROL")[0]["blocks"] == [section("Q2")]

    home = client.views_publish(user_id="U0ALICE", view={"type": "home", "blocks": [section("paused jobs")]})
    assert home["view"]["type"] == "home" and home["view"]["id"].startswith("V")
    assert ws.home("U0ALICE")["blocks"] == [section("paused jobs")]
    assert ws.home("U0BOB") is None


def test_users_info(client: WebClient) -> None:
    alice = client.users_info(user="U0ALICE")["user"]
    assert (alice["id"], alice["name"], alice["is_admin"]) == ("U0ALICE", "alice", True)
    assert client.users_info(user="U0BOB")["user"]["is_admin"] is False
    assert slack_error(lambda: client.users_info(user="U0NOBODY")).response["error"] == "user_not_found"


def test_apps_connections_open_needs_an_app_token(server: LoopbackServer, client: WebClient, ws: Workspace) -> None:
    ws.socket_mode_url = "ws://127.0.0.1:9/link"
    app_client = WebClient(token="xapp-1-test", base_url=server.url + "/api/")
    assert app_client.apps_connections_open(app_token="xapp-1-test")["url"] == "ws://127.0.0.1:9/link"
    err = slack_error(lambda: client.apps_connections_open(app_token="xoxb-test"))
    assert err.response["error"] == "not_allowed_token_type"


def test_invalid_blocks_over_the_message_limit(client: WebClient, ws: Workspace) -> None:
    blocks = [section(f"b{i}") for i in range(51)]
    err = slack_error(lambda: client.chat_postMessage(channel="C0GENERAL", text="t", blocks=blocks))
    assert err.response.status_code == 200
    assert err.response["error"] == "invalid_blocks" and err.response["errors"]
    assert ws.messages("C0GENERAL") == []
    assert client.chat_postMessage(channel="C0GENERAL", text="t", blocks=blocks[:50])["ok"]


@pytest.mark.parametrize(("text", "value"), [("x" * 76, "v"), ("ok", "v" * 151)], ids=["text76", "value151"])
def test_invalid_blocks_for_static_select_option_limits(client: WebClient, ws: Workspace, text, value) -> None:
    option = {"text": {"type": "plain_text", "text": text}, "value": value}
    select = {"type": "static_select", "action_id": "answer", "options": [option]}
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Pick"}, "accessory": select}]
    err = slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="t", blocks=blocks))
    assert err.response["error"] == "invalid_blocks"
    assert "/blocks/0/accessory/options/0/" in err.response["errors"][0]
    assert ws.messages("C0OPS") == []


def test_lengths_are_counted_in_utf16_units_and_a_message_over_12000_is_too_long(
    client: WebClient, ws: Workspace
) -> None:
    header = {"type": "header", "text": {"type": "plain_text", "text": "🚀" * 76}}  # 76 characters, 152 units
    err = slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="t", blocks=[header]))
    assert err.response["error"] == "invalid_blocks" and "over 150 UTF-16 code units" in err.response["errors"][0]
    option = {"text": {"type": "plain_text", "text": "🚀" * 38}, "value": "v"}  # 38 characters, 76 units
    select = {"type": "static_select", "action_id": "answer", "options": [option]}
    picker = {"type": "section", "text": {"type": "mrkdwn", "text": "Pick"}, "accessory": select}
    assert (
        slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="t", blocks=[picker])).response["error"]
        == "invalid_blocks"
    )
    wordy = [section("🚀" * 1500) for _ in range(5)]  # 7,500 characters, 15,000 units
    err = slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="t", blocks=wordy))
    assert err.response["error"] == "msg_blocks_too_long"
    assert ws.messages("C0OPS") == []


def test_views_open_refuses_a_modal_over_the_view_budget(client: WebClient, ws: Workspace) -> None:
    """Slack fails a large view without an error; the stand-in refuses one over Parley's budget."""
    options = [{"text": {"type": "plain_text", "text": f"{k:03d} " + "o" * 71}, "value": f"v{k}"} for k in range(100)]
    select = {"type": "static_select", "action_id": "answer", "options": options}
    inputs = [
        {"type": "input", "block_id": f"b{n}", "label": {"type": "plain_text", "text": "Pick"}, "element": select}
        for n in range(2)
    ]
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Answer"}, "blocks": inputs}
    err = slack_error(lambda: client.views_open(trigger_id=ws.issue_trigger("U0CAROL"), view=modal))
    assert err.response["error"] == "invalid_blocks"
    assert "a modal keeps within" in " ".join(err.response["response_metadata"]["messages"])
    assert ws.open_views("U0CAROL") == []
    opened = client.views_open(trigger_id=ws.issue_trigger("U0CAROL"), view={**modal, "blocks": inputs[:1]})
    assert opened["ok"] and [v["id"] for v in ws.open_views("U0CAROL")] == [opened["view"]["id"]]


def test_block_validation_catches_what_slack_rejects() -> None:
    assert validate_blocks([section("a", "q1"), section("b", "q1")])  # duplicate block_id
    assert validate_blocks([{"type": "no_such_block"}])
    assert validate_blocks([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}])
    assert validate_blocks([section("v")] * 100, limit=100) == []
    assert validate_blocks([section("v")] * 101, limit=100)


def test_auth_and_method_errors(server: LoopbackServer, client: WebClient, ws: Workspace) -> None:
    anonymous = WebClient(token=None, base_url=server.url + "/api/")
    assert slack_error(lambda: anonymous.chat_postMessage(channel="C0OPS", text="x")).response["error"] == "not_authed"
    bogus = WebClient(token="bogus", base_url=server.url + "/api/")
    assert slack_error(bogus.auth_test).response["error"] == "invalid_auth"
    err = slack_error(lambda: client.api_call("chat.nonsense"))
    assert (err.response.status_code, err.response["error"]) == (200, "unknown_method")
    assert slack_error(lambda: client.chat_postMessage(channel="C0NOPE", text="x")).response["error"] == (
        "channel_not_found"
    )
    with pytest.warns(UserWarning, match="text"):  # slack_sdk warns before sending; the server must still refuse
        assert slack_error(lambda: client.chat_postMessage(channel="C0OPS")).response["error"] == "no_text"
    assert ws.messages("C0OPS") == []
    assert [c["error"] for c in ws.calls()] == [
        "not_authed",
        "invalid_auth",
        "unknown_method",
        "channel_not_found",
        "no_text",
    ]


def test_rate_limit_fault_without_retry_handler(client: WebClient, ws: Workspace) -> None:
    ws.faults.fail_next("chat.postMessage", status=429, retry_after=1)
    err = slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="x"))
    assert err.response.status_code == 429 and err.response["error"] == "ratelimited"
    assert err.response.headers["Retry-After"] in ("1", ["1"])
    assert ws.messages("C0OPS") == []
    assert [c["status"] for c in ws.calls("chat.postMessage")] == [429]


def test_rate_limit_is_retried_and_posts_exactly_once(client: WebClient, ws: Workspace) -> None:
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=2))
    ws.faults.fail_next("chat.postMessage", status=429, retry_after=0, times=2)
    resp = client.chat_postMessage(channel="C0GENERAL", text="once")
    assert resp["ok"]
    assert [m["text"] for m in ws.messages("C0GENERAL")] == ["once"]
    assert [c["status"] for c in ws.calls("chat.postMessage")] == [429, 429, 200]


def test_server_error_fault(client: WebClient, ws: Workspace) -> None:
    ws.faults.fail_next("chat.postMessage", status=500)
    err = slack_error(lambda: client.chat_postMessage(channel="C0OPS", text="x"))
    assert err.response.status_code == 500
    assert ws.messages("C0OPS") == []

    ws.faults.fail_next("chat.postMessage", status=500)
    client.retry_handlers.append(
        ServerErrorRetryHandler(max_retry_count=1, interval_calculator=FixedValueRetryIntervalCalculator(0.01))
    )
    assert client.chat_postMessage(channel="C0OPS", text="y")["ok"]
    assert [m["text"] for m in ws.messages("C0OPS")] == ["y"]
    assert [c["status"] for c in ws.calls("chat.postMessage")] == [500, 500, 200]


def test_delay_fault_holds_the_call(client: WebClient, ws: Workspace) -> None:
    ws.faults.delay_next("auth.test", 0.3)
    started = time.monotonic()
    assert client.auth_test()["ok"]
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    client.auth_test()
    assert time.monotonic() - started < 0.3


def test_events_counter_wakes_waiters(client: WebClient, ws: Workspace) -> None:
    seen: list[int] = []
    before = ws.events
    waiter = threading.Thread(target=lambda: seen.append(ws.wait_for_change(before, timeout=5)))
    waiter.start()
    client.chat_postMessage(channel="C0OPS", text="wake")
    waiter.join(5)
    assert seen and seen[0] > before


def test_ts_values_are_unique_and_increasing(ws: Workspace) -> None:
    stamps = [ws.next_ts() for _ in range(1000)]
    assert len(set(stamps)) == 1000
    assert all(len(s.split(".")[1]) == 6 for s in stamps)
    assert [float(s) for s in stamps] == sorted(float(s) for s in stamps)


def test_call_log_keeps_the_newest_calls() -> None:
    """A playground left running must not grow with every call: the log is bounded."""
    small = Workspace(call_log_limit=3)
    with LoopbackServer(make_webapi_app(small)) as srv:
        bounded = WebClient(token="xoxb-test", base_url=srv.url + "/api/", timeout=5)
        for n in range(5):
            bounded.chat_postMessage(channel="C0GENERAL", text=f"message {n}")
        bounded.auth_test()
    assert [c["args"].get("text") for c in small.calls()] == ["message 3", "message 4", None]
    assert len(small.messages("C0GENERAL")) == 5  # the workspace's state is not the log's to drop


def test_default_call_log_is_bounded_and_none_keeps_all() -> None:
    default, whole = Workspace(), Workspace(call_log_limit=None)
    for n in range(CALL_LOG_LIMIT + 2):
        for ws in (default, whole):
            ws.record_call("auth.test", {"n": n}, "xoxb-test", 200)
    assert len(default.calls()) == CALL_LOG_LIMIT and default.calls()[0]["args"] == {"n": 2}
    assert len(whole.calls()) == CALL_LOG_LIMIT + 2
    with pytest.raises(ValueError, match="call_log_limit"):
        Workspace(call_log_limit=0)


def test_messages_are_found_by_ts_after_a_long_history(client: WebClient, ws: Workspace) -> None:
    """Threading under, updating and deleting a message work the same with a long channel history."""
    first = client.chat_postMessage(channel="C0GENERAL", text="first")["ts"]
    for n in range(300):
        client.chat_postMessage(channel="C0GENERAL", text=f"filler {n}")
    reply = client.chat_postMessage(channel="C0GENERAL", text="reply", thread_ts=first)["message"]
    assert reply["thread_ts"] == first and reply["parent_user_id"] == ws.bot_user_id
    assert ws.message("C0GENERAL", first)["reply_count"] == 1
    assert client.chat_update(channel="C0GENERAL", ts=first, text="edited")["text"] == "edited"
    assert ws.delete_message("C0GENERAL", first) is True
    assert ws.message("C0GENERAL", first) is None and ws.delete_message("C0GENERAL", first) is False
    assert (
        slack_error(lambda: client.chat_update(channel="C0GENERAL", ts=first, text="again")).response["error"]
        == "message_not_found"
    )
    assert ws.message("C0OPS", reply["ts"]) is None  # a ts is looked up in its own channel only
