"""Stop signals that come fast, as from a supervisor, systemd or a held Ctrl-C, always stop.

A Python signal handler runs between two bytecodes of the main thread, even inside another call
of itself. One that takes a lock can wait for the thread it interrupted, for ever.
`parley worker` did, setting a `threading.Event` from its SIGTERM and SIGINT handlers: a storm
of both hung it in about three tries of ten here. Its handlers now set a plain flag (`StopFlag`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from terminal_support import parley_command, parley_env

from parley.stop_flag import StopFlag

TRIES = 10
STORM = 3000  # signals from each of two senders, SIGTERM and SIGINT in turn


def storm(pid: int) -> list[subprocess.Popen[bytes]]:
    """Two processes sending `pid` SIGTERM and SIGINT in turn, as fast as they can."""
    code = (
        "import os, signal, sys\n"
        f"for n in range({STORM}):\n"
        "    try:\n"
        f"        os.kill({pid}, signal.SIGINT if n % 2 else signal.SIGTERM)\n"
        "    except ProcessLookupError:\n"
        "        sys.exit(0)\n"
    )
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]


@pytest.mark.system
def test_a_worker_stops_under_a_storm_of_stop_signals(redis_url: str, tmp_path: Path) -> None:
    for n in range(TRIES):
        log = tmp_path / f"worker-{n}.log"
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [*parley_command(), "worker", "--name", f"storm-{os.getpid()}-{n}"],
                env={**parley_env(redis_url, tmp_path / f"data-{n}"), "PARLEY_LOG_LEVEL": "INFO"},
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while "worker starting" not in log.read_text(errors="replace"):
                assert worker.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.05)
            time.sleep(0.3)  # into RQ's wait for a job
            for sender in storm(worker.pid):
                sender.wait(60)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                pytest.fail(f"try {n + 1}: the worker did not stop\n{log.read_text(errors='replace')[-3000:]}")
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(10)


@pytest.mark.unit
def test_the_flag_set_by_a_signal_wakes_its_waiter() -> None:
    flag = StopFlag()
    assert flag.wait(0.1) is False and not flag.is_set()
    previous = signal.signal(signal.SIGUSR1, flag.set)
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        started = time.monotonic()
        assert flag.wait(30) is True
        assert time.monotonic() - started < 10
        assert flag.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)
