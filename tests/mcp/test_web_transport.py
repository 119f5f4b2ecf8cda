"""Parley's Web API client keeps its connection open between calls, and never sends on a dead one.

A real HTTP/1.1 server on 127.0.0.1 answers in the Web API's format and records, for each
request, the client port it came from: one port for several calls is one connection.
"""

from __future__ import annotations

import json
import multiprocessing
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from certificates import signed_certificate
from http_servers import serving
from prometheus_client import REGISTRY

from bot.slack.client import make_web_client
from bot.slack.transport import KeepAliveWebClient

pytestmark = pytest.mark.integration

BOT = "xoxb-transport"


class _WebApi(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections stay open unless a handler says otherwise
    disable_nagle_algorithm = True  # headers and body are written apart: as real servers, send each at once
    seen: list[tuple[int, str, dict[str, str]]] = []  # (client port, path, JSON arguments)
    close_after_each = False

    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))  # chat.* send JSON
        _WebApi.seen.append((self.client_address[1], self.path, args))
        body = json.dumps({"ok": True, "channel": args.get("channel", ""), "ts": f"{len(_WebApi.seen)}.000100"})
        self.send_response(200)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())
        # Like a server's idle timeout: the connection is dropped without a `Connection: close` first.
        self.close_connection = _WebApi.close_after_each

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webapi() -> Iterator[int]:
    _WebApi.seen, _WebApi.close_after_each = [], False
    with serving(_WebApi) as port:
        yield port


def _connection_errors() -> float:
    found = REGISTRY.get_sample_value(
        "parley_slack_api_calls_total", {"method": "chat.postMessage", "outcome": "connection_error"}
    )
    return found or 0.0


def test_calls_share_one_connection(webapi: int) -> None:
    client = make_web_client(BOT, f"http://127.0.0.1:{webapi}/api/")
    for n in range(3):
        assert client.chat_postMessage(channel="C0GENERAL", text=f"hello {n}")["ok"]
    ports = {port for port, _, _ in _WebApi.seen}
    assert [(path, args["text"]) for _, path, args in _WebApi.seen] == [
        ("/api/chat.postMessage", f"hello {n}") for n in range(3)
    ]
    assert len(ports) == 1


def test_a_connection_the_server_dropped_is_replaced_before_sending(webapi: int) -> None:
    client = make_web_client(BOT, f"http://127.0.0.1:{webapi}/api/")
    _WebApi.close_after_each = True
    errors = _connection_errors()
    for n in range(3):
        assert client.chat_postMessage(channel="C0GENERAL", text=f"hello {n}")["ok"]
        time.sleep(0.1)  # the server's close arrives, as an idle timeout's would, before the next call
    assert [args["text"] for _, _, args in _WebApi.seen] == ["hello 0", "hello 1", "hello 2"]  # each sent once
    assert len({port for port, _, _ in _WebApi.seen}) == 3
    assert _connection_errors() == errors  # no attempt was written to the closed connection and retried


def test_a_connection_idle_too_long_is_replaced(webapi: int) -> None:
    """A connection a NAT may have forgotten is not trusted: past `idle_max`, a new one is opened."""
    client = make_web_client(BOT, f"http://127.0.0.1:{webapi}/api/")
    client.idle_max = 0.2
    client.chat_postMessage(channel="C0GENERAL", text="first")
    client.chat_postMessage(channel="C0GENERAL", text="soon after")
    time.sleep(0.4)
    client.chat_postMessage(channel="C0GENERAL", text="after a pause")
    port_of = {args["text"]: port for port, _, args in _WebApi.seen}
    assert port_of["first"] == port_of["soon after"] != port_of["after a pause"]


def test_threads_do_not_share_a_connection(webapi: int) -> None:
    client = make_web_client(BOT, f"http://127.0.0.1:{webapi}/api/")
    client.chat_postMessage(channel="C0GENERAL", text="main")
    other = threading.Thread(target=lambda: client.chat_postMessage(channel="C0GENERAL", text="thread"))
    other.start()
    other.join(10)
    client.chat_postMessage(channel="C0GENERAL", text="main again")
    port_of = {args["text"]: port for port, _, args in _WebApi.seen}
    assert port_of["main"] == port_of["main again"] != port_of["thread"]


def _post_from_child(client: object, done: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    done.put(client.chat_postMessage(channel="C0GENERAL", text="child")["ok"])  # type: ignore[attr-defined]


def test_a_forked_process_opens_its_own_connection(webapi: int) -> None:
    """A forking worker's child must not write on the parent's socket: the two would interleave."""
    client = make_web_client(BOT, f"http://127.0.0.1:{webapi}/api/")
    client.chat_postMessage(channel="C0GENERAL", text="parent")
    fork = multiprocessing.get_context("fork")
    done = fork.Queue()
    child = fork.Process(target=_post_from_child, args=(client, done))
    child.start()
    assert done.get(timeout=10) is True
    child.join(10)
    client.chat_postMessage(channel="C0GENERAL", text="parent again")
    port_of = {args["text"]: port for port, _, args in _WebApi.seen}
    assert port_of["parent"] == port_of["parent again"] != port_of["child"]


@pytest.fixture
def tls_webapi(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    ca, cert, key = signed_certificate(tmp_path, "localhost")
    _WebApi.seen, _WebApi.close_after_each = [], False
    with serving(_WebApi, (cert, key)) as port:
        yield port, ca


def test_over_tls_the_certificate_is_verified_and_the_connection_kept(tls_webapi: tuple[int, Path]) -> None:
    port, ca = tls_webapi
    client = make_web_client(BOT, f"https://localhost:{port}/api/")
    client.ssl = ssl.create_default_context(cafile=str(ca))
    for n in range(2):
        assert client.chat_postMessage(channel="C0GENERAL", text=f"hello {n}")["ok"]
    assert len({p for p, _, _ in _WebApi.seen}) == 1
    untrusting = KeepAliveWebClient(token=BOT, base_url=f"https://localhost:{port}/api/")  # system CAs, no retries
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.chat_postMessage(channel="C0GENERAL", text="not sent")
    assert len(_WebApi.seen) == 2
