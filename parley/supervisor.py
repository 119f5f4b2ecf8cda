"""Child processes started together, watched together and stopped together.

`parley dev` and `parley up` each run the product as one process tree. A few `parley`
subcommands run under one supervisor, like a worker and the Slack app. The supervisor holds the
embedded Redis when REDIS_URL is unset. Each child runs in a process group of its own. Its
output is copied to ours one line at a time. Each line is marked with its process: `bot`,
`worker`, or `redis` for the embedded Redis's log file. When our standard error is a terminal,
readable lines are prefixed with it. Otherwise JSON lines carry it as `process`. Children learn
which through `PARLEY_LOG_FORMAT`.

Ctrl-C stops everything: SIGTERM to each child's process group, SIGKILL after `STOP_TIMEOUT`. A
second Ctrl-C kills at once. A child exiting on its own stops the whole thing, with a message
naming it. Children are also told to exit if the supervisor dies, by Linux's parent-death
signal. So even a killed supervisor leaves no orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from parley.bootstrap import connect_redis
from parley.settings import Settings
from parley.stop_flag import StopFlag
from workers.logs import is_terminal

STOP_TIMEOUT = 8.0
READY_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1


def _die_with_parent(supervisor: int) -> None:
    """In the child before exec: get SIGTERM when the supervisor dies.

    A supervisor already gone by then sends nothing, so the child exits at once. This works on
    Linux only, and is ignored elsewhere.
    """
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor:  # it died between the fork and the line above
        os._exit(1)


@dataclass
class Child:
    """One child process, the leader of its own process group.

    `ready_line`: text the child prints once it is serving. `ready` is set when it has. `label`: the
    process its lines are marked with (`bot`, `worker`).
    """

    name: str
    proc: subprocess.Popen[bytes]
    label: str
    ready_line: str | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    pumps: list[threading.Thread] = field(default_factory=list)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def marked(label: str, line: str, *, readable: bool) -> str:
    """One line of a child's output marked with its process.

    To read, it is `bot    | …`, else JSON with `process`.
    """
    if readable:
        return f"{label:<6} | {line}"
    try:
        doc = json.loads(line)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        doc = {"msg": line}
    return json.dumps({"process": label, **doc})


def _pump(child: Child, stream: IO[bytes], out: IO[str], readable: bool) -> None:
    """Copy a child's output to ours line by line, marked, noticing its ready line."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if child.ready_line is not None and child.ready_line in line:
            child.ready.set()
        with contextlib.suppress(ValueError, OSError):
            out.write(marked(child.label, line, readable=readable) + "\n")
            out.flush()
    stream.close()


class Supervisor:
    """Starts `parley` subcommands as children of `parley <command>`, and stops them together."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.command = command
        self.readable = is_terminal(sys.stderr)
        self.env = {"PARLEY_LOG_FORMAT": "text" if self.readable else "json", **env}
        self.children: list[Child] = []
        self.interrupts = 0
        self.stopping = StopFlag()  # set by `on_signal`: no lock (parley/stop_flag.py)
        self._checks: list[Callable[[], str | None]] = []
        self._stops: list[Callable[[], None]] = []

    def spawn(self, name: str, *args: str, ready_line: str | None = None, label: str | None = None) -> Child:
        """Start `parley <args>`.

        `name` is the command a crash message names. `label` marks its lines.
        """
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "parley.cli", *args],  # -P: the working directory is not first on `sys.path`
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, os.getpid()) if sys.platform.startswith("linux") else None,
        )
        child = Child(name, proc, label or name, ready_line)
        self.children.append(child)
        return child

    def start_output(self, out: IO[str] | None = None) -> None:
        """Copy every child's output, called after every spawn.

        So no thread is cloned mid-write by a fork.
        """
        for child in self.children:
            assert child.proc.stdout is not None
            pump = threading.Thread(
                target=_pump, args=(child, child.proc.stdout, out or sys.stdout, self.readable), daemon=True
            )
            child.pumps.append(pump)
            pump.start()

    def follow(self, label: str, path: Path, offset: int, out: IO[str] | None = None) -> None:
        """Copy the lines appended to `path` after `offset`, marked `label`.

        `path` is a log file a piece writes itself.
        """
        thread = threading.Thread(target=self._follow, args=(label, path, offset, out or sys.stdout), daemon=True)
        thread.start()

    def _follow(self, label: str, path: Path, offset: int, out: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError), path.open("rb") as log:
            log.seek(offset)
            partial = b""
            while not self.stopping.wait(0.3):
                partial += log.read()
                *lines, partial = partial.split(b"\n")
                for raw in lines:
                    if raw.strip():
                        out.write(marked(label, raw.decode("utf-8", "replace"), readable=self.readable) + "\n")
                out.flush()

    def also_watch(self, check: Callable[[], str | None], stop: Callable[[], None] | None = None) -> None:
        """Another piece run in this process.

        `check` says why it stopped, or None while it runs. `stop` ends it.
        """
        self._checks.append(check)
        if stop is not None:
            self._stops.append(stop)

    def on_signal(self, signum: int, frame: object) -> None:
        self.interrupts += 1
        self.stopping.set()
        if self.interrupts > 1:
            for child in self.children:
                child.signal_group(signal.SIGKILL)

    def crashed(self) -> str | None:
        """A message naming the first piece that stopped on its own, else None."""
        for child in self.children:
            code = child.proc.poll()
            if code is not None:
                return f"`parley {child.name}` exited with code {code}"
        return next((problem for check in self._checks if (problem := check())), None)

    def wait_until(self, ready: Callable[[], bool], failure: str, timeout: float = READY_TIMEOUT) -> str | None:
        """Wait for `ready()`.

        Returns a crash message if a piece died first, `failure` on timeout, else None.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping.is_set():
            problem = self.crashed()
            if problem:
                return problem
            if ready():
                return None
            self.stopping.wait(0.2)
        return None if self.stopping.is_set() else f"{failure} within {timeout:.0f} s"

    def stop(self) -> None:
        """SIGTERM every child's group, wait, then SIGKILL what is left.

        After a second Ctrl-C, SIGKILL comes at once.
        """
        for child in self.children:
            child.signal_group(signal.SIGKILL if self.interrupts > 1 else signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.children:
            while child.proc.poll() is None and time.monotonic() < deadline and self.interrupts < 2:
                time.sleep(0.05)
            child.signal_group(signal.SIGKILL)  # the leader's stragglers too (uvicorn workers, work horses)
            child.proc.wait()
            for pump in child.pumps:
                pump.join(1)
        for stop in self._stops:
            stop()

    def run(
        self,
        settings: Settings,
        *,
        start: Callable[[], None],
        ready: Callable[[], str | None],
        banner: Callable[[], None],
    ) -> int:
        """Start, wait for `ready`, print the `banner`, then run until the end.

        The end is Ctrl-C (exit 0) or a piece dying (exit 1). The embedded Redis (REDIS_URL unset) is
        started first and held here. So every child shares it.
        """
        server_log = None if settings.redis_url else Path(settings.parley_data_dir).resolve() / "redis.log"
        offset = server_log.stat().st_size if server_log is not None and server_log.exists() else 0
        embedded = None if settings.redis_url else connect_redis(settings)
        if server_log is not None:
            self.follow("redis", server_log, offset)
        previous = {s: signal.signal(s, self.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        problem: str | None = None
        try:
            start()
            problem = ready()
            if problem is None and not self.stopping.is_set():
                banner()
                while not self.stopping.wait(0.2):
                    problem = self.crashed()
                    if problem:
                        break
        finally:
            if self.interrupts or problem:
                print(f"parley {self.command}: stopping…", file=sys.stderr, flush=True)
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if embedded is not None:
                embedded.close()
        if problem:
            print(f"parley {self.command}: {problem}; stopped everything.", file=sys.stderr, flush=True)
            return 1
        print(f"parley {self.command}: stopped.", file=sys.stderr, flush=True)
        return 0
