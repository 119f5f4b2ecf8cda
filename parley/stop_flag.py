"""A stop that a signal handler requests: a plain flag, never a lock.

A Python signal handler runs in the main thread, between two of its bytecodes. When signals
come fast, it even runs inside another call of itself. A handler that takes a lock can then
wait for the very thread it interrupted, for ever. `threading.Event.set` takes one: two stop
signals close together hung `parley worker` that way. This flag is an attribute only. Its
`wait` sleeps in short steps instead of on a condition.
"""

from __future__ import annotations

import time

POLL = 0.05
"""Seconds between two looks at the flag while waiting: a stop is seen this late at most."""


class StopFlag:
    """`threading.Event`'s `set`, `is_set` and `wait`, safe to set from a signal handler."""

    def __init__(self) -> None:
        self._requested = False

    def set(self, *_signal: object) -> None:
        """Request the stop. It also serves as a handler: `signal.signal(SIGTERM, flag.set)`."""
        self._requested = True

    def is_set(self) -> bool:
        return self._requested

    def wait(self, timeout: float) -> bool:
        """Sleep until the stop is requested or `timeout` seconds pass; whether it was requested."""
        deadline = time.monotonic() + timeout
        while not self._requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL, left))
        return True
