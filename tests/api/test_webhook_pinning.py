"""A webhook goes to the address its destination check vetted, not to a second lookup of its host.

A real HTTP server on 127.0.0.1 stands for the receiver. The callback URL names a host under
`.invalid`, which never resolves: the POST reaches the server only because it connects to the
pinned address, and the server still sees the URL's own host and path. Over TLS the server's
certificate, from a certificate authority made for the test, must match the URL's host.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest
from certificates import signed_certificate
from http_servers import serving

from workers.questions import webhook_client
from workers.questions.webhooks import AttemptTimedOut, post, tls_context

pytestmark = pytest.mark.integration


class _Receiver(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        _Receiver.seen.append((self.headers.get("host", ""), self.path, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[int]:
    _Receiver.seen = []
    with serving(_Receiver) as port:
        yield port


def test_the_post_goes_to_the_pinned_address_and_names_the_host(receiver: int) -> None:
    url = f"http://hooks.parley.invalid:{receiver}/in?x=1"
    resp = post(url, "127.0.0.1", content='{"ok":true}', headers={"content-type": "application/json"}, timeout=5)
    assert resp.status_code == 204
    assert _Receiver.seen == [(f"hooks.parley.invalid:{receiver}", "/in?x=1", b'{"ok":true}')]


def test_without_the_pinned_address_the_host_is_looked_up_again(receiver: int) -> None:
    with pytest.raises(httpx.ConnectError):  # what a delivery would do without pinning: a fresh lookup
        post(f"http://hooks.parley.invalid:{receiver}/in", None, content="{}", headers={}, timeout=5)
    assert _Receiver.seen == []


@pytest.fixture
def tls_receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The receiver over TLS, with a certificate for `tls.parley.invalid` only; clients trust its CA."""
    ca, cert, key = signed_certificate(tmp_path, "tls.parley.invalid")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # httpx reads it when a client is made
    _Receiver.seen = []
    with serving(_Receiver, (cert, key)) as port:
        yield port


def test_over_tls_the_certificate_is_checked_against_the_urls_host(tls_receiver: int) -> None:
    url = f"https://tls.parley.invalid:{tls_receiver}/in"
    resp = post(url, "127.0.0.1", content="{}", headers={}, timeout=5)
    assert resp.status_code == 204
    assert _Receiver.seen == [(f"tls.parley.invalid:{tls_receiver}", "/in", b"{}")]
    # Another name at the same address is refused by the certificate check, not sent.
    with pytest.raises(httpx.ConnectError, match="certificate"):
        post(f"https://other.parley.invalid:{tls_receiver}/in", "127.0.0.1", content="{}", headers={}, timeout=5)
    assert len(_Receiver.seen) == 1


class _Dripping(BaseHTTPRequestHandler):
    """Answers 200, one byte of the answer every 0.2 s: each read gets a byte, so only a deadline for
    the whole attempt ends it before the answer does (after about 8 s)."""

    ended: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-padding: " + b"." * 20 + b"\r\n\r\n"
        try:
            for byte in answer:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            _Dripping.ended.append("cut off")
            return
        _Dripping.ended.append("answered")

    def log_message(self, *args: object) -> None:
        pass


def test_an_attempt_has_one_deadline_for_all_of_it() -> None:
    _Dripping.ended = []
    with serving(_Dripping) as port:
        with pytest.raises(AttemptTimedOut, match="did not answer within 1 s"):
            post(f"http://hooks.parley.invalid:{port}/in", "127.0.0.1", content="{}", headers={}, timeout=1)
        deadline = time.monotonic() + 15
        while not _Dripping.ended and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _Dripping.ended == ["cut off"]  # the connection was closed before the answer was complete


class _KeepAlive(BaseHTTPRequestHandler):
    """Answers 204 over HTTP/1.1, keeping the connection; notes the client's port of each request."""

    protocol_version = "HTTP/1.1"
    ports: list[int] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        _KeepAlive.ports.append(self.client_address[1])
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_delivery_thread_keeps_its_connection_to_a_destination_and_a_client_per_name() -> None:
    _KeepAlive.ports = []
    with serving(_KeepAlive) as port:
        for _ in range(3):
            post(f"http://hooks.parley.invalid:{port}/in", "127.0.0.1", content="{}", headers={}, timeout=5)
        assert len(_KeepAlive.ports) == 3 and len(set(_KeepAlive.ports)) == 1  # one connection, kept
        post(f"http://other.parley.invalid:{port}/in", "127.0.0.1", content="{}", headers={}, timeout=5)
        assert len(set(_KeepAlive.ports)) == 1  # plain HTTP: the same address, the same connection

        context = tls_context()
        first = webhook_client.client("https://127.0.0.1:1", "a.parley.invalid", context)
        assert webhook_client.client("https://127.0.0.1:1", "a.parley.invalid", context) is first
        assert webhook_client.client("https://127.0.0.1:1", "b.parley.invalid", context) is not first
        for n in range(webhook_client.KEPT):
            webhook_client.client(f"https://127.0.0.1:{n + 2}", "", context)
        assert first.is_closed  # the least recently used, past the bound


class _Flooding(BaseHTTPRequestHandler):
    """Answers 200 with a 64 MiB body, noting how much of it the client took before closing."""

    protocol_version = "HTTP/1.1"
    size = 64 * 1024 * 1024
    sent: list[int] = []
    chunked = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        if _Flooding.chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(_Flooding.size))
        self.end_headers()
        chunk, sent = b"x" * 65536, 0
        try:
            while sent < _Flooding.size:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if _Flooding.chunked else chunk)
                sent += len(chunk)
            if _Flooding.chunked:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        _Flooding.sent.append(sent)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_receiver_answering_with_a_flood_is_read_only_to_a_small_cap(chunked: bool) -> None:
    """A receiver is the caller's: its answer's body is never needed, so it never fills the worker's memory."""
    _Flooding.sent, _Flooding.chunked = [], chunked
    with serving(_Flooding) as port:
        resp = post(f"http://flood.parley.invalid:{port}/in", "127.0.0.1", content="{}", headers={}, timeout=10)
        assert resp.status_code == 200  # delivered: the status is all an attempt reads
        deadline = time.monotonic() + 15
        while not _Flooding.sent and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _Flooding.sent and _Flooding.sent[0] < _Flooding.size // 4  # cut off: kernel buffers, not the body
