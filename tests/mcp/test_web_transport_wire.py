"""The Web API client reads every response form HTTP/1.1 allows, as urllib did, and sends no forged header.

Parley's transport parses responses with httptools instead of http.client. A real server on
127.0.0.1 answers each request with the raw bytes a test sets (chunked, `Connection: close`, a
body that ends with the connection, a broken status line), and records the client port each
request came from: one port for several calls is one connection.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from http_servers import serving

from bot.slack.transport import KeepAliveWebClient, media_type

pytestmark = pytest.mark.integration

BOT = "xoxb-wire"


class _Raw(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    seen: list[tuple[int, dict[str, str]]] = []  # (client port, JSON arguments)
    response = b""
    close = False

    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        _Raw.seen.append((self.client_address[1], args))
        self.wfile.write(_Raw.response)
        self.wfile.flush()
        self.close_connection = _Raw.close

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def raw() -> Iterator[str]:
    _Raw.seen, _Raw.response, _Raw.close = [], b"", False
    with serving(_Raw) as port:
        yield f"http://127.0.0.1:{port}/api/"


def _ok(ts: str) -> bytes:
    return json.dumps({"ok": True, "channel": "C0GENERAL", "ts": ts}).encode()


def _ports() -> set[int]:
    return {port for port, _ in _Raw.seen}


def test_a_chunked_response_is_read_whole_and_the_connection_kept(raw: str) -> None:
    body = _ok("1.000100")
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:]))
    _Raw.response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\n"
        b"transfer-encoding: chunked\r\nx-slack-req-id: req-1\r\n\r\n" + chunks + b"0\r\n\r\n"
    )
    client = KeepAliveWebClient(token=BOT, base_url=raw)
    first = client.chat_postMessage(channel="C0GENERAL", text="one")
    second = client.chat_postMessage(channel="C0GENERAL", text="two")
    assert first["ts"] == second["ts"] == "1.000100"
    assert first.headers["x-slack-req-id"] == "req-1"  # the headers reach slack_sdk's response
    assert len(_Raw.seen) == 2 and len(_ports()) == 1


def test_a_response_that_says_connection_close_is_followed_by_a_new_connection(raw: str) -> None:
    body = _ok("2.000100")
    _Raw.response = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    _Raw.close = True
    client = KeepAliveWebClient(token=BOT, base_url=raw)
    for n in range(2):
        assert client.chat_postMessage(channel="C0GENERAL", text=f"n{n}")["ts"] == "2.000100"
    assert len(_Raw.seen) == 2 and len(_ports()) == 2  # each sent once, on a connection of its own


def test_a_body_without_a_length_ends_with_the_connection(raw: str) -> None:
    _Raw.response = b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + _ok("3.000100")
    _Raw.close = True
    client = KeepAliveWebClient(token=BOT, base_url=raw)
    assert client.chat_postMessage(channel="C0GENERAL", text="until close")["ts"] == "3.000100"


def test_a_broken_status_line_fails_the_call_and_drops_the_connection(raw: str) -> None:
    _Raw.response = b"HTTP/1.1 2OO OK\r\ncontent-length: 2\r\n\r\n{}"
    client = KeepAliveWebClient(token=BOT, base_url=raw)
    with pytest.raises(http.client.HTTPException):
        client.chat_postMessage(channel="C0GENERAL", text="broken")
    body = _ok("4.000100")
    _Raw.response = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    assert client.chat_postMessage(channel="C0GENERAL", text="next")["ts"] == "4.000100"
    assert len(_ports()) == 2  # the broken exchange's connection was not used again


def test_a_header_value_that_would_split_the_request_is_refused_before_sending(raw: str) -> None:
    _Raw.response = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    client = KeepAliveWebClient(token="xoxb-a\r\nX-Injected: 1", base_url=raw)
    with pytest.raises(ValueError, match="invalid header"):
        client.chat_postMessage(channel="C0GENERAL", text="forged")
    assert _Raw.seen == []


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "application/json",
        'text/plain; Charset="ISO-8859-1"',
        "Application/GZIP",
        "application/json;charset=UTF-8; foo=bar",
        "text/html; foo=bar; charset=latin-1",
    ],
)
def test_the_media_type_and_charset_are_read_as_email_reads_them(content_type: str) -> None:
    message = http.client.HTTPMessage()
    message["Content-Type"] = content_type
    assert media_type(content_type) == (message.get_content_type(), message.get_content_charset() or "")
