"""A real `redis.Redis` that also notes each command it sends, so a test can say which reads and
writes a path made, and in how many round trips. Nothing is replaced: every command still goes
to the test Redis."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis


def _text(args: Any) -> list[str]:
    """The arguments as Redis receives them (a `str` enum as its value, as redis-py sends it)."""
    return [
        a.decode(errors="replace") if isinstance(a, bytes) else str.__str__(a) if isinstance(a, str) else str(a)
        for a in args
    ]


class NotingRedis(redis.Redis):
    """A Redis client that keeps the commands it sent (name and arguments, as text).

    `sent` holds the commands sent one by one; `trips` holds every round trip, a single command
    or a whole pipeline, as the list of the commands it carried.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[list[str]] = []
        self.threads: list[str] = []  # the thread that sent each command in `sent`
        self.labels: list[str] = []  # what the sending thread was doing, as `during` named it
        self._doing = threading.local()
        self.trips: list[list[list[str]]] = []
        self.atomic: list[bool] = []  # for each trip in `trips`: sent as MULTI/EXEC
        self._lock = threading.Lock()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        with self._lock:
            self.sent.append(_text(args))
            self.threads.append(threading.current_thread().name)
            self.labels.append(getattr(self._doing, "label", ""))
            self.trips.append([_text(args)])
            self.atomic.append(False)
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> redis.client.Pipeline:
        return _NotingPipeline(self, transaction, shard_hint)

    def _note_trip(self, commands: list[list[str]], atomic: bool = False) -> None:
        with self._lock:
            self.trips.append(commands)
            self.atomic.append(atomic)

    def sent_from(self, thread: str) -> list[list[str]]:
        """The commands `thread` sent (the test's own worker, say, not a background thread)."""
        with self._lock:
            return [c for c, t in zip(self.sent, self.threads, strict=True) if t == thread]

    @contextmanager
    def during(self, label: str) -> Iterator[None]:
        """Label the commands this thread sends inside the block (one step of a longer path)."""
        before = getattr(self._doing, "label", "")
        self._doing.label = label
        try:
            yield
        finally:
            self._doing.label = before

    def sent_during(self, label: str) -> list[list[str]]:
        """The commands sent inside a `during(label)` block, by any thread."""
        with self._lock:
            return [c for c, lab in zip(self.sent, self.labels, strict=True) if lab == label]

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()
            self.threads.clear()
            self.labels.clear()
            self.trips.clear()
            self.atomic.clear()


class _NotingPipeline(redis.client.Pipeline):
    """A real pipeline that notes, when it is sent, the commands it carries as one round trip."""

    def __init__(self, owner: NotingRedis, transaction: bool, shard_hint: Any) -> None:
        super().__init__(owner.connection_pool, owner.response_callbacks, transaction, shard_hint)
        self._owner = owner

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        if self.command_stack:
            self._owner._note_trip([_text(args) for args, _ in self.command_stack], atomic=self.transaction)
        return super().execute(raise_on_error)
