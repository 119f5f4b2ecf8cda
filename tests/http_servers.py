"""Real servers on 127.0.0.1 for tests: a handler class served from a thread (over TLS when given a
certificate), and a receiver that never answers."""

from __future__ import annotations

import selectors
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], tls: tuple[Path, Path] | None = None) -> Iterator[int]:
    """Serve `handler` on a free loopback port until the block ends; yields the port.

    `tls` is a (certificate, key) pair: the server then speaks only TLS.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class BlackHole:
    """A receiver that accepts every connection, reads what is sent and never answers."""

    port: int = 0
    accepted: int = 0
    open: int = 0  # connections the client has not closed yet
    peak: int = 0  # the most open at once
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, listener: socket.socket, stop: threading.Event) -> None:
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        while not stop.is_set():
            for key, _ in selector.select(timeout=0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is listener:
                    conn, _ = listener.accept()
                    selector.register(conn, selectors.EVENT_READ)
                    with self._lock:
                        self.accepted += 1
                        self.open += 1
                        self.peak = max(self.peak, self.open)
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:  # the client gave up
                    selector.unregister(sock)
                    sock.close()
                    with self._lock:
                        self.open -= 1
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]


@contextmanager
def black_hole() -> Iterator[BlackHole]:
    """A loopback TCP server that accepts and never answers (a stuck webhook receiver); yields its counts."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    hole = BlackHole(port=listener.getsockname()[1])
    stop = threading.Event()
    thread = threading.Thread(target=hole.serve, args=(listener, stop), daemon=True)
    thread.start()
    try:
        yield hole
    finally:
        stop.set()
        thread.join(5)
