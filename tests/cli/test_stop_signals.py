"""Stopping `parley worker`: by signals that come fast, or by killing it outright.

A Python signal handler runs between two bytecodes of the main thread, even inside another call
of itself. One that takes a lock can wait for the thread it interrupted, for ever.
`parley worker` did, setting a `threading.Event` from its SIGTERM and SIGINT handlers: a storm
of both hung it in about three tries of ten here. Its handlers now set a plain flag (`StopFlag`).

RQ forks its scheduler from the worker. A worker killed with SIGKILL left that process running
for good; it now gets SIGTERM when the worker dies (`workers.runtime.parent_death`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from process_support import children, cmdline, running
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


@pytest.mark.system
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_worker_killed_outright_leaves_no_scheduler_process(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    env = parley_env("", tmp_path / "data")
    del env["REDIS_URL"]  # the embedded Redis of its own data directory: no other scheduler holds its lock
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [*parley_command(), "worker"], env={**env, "PARLEY_LOG_LEVEL": "INFO"},
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    scheduler: list[int] = []  # RQ's scheduler: forked, so it has the worker's own command line
    try:
        deadline = time.monotonic() + 60
        # Before this line the embedded Redis starts: between its fork and exec, it has that command line too.
        while "worker starting" not in log.read_text(errors="replace"):
            assert worker.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"the worker did not start\n{log.read_text(errors='replace')}"
            time.sleep(0.02)
        while not (scheduler := [c for c in children(worker.pid) if cmdline(c) == cmdline(worker.pid)]):
            assert worker.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"no scheduler process\n{log.read_text(errors='replace')}"
            time.sleep(0.1)
        worker.kill()  # SIGKILL to the worker alone: its process group is left as it is
        worker.wait(10)
        deadline = time.monotonic() + 30
        while running(scheduler[0]):
            assert time.monotonic() < deadline, "RQ's scheduler process outlived the killed worker"
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)


# A parent forking a child that installs no SIGTERM handler, as RQ's scheduler just after its fork.
# The parent has a handler of its own, as the worker has. With `beside` set, another thread uses
# the block meanwhile, as the webhooks' workers do with RQ's upkeep.
_FORKING_PARENT = """
import multiprocessing, signal, sys, threading, time
from workers.runtime.parent_death import forks_die_with_parent
signal.signal(signal.SIGTERM, lambda *_: None)
entered, left = threading.Event(), threading.Event()
def beside():
    entered.wait()
    with forks_die_with_parent():
        pass
    left.set()
threading.Thread(target=beside, daemon=True).start()
with forks_die_with_parent():
    if sys.argv[1] == "beside":
        entered.set()
        left.wait()
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(120,))
    child.start()
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.system
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("beside", ["alone", "beside"])
def test_a_child_forked_in_the_block_ends_with_its_parent(beside: str) -> None:
    """CI saw RQ's scheduler outlive its killed worker, for two reasons.

    The block's mark was one value, and a webhooks' worker leaving the block in its thread cleared
    it while the main thread forked. And a worker killed just after the fork sent its signal to the
    handler the child inherited, which sets a stop flag nobody reads in the child.
    """
    parent = subprocess.Popen(
        [sys.executable, "-c", _FORKING_PARENT, beside], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
        start_new_session=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while running(child):
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)


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


@pytest.mark.unit
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_supervisors_child_forked_as_the_supervisor_dies_exits_before_exec() -> None:
    """`parley dev`'s children ask for SIGTERM on its death. One forked just as it died must exit."""
    from parley.supervisor import _die_with_parent

    def run_in_child(supervisor: int) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                _die_with_parent(supervisor)
            finally:
                os._exit(0)  # lived on, as the child of a live supervisor goes on to exec
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    assert run_in_child(os.getpid()) == 0
    assert run_in_child(1) == 1  # its supervisor gone: the child was handed to init
