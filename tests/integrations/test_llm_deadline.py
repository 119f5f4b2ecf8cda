"""A call's deadline shuts that call's sockets and never the next call's.

The client keeps connections in a pool, so one call's connection is the next call's. A timer that
fires as its call ends must not shut it under the next one. Each test fires the timer by hand, so
nothing here waits on time.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workers.llm import deadline
from workers.llm.deadline import CallDeadline

pytestmark = pytest.mark.unit

OPENED = "connection.connect_tcp.complete"


class Stream:
    """A network stream as httpcore's trace names it: its socket, and nothing else."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None


class HeldTimer:
    """A timer that never starts: the test fires it."""

    made: list[HeldTimer] = []

    def __init__(self, seconds: float, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.fire = lambda: fn(*args)
        self.daemon = False
        HeldTimer.made.append(self)

    def start(self) -> None:
        pass

    def cancel(self) -> None:
        pass  # as `threading.Timer.cancel` on a timer already firing: no effect


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> list[HeldTimer]:
    HeldTimer.made = []
    monkeypatch.setattr(deadline.threading, "Timer", HeldTimer)
    return HeldTimer.made


@pytest.fixture
def pooled() -> Iterator[tuple[Stream, socket.socket]]:
    """A connection the client keeps between calls, and the server's end of it."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        yield Stream(ours), theirs


def usable(stream: Stream, server: socket.socket) -> bool:
    """Whether the connection still carries a byte from the server."""
    try:
        server.sendall(b"x")
    except OSError:  # shut: the server's write fails
        return False
    return bool(stream.sock.recv(1))


def test_a_timer_firing_in_time_shuts_its_calls_connection(
    timers: list[HeldTimer], pooled: tuple[Stream, socket.socket]
) -> None:
    stream, server = pooled
    cut = CallDeadline()
    with cut.running(30) as passed:
        cut.extensions["trace"](OPENED, {"return_value": stream})
        timers[0].fire()
        assert passed()
        assert not usable(stream, server)


def test_a_timer_firing_as_its_call_ends_leaves_the_pooled_connection_to_the_next_call(
    timers: list[HeldTimer], pooled: tuple[Stream, socket.socket]
) -> None:
    stream, server = pooled
    cut = CallDeadline()
    with cut.running(30):
        cut.extensions["trace"](OPENED, {"return_value": stream})
    timers[0].fire()  # late: its call is over, the connection back in the pool
    with cut.running(30) as passed:
        timers[0].fire()  # later still, with the next call under way
        assert not passed()
        assert usable(stream, server)


def test_no_call_ends_while_a_timer_is_shutting_its_sockets(
    timers: list[HeldTimer], pooled: tuple[Stream, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    stream, _ = pooled
    cut = CallDeadline()
    ending_blocked: list[bool] = []

    def shut(stream: Any) -> None:
        free = cut._lock.acquire(blocking=False)  # what ending the call takes first
        if free:
            cut._lock.release()
        ending_blocked.append(not free)

    monkeypatch.setattr(deadline, "_shut", shut)
    with cut.running(30):
        cut.extensions["trace"](OPENED, {"return_value": stream})
        timers[0].fire()
    assert ending_blocked == [True]
