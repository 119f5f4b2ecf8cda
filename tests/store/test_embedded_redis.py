"""System tests of the embedded Redis: one shared server per data directory, reaped when unheld.

Each holder is a separate Python process that calls `ensure_server` and keeps a
`Holder`, as every Parley process does when REDIS_URL is unset. These tests use
no REDIS_URL: they start and stop their own servers in temporary directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from process_support import running

from workers.store import embedded

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN = 10.0  # the reaper's start grace plus its reap grace, with room for a slow machine

HOLDER_SCRIPT = r"""
import json, sys
from pathlib import Path
import redis
from workers.store import embedded

sock = embedded.ensure_server(Path(sys.argv[1]))
holder = embedded.Holder(sock)
client = redis.Redis(unix_socket_path=str(sock))
print(json.dumps({"sock": str(sock), "pid": client.info("server")["process_id"]}), flush=True)
client.close()
sys.stdin.read()  # hold until the test closes our stdin
holder.release()
"""


class HolderProcess:
    """A Parley-like process holding the embedded server of one data directory."""

    def __init__(self, data_dir: Path | str, cwd: Path | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER_SCRIPT, str(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"holder exited with {self.proc.wait(timeout=5)} before reporting its server"
        info = json.loads(line)
        self.sock = Path(info["sock"])
        self.server_pid = int(info["pid"])

    def stop(self) -> None:
        """End normally: release the holder and exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


def reachable(sock: Path) -> bool:
    client = redis.Redis(unix_socket_path=str(sock), socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def servers_for(data_dir: Path) -> list[int]:
    """Pids of live redis-server processes serving `data_dir` (a server runs in its `dir`)."""
    where = str(data_dir.resolve())
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            is_redis = b"redis-server" in (proc / "cmdline").read_bytes()
            if is_redis and os.readlink(proc / "cwd") == where and running(int(proc.name)):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def reapers_for(sock: Path) -> list[int]:
    """Pids of live reaper processes watching the server at `sock`."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        if b"workers.store.embedded" in cmdline and str(sock).encode() in cmdline and running(int(proc.name)):
            pids.append(int(proc.name))
    return pids


def wait_for(condition: Callable[[], bool], timeout: float = GONE_WITHIN) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.fixture
def holders(tmp_path: Path) -> Iterator[Callable[..., HolderProcess]]:
    """Start holder processes; anything still running at the end (holders, servers) is killed."""
    started: list[HolderProcess] = []

    def start(data_dir: Path | str | None = None, cwd: Path | None = None) -> HolderProcess:
        holder = HolderProcess(data_dir or tmp_path / "data", cwd=cwd)
        started.append(holder)
        return holder

    yield start
    for holder in started:
        if holder.proc.poll() is None:
            holder.kill()
    for holder in started:
        if running(holder.server_pid):
            os.kill(holder.server_pid, signal.SIGKILL)


def test_processes_share_one_server_which_is_reaped_when_the_last_holder_goes(
    tmp_path: Path, holders: Callable[..., HolderProcess]
) -> None:
    first = holders()
    second = holders()  # a later start reuses the live server
    assert second.sock == first.sock
    assert second.server_pid == first.server_pid
    assert servers_for(tmp_path / "data") == [first.server_pid]
    assert len(reapers_for(first.sock)) == 1

    first.stop()  # the server started by `first` outlives it while `second` holds it
    time.sleep(embedded.REAP_GRACE + embedded.START_GRACE + 0.5)
    assert running(first.server_pid)
    assert reachable(first.sock)

    second.kill()  # even a SIGKILLed last holder lets the server go
    assert wait_for(lambda: not running(first.server_pid)), "the server outlived its last holder"
    assert not first.sock.exists() or not reachable(first.sock)
    assert servers_for(tmp_path / "data") == []


def test_a_start_after_the_reap_starts_a_fresh_server(tmp_path: Path, holders: Callable[..., HolderProcess]) -> None:
    first = holders()
    first.stop()
    assert wait_for(lambda: not running(first.server_pid))
    again = holders()
    assert again.server_pid != first.server_pid
    assert reachable(again.sock)
    assert servers_for(tmp_path / "data") == [again.server_pid]


def test_data_survives_a_restart_of_the_server(tmp_path: Path, holders: Callable[..., HolderProcess]) -> None:
    first = holders()
    client = redis.Redis(unix_socket_path=str(first.sock))
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    client.set("kept", "across a restart")
    client.rpush("list", "a", "b")
    client.close()
    first.stop()
    assert wait_for(lambda: not running(first.server_pid))

    again = holders()
    assert again.server_pid != first.server_pid
    client = redis.Redis(unix_socket_path=str(again.sock), decode_responses=True)
    assert client.get("kept") == "across a restart"
    assert client.lrange("list", 0, -1) == ["a", "b"]
    client.close()


def test_data_survives_a_killed_server_through_the_append_only_file(
    tmp_path: Path, holders: Callable[..., HolderProcess]
) -> None:
    first = holders()
    client = redis.Redis(unix_socket_path=str(first.sock))
    client.set("kept", "after a crash")
    client.close()
    time.sleep(1.5)  # appendfsync everysec
    os.kill(first.server_pid, signal.SIGKILL)  # no shutdown, so no snapshot: only the AOF has the write
    assert wait_for(lambda: not running(first.server_pid))
    first.stop()

    again = holders()  # finds the stale socket, starts a new server, which replays the AOF
    assert again.server_pid != first.server_pid
    client = redis.Redis(unix_socket_path=str(again.sock), decode_responses=True)
    assert client.get("kept") == "after a crash"
    client.close()


def test_a_relative_data_dir_works(tmp_path: Path, holders: Callable[..., HolderProcess]) -> None:
    holder = holders("relative-data", cwd=tmp_path)
    assert holder.sock == tmp_path / "relative-data" / "redis.sock"
    assert reachable(holder.sock)
    assert (tmp_path / "relative-data" / "redis.log").exists()


def test_the_reaper_waits_out_a_slow_server(
    tmp_path: Path, holders: Callable[..., HolderProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replies slower than the reaper's timeout must not end the reaper, or the server is orphaned."""
    holder = holders()
    polls = {"n": 0}

    def slow_then_empty(client: redis.Redis) -> int:
        polls["n"] += 1
        if polls["n"] <= 3:
            raise redis.TimeoutError("Timeout reading from socket")
        return 0

    monkeypatch.setattr(embedded, "holders", slow_then_empty)
    monkeypatch.setattr(embedded, "START_GRACE", 0.0)
    monkeypatch.setattr(embedded, "REAP_GRACE", 0.3)
    reaper = threading.Thread(target=embedded.reap, args=(holder.sock,), daemon=True)
    reaper.start()
    reaper.join(timeout=GONE_WITHIN)
    assert not reaper.is_alive()
    assert polls["n"] > 3
    assert wait_for(lambda: not running(holder.server_pid)), "the reaper gave up on a slow server"


def test_a_process_that_found_the_server_alive_is_not_reaped_before_it_holds(
    tmp_path: Path, holders: Callable[..., HolderProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = holders()
    client = redis.Redis(unix_socket_path=str(holder.sock))
    monkeypatch.setattr(embedded, "holders", lambda client: 0)  # as if the last holder just left
    assert embedded.ensure_server(tmp_path / "data") == holder.sock  # reuses, and claims the server
    assert not embedded._may_reap(holder.sock, client)
    time.sleep(embedded.REAP_GRACE)
    assert embedded._may_reap(holder.sock, client)  # an unheld claim lapses
    client.close()


def test_a_busy_server_is_waited_for_not_doubled(tmp_path: Path, holders: Callable[..., HolderProcess]) -> None:
    """A server too slow to answer a ping is still there: a second one must not start on its files."""
    holder = holders()
    busy = redis.Redis(unix_socket_path=str(holder.sock))
    stall = threading.Thread(target=busy.execute_command, args=("DEBUG", "SLEEP", "2.5"))
    stall.start()
    time.sleep(0.2)
    try:
        assert embedded.ensure_server(tmp_path / "data") == holder.sock
    finally:
        stall.join()
        busy.close()
    assert servers_for(tmp_path / "data") == [holder.server_pid]
    assert reachable(holder.sock)


def test_a_process_killed_while_its_server_starts_leaves_no_server_behind(tmp_path: Path) -> None:
    """The server is stopped the moment it runs, and the process starting it is killed.

    The reaper used to be started once the server answered, so that process left the server
    running with nobody to stop it. It is started first now, and waits for the server.
    """
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    starter = subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, str(data)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, start_new_session=True,
    )  # fmt: skip
    # The kernel's list of its children, not a scan of /proc: the server must stop before it answers.
    children = Path(f"/proc/{starter.pid}/task/{starter.pid}/children")
    server = 0
    try:
        deadline = time.monotonic() + 30
        while not server:
            assert starter.poll() is None and time.monotonic() < deadline, "the server was never started"
            for pid in children.read_text().split():
                with contextlib.suppress(OSError):
                    if b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        os.kill(int(pid), signal.SIGSTOP)  # it cannot answer: its starter waits
                        server = int(pid)
        starter.kill()
        starter.wait(10)
        os.kill(server, signal.SIGCONT)
        assert wait_for(lambda: not running(server), GONE_WITHIN + embedded.START_GRACE), "the server was orphaned"
    finally:
        if starter.poll() is None:
            starter.kill()
        if server and running(server):
            os.kill(server, signal.SIGKILL)


def test_a_killed_reaper_is_replaced_by_the_next_start(tmp_path: Path, holders: Callable[..., HolderProcess]) -> None:
    first = holders()
    assert wait_for(lambda: len(reapers_for(first.sock)) == 1)
    [reaper] = reapers_for(first.sock)
    os.kill(reaper, signal.SIGKILL)
    assert wait_for(lambda: not running(reaper))
    time.sleep(embedded.START_GRACE)  # long enough that a live reaper would have connected
    second = holders()
    assert second.server_pid == first.server_pid
    assert wait_for(lambda: len(reapers_for(first.sock)) == 1)
    first.stop()
    second.stop()
    assert wait_for(lambda: not running(first.server_pid)), "the server outlived its reaper"


def test_a_server_whose_data_dir_was_removed_is_reaped_when_its_holder_goes(
    tmp_path: Path, holders: Callable[..., HolderProcess]
) -> None:
    """A removed data directory (a test's temporary folder) must not orphan its server.

    With the socket file gone no process can connect again, so nobody can claim the server.
    The reaper stops it once its last holder leaves, without the start lock's folder.
    """
    import shutil

    holder = holders()
    client = redis.Redis(unix_socket_path=str(holder.sock), socket_timeout=1)
    try:
        reaper_in = lambda: any(c.get("name") == embedded.REAPER_NAME for c in client.client_list())  # noqa: E731
        assert wait_for(reaper_in), "the reaper never connected"
    finally:
        client.close()
    shutil.rmtree(tmp_path / "data")
    time.sleep(embedded.REAP_GRACE + embedded.START_GRACE + 0.5)
    assert running(holder.server_pid), "the server went while its holder still held it"
    holder.kill()
    assert wait_for(lambda: not running(holder.server_pid)), "the server outlived its removed data directory"
    assert wait_for(lambda: not reapers_for(holder.sock)), "the reaper outlived its server"
