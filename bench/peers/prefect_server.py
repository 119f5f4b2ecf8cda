"""A local Prefect server for the side-by-side run, and the commands and settings of the peer's processes.

The server is `prefect server start` on a free loopback port with a `PREFECT_HOME` of its
own (a temporary directory, so the SQLite database starts empty and nobody else's
profile or flows leak in). Every Prefect process the bench starts (the server, paused
flows, a `flow.serve()` runner) gets `prefect_env`: that home, the server's
`PREFECT_API_URL` and analytics off. Nothing here imports `prefect`, so the commands can
be built and checked without the `peers` extra installed.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from bench.processes import Proc, free_port, wait_until

FLOWS_MODULE = "bench.peers.prefect_run"
DEPLOYMENT = "bench"
"""`flow.serve(name=...)`: the deployment is `<flow name>/bench`."""
SUSPEND_FLOW = "bench-suspend"
"""The flow name of `prefect_flows.suspend_flow`: its deployment is `bench-suspend/bench`."""


def api_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/api"


def prefect_env(home: Path, port: int, runner_poll: int | None = None) -> dict[str, str]:
    """The settings every Prefect process of the run gets (the runner's poll only for `flow.serve()`)."""
    env = {
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": api_url(port),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home}/prefect.db",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
    }
    if runner_poll is not None:
        env["PREFECT_RUNNER_POLL_FREQUENCY"] = str(runner_poll)
    return env


def server_argv(port: int) -> list[str]:
    """`prefect server start` in the foreground, with its default services and UI, SQLite in PREFECT_HOME."""
    return [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]


def pause_argv(tag: str, poll: float, count: int) -> list[str]:
    """One process running one flow run that pauses `count` times (`pause_flow_run`, poll `poll` s)."""
    return [sys.executable, "-m", FLOWS_MODULE, "pause", "--tag", tag, "--poll", f"{poll:g}", "--count", str(count)]


def serve_argv() -> list[str]:
    """`suspend_flow.serve()`: a runner polling for scheduled runs every PREFECT_RUNNER_POLL_FREQUENCY s."""
    return [sys.executable, "-m", FLOWS_MODULE, "serve"]


def ready_key(tag: str) -> str:
    """Where a paused flow pushes its flow run id just before each pause."""
    return f"bench:peer:ready:{tag}"


def resumed_key(tag: str) -> str:
    """Where a flow pushes `time.time()` on the first line after its pause or suspend returns."""
    return f"bench:peer:resumed:{tag}"


def parse_resumed(raw: bytes | str) -> float:
    """The wall-clock time a flow pushed to `resumed_key` (a `repr` of `time.time()`)."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    return float(text)


def parse_health(body: bytes) -> bool:
    """`GET /api/health` answers the JSON `true` once the server is up."""
    try:
        return json.loads(body) is True
    except ValueError:
        return False


class PrefectServer:
    """`prefect server start` as a child of the bench's `Stack`, stopped with the rest of it."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.home = stack.tmp / "prefect-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: Proc | None = None

    @property
    def api_url(self) -> str:
        return api_url(self.port)

    def env(self, runner_poll: int | None = None) -> dict[str, str]:
        return prefect_env(self.home, self.port, runner_poll)

    def start(self, timeout: float = 180) -> None:
        self.proc = self.stack.start_process("prefect-server", server_argv(self.port), **self.env())
        wait_until(self.healthy, timeout, "the Prefect server", self.proc)

    def healthy(self) -> bool:
        with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as resp:
            return resp.status == 200 and parse_health(resp.read())

    def start_flow(self, name: str, argv: list[str], runner_poll: int | None = None) -> Proc:
        proc: Proc = self.stack.start_process(name, argv, **self.env(runner_poll))
        return proc
