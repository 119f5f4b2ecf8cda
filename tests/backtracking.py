"""Patterns that backtrack for ages in Python's `re`, and a deadline that fails a test instead of hanging.

`within_deadline` runs a check in the test's own (main) thread under a timer: Python's `re`
checks for signals while it backtracks, so the timer's handler stops even a match that holds
the GIL, and an event loop blocked by one (the gateway's, run in the test's thread) too.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest

BACKTRACKING = [r"(a|a)*b", r"((a+))+b", r"(a?){28}a{28}", r"(.*a){12}b"]
"""Exponential in `re` on forty a's; none has the nested-repeat shape a blocklist looked for."""
FORTY = "a" * 40
DEADLINE = 10.0
"""Generous: RE2 decides in well under a millisecond, the old matcher in astronomically long."""


class Backtracking(Exception):
    """Raised in the test's thread when a check runs past `DEADLINE`."""


def _expired(signum: int, frame: Any) -> None:
    raise Backtracking(f"still matching after {DEADLINE} s")


def within_deadline(fn: Callable[[], Any]) -> tuple[str, Any]:
    """`fn()`'s outcome: ("ok", value) or ("raised", its message); the test fails past `DEADLINE`."""
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE)
    try:
        return ("ok", fn())
    except Backtracking:
        pytest.fail(f"still matching after {DEADLINE} s: the match backtracks")
    except Exception as exc:  # the outcome under test may be a refusal
        return ("raised", f"{type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
