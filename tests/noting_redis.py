"""A real `redis.Redis` that also notes each command it sends, so a test can say which reads and
writes a path made. Nothing is replaced: every command still goes to the test Redis."""

from __future__ import annotations

import threading
from typing import Any

import redis


class NotingRedis(redis.Redis):
    """A Redis client that keeps the commands it sent (name and arguments, as text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[list[str]] = []
        self.threads: list[str] = []  # the thread that sent each command in `sent`
        self._lock = threading.Lock()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        with self._lock:
            self.sent.append([a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in args])
            self.threads.append(threading.current_thread().name)
        return super().execute_command(*args, **options)

    def sent_from(self, thread: str) -> list[list[str]]:
        """The commands `thread` sent (the test's own worker, say, not a background thread)."""
        with self._lock:
            return [c for c, t in zip(self.sent, self.threads, strict=True) if t == thread]

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()
            self.threads.clear()
