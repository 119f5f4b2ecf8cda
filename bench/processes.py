"""The bench's child processes: servers, workers and stand-ins, each in a process group of its own.

Every child is started on a free port, logs to a file of its own, and is always stopped
by its own process group id, never by name. `group_cpu_seconds` reads a group's CPU time
from /proc, which is how the bench compares what Parley and its baselines cost.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: the children's working directory."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """One child process in its own process group, logging to a file; `stop()` ends only that group."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], log_dir: Path, cwd: Path = ROOT) -> None:
        """`cwd` is also where `python -m` imports from first, ahead of `PYTHONPATH`."""
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.popen = subprocess.Popen(
            list(argv), env=env, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 8.0) -> None:
        """SIGINT (warm shutdown for RQ, graceful for uvicorn), then SIGKILL the group."""
        if self.alive():
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGKILL, 3.0)):
                try:
                    os.killpg(self.popen.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.popen.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        with contextlib.suppress(ProcessLookupError, PermissionError):  # leftovers: a horse, RQ's scheduler
            os.killpg(self.popen.pid, signal.SIGKILL)
        self._log.close()

    def tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


CLK_TCK = os.sysconf("SC_CLK_TCK")


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in a process group (and the children it has reaped)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp; then utime, stime, cutime, cstime
            total += sum(int(x) for x in fields[11:15])
    return total / CLK_TCK


def wait_until(check: Callable[[], bool], timeout: float, what: str, proc: Proc | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited while waiting for {what}:\n{proc.tail()}")
        try:
            if check():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}" + (f":\n{proc.tail()}" if proc else ""))


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as resp:
        return bool(resp.status == 200)


def python_argv(*args: str) -> list[str]:
    return [sys.executable, *args]
