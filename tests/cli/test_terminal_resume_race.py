"""`parley run --resume` keeps its run while a real `parley worker` waits on the queue.

A run resumed in the terminal is the terminal's until it pauses or ends: the answer given
there enqueues no worker job, so the worker (blocked on the queue, as under `parley dev`)
never gets the chance to take the run and leave the terminal with "running elsewhere".
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Worker
from terminal_support import ScriptedPrompter, parley_command, parley_env

from bot.terminal import TerminalHost
from parley.resume import carry_on, resumable
from parley.terminal import drive
from workers.registry import load_agents
from workers.runs import RunService
from workers.runtime.host import InteractorRouter
from workers.runtime.queues import queue
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import RunStatus

pytestmark = pytest.mark.system

USER = "tester"
TRIES = 20


@pytest.fixture
def worker(redis_url: str, r: Redis, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `parley worker` with the test agents, waiting on the queue before the test goes on."""
    log = (tmp_path / "worker.log").open("wb")
    command = parley_command()
    proc = subprocess.Popen(
        [*command, "worker", "--name", f"race-worker-{os.getpid()}"],
        env=parley_env(redis_url, tmp_path, test_agents=True),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    try:
        deadline = time.monotonic() + 30
        while not Worker.all(queue=queue(r)):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.05)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def terminal(r: Redis, tmp_path: Path, prompter: ScriptedPrompter) -> tuple[Runtime, TerminalHost]:
    host = TerminalHost(prompter)
    registry = load_agents(["agents_for_tests"])
    settings = RuntimeSettings(data_dir=tmp_path)
    return Runtime.build(r, hosts=InteractorRouter({"terminal": host}), settings=settings, registry=registry), host


def test_twenty_resumes_with_a_worker_running_all_end_in_the_terminal(
    r: Redis, tmp_path: Path, worker: subprocess.Popen[bytes]
) -> None:
    for _ in range(TRIES):
        runtime, first = terminal(r, tmp_path, ScriptedPrompter({"colour": [KeyboardInterrupt()]}))
        run_id = runtime.store.create("t-ask", "{}", USER, {"host": "terminal"}).id
        assert drive(RunService(runtime), first, run_id) == 130  # stopped at the question: paused on it

        runtime, host = terminal(r, tmp_path, ScriptedPrompter({"colour": ["green"]}))
        run = resumable(RunService(runtime), run_id, USER)
        interrupt = runtime.store.interrupt(run.interrupt)
        assert run.status is RunStatus.PAUSED and interrupt is not None
        assert carry_on(RunService(runtime), host, run, interrupt, USER) == 0, runtime.store.get(run_id)
        assert run_id in host.reported  # this terminal printed "Done", not "running elsewhere"
        final = runtime.store.get(run_id)
        assert (final.status, final.result) == (RunStatus.SUCCEEDED, "colour green")
    assert worker.poll() is None
