"""A `WebClient` that keeps its HTTP connections open between calls.

slack_sdk's synchronous client sends every call through `urllib.request.urlopen`. That opens a
new connection each time. Against Slack, that is a TCP and TLS handshake per `chat.postMessage`.
A full cycle makes four calls from one worker. So the handshakes were a large share of its CPU.
slack_sdk has no keep-alive option for its sync client. Its `AsyncWebClient` would bring an
event loop into RQ's synchronous jobs. So this class replaces only the one method that sends a
request. The rest stays slack_sdk's: building the request, the retry handlers, error handling
and parsing. The retry handlers cover 429s, 5xx and dropped connections.

The exchange itself is written here rather than on `http.client`. http.client parses every
response's headers with the `email` package. That was about a third of a kept-alive call's CPU,
since Slack answers with some twenty headers. httptools parses the response instead: llhttp, the
parser `parley serve` already runs on. The headers reach slack_sdk as the same
`http.client.HTTPMessage` urllib gives it.
"""

from __future__ import annotations

import http.client
import io
import os
import select
import socket
import ssl
import threading
import time
import urllib.request
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit

import httptools
from slack_sdk import WebClient
from slack_sdk.errors import SlackRequestError

from workers.logs import redacted

Origin = tuple[str, str, int]
_ILLEGAL = ("\r", "\n", "\0")  # in a header name or value they would split the request (header injection)


def media_type(content_type: str) -> tuple[str, str]:
    """A Content-Type's lower-case media type and charset, as `email` reads them.

    Either is `""` when not given.
    """
    kind, *params = content_type.split(";")
    charset = ""
    for param in params:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip('"').lower()
    return kind.strip().lower(), charset


class _Reply:
    """One response as httptools reads it: status, reason, headers and body."""

    def __init__(self) -> None:
        self.reason = b""
        self.headers = http.client.HTTPMessage()
        self.chunks: list[bytes] = []
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.status = 0
        self.content_type = ""  # its raw value, kept as it passes: HTTPMessage's own lookup and parse cost more
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)

    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        text = value.decode("latin-1")
        self.headers[name.decode("latin-1")] = text
        if name.lower() == b"content-type":
            self.content_type = text

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code() if self.parser else 0

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = bool(self.parser and self.parser.should_keep_alive())  # the parser resets after this

    @property
    def until_close(self) -> bool:
        """A body with neither length nor chunks, ending when the server closes."""
        chunked = "chunked" in (self.headers.get("transfer-encoding") or "").lower()
        return self.headers_done and not chunked and self.headers.get("content-length") is None


class _Connection:
    """One HTTP/1.1 connection to an origin, carrying one request at a time."""

    def __init__(self, origin: Origin, timeout: float, context: ssl.SSLContext | None) -> None:
        self.origin, self.timeout, self.context = origin, timeout, context
        self.sock: socket.socket | None = None
        scheme, host, port = origin
        name = f"[{host}]" if ":" in host else host
        self.host_header = name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send(self, target: str, headers: dict[str, str], body: bytes) -> None:
        """Connect if needed, and send the request in one write.

        Raises `OSError` when either fails.
        """
        lines = [f"POST {target} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity"]
        for name, value in headers.items():
            if any(c in name or c in str(value) for c in _ILLEGAL):
                raise ValueError(f"invalid header {name!r}")
            lines.append(f"{name}: {value}")
        lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if self.sock is None:
            sock = socket.create_connection(self.origin[1:], timeout=self.timeout)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self.context is not None:
                    sock = self.context.wrap_socket(sock, server_hostname=self.origin[1])
            except BaseException:  # a refused certificate, say: the socket is not left open behind it
                sock.close()
                raise
            self.sock = sock
        self.sock.sendall(head + body)

    def receive(self) -> _Reply:
        """The response to the request sent (`keep_alive`: whether the connection stays open)."""
        assert self.sock is not None
        reply = _Reply()
        try:
            while not reply.complete:
                data = self.sock.recv(65536)
                if not data:
                    if reply.until_close:
                        return reply
                    if not reply.headers_done:  # as http.client: slack_sdk's retry handler knows this one
                        raise http.client.RemoteDisconnected("Remote end closed connection without response")
                    raise http.client.IncompleteRead(b"".join(reply.chunks))
                try:
                    reply.parser.feed_data(data)  # type: ignore[union-attr]
                except httptools.HttpParserError as exc:
                    raise http.client.BadStatusLine(str(exc)) from exc
            return reply
        finally:
            reply.parser = None  # the parser holds the reply: no cycle left for the collector


class _Connections(threading.local):
    """This thread's open connections by origin, dropped in a forked child.

    The parent owns the sockets.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.by_origin: dict[Origin, _Connection] = {}
        self.used_at: dict[Origin, float] = {}  # monotonic time each connection last finished a call


def _closed_by_peer(conn: _Connection) -> bool:
    """Whether the server closed an idle connection: it is readable, with EOF or stray bytes.

    It is checked before reuse, as urllib3 does. So a request is never sent on a connection the
    server has given up. That request would fail after it was written. A close that crosses the
    request on the wire still fails it. slack_sdk's `ConnectionErrorRetryHandler` then retries, as
    it did for urllib.
    """
    sock = conn.sock
    if sock is None:
        return False  # not connected yet: it connects on the next request
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class KeepAliveWebClient(WebClient):
    """slack_sdk's `WebClient`, reusing one connection per thread and origin.

    An origin is scheme, host and port. Per thread, since bolt and the after-ack pool call from many
    threads. And one HTTP/1.1 connection carries one request at a time. A connection idle over
    `idle_max` seconds is replaced, not reused. A firewall or NAT on the way may have silently
    forgotten it. A request sent on it would then wait out the whole timeout. With a proxy
    configured, slack_sdk's own transport is used unchanged.
    """

    idle_max = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections = _Connections()
        self._default_context: ssl.SSLContext | None = None

    def _tls(self) -> ssl.SSLContext:
        """The client's `ssl` context, or urllib's default one.

        The default verifies certificates against the system's authorities, or `SSL_CERT_FILE`'s. It is
        made once, not per connection.
        """
        if self.ssl is not None:
            return self.ssl
        if self._default_context is None:
            context = ssl.create_default_context()
            context.set_alpn_protocols(["http/1.1"])  # as http.client offers it
            self._default_context = context
        return self._default_context

    def _connection(self, origin: Origin) -> _Connection:
        pool = self._connections
        if pool.pid != os.getpid():
            pool.pid, pool.by_origin, pool.used_at = os.getpid(), {}, {}
        conn = pool.by_origin.get(origin)
        idle = time.monotonic() - pool.used_at.get(origin, 0.0)
        if conn is not None and (idle > self.idle_max or _closed_by_peer(conn)):
            conn.close()
            conn = None
        if conn is None:
            conn = _Connection(origin, self.timeout, self._tls() if origin[0] == "https" else None)
            pool.by_origin[origin] = conn
        return conn

    def _perform_urllib_http_request_internal(self, url: str, req: urllib.request.Request) -> dict[str, Any]:
        """Send `req` on this thread's connection to its origin, as urllib would.

        The result and errors match urllib's. A status outside 2xx raises `HTTPError`. A failure to
        connect or send raises `URLError`, as urllib's opener does. So slack_sdk's retry handlers see a
        429, a 503 or a refused connection exactly as before. A failed exchange closes the connection.
        """
        if self.proxy is not None:
            return super()._perform_urllib_http_request_internal(url, req)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise SlackRequestError(f"Invalid URL detected: {redacted(url)}")
        origin = (parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        conn = self._connection(origin)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {**dict(req.header_items()), "Connection": "keep-alive"}
        headers.pop("Content-length", None)  # the exchange sets it from the body
        try:
            try:
                conn.send(target, headers, req.data or b"")  # type: ignore[arg-type]
            except OSError as err:  # connecting or sending: urllib wraps these, and the retry handler expects it
                raise URLError(err) from err
            reply = conn.receive()
        except BaseException:
            conn.close()
            raise
        if not reply.keep_alive:
            conn.close()
        status = reply.status
        self._connections.used_at[origin] = time.monotonic()
        body = b"".join(reply.chunks)
        if not 200 <= status < 300:
            reason = reply.reason.decode("latin-1")
            raise HTTPError(url, status, reason, reply.headers, io.BytesIO(body))
        kind, charset = media_type(reply.content_type)
        if kind == "application/gzip":  # admin.analytics.getFile
            return {"status": status, "headers": reply.headers, "body": body}
        return {"status": status, "headers": reply.headers, "body": body.decode(charset or "utf-8")}
