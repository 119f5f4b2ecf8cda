"""One deadline for a whole call on a synchronous httpx client: connecting, headers and body.

httpx's timeouts bound each network operation, not a call, and its synchronous client has no total
deadline. So a server sending its answer a byte at a time, each byte within the read timeout, holds
a call far past it: in its headers as much as in its body. Webhooks run httpx's async client under
`asyncio.timeout` instead. The model client stays synchronous: agents call it from any thread, even
one running an event loop, and callers may give it their own synchronous transport.

So a timer ends the call. httpcore's `trace` request extension names each connection as it opens.
At the deadline the timer shuts those sockets both ways. A thread blocked reading one then sees the
end of input at once, and the call fails. Closing a socket would not wake it; shutting it does.
"""

from __future__ import annotations

import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

_OPENED = (".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")
"""The trace events whose return value is a newly opened network stream."""


class CallDeadline:
    """Ends each call one client makes once its time is up, by shutting the client's sockets.

    One per client, and the client makes one call at a time, as `ChatClient` does. Pass `extensions`
    with every request, so each connection the client opens is known here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: weakref.WeakSet[Any] = weakref.WeakSet()
        self._call = 0  # changes as each call begins and ends: a timer of another number is late
        self._passed = False

    @property
    def extensions(self) -> dict[str, Any]:
        """Request extensions telling this deadline of every connection the request opens."""
        return {"trace": self._trace}

    @contextmanager
    def running(self, seconds: float) -> Iterator[Callable[[], bool]]:
        """Bound the block to `seconds`; yields a test saying whether the deadline has passed.

        Past it, the call's sockets are shut and its next read fails. The caller reports that as
        its timeout.
        """
        with self._lock:
            self._call += 1
            self._passed = False
            call = self._call
        timer = threading.Timer(seconds, self._cut, args=(call,))
        timer.daemon = True
        timer.start()
        try:
            yield lambda: self._passed
        finally:
            timer.cancel()  # does not stop a cut already running
            with self._lock:  # waits for a cut shutting sockets; a later one finds its call over
                self._call += 1

    def _cut(self, call: int) -> None:
        """Shut the sockets of `call`, unless it is over.

        The sockets are shut under the lock, so the call cannot end meanwhile. A timer firing as
        its call ends never shuts a pooled connection the next call uses.
        """
        with self._lock:
            if call != self._call:  # a late timer of a call already over
                return
            self._passed = True
            for stream in list(self._streams):
                _shut(stream)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        stream = info.get("return_value") if event.endswith(_OPENED) else None
        if stream is None:
            return
        with self._lock:
            self._streams.add(stream)
            passed = self._passed
        if passed:  # opened after the deadline: the call ends here
            _shut(stream)


def _shut(stream: Any) -> None:
    """Shut the stream's socket both ways; its owner still closes it."""
    sock = stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with suppress(OSError):  # closed already, or never connected
            sock.shutdown(socket.SHUT_RDWR)
