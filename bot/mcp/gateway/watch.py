"""Noticing an upstream went away, so the gateway stops listing it and reconnects.

`watched` wraps a transport of the SDK's client. When the upstream closes its end, the event
`gone` is set. A stdio server that exited is an example. Nothing else about the stream changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.client._transport import Transport, TransportStreams


class _Watched:
    """A transport's read stream that sets `gone` when the upstream closes it."""

    def __init__(self, inner: Any, gone: anyio.Event) -> None:
        self._inner = inner
        self._gone = gone

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._gone.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def watched(transport: Transport, gone: anyio.Event) -> AsyncIterator[TransportStreams]:
    """`transport`'s streams, with `gone` set once the upstream has closed its side."""
    async with transport as (read, write):
        yield _Watched(read, gone), write
