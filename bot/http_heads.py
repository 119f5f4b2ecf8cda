"""Request heads: read under a size cap and a deadline, as bodies are (`body_limits`).

uvicorn's httptools protocol keeps a head of any size, and waits for it without end. A
connection that sends nothing was held for good, and so was one sending a header line every
few seconds. Ten megabytes of headers were read and kept too. So a client with no token could
hold every file descriptor `parley serve` has. uvicorn has no setting for either: its
`h11_max_incomplete_event_size` caps only the pure-Python parser, and neither has a deadline.
`HeadLimits` is its httptools protocol with both added. A head still not complete after
`HEAD_MAX` bytes gets 431, and one not complete within `HEAD_DEADLINE` seconds gets 408. Both
close the connection. Bytes are counted per read: a head may pass the cap by one (256 KiB). The
clock starts at the connection, or at the first read that leaves a head incomplete on a kept
one. Between requests uvicorn's own keep-alive timeout applies, so a head one read completes
costs no timer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_MAX = 64 * 1024
"""Bytes a request's line and headers may take; Slack's and browsers' take a few kilobytes."""
HEAD_DEADLINE = 10.0
"""Seconds from a connection, or from a kept one's first byte of a head, to the head's end."""

log = logging.getLogger(__name__)


class HeadLimits(HttpToolsProtocol):
    """uvicorn's httptools protocol, with each request head capped and read under a deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_bytes = 0
        self.heads = 0
        self.awaiting_head = True
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_timer = self.loop.call_later(HEAD_DEADLINE, self._head_late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_clock()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        heads, counting = self.heads, self.awaiting_head
        super().data_received(data)
        if not counting or self.heads != heads or not self.awaiting_head or self.transport.is_closing():
            return  # a body was read, or a head ended: what follows is a body or the next head's start
        self.head_bytes += len(data)
        if self.head_bytes > HEAD_MAX:
            self._refuse(431, "Request Header Fields Too Large", f"headers over {HEAD_MAX} bytes")
        elif self.head_timer is None:  # only a head one read did not complete is timed
            self.head_timer = self.loop.call_later(HEAD_DEADLINE, self._head_late)

    def on_headers_complete(self) -> None:
        self.heads += 1
        self.awaiting_head = False
        self._stop_clock()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.awaiting_head, self.head_bytes = True, 0

    def _stop_clock(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _answering(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _head_late(self) -> None:
        self.head_timer = None
        if self.awaiting_head and not self._answering() and not self.transport.is_closing():
            self._refuse(408, "Request Timeout", f"headers not complete within {HEAD_DEADLINE:g} s")
        # while an answer is still being sent, uvicorn's keep-alive timeout follows it

    def _refuse(self, status: int, phrase: str, detail: str) -> None:
        """Answer `status` in plain text and close; the app never saw this request.

        A head sent while an earlier request is still being answered only closes the connection.
        """
        self._stop_clock()
        self.awaiting_head = False
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "unknown"
        log.debug("request refused before the app: %s", detail, extra={"client": client, "status": status})
        if not self._answering():
            body = detail.encode()
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, phrase.encode(), len(body), body)
            )
        self.transport.close()
