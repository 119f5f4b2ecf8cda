"""How long an upstream may take over one call, and how durations are said.

Each call to an upstream runs under a deadline, the upstream's `timeout` in the rules file.
People answering that upstream's elicitation do not use the upstream's time. While one is asked,
the deadlines of the upstream's calls stand still. They then run on from where they stopped.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import anyio


def human(seconds: float) -> str:
    """`seconds` as people say it: 900 → "15 minutes", 3600 → "1 hour"."""
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g} seconds"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if whole >= size and whole % size == 0:
            count = whole // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{whole} seconds"


class Clock:
    """The deadlines of one upstream's calls, stopped while people answer its elicitations."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._left: dict[anyio.CancelScope, float] = {}
        self._held = 0

    @contextlib.contextmanager
    def deadline(self) -> Iterator[anyio.CancelScope]:
        """A scope cancelled once the call ran `seconds` of the upstream's own time."""
        scope = anyio.CancelScope()
        self._left[scope] = self.seconds
        if not self._held:
            scope.deadline = anyio.current_time() + self.seconds
        try:
            with scope:
                yield scope
        finally:
            self._left.pop(scope, None)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within this block people are asked: no deadline of this upstream runs."""
        if not self._held:
            now = anyio.current_time()
            for scope in self._left:
                self._left[scope] = max(scope.deadline - now, 0.0)
                scope.deadline = math.inf
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                now = anyio.current_time()
                for scope, left in self._left.items():
                    scope.deadline = now + left
