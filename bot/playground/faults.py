"""Fault injection for the Web API stand-in: queued failures and delays per method."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fault:
    """What the Web API must do instead of, before, or after serving one call."""

    status: int = 200
    error: str | None = None
    retry_after: int | None = None
    delay: float = 0.0
    hold: float = 0.0
    """Seconds the response is held after the call was served: done at Slack, unknown to a client that gave up."""
    messages: tuple[str, ...] = ()
    """Slack's `response_metadata.messages` sent with the error, e.g. `("[ERROR] must be ...",)`."""

    @property
    def fails(self) -> bool:
        """True when the call must be answered with an error, not served."""
        return self.status != 200 or self.error is not None


class FaultPlan:
    """Queued failures and delays, consumed one call at a time per method.

    Rules apply in the order they were queued. ``method="*"`` matches any method.
    """

    def __init__(self) -> None:
        self._rules: list[list[Any]] = []  # [method, Fault, remaining]
        self._lock = threading.Lock()

    def fail_next(
        self,
        method: str,
        status: int = 429,
        retry_after: int | None = 1,
        times: int = 1,
        error: str | None = None,
        messages: tuple[str, ...] = (),
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with ``status``.

        429 responses carry ``Retry-After`` and ``ratelimited``. Other statuses default to
        ``internal_error``. ``status=200`` with ``error`` injects a Slack-level error such as
        ``channel_not_found``. Given ``messages``, it is its ``response_metadata.messages``.
        """
        error = error or ("ratelimited" if status == 429 else "internal_error")
        fault = Fault(status, error, retry_after if status == 429 else None, messages=tuple(messages))
        with self._lock:
            self._rules.append([method, fault, times])

    def delay_next(self, method: str, seconds: float, times: int = 1) -> None:
        """Hold the next ``times`` calls of ``method`` for ``seconds``, then serve normally."""
        with self._lock:
            self._rules.append([method, Fault(delay=seconds), times])

    def hold_next(self, method: str, seconds: float, times: int = 1) -> None:
        """Serve the next ``times`` calls of ``method``, holding each response ``seconds``.

        A client with a shorter timeout gives up on a call whose effect happened. That is like a process
        dying inside the call, or the network dropping the reply.
        """
        with self._lock:
            self._rules.append([method, Fault(hold=seconds), times])

    def take(self, method: str) -> Fault | None:
        """Consume one use of the first rule matching ``method``, returning any fault."""
        with self._lock:
            for i, rule in enumerate(self._rules):
                if rule[0] in (method, "*"):
                    rule[2] -= 1
                    if rule[2] <= 0:
                        del self._rules[i]
                    return rule[1]
        return None

    def pending(self) -> int:
        """How many calls the queued rules are still waiting for."""
        with self._lock:
            return sum(rule[2] for rule in self._rules)

    def clear(self) -> None:
        """Drop every pending rule."""
        with self._lock:
            self._rules.clear()
