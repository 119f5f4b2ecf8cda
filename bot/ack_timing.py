"""Timing the answer path's ack: `parley_submit_ack_seconds{surface}` around each answer listener.

With `process_before_response=True`, an answer's listener runs to its end before bolt responds.
It decodes, validates, accepts, enqueues and calls `ack()`. So the listener's time is the time
from bolt handing it the verified request to the ack. Signature checking, body parsing and
listener matching come before, and are not in it. A decorator on the three listeners is used
rather than a global middleware. A bolt middleware runs on every request, costing each a round
of bolt's argument injection. And each listener already knows its surface.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from workers import metrics

SURFACES = ("submit", "choice", "form")
for _surface in SURFACES:
    metrics.SUBMIT_ACK.labels(surface=_surface)

Listener = TypeVar("Listener", bound=Callable[..., None])


def timed(surface: str) -> Callable[[Listener], Listener]:
    """Observe how long the decorated answer listener takes, under `surface`.

    `surface` is one of `SURFACES`.
    """
    if surface not in SURFACES:
        raise ValueError(f"unknown answer surface {surface!r}; one of {SURFACES}")
    histogram = metrics.SUBMIT_ACK.labels(surface=surface)

    def decorate(listener: Listener) -> Listener:
        @functools.wraps(listener)
        def timed_listener(*args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            try:
                listener(*args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - start)

        # bolt injects a listener's arguments by the names `inspect.getfullargspec` finds, which
        # does not follow `__wrapped__` but does read `__signature__`.
        timed_listener.__signature__ = inspect.signature(listener)  # type: ignore[attr-defined]
        timed_listener.surface = surface  # type: ignore[attr-defined]
        return timed_listener  # type: ignore[return-value]

    return decorate
