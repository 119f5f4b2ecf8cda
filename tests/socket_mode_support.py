"""A loopback Socket Mode server speaking Slack's protocol, for tests of the bot over Socket Mode.

The stand-in's `apps.connections.open` hands the bot the `ws://` URL of this server (set
`Workspace.socket_mode_url` to `SocketModeServer.url`). It greets each connection with `hello`,
then delivers envelopes the way Slack does (`slash_commands`, `interactive`) and records every
ack the bot sends back by its `envelope_id`.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

from bot.playground.workspace import APP_ID


class SocketModeServer:
    """One Socket Mode endpoint: greets each connection, sends queued envelopes, records every ack."""

    def __init__(self) -> None:
        self.outbox: queue.Queue[str] = queue.Queue()
        self.acks: list[dict[str, Any]] = []
        self.connections = 0
        self.connected = threading.Event()
        self._lock = threading.Lock()
        self._server: Server = serve(self._handle, "127.0.0.1", 0)
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="socket-mode", daemon=True)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}&app_id={APP_ID}"

    def start(self) -> SocketModeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(5)

    def _handle(self, conn: ServerConnection) -> None:
        with self._lock:
            self.connections += 1
        conn.send(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "debug_info": {"host": "applink-test", "build_number": 1, "approximate_connection_time": 18060},
                    "connection_info": {"app_id": APP_ID},
                }
            )
        )
        self.connected.set()
        while True:
            try:
                while not self.outbox.empty():
                    conn.send(self.outbox.get_nowait())
                raw = conn.recv(timeout=0.02)
            except TimeoutError:
                continue
            except (ConnectionClosed, queue.Empty):
                return
            message = json.loads(raw)
            with self._lock:
                self.acks.append(message)

    def deliver(self, kind: str, payload: dict[str, Any], *, accepts_response_payload: bool) -> str:
        """Queue one envelope for the connected bot; returns its envelope_id."""
        envelope_id = str(uuid.uuid4())
        self.outbox.put(
            json.dumps(
                {
                    "envelope_id": envelope_id,
                    "payload": payload,
                    "type": kind,
                    "accepts_response_payload": accepts_response_payload,
                    "retry_attempt": 0,
                    "retry_reason": "",
                }
            )
        )
        return envelope_id

    def ack_for(self, envelope_id: str, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = [a for a in self.acks if a.get("envelope_id") == envelope_id]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no ack for envelope {envelope_id}; acks so far: {self.acks}")

    def acks_for(self, envelope_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [a for a in self.acks if a.get("envelope_id") == envelope_id]
