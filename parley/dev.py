"""`parley dev`: the whole product on one machine, with a Slack playground in the browser.

It starts, each in its own process group, one `parley worker` and `parley serve` (HTTP, on
port+1, with a fresh signing secret), and serves the playground itself on the given port:
the Slack Web API stand-in at /api/ that bot and worker call, and the page. When REDIS_URL
is unset the embedded Redis is started first and held here, so every child shares it.

Ctrl-C stops everything: SIGTERM to each child's process group, SIGKILL after
`STOP_TIMEOUT`; a second Ctrl-C kills at once. A child that exits on its own stops the
whole thing with a message naming it. Children are also told to exit if this process
dies (Linux's parent-death signal), so even a killed `parley dev` leaves no orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

import httpx

from bot.playground.app import ServerThread, bind, create_playground_app
from bot.playground.workspace import Workspace
from parley.bootstrap import connect_redis
from parley.settings import Settings
from workers.exceptions import ConfigError

HOST = "127.0.0.1"
BOT_TOKEN = "xoxb-playground"
ADMIN = "U0ALICE"
STOP_TIMEOUT = 8.0
READY_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1
TRY = "/parley ticket Create ticket for login issue"


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when `parley dev` dies (Linux only; ignored elsewhere)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    """One child process, the leader of its own process group."""

    name: str
    proc: subprocess.Popen[bytes]
    pumps: list[threading.Thread] = field(default_factory=list)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def _pump(name: str, stream: IO[bytes], out: IO[str]) -> None:
    """Copy a child's output to ours, one prefixed line at a time."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        with contextlib.suppress(ValueError, OSError):
            out.write(f"[{name}] {line}\n")
            out.flush()
    stream.close()


def _port_free(port: int) -> bool:
    try:
        bind(HOST, port).close()
    except OSError:
        return False
    return True


class Dev:
    """The supervisor: starts the pieces, watches them, and takes them all down together."""

    def __init__(self, settings: Settings, port: int) -> None:
        self.settings = settings
        self.port = port
        self.bot_port = port + 1
        self.secret = secrets.token_hex(16)
        self.children: list[Child] = []
        self.interrupts = 0
        self.stopping = threading.Event()
        self.server: ServerThread | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
        env.update(
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_SIGNING_SECRET=self.secret,
            SLACK_API_URL=f"http://{HOST}:{self.port}/api/",
            PARLEY_ADMINS=ADMIN,
            PARLEY_DATA_DIR=str(self.settings.parley_data_dir),
            PYTHONUNBUFFERED="1",
        )
        if self.settings.redis_url:
            env["REDIS_URL"] = self.settings.redis_url
        else:
            env.pop("REDIS_URL", None)
        return env

    def spawn(self, name: str, *args: str) -> Child:
        proc = subprocess.Popen(
            [sys.executable, "-m", "parley.cli", *args],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        child = Child(name, proc)
        self.children.append(child)
        return child

    def on_signal(self, signum: int, frame: object) -> None:
        self.interrupts += 1
        self.stopping.set()
        if self.interrupts > 1:
            for child in self.children:
                child.signal_group(signal.SIGKILL)

    def check_ports(self) -> None:
        for port in (self.port, self.bot_port):
            if not _port_free(port):
                raise ConfigError(f"port {port} is in use; pick another with --port (parley dev uses PORT and PORT+1)")

    def start(self) -> None:
        self.spawn("serve", "serve", "--host", HOST, "--port", str(self.bot_port))
        self.spawn("worker", "worker", "--name", f"parley-dev-{self.port}-{os.getpid()}")
        for child in self.children:  # pumps start after every fork, so no thread is cloned mid-write
            assert child.proc.stdout is not None
            pump = threading.Thread(target=_pump, args=(child.name, child.proc.stdout, sys.stdout), daemon=True)
            child.pumps.append(pump)
            pump.start()
        app = create_playground_app(
            Workspace(), bot_url=f"http://{HOST}:{self.bot_port}/slack/events", signing_secret=self.secret
        )
        self.server = ServerThread(app, bind(HOST, self.port))
        self.server.start()

    def crashed(self) -> str | None:
        """A message naming the first piece that stopped on its own, or None while all run."""
        for child in self.children:
            code = child.proc.poll()
            if code is not None:
                return f"`parley {child.name}` exited with code {code}"
        if self.server is not None and not self.server.alive:
            return "the playground server stopped"
        return None

    def wait_ready(self) -> str | None:
        """Wait until the bot answers /healthz; returns a crash message instead if a piece died."""
        deadline = time.monotonic() + READY_TIMEOUT
        url = f"http://{HOST}:{self.bot_port}/healthz"
        while time.monotonic() < deadline and not self.stopping.is_set():
            problem = self.crashed()
            if problem:
                return problem
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=1).status_code == 200:
                    return None
            self.stopping.wait(0.2)
        return None if self.stopping.is_set() else f"the bot did not answer {url} within {READY_TIMEOUT:.0f} s"

    def stop(self) -> None:
        """SIGTERM every child's group, wait, SIGKILL what is left (at once after a second Ctrl-C)."""
        for child in self.children:
            child.signal_group(signal.SIGKILL if self.interrupts > 1 else signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.children:
            while child.proc.poll() is None and time.monotonic() < deadline and self.interrupts < 2:
                time.sleep(0.05)
            child.signal_group(signal.SIGKILL)  # the leader's stragglers too (gunicorn workers, work horses)
            child.proc.wait()
            for pump in child.pumps:
                pump.join(1)
        if self.server is not None:
            self.server.stop()


def run_dev(settings: Settings, *, port: int = 3000) -> int:
    """Run everything until Ctrl-C (exit 0) or until a piece dies (exit 1)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the playground's own requests are not news
    dev = Dev(settings, port)
    dev.check_ports()
    embedded = None if settings.redis_url else connect_redis(settings)  # start the shared server, and hold it
    previous = {s: signal.signal(s, dev.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    problem: str | None = None
    try:
        dev.start()
        problem = dev.wait_ready()
        if problem is None and not dev.stopping.is_set():
            redis_note = settings.redis_url or f"embedded Redis in {settings.parley_data_dir}"
            print(f"Parley playground: http://{HOST}:{port}  (bot on :{dev.bot_port}, {redis_note})", flush=True)
            print(f"Try {TRY!r} in #general. Ctrl-C stops everything.", flush=True)
            while not dev.stopping.wait(0.2):
                problem = dev.crashed()
                if problem:
                    break
    finally:
        if dev.interrupts or problem:
            print("parley dev: stopping…", file=sys.stderr, flush=True)
        dev.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if embedded is not None:
            embedded.close()
    if problem:
        print(f"parley dev: {problem}; stopped everything.", file=sys.stderr, flush=True)
        return 1
    print("parley dev: stopped.", file=sys.stderr, flush=True)
    return 0
