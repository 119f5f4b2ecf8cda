"""A `WebClient` that keeps its HTTP connections open between calls.

slack_sdk's synchronous client sends every call through `urllib.request.urlopen`, which opens
a new connection each time: against Slack, a TCP and TLS handshake per `chat.postMessage`.
A full cycle makes four calls from one worker, so the handshakes were a large share of its
CPU. slack_sdk has no keep-alive option for its sync client, and its `AsyncWebClient` would
bring an event loop into RQ's synchronous jobs. So this class replaces only the one method
that sends a request: building the request, the retry handlers (429s, 5xx, dropped
connections), error handling and parsing all stay slack_sdk's.
"""

from __future__ import annotations

import http.client
import io
import os
import select
import threading
import time
import urllib.request
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.errors import SlackRequestError

Origin = tuple[str, str, int]


class _Connections(threading.local):
    """This thread's open connections, by origin; dropped in a forked child (the parent owns the sockets)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.by_origin: dict[Origin, http.client.HTTPConnection] = {}
        self.used_at: dict[Origin, float] = {}  # monotonic time each connection last finished a call


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle connection has been closed by the server (it is readable: EOF or stray bytes).

    Checked before reuse, as urllib3 does, so a request is never sent on a connection the
    server has already given up: that request would fail after it was written. A close that
    crosses the request on the wire still fails it; slack_sdk's `ConnectionErrorRetryHandler`
    then retries, as it did for urllib.
    """
    sock = conn.sock
    if sock is None:
        return False  # not connected yet: http.client connects on the next request
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class KeepAliveWebClient(WebClient):
    """slack_sdk's `WebClient`, reusing one connection per thread and origin (scheme, host, port).

    Per thread because bolt and the after-ack pool call from many threads, and one HTTP/1.1
    connection carries one request at a time. A connection idle for longer than `idle_max`
    seconds is replaced rather than reused: a firewall or NAT on the way may have forgotten it
    without a word, and a request sent on it would wait out the whole timeout. With a proxy
    configured, slack_sdk's own transport is used unchanged.
    """

    idle_max = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections = _Connections()

    def _connection(self, origin: Origin) -> http.client.HTTPConnection:
        pool = self._connections
        if pool.pid != os.getpid():
            pool.pid, pool.by_origin, pool.used_at = os.getpid(), {}, {}
        https = origin[0] == "https"
        conn = pool.by_origin.get(origin)
        idle = time.monotonic() - pool.used_at.get(origin, 0.0)
        if conn is not None and (idle > self.idle_max or _closed_by_peer(conn)):
            conn.close()
            conn = None
        if conn is None:
            if https:
                # context None: http.client's default, verifying certificates, as urlopen's
                conn = http.client.HTTPSConnection(origin[1], origin[2], timeout=self.timeout, context=self.ssl)
            else:
                conn = http.client.HTTPConnection(origin[1], origin[2], timeout=self.timeout)
            pool.by_origin[origin] = conn
        return conn

    def _perform_urllib_http_request_internal(self, url: str, req: urllib.request.Request) -> dict[str, Any]:
        """Send `req` on this thread's connection to its origin; the same result and errors as urllib's.

        A status outside 2xx raises `HTTPError` and a failure to connect or send `URLError`, as
        urllib's opener does, so slack_sdk's retry handlers see a 429, a 503 or a refused
        connection exactly as before. A failed exchange closes the connection.
        """
        if self.proxy is not None:
            return super()._perform_urllib_http_request_internal(url, req)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise SlackRequestError(f"Invalid URL detected: {url}")
        origin = (parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        conn = self._connection(origin)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = {**dict(req.header_items()), "Connection": "keep-alive"}
        try:
            try:
                conn.request("POST", target or "/", body=req.data, headers=headers)
            except OSError as err:  # connecting or sending: urllib wraps these, and the retry handler expects it
                raise URLError(err) from err
            resp = conn.getresponse()
            body = resp.read()
        except BaseException:
            conn.close()
            raise
        self._connections.used_at[origin] = time.monotonic()
        if not 200 <= resp.status < 300:
            raise HTTPError(url, resp.status, resp.reason, resp.headers, io.BytesIO(body))
        if resp.headers.get_content_type() == "application/gzip":  # admin.analytics.getFile
            return {"status": resp.status, "headers": resp.headers, "body": body}
        charset = resp.headers.get_content_charset() or "utf-8"
        return {"status": resp.status, "headers": resp.headers, "body": body.decode(charset)}
