"""The SDK's `EventStore` over a Redis event log: an MCP session's SSE events, kept for resuming.

Over streamable HTTP, a tool call's response is an SSE stream. It may stay open up to `MAX_WAIT`
seconds while `ask_human` waits. The SDK's transport stores each event it sends through an
`EventStore`. The priming event comes first, with its id and `retry`. A client whose stream
drops reconnects with `GET` and `Last-Event-ID`. It is sent what it missed, then the rest as it
comes, the answer included.

The SDK names a stream by its request's id, which every session numbers from the start. So the
store is scoped to a session (`for_session`). An event id names only a stream of that session.
Events are the messages' JSON, never pickled, read back through the SDK's JSON-RPC model. The
logs are bounded in length and time (`Logs`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Protocol

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter
from pydantic import ValidationError

from workers.logs import Log

log = Log("parley.mcp")


def _encode(stream_id: StreamId) -> str:
    return base64.urlsafe_b64encode(stream_id.encode()).decode().rstrip("=")


def _decode(text: str) -> StreamId:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


class Logs(Protocol):
    """Ordered, bounded event streams by session: the store's event logs, from `parley serve`."""

    async def append(self, session: str, stream: str, data: str) -> str: ...

    async def after(self, session: str, stream: str, entry: str) -> list[tuple[str, str]] | None: ...


class RedisEventStore:
    """The events of every MCP session of one server.

    `for_session` is one session's `EventStore`.
    """

    def __init__(self, logs: Logs) -> None:
        self.logs = logs

    def for_session(self, session_id: str) -> SessionEvents:
        return SessionEvents(self.logs, session_id)


class SessionEvents(EventStore):
    """One MCP session's streams.

    An event id is `<entry id>.<stream id, base64url>`. That is safe in an SSE `id:` line. It names
    a stream of this session only. The session is the transport's, never the client's.
    """

    def __init__(self, logs: Logs, session_id: str) -> None:
        self.logs = logs
        self.session_id = session_id

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        data = "" if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        entry = await self.logs.append(self.session_id, stream_id, data)
        return f"{entry}.{_encode(stream_id)}"

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the events after `last_event_id` in its stream.

        Returns None, sending nothing, for an id this session did not give. Likewise if its stream
        expired, or was trimmed past it.
        """
        entry, _, encoded = last_event_id.partition(".")
        try:
            stream_id = _decode(encoded)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            stream_id = None
        missed = None if stream_id is None else await self.logs.after(self.session_id, stream_id, entry)
        if stream_id is None or missed is None:
            log.info("MCP stream resumed after an event not kept", session=self.session_id)
            return None
        for entry_id, data in missed:
            if not data:
                continue  # a priming event: a cursor, nothing to send
            try:
                message = jsonrpc_message_adapter.validate_json(data, by_name=False)
            except ValidationError:
                log.warning("MCP event not JSON-RPC; skipped", session=self.session_id)
                continue
            await send_callback(EventMessage(message, f"{entry_id}.{encoded}"))
        return stream_id
