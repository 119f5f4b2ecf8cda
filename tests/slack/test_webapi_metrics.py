"""Web API attempts counted by method and outcome: Parley's own client against the loopback stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY
from slack_sdk.errors import SlackApiError

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.slack.client import make_web_client
from workers import metrics

pytestmark = pytest.mark.integration

BOT = "xoxb-playground"


def count(method: str, outcome: str) -> float:
    found = REGISTRY.get_sample_value("parley_slack_api_calls_total", {"method": method, "outcome": outcome})
    return found or 0.0


@pytest.fixture()
def ws() -> Workspace:
    return Workspace()


@pytest.fixture()
def server(ws: Workspace) -> Iterator[LoopbackServer]:
    with LoopbackServer(make_webapi_app(ws)) as srv:
        yield srv


def test_a_429_then_success_is_two_attempts(server: LoopbackServer, ws: Workspace) -> None:
    client = make_web_client(BOT, server.url + "/api/")
    before = {o: count("chat.postMessage", o) for o in metrics.SLACK_OUTCOMES}
    ws.faults.fail_next("chat.postMessage", status=429, retry_after=0)
    client.chat_postMessage(channel="C0GENERAL", text="hello")
    after = {o: count("chat.postMessage", o) - before[o] for o in metrics.SLACK_OUTCOMES}
    assert after == {**dict.fromkeys(metrics.SLACK_OUTCOMES, 0.0), "rate_limited": 1.0, "ok": 1.0}


def test_slack_errors_and_server_errors_are_told_apart(server: LoopbackServer, ws: Workspace) -> None:
    client = make_web_client(BOT, server.url + "/api/")
    errors, server_errors = count("chat.update", "error"), count("chat.update", "server_error")
    ws.faults.fail_next("chat.update", status=200, error="message_not_found")
    with pytest.raises(SlackApiError):
        client.chat_update(channel="C0GENERAL", ts="1.0", text="x")
    ws.faults.fail_next("chat.update", status=500, times=3)  # the first try and both retries
    with pytest.raises(SlackApiError):
        client.chat_update(channel="C0GENERAL", ts="1.0", text="x")
    assert count("chat.update", "error") - errors == 1
    assert count("chat.update", "server_error") - server_errors == 3


def test_a_dropped_connection_is_counted_per_attempt() -> None:
    with LoopbackServer(make_webapi_app(Workspace())) as gone:
        url = gone.url + "/api/"
    client = make_web_client(BOT, url, timeout=2)
    before = count("auth.test", "connection_error")
    with pytest.raises(Exception):  # noqa: B017 - urllib's URLError, whatever its subclass
        client.auth_test()
    assert count("auth.test", "connection_error") - before == 3  # the first try and two retries
