"""Child processes that end when their parent dies, by Linux's parent-death signal.

RQ forks its scheduler from the worker and never checks that the worker is still there. A
worker killed outright (the OOM killer, `kill -9` on its pid) left its scheduler running for
good, holding the scheduler lock and a Redis connection. The child takes SIGTERM's default
action until it installs its own: the worker's handler it inherits sets a flag nobody reads.
`parley dev` and `parley up` give their children the same signal (`parley.supervisor`).
Elsewhere than Linux nothing changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1

# The threads inside `forks_die_with_parent`, by ident, with their process's pid. Per thread:
# the webhooks' workers run RQ's upkeep in threads of their own, beside the main one.
_forking: dict[int, int] = {}


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `sig` to this process when the thread that forked it ends."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def _after_fork_in_child() -> None:
    parent = _forking.get(threading.get_ident(), 0)  # the child's one thread is the one that forked
    _forking.clear()
    if not parent:
        return
    # The child inherits the worker's SIGTERM handler, which only sets the worker's stop flag.
    # Until the child installs its own (RQ's scheduler does), SIGTERM must end it.
    with contextlib.suppress(ValueError):  # a child forked by a thread other than the main one
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def forks_die_with_parent() -> Iterator[None]:
    """Processes `os.fork`ed inside this block get SIGTERM when the forking thread ends."""
    _forking[threading.get_ident()] = os.getpid()
    try:
        yield
    finally:
        _forking.pop(threading.get_ident(), None)
